//! libFuzzer target of `sgtsne_fuzz::h5ad` (what it reads is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sgtsne_fuzz::h5ad(data));

//! libFuzzer target of `sgtsne_fuzz::mtx` (what it reads is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sgtsne_fuzz::mtx(data));

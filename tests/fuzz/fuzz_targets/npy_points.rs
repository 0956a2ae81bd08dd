//! libFuzzer target of `sgtsne_fuzz::npy_points` (what it reads is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sgtsne_fuzz::npy_points(data));

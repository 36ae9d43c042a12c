#![no_main]
//! libFuzzer target: `toolwright_fuzzing::envelope`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::envelope(data));

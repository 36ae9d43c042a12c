#![no_main]
//! libFuzzer target: `toolwright_fuzzing::http`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::http(data));

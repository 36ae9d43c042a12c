#![no_main]
//! libFuzzer target: `toolwright_fuzzing::search_pattern`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::search_pattern(data));

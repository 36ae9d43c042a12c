#![no_main]
//! libFuzzer target: `toolwright_fuzzing::config_merge`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::config_merge(data));

#![no_main]
//! libFuzzer target: `toolwright_fuzzing::sql`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::sql(data));

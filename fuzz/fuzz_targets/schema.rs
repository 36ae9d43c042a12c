#![no_main]
//! libFuzzer target: `toolwright_fuzzing::schema`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::schema(data));

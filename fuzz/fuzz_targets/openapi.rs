#![no_main]
//! libFuzzer target: `toolwright_fuzzing::openapi`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::openapi(data));

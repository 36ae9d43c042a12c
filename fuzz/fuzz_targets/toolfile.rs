#![no_main]
//! libFuzzer target: `toolwright_fuzzing::toolfile`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::toolfile(data));

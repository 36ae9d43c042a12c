#![no_main]
//! libFuzzer target: `toolwright_fuzzing::dispatch`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::dispatch(data));

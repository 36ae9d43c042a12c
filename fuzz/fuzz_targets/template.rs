#![no_main]
//! libFuzzer target: `toolwright_fuzzing::template`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwright_fuzzing::template(data));

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| speedy_fuzz::http1_response(data));

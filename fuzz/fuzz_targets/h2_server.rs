#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| speedy_fuzz::h2::h2_server(data));

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| speedy_fuzz::mahimahi_import(data));

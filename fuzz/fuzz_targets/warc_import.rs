#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| speedy_fuzz::warc_import(data));

#![no_main]
//! cargo-fuzz binary of target `spi_message` (see `wirespeed_fuzz_targets::spi_message`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::spi_message::run(data));

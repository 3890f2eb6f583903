#![no_main]
//! cargo-fuzz binary of target `lab_spi_controller` (see `wirespeed_fuzz_targets::lab_spi_controller`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_spi_controller::run(data));

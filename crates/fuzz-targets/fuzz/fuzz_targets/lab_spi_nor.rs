#![no_main]
//! cargo-fuzz binary of target `lab_spi_nor` (see `wirespeed_fuzz_targets::lab_spi_nor`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_spi_nor::run(data));

#![no_main]
//! cargo-fuzz binary of target `shim_spidev` (see `wirespeed_fuzz_targets::shim_spidev`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::shim_spidev::run(data));

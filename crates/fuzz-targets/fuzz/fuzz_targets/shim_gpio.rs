#![no_main]
//! cargo-fuzz binary of target `shim_gpio` (see `wirespeed_fuzz_targets::shim_gpio`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::shim_gpio::run(data));

#![no_main]
//! cargo-fuzz binary of target `lab_loopback` (see `wirespeed_fuzz_targets::lab_loopback`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_loopback::run(data));

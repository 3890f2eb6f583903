#![no_main]
//! cargo-fuzz binary of target `sfdp` (see `wirespeed_fuzz_targets::sfdp`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::sfdp::run(data));

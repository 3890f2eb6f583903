#![no_main]
//! cargo-fuzz binary of target `lab_regfile` (see `wirespeed_fuzz_targets::lab_regfile`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_regfile::run(data));

#![no_main]
//! cargo-fuzz binary of target `lab_ad7606` (see `wirespeed_fuzz_targets::lab_ad7606`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_ad7606::run(data));

#![no_main]
//! cargo-fuzz binary of target `device_config` (see `wirespeed_fuzz_targets::device_config`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::device_config::run(data));

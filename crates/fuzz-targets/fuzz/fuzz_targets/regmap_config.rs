#![no_main]
//! cargo-fuzz binary of target `regmap_config` (see `wirespeed_fuzz_targets::regmap_config`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::regmap_config::run(data));

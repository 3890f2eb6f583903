#![no_main]
//! cargo-fuzz binary of target `board_config` (see `wirespeed_fuzz_targets::board_config`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::board_config::run(data));

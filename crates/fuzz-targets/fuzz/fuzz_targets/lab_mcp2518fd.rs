#![no_main]
//! cargo-fuzz binary of target `lab_mcp2518fd` (see `wirespeed_fuzz_targets::lab_mcp2518fd`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::lab_mcp2518fd::run(data));

#![no_main]
//! cargo-fuzz binary of target `mcp251xfd_format` (see `wirespeed_fuzz_targets::mcp251xfd_format`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz_targets::mcp251xfd_format::run(data));

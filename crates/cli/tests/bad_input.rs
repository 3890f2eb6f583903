//! Bad input at the command line (docs/bad-input.md, surface "CLI"): each
//! test runs `wirespeed` with one bad argument and checks exit code 2 (bad
//! input, as clap's parse errors; 1 is for failures while running), that
//! stderr names what was wrong and what is allowed, that nothing panicked,
//! and that nothing reached the device: no output, and a lab chip's image
//! file unchanged.

use std::path::{Path, PathBuf};
mod common;

use common::wirespeed;

/// Runs `args` and asserts a usage error: exit code 2, no panic, nothing on
/// stdout (no message was sent, nothing read), and every one of `needles`
/// on stderr.
#[track_caller]
fn usage_error(args: &[&str], needles: &[&str]) {
    let out = wirespeed(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: status {:?}, stderr:\n{err}", out.status);
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}:\n{err}");
    }
    assert!(out.stdout.is_empty(), "{args:?}: stdout not empty: {}", String::from_utf8_lossy(&out.stdout));
}

fn spi(opts: &[&'static str], segments: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec!["spi", "--dev", "lab-spidev"];
    v.extend(opts);
    v.push("xfer");
    v.extend(segments);
    v
}

/// A lab chip backed by an image file in a directory of its own; the image
/// holds a pattern, so any write or erase would show.
struct Chip {
    dir: PathBuf,
    image: PathBuf,
    before: Vec<u8>,
}

impl Chip {
    fn new(test: &str) -> Chip {
        let dir = std::env::temp_dir().join(format!("wirespeed-bad-input-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("chip.bin");
        let before: Vec<u8> = (0..16u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        std::fs::write(&image, &before).unwrap();
        Chip { dir, image, before }
    }
    /// `--lab w25q128jv:IMAGE`.
    fn lab(&self) -> String {
        format!("w25q128jv:{}", self.image.display())
    }
    fn path(&self, f: &str) -> String {
        self.dir.join(f).display().to_string()
    }
    #[track_caller]
    fn unchanged(&self) {
        assert!(std::fs::read(&self.image).unwrap() == self.before, "the chip's image changed");
    }
}

impl Drop for Chip {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---- wirespeed spi --------------------------------------------------------

#[test]
fn spi_bad_hex_in_a_segment() {
    usage_error(&spi(&[], &["9f", "9g00"]), &["\"9g00\"", "'g' is not a hex digit", "r:N", "w:HEX"]);
    usage_error(&spi(&[], &["9f0"]), &["\"9f0\"", "odd"]);
}

#[test]
fn spi_misplaced_slashes_and_empty_reads() {
    usage_error(&spi(&[], &["/", "9f"]), &["/ before the first"]);
    usage_error(&spi(&[], &["9f", "/", "/", "00"]), &["two / in a row"]);
    usage_error(&spi(&[], &["r:0"]), &["\"r:0\"", "1 to"]);
    usage_error(&spi(&["--cs-change-ns", "5"], &["9f"]), &["--cs-change-ns 5", "put a lone / between two segments"]);
}

#[test]
fn spi_missing_device_is_a_parse_error() {
    usage_error(&["spi", "xfer", "9f"], &["--dev <DEVICE>", "required"]);
}

#[test]
fn spi_a_nonexistent_dev_path() {
    usage_error(
        &["spi", "--dev", "/dev/spidev9.9", "xfer", "9f"],
        &["/dev/spidev9.9", "no such spidev node", "wirespeed list", "lab-spidev"],
    );
}

#[test]
fn spi_hz_mode_and_bits_out_of_range() {
    usage_error(&spi(&["--hz", "0"], &["9f"]), &["'0' for '--hz <HZ>'", "1..=4294967295"]);
    usage_error(&spi(&["--mode", "4"], &["9f"]), &["'4' for '--mode <MODE>'", "0..=3"]);
    usage_error(&spi(&["--bits", "33"], &["9f"]), &["'33' for '--bits <BITS>'", "1..=32"]);
    let lab = |hz| vec!["spi", "--dev", "lab", "--hz", hz, "xfer", "9f"];
    usage_error(&lab("1"), &["speed 1 Hz", "minimum of 191 Hz"]);
    usage_error(&lab("4000000000"), &["speed 4000000000 Hz", "maximum of 100000000 Hz"]);
}

#[test]
fn spi_a_word_size_the_message_does_not_fill() {
    usage_error(&spi(&["--bits", "12"], &["9f"]), &["1 bytes", "whole number of 2-byte words"]);
}

#[test]
fn spi_mode_bits_the_device_refuses() {
    usage_error(&spi(&["--cs-high"], &["9f"]), &["refused mode bits CS_HIGH"]);
}

#[test]
fn spi_a_transfer_longer_than_bufsiz() {
    usage_error(&spi(&[], &["r:100000"]), &["100000 bytes", "at most 4096", "spidev.bufsiz="]);
}

// ---- wirespeed flash ------------------------------------------------------

#[test]
fn flash_an_unknown_lab_chip() {
    usage_error(&["flash", "--lab", "nosuchchip", "probe"], &["\"nosuchchip\"", "no such lab chip", "W25Q128JV"]);
}

#[test]
fn flash_no_target_or_a_nonexistent_node() {
    usage_error(&["flash", "probe"], &["no target", "--dev", "--lab"]);
    usage_error(&["flash", "--dev", "/dev/spidev9.9", "probe"], &["/dev/spidev9.9", "wirespeed list", "--lab"]);
    usage_error(&["flash", "--dev", "/dev/null", "probe"], &["/dev/null", "not a spidev node"]);
}

#[test]
fn flash_an_offset_beyond_the_chip() {
    let chip = Chip::new("offset");
    let out = chip.path("out.bin");
    usage_error(
        &["flash", "--lab", &chip.lab(), "read", "-o", &out, "--offset", "16M"],
        &["--offset 0x1000000", "beyond the end of the chip", "last address is 0xffffff"],
    );
    assert!(!Path::new(&out).exists(), "nothing was read");
    usage_error(&["flash", "--lab", &chip.lab(), "erase", "--offset", "16M", "--length", "4K"], &["beyond"]);
    chip.unchanged();
}

#[test]
fn flash_a_length_past_the_end_of_the_chip() {
    let chip = Chip::new("length");
    let data = chip.path("data.bin");
    std::fs::write(&data, vec![0u8; 8192]).unwrap();
    usage_error(
        &["flash", "--lab", &chip.lab(), "write", &data, "--offset", "0xfff000", "--length", "8K"],
        &["8192 bytes at 0xfff000", "at most 0x1000000"],
    );
    chip.unchanged();
}

#[test]
fn flash_an_erase_off_the_sector_grid_or_of_nothing() {
    let chip = Chip::new("erase");
    usage_error(
        &["flash", "--lab", &chip.lab(), "erase", "--offset", "0x800", "--length", "4K"],
        &["not aligned", "4096", "multiples"],
    );
    usage_error(&["flash", "--lab", &chip.lab(), "erase"], &["erase what?", "--offset", "--chip"]);
    chip.unchanged();
}

#[test]
fn flash_an_image_of_the_wrong_size_or_missing() {
    let chip = Chip::new("image");
    let small = chip.path("small.bin");
    std::fs::write(&small, [0u8; 100]).unwrap();
    usage_error(&["flash", "--lab", &chip.lab(), "write", &small], &["100 bytes", "--offset", "--length"]);
    usage_error(
        &["flash", "--lab", &chip.lab(), "write", &chip.path("missing.bin")],
        &["missing.bin", "existing file"],
    );
    chip.unchanged();
}

#[test]
fn flash_a_number_that_is_not_one() {
    usage_error(
        &["flash", "--lab", "w25q128jv", "read", "-o", "/dev/null", "--offset", "zz"],
        &["\"zz\" is not a number", "0x1000", "4K"],
    );
}

// ---- other commands -------------------------------------------------------

#[test]
fn list_a_root_that_is_not_a_directory() {
    usage_error(
        &["list", "--root", "/nonexistent-wirespeed-root"],
        &["--root /nonexistent-wirespeed-root", "dev/ and sys/"],
    );
}

#[test]
fn bench_spi_a_message_size_out_of_range() {
    usage_error(
        &["bench", "spi", "--cpus-may-sleep", "--no-ablation", "--threads", "0", "--size", "65537"],
        &["65537", "at most 65536"],
    );
}

#[test]
fn bench_and_trace_counts_and_clocks_of_zero() {
    usage_error(&["bench", "spi", "--hz", "0"], &["'0'", "--hz", "1..="]);
    usage_error(&["bench", "dma", "--hz", "0"], &["'0'", "--hz", "1..="]);
    usage_error(&["bench", "delay", "--iterations", "0"], &["'0'", "--iterations", "1..=1000000"]);
    usage_error(&["bench", "delay", "--iterations", "1000001"], &["1000001", "1..=1000000"]);
    usage_error(&["lab", "trace", "--count", "0"], &["'0'", "--count", "1.."]);
    usage_error(&["lab", "trace", "--hz", "0"], &["'0'", "--hz", "1..="]);
}

#[test]
fn lab_run_a_missing_or_wrong_board_file() {
    let chip = Chip::new("board");
    let missing = chip.path("missing.toml");
    usage_error(&["lab", "run", "--config", &missing, "--", "true"], &["cannot read", "missing.toml"]);
    let bad = chip.path("bad.toml");
    std::fs::write(&bad, "[[spi]]\nbus = 0\n[[spi.device]]\ncs = 0\nkind = \"eeprom\"\n").unwrap();
    usage_error(
        &["lab", "run", "--config", &bad, "--", "sh", "-c", "echo ran"],
        &["bad.toml:5:", "unknown kind \"eeprom\"", "known: spi-nor, loopback"],
    );
}

#[test]
fn a_failure_while_running_keeps_exit_code_1() {
    // Data that differs from the chip is not bad input: verify ran and failed.
    let chip = Chip::new("verify");
    let data = chip.path("data.bin");
    std::fs::write(&data, [0x5a; 16]).unwrap();
    let out = wirespeed(&["flash", "--lab", &chip.lab(), "verify", &data, "--offset", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("verify failed") && !err.contains("panicked"), "{err}");
    chip.unchanged();
}

//! Bad ioctls through the shim (docs/bad-input.md, surface "shim ioctls"):
//! this test binary runs itself again with the shim preloaded
//! (`LD_PRELOAD`, `WIRESPEED_LAB` = examples/lab.toml, `WIRESPEED_TRACE`),
//! as `wirespeed lab run` runs a program, and the child makes raw ioctls on
//! the lab's nodes the way an unmodified C program would: each bad one must
//! fail with the kernel's errno, not crash the program. Nothing reaching the
//! bus is checked from outside: the child's bus trace equals that of a child
//! that only opened the nodes, and the flash image is unchanged.
//!
//! Needs the shim: `cargo build --release -p wirespeed-shim` (scripts/test
//! builds it first), or `WIRESPEED_SHIM=path`.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use wirespeed::linux::gpio_cdev::uapi as gpio;
use wirespeed::linux::spidev::uapi as spi;

const CHILD: &str = "WIRESPEED_BAD_INPUT_CHILD";

fn shim() -> PathBuf {
    if let Some(p) = std::env::var_os("WIRESPEED_SHIM").filter(|p| !p.is_empty()) {
        return p.into();
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/libwirespeed_shim.so");
    assert!(
        p.is_file(),
        "{} is missing: cargo build --release -p wirespeed-shim (scripts/test does this)",
        p.display()
    );
    p
}

/// Runs `test` of this binary in a child with the shim on the bench board,
/// in a fresh directory with a patterned flash image; returns the bus trace
/// of bus 0 it left and whether the image is unchanged.
fn run_child(test: &str, scenario: &str) -> (String, bool) {
    let dir = std::env::temp_dir().join(format!("wirespeed-shim-{test}-{scenario}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab.toml"), dir.join("lab.toml")).unwrap();
    let image: Vec<u8> = (0..16u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(dir.join("flash.bin"), &image).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(CHILD, scenario)
        .env("LD_PRELOAD", shim())
        .env("WIRESPEED_LAB", dir.join("lab.toml"))
        .env("WIRESPEED_TRACE", dir.join("trace.vcd"))
        .env("RUST_BACKTRACE", "0")
        .current_dir(&dir)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "child {scenario}: {:?}\n{text}", out.status);
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
    let trace = std::fs::read_to_string(dir.join("trace.vcd")).unwrap_or_else(|e| panic!("no trace: {e}\n{text}"));
    let same = std::fs::read(dir.join("flash.bin")).unwrap() == image;
    let _ = std::fs::remove_dir_all(&dir);
    (trace, same)
}

/// The row's check in the parent: the child's errnos held (it passed), its
/// bus trace is that of a child that sent nothing, the flash is unchanged.
#[track_caller]
fn nothing_on_the_bus(test: &str) {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let (idle, _) = run_child(test, "idle");
    let (bad, flash_same) = run_child(test, "bad");
    assert_eq!(bad, idle, "bad ioctls put something on the bus");
    assert!(flash_same, "bad ioctls changed the flash");
}

fn open(path: &str) -> i32 {
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR) };
    assert!(fd >= 0, "open {path}: {} (is the shim preloaded?)", std::io::Error::last_os_error());
    fd
}

/// `ioctl(fd, request, arg)`: Ok(return value) or Err(errno).
fn ioctl(fd: i32, request: u64, arg: *mut c_void) -> Result<i32, i32> {
    // SAFETY: the shim (or the kernel) checks `arg`; that is what is tested.
    let r = unsafe { libc::ioctl(fd, request as _, arg) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap())
    } else {
        Ok(r)
    }
}

/// In the child: runs `bad` (the "bad" scenario) or only opens (the "idle"
/// one, the baseline), then closes.
fn in_child(path: &str, bad: impl FnOnce(i32)) {
    let Some(scenario) = std::env::var_os(CHILD) else { return };
    let fd = open(path);
    if scenario == "bad" {
        bad(fd);
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
}

/// A transfer of `len` bytes from `tx` into `rx`.
fn xfer(tx: *const u8, rx: *mut u8, len: u32) -> spi::SpiIocTransfer {
    spi::SpiIocTransfer { tx_buf: tx as u64, rx_buf: rx as u64, len, ..Default::default() }
}

/// Write Enable, then a page program of 16 bytes at 0: would change the flash.
const WREN: [u8; 1] = [0x06];
const PROGRAM: [u8; 20] = [0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

#[test]
fn shim_unknown_ioctl_numbers_are_enotty() {
    const TEST: &str = "shim_unknown_ioctl_numbers_are_enotty";
    in_child("/dev/spidev0.0", |fd| {
        let mut word = 0u32;
        let p = (&mut word as *mut u32).cast();
        assert_eq!(ioctl(fd, 0x8004_6b63, p), Err(libc::ENOTTY), "an unknown spidev number");
        assert_eq!(ioctl(fd, 0x5401, p), Err(libc::ENOTTY), "TCGETS");
        assert_eq!(ioctl(fd, u64::from(gpio::GPIO_V2_GET_LINE_IOCTL), p), Err(libc::ENOTTY), "a GPIO ioctl");
    });
    nothing_on_the_bus(TEST);
}

#[test]
fn shim_bad_pointers_are_efault() {
    const TEST: &str = "shim_bad_pointers_are_efault";
    in_child("/dev/spidev0.0", |fd| {
        let bad = 8usize as *mut c_void; // never mapped
        let msg = |n: usize| spi::spi_ioc_message(n) as u64;
        assert_eq!(ioctl(fd, msg(1), std::ptr::null_mut()), Err(libc::EFAULT), "a NULL transfer array");
        assert_eq!(ioctl(fd, msg(1), bad), Err(libc::EFAULT), "an unmapped transfer array");
        assert_eq!(ioctl(fd, spi::SPI_IOC_WR_MAX_SPEED_HZ as u64, bad), Err(libc::EFAULT));
        assert_eq!(ioctl(fd, spi::SPI_IOC_RD_MODE32 as u64, bad), Err(libc::EFAULT));
        // Buffers: Write Enable, then a page program whose TX (or RX) is not
        // there. The whole message is refused, Write Enable included.
        for x2 in [xfer(bad.cast(), std::ptr::null_mut(), 20), xfer(PROGRAM.as_ptr(), bad.cast(), 20)] {
            let mut m = [xfer(WREN.as_ptr(), std::ptr::null_mut(), 1), x2];
            assert_eq!(ioctl(fd, msg(2), m.as_mut_ptr().cast()), Err(libc::EFAULT));
        }
        // RX into read-only memory.
        let mut m = [xfer(PROGRAM.as_ptr(), PROGRAM.as_ptr().cast_mut(), 20)];
        assert_eq!(ioctl(fd, msg(1), m.as_mut_ptr().cast()), Err(libc::EFAULT), "RX into read-only memory");
        // read(2)/write(2) check their buffers too.
        // SAFETY: the shim checks the buffer; that is what is tested.
        let r = unsafe { libc::write(fd, bad, 4) };
        assert_eq!((r, std::io::Error::last_os_error().raw_os_error()), (-1, Some(libc::EFAULT)));
        // SAFETY: as above.
        let r = unsafe { libc::read(fd, bad, 4) };
        assert_eq!((r, std::io::Error::last_os_error().raw_os_error()), (-1, Some(libc::EFAULT)));
    });
    nothing_on_the_bus(TEST);
}

#[test]
fn shim_too_many_transfers_or_a_malformed_size_is_emsgsize_or_einval() {
    const TEST: &str = "shim_too_many_transfers_or_a_malformed_size_is_emsgsize_or_einval";
    in_child("/dev/spidev0.0", |fd| {
        // 511 transfers (the most the size field holds) of 16 bytes: 8176 bytes, over bufsiz (4096).
        let tx = [0x06u8; 16];
        let mut m: Vec<_> = (0..511).map(|_| xfer(tx.as_ptr(), std::ptr::null_mut(), 16)).collect();
        assert_eq!(ioctl(fd, spi::spi_ioc_message(511) as u64, m.as_mut_ptr().cast()), Err(libc::EMSGSIZE));
        // One transfer above bufsiz.
        let big = vec![0x06u8; 5000];
        let mut m = [xfer(big.as_ptr(), std::ptr::null_mut(), 5000)];
        assert_eq!(ioctl(fd, spi::spi_ioc_message(1) as u64, m.as_mut_ptr().cast()), Err(libc::EMSGSIZE));
        // A size that is not a whole number of transfers.
        let mut raw = [0u8; 40];
        assert_eq!(ioctl(fd, 0x4028_6b00, raw.as_mut_ptr().cast()), Err(libc::EINVAL));
    });
    nothing_on_the_bus(TEST);
}

#[test]
fn shim_unsupported_mode_bits_speed_and_word_size_are_einval() {
    const TEST: &str = "shim_unsupported_mode_bits_speed_and_word_size_are_einval";
    in_child("/dev/spidev0.0", |fd| {
        let mut before = 0u32;
        ioctl(fd, spi::SPI_IOC_RD_MODE32 as u64, (&mut before as *mut u32).cast()).unwrap();
        for mut mode in [0x4u32 /* SPI_CS_HIGH: the block cannot */, 1 << 20 /* no such bit */] {
            assert_eq!(ioctl(fd, spi::SPI_IOC_WR_MODE32 as u64, (&mut mode as *mut u32).cast()), Err(libc::EINVAL));
        }
        let mut after = 0u32;
        ioctl(fd, spi::SPI_IOC_RD_MODE32 as u64, (&mut after as *mut u32).cast()).unwrap();
        assert_eq!(after, before, "a refused mode is not kept");
        for mut bits in [12u8, 33] {
            assert_eq!(
                ioctl(fd, spi::SPI_IOC_WR_BITS_PER_WORD as u64, (&mut bits as *mut u8).cast()),
                Err(libc::EINVAL)
            );
        }
        let mut hz = 0u32;
        assert_eq!(ioctl(fd, spi::SPI_IOC_WR_MAX_SPEED_HZ as u64, (&mut hz as *mut u32).cast()), Err(libc::EINVAL));
        // A message in a word size or at a speed the controller cannot do.
        for (bits, speed) in [(12u8, 0u32), (8, 1)] {
            let mut m = [spi::SpiIocTransfer {
                bits_per_word: bits,
                speed_hz: speed,
                ..xfer(WREN.as_ptr(), std::ptr::null_mut(), 1)
            }];
            assert_eq!(
                ioctl(fd, spi::spi_ioc_message(1) as u64, m.as_mut_ptr().cast()),
                Err(libc::EINVAL),
                "{bits} bits at {speed} Hz"
            );
        }
    });
    nothing_on_the_bus(TEST);
}

#[test]
fn shim_bad_gpio_line_requests_are_einval() {
    const TEST: &str = "shim_bad_gpio_line_requests_are_einval";
    in_child("/dev/gpiochip0", |fd| {
        let request = |offsets: &[u32], flags: u64| {
            // SAFETY: a plain C struct of integers: all zeros is valid.
            let mut r: gpio::gpio_v2_line_request = unsafe { std::mem::zeroed() };
            r.offsets[..offsets.len()].copy_from_slice(offsets);
            r.num_lines = offsets.len() as u32;
            r.config.flags = flags;
            r.consumer[..4].copy_from_slice(b"test");
            let e =
                ioctl(fd, u64::from(gpio::GPIO_V2_GET_LINE_IOCTL), (&mut r as *mut gpio::gpio_v2_line_request).cast());
            (e, r.fd)
        };
        let (input, output) = (gpio::GPIO_V2_LINE_FLAG_INPUT, gpio::GPIO_V2_LINE_FLAG_OUTPUT);
        assert_eq!(request(&[99], output).0, Err(libc::EINVAL), "an offset beyond the chip's 32 lines");
        assert_eq!(request(&[], output).0, Err(libc::EINVAL), "no lines");
        assert_eq!(request(&[2], input | output).0, Err(libc::EINVAL), "input and output");
        assert_eq!(
            request(&[2], output | gpio::GPIO_V2_LINE_FLAG_EDGE_RISING).0,
            Err(libc::EINVAL),
            "edges on an output"
        );
        assert_eq!(
            request(&[2], output | gpio::GPIO_V2_LINE_FLAG_OPEN_DRAIN | gpio::GPIO_V2_LINE_FLAG_OPEN_SOURCE).0,
            Err(libc::EINVAL)
        );
        assert_eq!(request(&[2], 1 << 40).0, Err(libc::EINVAL), "no such flag");
        // Line 2 (LED) is still free and an input: nothing was requested or driven.
        // SAFETY: as above.
        let mut info: gpio::gpio_v2_line_info = unsafe { std::mem::zeroed() };
        info.offset = 2;
        ioctl(fd, u64::from(gpio::GPIO_V2_GET_LINEINFO_IOCTL), (&mut info as *mut gpio::gpio_v2_line_info).cast())
            .unwrap();
        assert_eq!(info.flags & (gpio::GPIO_V2_LINE_FLAG_USED | output), 0, "flags {:#x}", info.flags);
    });
    nothing_on_the_bus(TEST);
}

//! Real programs on lab devices through the shim (`wirespeed lab run`):
//! Debian's flashrom and libgpiod tools, PyPI's py-spidev and python gpiod,
//! on the repository's `examples/lab.toml`. `scripts/test` installs the
//! clients (apt and a virtualenv in `target/shim-venv`) and builds the
//! shim before the tests run; a missing client fails its test with the
//! command that installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FLASH_SIZE: usize = 16 << 20;

/// A fresh working directory with the example board in it.
fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirespeed-shim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab.toml");
    std::fs::copy(example, dir.join("lab.toml")).unwrap();
    dir
}

/// Runs `program args` under `wirespeed lab run` in `dir`.
fn lab_run(dir: &Path, program: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["lab", "run", "--config", "lab.toml", "--", program])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run wirespeed: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not served by the lab"), "{program} used an ioctl the shim lacks:\n{stderr}");
    out
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn require(program: &str, install: &str) -> String {
    let found = Command::new("sh").args(["-c", &format!("command -v {program}")]).output().unwrap();
    assert!(found.status.success(), "{program} is not installed: {install} (scripts/test does this)");
    String::from_utf8_lossy(&found.stdout).trim().to_owned()
}

/// The virtualenv's python with py-spidev and gpiod.
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/shim-venv/bin/python3");
    assert!(venv.exists(), "{} is missing: python3 -m venv target/shim-venv && target/shim-venv/bin/pip install spidev gpiod (scripts/test does this)", venv.display());
    venv
}

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn flashrom_probes_reads_writes_and_verifies_the_lab_w25q128jv() {
    let flashrom = require("flashrom", "apt-get install flashrom");
    let dir = workdir("flashrom");
    let before = pseudo_random(FLASH_SIZE, 11);
    std::fs::write(dir.join("flash.bin"), &before).unwrap();
    let prog = "linux_spi:dev=/dev/spidev0.0,spispeed=20000";

    let probe = lab_run(&dir, &flashrom, &["-p", prog, "-c", "W25Q128.V"]);
    assert!(probe.status.success(), "probe: {}", text(&probe));
    assert!(
        String::from_utf8_lossy(&probe.stdout).contains("Found Winbond flash chip \"W25Q128.V\""),
        "probe: {}",
        text(&probe)
    );

    let read = lab_run(&dir, &flashrom, &["-p", prog, "-c", "W25Q128.V", "-r", "read.bin"]);
    assert!(read.status.success(), "read: {}", text(&read));
    assert!(std::fs::read(dir.join("read.bin")).unwrap() == before, "flashrom -r differs from the lab image");

    // A new image differing in three scattered 4 KiB sectors (flashrom erases and writes only those).
    let mut new = before.clone();
    for (i, sector) in [3usize, 700, 4095].into_iter().enumerate() {
        let fill = pseudo_random(4096, 100 + i as u64);
        new[sector * 4096..(sector + 1) * 4096].copy_from_slice(&fill);
    }
    std::fs::write(dir.join("new.bin"), &new).unwrap();
    let write = lab_run(&dir, &flashrom, &["-p", prog, "-c", "W25Q128.V", "-w", "new.bin"]);
    assert!(write.status.success(), "write: {}", text(&write));
    let verify = lab_run(&dir, &flashrom, &["-p", prog, "-c", "W25Q128.V", "-v", "new.bin"]);
    assert!(verify.status.success(), "verify: {}", text(&verify));
    assert!(std::fs::read(dir.join("flash.bin")).unwrap() == new, "the lab image is not the written file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn py_spidev_talks_to_the_loopback_and_reads_the_nor_jedec_id() {
    let dir = workdir("pyspidev");
    let script = r#"
import spidev
lb = spidev.SpiDev()
lb.open(0, 1)
lb.mode = 3
assert lb.mode == 3, lb.mode
lb.mode = 0
lb.max_speed_hz = 1000000
assert lb.max_speed_hz == 1000000
assert lb.xfer2([1, 2, 3, 0xff]) == [1, 2, 3, 0xff]
assert lb.readbytes(4) == [0, 0, 0, 0]
lb.writebytes2(bytes(range(256)) * 20)  # 5120 bytes: more than one bufsiz
lb.close()
nor = spidev.SpiDev()
nor.open(0, 0)
nor.max_speed_hz = 20000000
jedec = nor.xfer2([0x9f, 0, 0, 0])[1:]
assert jedec == [0xef, 0x40, 0x18], jedec
print("ok", jedec)
"#;
    let py = python();
    let out = lab_run(&dir, py.to_str().unwrap(), &["-c", script]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn libgpiod_tools_detect_describe_set_get_and_monitor_the_lab_chip() {
    let gpiodetect = require("gpiodetect", "apt-get install gpiod");
    let dir = workdir("gpiod-tools");
    let out = lab_run(&dir, &gpiodetect, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gpiochip0 [wirespeed-lab] (32 lines)"), "{}", text(&out));

    let out = lab_run(&dir, "gpioinfo", &["gpiochip0"]);
    let info = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success() && info.contains("\"TICK\"") && info.lines().count() == 33, "{}", text(&out));

    let out = lab_run(&dir, "gpioset", &["gpiochip0", "4=1", "5=0"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = lab_run(&dir, "gpioget", &["gpiochip0", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "line 1 (BUTTON) is held high: {}", text(&out));

    let out = lab_run(&dir, "gpiomon", &["--num-events=4", "--format=%e %s %n", "gpiochip0", "0"]);
    assert!(out.status.success(), "{}", text(&out));
    let events: Vec<(u8, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].parse().unwrap(), f[1].parse::<f64>().unwrap() + f[2].parse::<f64>().unwrap() * 1e-9)
        })
        .collect();
    assert_eq!(events.len(), 4, "{}", text(&out));
    for w in events.windows(2) {
        assert_ne!(w[0].0, w[1].0, "a toggling line alternates rising and falling: {}", text(&out));
        let gap = w[1].1 - w[0].1;
        assert!((0.009..0.011).contains(&gap), "edges 10 ms apart, got {gap} s: {}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_gpiod_requests_lines_sets_values_and_reads_edge_events() {
    let dir = workdir("pygpiod");
    let script = r#"
import gpiod
from datetime import timedelta
from gpiod.line import Direction, Value, Edge
assert gpiod.is_gpiochip_device("/dev/gpiochip0")
with gpiod.Chip("/dev/gpiochip0") as chip:
    info = chip.get_info()
    assert info.num_lines == 32 and info.label == "wirespeed-lab", info
    assert chip.line_offset_from_id("TICK") == 0
with gpiod.request_lines("/dev/gpiochip0", consumer="shim-test", config={
        5: gpiod.LineSettings(direction=Direction.OUTPUT, output_value=Value.ACTIVE),
        0: gpiod.LineSettings(edge_detection=Edge.BOTH)}) as req:
    assert req.get_value(5) == Value.ACTIVE
    req.set_value(5, Value.INACTIVE)
    assert req.get_value(5) == Value.INACTIVE
    events = []
    while len(events) < 4:
        assert req.wait_edge_events(timedelta(seconds=1)), "no edge within 1 s"
        events += req.read_edge_events()
    kinds = [e.event_type for e in events]
    assert all(a != b for a, b in zip(kinds, kinds[1:])), kinds
    gaps = [(b.timestamp_ns - a.timestamp_ns) / 1e6 for a, b in zip(events, events[1:])]
    assert all(9 < g < 11 for g in gaps), gaps
    assert [e.line_seqno for e in events] == sorted(e.line_seqno for e in events)
    # Readiness is the kernel's: epoll and select on the request's descriptor.
    import select
    ep = select.epoll()
    ep.register(req.fd, select.EPOLLIN)
    assert ep.poll(1.0), "epoll saw no edge within 1 s"
    assert select.select([req.fd], [], [], 1.0)[0] == [req.fd]
print("ok")
"#;
    let py = python();
    let out = lab_run(&dir, py.to_str().unwrap(), &["-c", script]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mistake_in_the_board_file_fails_the_program_s_open_and_says_where() {
    let dir = workdir("bad-board");
    let board = std::fs::read_to_string(dir.join("lab.toml")).unwrap().replace("\"w25q128jv\"", "\"w25q999\"");
    std::fs::write(dir.join("lab.toml"), board).unwrap();
    // The CLI checks the file first and refuses to start the program.
    let out = lab_run(&dir, "true", &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lab.toml:"), "{}", text(&out));
    // A program preloaded by hand gets ENOENT and one line naming the file's line.
    let py = python();
    let shim = Path::new(env!("CARGO_BIN_EXE_wirespeed")).with_file_name("libwirespeed_shim.so");
    let out = Command::new(py)
        .args([
            "-c",
            "import os\ntry:\n    os.open('/dev/spidev0.0', os.O_RDWR)\nexcept FileNotFoundError:\n    print('ENOENT')",
        ])
        .env("LD_PRELOAD", &shim)
        .env("WIRESPEED_LAB", dir.join("lab.toml"))
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ENOENT"), "{}", text(&out));
    assert_eq!(err.lines().filter(|l| l.contains("wirespeed-shim")).count(), 1, "{}", text(&out));
    assert!(err.contains("lab.toml:") && err.contains("w25q999"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_ioctl_the_lab_lacks_is_enotty_with_one_line_per_request_number() {
    let dir = workdir("enotty");
    let script = r#"
import fcntl, os, errno
fd = os.open("/dev/spidev0.1", os.O_RDWR)
for request in (0x80046b63, 0x80046b63, 0x5401):
    try:
        fcntl.ioctl(fd, request, bytearray(4))
        raise SystemExit("served")
    except OSError as e:
        assert e.errno == errno.ENOTTY, e
print("ok")
"#;
    let out = Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["lab", "run", "--config", "lab.toml", "--", "python3", "-c", script])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"), "{}", text(&out));
    assert_eq!(err.matches("not served by the lab").count(), 2, "one line per request number: {}", text(&out));
    assert!(err.contains("0x80046b63") && err.contains("0x00005401"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lab_run_trace_records_the_bus_traffic_of_the_program() {
    let dir = workdir("trace");
    let script = "import os\nfd = os.open('/dev/spidev0.1', os.O_RDWR)\nos.write(fd, b'\\x5a' * 8)\n";
    let out = Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["lab", "run", "--config", "lab.toml", "--trace", "bus.vcd", "--", "python3", "-c", script])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let vcd = std::fs::read_to_string(dir.join("bus.vcd")).unwrap_or_default();
    assert!(vcd.contains("$enddefinitions"), "{}", text(&out));
    // 8 bytes on CS 1: 64 rising clock edges.
    let clock_ups = vcd.lines().filter(|l| *l == "1c").count();
    assert_eq!(clock_ups, 64, "{vcd}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lab_run_exits_with_the_program_s_status() {
    let dir = workdir("status");
    let out = Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["lab", "run", "--config", "lab.toml", "--", "sh", "-c", "exit 7"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

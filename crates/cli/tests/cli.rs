//! The `wirespeed` command's surface: bad arguments get a clear error and a
//! non-zero exit (never a panic), `--json` prints one JSON object, `--help`
//! shows defaults. Runs are tiny; `--cpus-may-sleep` keeps them from
//! touching the host's PM QoS.

mod common;

use common::wirespeed;

/// Serializes the tests that run long, CPU-bound benchmarks (flash, shim),
/// so that on two cores they do not time each other.
fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asserts a clean refusal: exit code 1 or 2, no panic, a message on stderr
/// that contains every one of `needles`.
#[track_caller]
fn refused(args: &[&str], needles: &[&str]) {
    let out = wirespeed(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: status {:?}, stderr:\n{err}", out.status);
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}:\n{err}");
    }
    assert!(out.stdout.is_empty(), "{args:?}: stdout not empty: {}", String::from_utf8_lossy(&out.stdout));
}

/// Runs a command that must succeed with `--json` and returns its one object.
#[track_caller]
fn json(args: &[&str]) -> serde_json::Value {
    let out = wirespeed(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: status {:?}, stderr:\n{err}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON object: {e}"))
}

const SPI_BASE: &[&str] = &["bench", "spi", "--cpus-may-sleep", "--no-ablation", "--count", "20", "--rounds", "2"];
/// `bench spi` without ablation or the thread comparison, and no message count.
const SPI_UNCOUNTED: &[&str] = &["bench", "spi", "--cpus-may-sleep", "--no-ablation", "--threads", "0"];
const SPI: &[&str] =
    &["bench", "spi", "--cpus-may-sleep", "--no-ablation", "--threads", "0", "--count", "20", "--rounds", "2"];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[test]
fn a_message_size_too_large_to_hold_is_refused_not_a_panic() {
    let out = std::env::temp_dir().join("wirespeed-cli-test-size.vcd");
    for size in ["18446744073709551615", "1000000000000", "65537"] {
        refused(&with(SPI, &["--size", size]), &[size, "65536"]);
        refused(&["lab", "trace", "--count", "2", "--size", size, "-o", out.to_str().unwrap()], &[size, "65536"]);
    }
    // Within the size limit, but more than a trace holds.
    refused(
        &["lab", "trace", "--count", "128", "--size", "65536", "-o", out.to_str().unwrap()],
        &["128", "65536", "127"],
    );
    let j = json(&with(SPI, &["--size", "65536", "--hz", "100000000", "--json"]));
    assert_eq!(j["size_bytes"], 65536);
}

#[test]
fn lab_trace_refuses_zero_size_or_count_instead_of_recording_something_else() {
    let out = std::env::temp_dir().join("wirespeed-cli-test-zero.vcd");
    let out = out.to_str().unwrap();
    refused(&["lab", "trace", "--count", "2", "--size", "0", "-o", out], &["size 0", "at least 1"]);
    refused(&["lab", "trace", "--count", "0", "-o", out], &["'0'", "--count", "1.."]);
}

#[test]
fn spi_async_comparison_refuses_zero_messages_and_more_threads_than_it_can_start() {
    // 0 messages per thread measured nothing and reported a utilization of 0.
    refused(&with(SPI_BASE, &["--threads", "2", "--thread-msgs", "0"]), &["0 messages per thread", "at least 1"]);
    // A thread count the system cannot start aborted the process.
    refused(&with(SPI_BASE, &["--threads", "100000", "--thread-msgs", "1"]), &["100000", "256"]);
    let j = json(&with(SPI_BASE, &["--threads", "2", "--thread-msgs", "50", "--json"]));
    assert!(j["async"]["sync"]["msgs_per_s"].as_f64().is_some_and(|m| m > 0.0), "{j}");
    // The physical limit beside the time taken: 2 × 50 messages of 72 bits at 20 MHz.
    let a = &j["async"]["async"];
    let (wire, elapsed) = (a["wire_s"].as_f64().unwrap(), a["elapsed_s"].as_f64().unwrap());
    assert!((wire - 100.0 * 72.0 / 20e6).abs() < 1e-6 && elapsed >= wire, "{j}");
}

#[test]
fn spi_refuses_fewer_messages_than_rounds_instead_of_running_others() {
    let spi = |count, rounds| with(SPI_UNCOUNTED, &["--count", count, "--rounds", rounds]);
    // 5 messages in 10 rounds ran 10 (one per round) and reported 5.
    refused(&spi("5", "10"), &["5 messages", "10 rounds"]);
    let j = json(&with(&spi("25", "10"), &["--json"]));
    assert_eq!((j["msgs_per_policy"].as_u64(), j["rounds"].as_u64()), (Some(25), Some(10)));
}

#[test]
fn delay_refuses_more_iterations_than_it_can_hold() {
    // Each iteration's time is kept: these panicked ("capacity overflow") or
    // aborted on a failed allocation.
    for n in ["18446744073709551615", "100000000000"] {
        refused(&["bench", "delay", "--cpus-may-sleep", "--iterations", n], &[n, "1000000"]);
    }
}

#[test]
fn canecho_refuses_a_gap_too_long_to_count_in_ns() {
    // gap_us × 1000 wrapped in a release build: this ran with a gap of 384 ns.
    refused(
        &[
            "bench",
            "canecho",
            "--cpus-may-sleep",
            "--frames",
            "2",
            "--load-frames",
            "0",
            "--gap-us",
            "18446744073709552",
        ],
        &["--gap-us 18446744073709552"],
    );
}

#[test]
fn regmap_names_the_policies_it_knows_when_refusing_one() {
    refused(
        &["bench", "regmap", "--cpus-may-sleep", "--samples", "1", "--rounds", "1", "--policy", "bogus"],
        &["\"bogus\"", "fast", "classic"],
    );
}

#[test]
fn regmap_wire_times_are_at_the_clock_the_controller_runs() {
    // 60 MHz is not a divider of the lab's clock: the bus runs slower, and
    // the wire time (the physical limit) must be the slower clock's, as spi's is.
    let spi = json(&with(SPI, &["--size", "3", "--hz", "60000000", "--json"]));
    let spi_wire = spi["fast"]["wire_us_per_msg"].as_f64().unwrap();
    let j = json(&[
        "bench",
        "regmap",
        "--cpus-may-sleep",
        "--samples",
        "1",
        "--rounds",
        "3",
        "--speed-hz",
        "60000000",
        "--json",
    ]);
    // An uncached read is 3 bytes on the wire.
    assert_eq!(j["uncached_wire_us"].as_f64(), Some(spi_wire), "{j}");
    assert!(j["uncached_wire_us"].as_f64().unwrap() > 24.0 / 60.0, "{j}");
}

#[test]
fn canecho_help_shows_every_default_and_unit() {
    use wirespeed_bench::canecho::CanechoOptions;
    let out = wirespeed(&["bench", "canecho", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let (d, q) = (CanechoOptions::default(), CanechoOptions::quick());
    for (flag, default) in [
        ("--frames", format!("{}", d.frames)),
        ("--len", format!("{}", d.len)),
        ("--gap-us", format!("{}", d.gap_us)),
        ("--bitrate", format!("{}", d.bitrate)),
        ("--load-frames", format!("{}", d.load_frames)),
        ("--echo-id-offset", format!("{}", d.echo_id_offset)),
    ] {
        // The option's entry: from its name to the next option's.
        let entry = help.split(&format!("{flag} <")).nth(1).unwrap_or_else(|| panic!("{flag} missing:\n{help}"));
        let entry = entry.split("\n  -").next().unwrap();
        assert!(entry.contains(&format!("[default: {default}")), "{flag} shows no default {default}:\n{entry}");
    }
    assert!(help.contains(&format!("--quick: {}", q.frames)), "{help}");
    assert!(help.contains("bit/s"), "the bit rate's unit:\n{help}");
}

#[test]
fn spi_vcd_to_a_path_that_cannot_be_written_fails_before_the_run() {
    // 2,000,000 messages per policy take a minute or more; the refusal comes first.
    let start = std::time::Instant::now();
    refused(
        &with(SPI_UNCOUNTED, &["--count", "2000000", "--vcd", "/nonexistent-dir/wirespeed.vcd"]),
        &["/nonexistent-dir/wirespeed.vcd"],
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "refused only after {:?}", start.elapsed());
}

#[test]
fn spi_with_options_it_refuses_writes_no_vcd() {
    // The sample trace is written before the run; options the run refuses
    // must not leave a file behind (bad input changes nothing).
    let out = std::env::temp_dir().join(format!("wirespeed-cli-test-refused-{}.vcd", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let vcd = out.to_str().unwrap();
    refused(&with(SPI_UNCOUNTED, &["--count", "5", "--rounds", "10", "--vcd", vcd]), &["5 messages", "10 rounds"]);
    refused(&with(SPI_BASE, &["--threads", "100000", "--thread-msgs", "1", "--vcd", vcd]), &["100000", "256"]);
    assert!(!out.exists(), "a refused run wrote {vcd}");
}

#[test]
fn spi_reports_the_clock_it_ran_beside_the_one_asked() {
    // The lab block's divider makes 200 MHz / 7 = 28.57 MHz of a 30 MHz request.
    let j = json(&with(SPI, &["--hz", "30000000", "--json"]));
    assert_eq!(j["requested_hz"], 30_000_000);
    let clock = j["clock_hz"].as_u64().unwrap();
    assert!(clock < 30_000_000 && clock > 25_000_000, "clock_hz {clock}");
    let wire = j["fast"]["wire_us_per_msg"].as_f64().unwrap();
    let at_clock = 72.0 / clock as f64 * 1e6;
    assert!((wire - at_clock).abs() < 0.002, "wire {wire} µs, 72 bits at {clock} Hz = {at_clock} µs");
}

#[test]
fn list_json_is_one_object_that_lists_the_lab() {
    let j = json(&["list", "--json"]);
    for key in ["spidev", "spi_devices", "gpio_chips", "lab"] {
        assert!(j[key].is_array(), "{key} is not an array: {j}");
    }
    assert!(j["spidev_bufsiz"].is_null() || j["spidev_bufsiz"].as_u64().is_some(), "{j}");
    let lab: Vec<&str> = j["lab"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    for part in ["spi-controller", "gpio-chip", "mcp2518fd", "loopback", "can-bus"] {
        assert!(lab.contains(&part), "the lab lacks {part}: {lab:?}");
    }
    let demo = &j["lab"].as_array().unwrap().iter().find(|p| p["name"] == "mcp2518fd").unwrap()["commands"];
    assert!(demo.as_array().unwrap().iter().any(|c| c == "wirespeed demo"), "{demo}");
    // The table says plainly when there is nothing (this machine's kernel has no spidev).
    let out = wirespeed(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("The lab") && text.contains("wirespeed demo"), "{text}");
    if j["spidev"].as_array().unwrap().is_empty() {
        assert!(text.contains("no /dev/spidev") && text.contains("dtparam=spi=on"), "{text}");
    }
}

#[test]
fn list_reads_a_board_tree_under_root() {
    use std::os::unix::fs::symlink;
    let root = std::env::temp_dir().join(format!("wirespeed-cli-list-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let mk = |rel: &str, content: &[u8]| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    };
    let ln = |from: &str, to: &str| {
        let p = root.join(from);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        symlink(format!("{}{to}", "../".repeat(from.split('/').count() - 1)), p).unwrap();
    };
    let ctrl = "sys/devices/platform/soc/fe204000.spi";
    let (d0, d1) = (format!("{ctrl}/spi_master/spi0/spi0.0"), format!("{ctrl}/spi_master/spi0/spi0.1"));
    std::fs::create_dir_all(root.join("sys/bus/spi/drivers/spidev")).unwrap();
    std::fs::create_dir_all(root.join("sys/bus/spi/drivers/mcp251xfd")).unwrap();
    std::fs::create_dir_all(root.join("sys/bus/platform/drivers/spi-bcm2835")).unwrap();
    mk("sys/firmware/devicetree/base/spi/spidev@0/compatible", b"rohm,dh2228fv\0");
    mk("sys/firmware/devicetree/base/spi/spidev@0/spi-max-frequency", &1_000_000u32.to_be_bytes());
    ln(&format!("{ctrl}/driver"), "sys/bus/platform/drivers/spi-bcm2835");
    ln(&format!("{ctrl}/spi_master/spi0/device"), ctrl);
    ln("sys/class/spi_master/spi0", &format!("{ctrl}/spi_master/spi0"));
    mk(&format!("{d0}/modalias"), b"spi:dh2228fv\n");
    ln(&format!("{d0}/driver"), "sys/bus/spi/drivers/spidev");
    ln(&format!("{d0}/of_node"), "sys/firmware/devicetree/base/spi/spidev@0");
    ln(&format!("{d0}/spidev/spidev0.0/device"), &d0);
    ln("sys/class/spidev/spidev0.0", &format!("{d0}/spidev/spidev0.0"));
    mk(&format!("{d1}/modalias"), b"spi:mcp2518fd\n");
    ln(&format!("{d1}/driver"), "sys/bus/spi/drivers/mcp251xfd");
    ln("sys/bus/spi/devices/spi0.0", &d0);
    ln("sys/bus/spi/devices/spi0.1", &d1);
    mk("sys/module/spidev/parameters/bufsiz", b"65536\n");
    mk("dev/spidev0.0", b"");
    mk("dev/gpiochip0", b"");
    let r = root.to_str().unwrap();

    let j = json(&["list", "--json", "--root", r]);
    assert_eq!(j["spidev_bufsiz"], 65536);
    let n = &j["spidev"][0];
    assert_eq!((n["bus"].as_u64(), n["cs"].as_u64(), n["device"].as_str()), (Some(0), Some(0), Some("spi0.0")), "{n}");
    assert_eq!((n["driver"].as_str(), n["compatible"][0].as_str()), (Some("spidev"), Some("rohm,dh2228fv")), "{n}");
    assert_eq!(n["spi_max_frequency_hz"], 1_000_000);
    assert_eq!(n["controller"]["driver"], "spi-bcm2835");
    assert_eq!(n["node"], "not a device", "a plain file stands in for the node");
    let other = &j["spi_devices"][0];
    assert_eq!((other["name"].as_str(), other["driver"].as_str()), (Some("spi0.1"), Some("mcp251xfd")), "{other}");
    assert!(other["rebind_to_spidev"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "echo spi0.1 > /sys/bus/spi/drivers/mcp251xfd/unbind"));
    assert_eq!(j["spi_devices"].as_array().unwrap().len(), 1, "spidev-bound spi0.0 is listed once, as a node");
    assert!(j["gpio_chips"][0]["error"].as_str().unwrap().contains("no GPIO chip"), "{j}");

    let out = wirespeed(&["list", "--root", r]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "bus 0, chip select 0",
        "compatible rohm,dh2228fv; spi-max-frequency 1000000 Hz",
        "controller spi0: fe204000.spi, driver spi-bcm2835",
        "bufsiz: 65536",
        "echo spidev > /sys/bus/spi/devices/spi0.1/driver_override",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn list_refuses_a_root_that_is_not_a_directory() {
    refused(&["list", "--root", "/nonexistent/wirespeed"], &["--root /nonexistent/wirespeed", "dev/ and sys/"]);
    refused(&["list", "--json", "--root", "/proc/self/status"], &["not a directory"]);
}

/// `wirespeed spi … --json xfer SEGMENT…` on the emulated spidev node.
fn spi_xfer(opts: &[&str], segments: &[&str]) -> serde_json::Value {
    let args: Vec<&str> =
        ["spi", "--dev", "lab-spidev", "--json"].iter().chain(opts).chain(&["xfer"]).chain(segments).copied().collect();
    json(&args)
}

#[test]
fn spi_xfer_on_the_emulated_spidev_node_prints_what_the_loopback_sent_back() {
    let out = wirespeed(&["spi", "--dev", "lab-spidev", "xfer", "9f000000"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row = text.lines().find(|l| l.trim_start().starts_with("0 ")).unwrap_or_else(|| panic!("no row 0:\n{text}"));
    assert_eq!(row.split_whitespace().collect::<Vec<_>>(), ["0", "9f000000", "9f000000"], "{text}");
    assert!(text.contains("ioctls: 1 "), "{text}");

    let j = spi_xfer(&[], &["0x9f_00:00 00"]);
    assert_eq!(
        (j["device"].as_str(), j["hz"].as_u64(), j["mode"].as_u64()),
        (Some("lab-spidev"), Some(1_000_000), Some(0))
    );
    assert_eq!(j["transfers"][0]["tx"], "9f000000");
    assert_eq!(j["transfers"][0]["rx"], "9f000000");
    assert_eq!(j["ioctls"], 1);
    assert_eq!(j["effective_timing"]["speed_hz"], 1_000_000);
}

#[test]
fn spi_xfer_segments_are_one_message_and_a_slash_drops_cs_inside_it() {
    // Two transfers in one CS window: one ioctl, one window.
    let j = spi_xfer(&[], &["9f", "0102"]);
    assert_eq!((j["ioctls"].as_u64(), j["lab_trace"]["cs_windows"].as_u64()), (Some(1), Some(1)), "{j}");
    // A / between them: still one ioctl (the kernel drops CS for its fixed
    // 10 µs), and the lab's bus trace sees two CS windows.
    let j = spi_xfer(&[], &["9f", "/", "0102"]);
    assert_eq!((j["ioctls"].as_u64(), j["lab_trace"]["cs_windows"].as_u64()), (Some(1), Some(2)), "{j}");
    assert_eq!(j["transfers"][0]["cs_change"], true);
    assert_eq!(j["transfers"][1]["rx"], "0102");
    assert_eq!(j["cs_change_gap_ns"]["effective"], 10_000);
    let gap = j["lab_trace"]["cs_inactive_ns"][0].as_u64().unwrap();
    assert!(gap >= 10_000, "CS inactive {gap} ns at the /: {j}");
    // A gap longer than the kernel's: the message is cut there, into two ioctls.
    let j = spi_xfer(&["--cs-change-ns", "30000"], &["9f", "/", "0102"]);
    assert_eq!((j["ioctls"].as_u64(), j["lab_trace"]["cs_windows"].as_u64()), (Some(2), Some(2)), "{j}");
    assert!(j["lab_trace"]["cs_inactive_ns"][0].as_u64().unwrap() >= 30_000, "{j}");
    // --cs-change-ns with no / has nothing to apply to.
    refused(&["spi", "--dev", "lab-spidev", "--cs-change-ns", "5000", "xfer", "9f", "00"], &["--cs-change-ns", "/"]);
}

#[test]
fn spi_xfer_reads_and_writes_and_repeats() {
    let j = spi_xfer(&[], &["w:06", "r:4"]);
    let t = &j["transfers"];
    assert_eq!((t[0]["tx"].as_str(), t[0]["rx"].is_null(), t[0]["kind"].as_str()), (Some("06"), true, Some("write")));
    assert_eq!((t[1]["tx"].as_str(), t[1]["rx"].as_str()), (Some("00000000"), Some("00000000")), "r:4 sends zeros");
    let j = spi_xfer(&["--repeat", "20"], &["30313233"]);
    assert_eq!((j["messages"].as_u64(), j["ioctls"].as_u64()), (Some(20), Some(20)), "{j}");
    assert_eq!(j["transfers"][0]["rx"], "30313233");
    // 32 bits at 1 MHz take 32 µs on the wire.
    assert!(j["timing"]["median_us"].as_f64().is_some_and(|m| m >= 32.0), "{j}");
    // The lab block driven directly: its divider rounds the clock, and there are no ioctls.
    let j = json(&["spi", "--dev", "lab", "--hz", "30000000", "--json", "xfer", "9f00"]);
    assert!(j["ioctls"].is_null() && j["transfers"][0]["rx"] == "9f00", "{j}");
    let hz = j["effective_timing"]["speed_hz"].as_u64().unwrap();
    assert!(hz < 30_000_000, "{j}");
    let out = wirespeed(&["spi", "--dev", "lab", "--hz", "30000000", "xfer", "9f00"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("effective: clock {hz} Hz (asked 30000000 Hz")), "{text}");
}

#[test]
fn spi_xfer_refuses_bad_segments_and_missing_nodes_clearly() {
    let spi = |segments: &[&'static str]| -> Vec<&'static str> {
        ["spi", "--dev", "lab-spidev", "xfer"].iter().chain(segments).copied().collect()
    };
    refused(&spi(&["9f", "9g00"]), &["\"9g00\"", "'g'", "r:N", "w:HEX"]);
    refused(&spi(&["9f0"]), &["\"9f0\"", "odd"]);
    refused(&spi(&["/", "9f"]), &["/ before the first"]);
    refused(&spi(&["9f", "/"]), &["/ after the last"]);
    refused(&spi(&["9f", "/", "/", "00"]), &["two / in a row"]);
    refused(&spi(&["9f", ""]), &["no bytes"]);
    refused(&spi(&["r:0"]), &["\"r:0\"", "1 to"]);
    // A node that is not there: what to do, and where to look.
    refused(&["spi", "--dev", "/dev/spidev9.9", "xfer", "9f"], &["/dev/spidev9.9", "wirespeed list", "lab-spidev"]);
    // Mode bits the device cannot do are refused, not ignored.
    refused(&["spi", "--dev", "lab-spidev", "--cs-high", "xfer", "9f"], &["CS_HIGH"]);
    let help = String::from_utf8_lossy(&wirespeed(&["spi", "--help"]).stdout).into_owned();
    for needle in ["xfer 9f000000", "r:N", "w:HEX", "[default: 1000000]", "--cs-change-ns", "wirespeed list"] {
        assert!(help.contains(needle), "spi --help lacks {needle:?}:\n{help}");
    }
}

/// A per-test temporary directory (removed at the end).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("wirespeed-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn flash_probe_of_a_lab_chip_gives_its_id_and_layout() {
    let j = json(&["flash", "probe", "--lab", "w25q128jv", "--json"]);
    assert_eq!(j["chip"], "W25Q128JV", "{j}");
    assert_eq!(j["jedec_id"], "ef4018", "{j}");
    assert_eq!(j["size_bytes"], 16 << 20, "{j}");
    assert_eq!(j["erase_sizes"][0], 4096, "{j}");
    assert!(j["sfdp_revision"].is_string(), "{j}");
    let out = wirespeed(&["flash", "--lab", "W25Q128JV", "probe"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("ef4018") && text.contains("protection"), "{text}");
}

#[test]
fn flash_write_read_verify_round_trip_on_an_image_backed_lab_chip() {
    let dir = TempDir::new("flash-rt");
    let (image, data, back) = (dir.path("chip.bin"), dir.path("data.bin"), dir.path("back.bin"));
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(37) >> 3) as u8).collect();
    std::fs::write(&data, &bytes).unwrap();
    let lab = format!("w25q128jv:{image}");
    let w = json(&["flash", "--lab", &lab, "write", &data, "--offset", "0x1000", "--length", "5000", "--json"]);
    assert_eq!(w["operation"], "write", "{w}");
    assert_eq!(w["bytes"], 5000, "{w}");
    assert_eq!(w["report"]["verified"], true, "{w}");
    assert!(w["elapsed_s"].is_f64(), "{w}");
    // The image file now holds the data, and the chip reads it back.
    assert_eq!(std::fs::metadata(&image).unwrap().len(), 16 << 20);
    let r = json(&["flash", "--lab", &lab, "read", "-o", &back, "--offset", "4K", "--length", "5000", "--json"]);
    assert_eq!(r["bytes"], 5000, "{r}");
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
    let v = json(&["flash", "--lab", &lab, "verify", &data, "--offset", "0x1000", "--json"]);
    assert_eq!(v["operation"], "verify", "{v}");
    // The same write again finds nothing to do.
    let again = json(&["flash", "--lab", &lab, "write", &data, "--offset", "0x1000", "--json"]);
    let rep = &again["report"];
    assert!(rep["sectors_skipped"] == 2 && rep["pages_programmed"] == 0 && rep["erase_commands"] == 0, "{again}");
    // Elsewhere it differs.
    refused(&["flash", "--lab", &lab, "verify", &data, "--offset", "0x3000"], &["verify failed", "0x3000"]);
}

#[test]
fn flash_refuses_wrong_sizes_unknown_chips_bad_ranges_and_missing_nodes() {
    let dir = TempDir::new("flash-refused");
    let data = dir.path("small.bin");
    std::fs::write(&data, [0u8; 100]).unwrap();
    refused(&["flash", "--lab", "w25q128jv", "write", &data], &["100 bytes", "--offset", "--length"]);
    refused(&["flash", "--lab", "nosuchchip", "probe"], &["nosuchchip", "W25Q128JV", "MX25L12835F", "SST25VF016B"]);
    refused(&["flash", "--lab", "w25q128jv", "erase", "--offset", "0x800", "--length", "4K"], &["4096", "multiples"]);
    refused(&["flash", "--lab", "w25q128jv", "erase"], &["--offset", "--chip"]);
    refused(&["flash", "--lab", "w25q128jv", "read", "-o", &dir.path("x"), "--offset", "16M"], &["beyond", "0xffffff"]);
    refused(&["flash", "--lab", "w25q128jv", "verify", &dir.path("missing.bin")], &["missing.bin"]);
    refused(&["flash", "probe"], &["--dev", "--lab"]);
    refused(&["flash", "--dev", "/dev/spidev9.9", "probe"], &["/dev/spidev9.9", "wirespeed list", "--lab"]);
    let help = String::from_utf8_lossy(&wirespeed(&["flash", "--help"]).stdout).into_owned();
    for needle in ["--lab CHIP:IMAGE", "write firmware.bin --offset", "erase --chip", "Ctrl-C", "--json"] {
        assert!(help.contains(needle), "flash --help lacks {needle:?}:\n{help}");
    }
}

#[test]
fn flash_erase_stops_at_a_sector_boundary_on_ctrl_c_and_says_how_to_resume() {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(["flash", "--lab", "w25q128jv", "erase", "--offset", "0", "--length", "4M"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let killed = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted") && err.contains("resume with --offset 0x"), "{err}");
}

#[test]
fn flash_protected_ranges_are_refused_until_unprotect() {
    // The SST25VF016B powers up with every block protected.
    let probe = json(&["flash", "--lab", "sst25vf016b", "probe", "--json"]);
    assert_eq!(probe["protection"]["protected"], true, "{probe}");
    refused(
        &["flash", "--lab", "sst25vf016b", "erase", "--offset", "0", "--length", "4K"],
        &["block-protected", "--unprotect"],
    );
    let e =
        json(&["flash", "--lab", "sst25vf016b", "erase", "--offset", "0", "--length", "4K", "--unprotect", "--json"]);
    assert_eq!(e["unprotected"], true, "{e}");
    let dir = TempDir::new("flash-sst");
    let data = dir.path("data.bin");
    std::fs::write(&data, [0x5au8; 300]).unwrap();
    let w = json(&["flash", "--lab", "sst25vf016b", "write", &data, "--offset", "0x10", "--unprotect", "--json"]);
    assert!(w["report"]["verified"] == true && w["unprotected"] == true, "{w}");
}

#[test]
fn bench_flash_without_flashrom_keeps_its_keys_and_nulls_flashrom_s() {
    let _alone = heavy();
    let j = json(&[
        "bench",
        "flash",
        "--cpus-may-sleep",
        "--no-flashrom",
        "--size",
        "65536",
        "--time-scale",
        "0.01",
        "--json",
    ]);
    let f = &j["flash"];
    assert!(f["elapsed_s"].is_number() && f["partial"]["ratio_vs_full"].is_number(), "{j}");
    for k in ["flashrom_s", "flashrom_ratio", "flashrom_erase_kib"] {
        assert!(f[k].is_null(), "{k}: {j}");
    }
}

#[test]
fn bench_shim_refuses_zero_rounds_or_messages() {
    refused(&["bench", "shim", "--cpus-may-sleep", "--rounds", "0"], &["--rounds"]);
    refused(&["bench", "shim", "--cpus-may-sleep", "--count", "0"], &["--count"]);
}

/// The shim built next to the binary under test (`cargo build --release -p
/// wirespeed-shim`; scripts/test does this before the tests).
fn require_shim() {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"));
    let shim = exe.with_file_name("libwirespeed_shim.so");
    assert!(
        shim.is_file(),
        "{} is missing: cargo build --release -p wirespeed-shim (scripts/test does this)",
        shim.display()
    );
}

#[test]
fn bench_shim_times_c_python_and_in_process_ioctls() {
    let _alone = heavy();
    require_shim();
    let j = json(&["bench", "shim", "--cpus-may-sleep", "--rounds", "3", "--count", "200", "--json"]);
    let s = &j["shim"];
    for k in ["ioctl_ns", "python_ioctl_ns", "inprocess_ns", "overhead_ns"] {
        assert!(s[k].as_f64().is_some_and(|x| x.is_finite()), "{k}: {j}");
    }
    assert_eq!(s["ioctl_ns_rounds"].as_array().map(Vec::len), Some(3), "{j}");
    assert!(s["inprocess_ns"].as_f64() > Some(0.0), "{j}");
}

#[test]
fn bench_flash_times_flashrom_on_the_same_chip_through_the_shim() {
    let _alone = heavy();
    require_shim();
    if std::process::Command::new("sh")
        .args(["-c", "command -v flashrom || test -x /usr/sbin/flashrom"])
        .output()
        .map_or(true, |o| !o.status.success())
    {
        panic!("flashrom is not installed: apt-get install flashrom (scripts/test does this)");
    }
    let j = json(&["bench", "flash", "--cpus-may-sleep", "--size", "65536", "--time-scale", "0.01", "--json"]);
    let f = &j["flash"];
    assert!(f["flashrom_s"].as_f64().is_some_and(|x| x > 0.0), "{j}");
    assert!(f["flashrom_ratio"].is_number(), "{j}");
    assert_eq!(f["flashrom_erase_kib"], 4, "flashrom 1.3 erases 4 KiB blocks: {j}");
}

//! `--plot FILE.svg|png` on the benches: the file is written with every
//! series' label, the JSON names it, and a file name that is neither .svg
//! nor .png is refused before the run with a clear message and exit code 2.
//! Runs are tiny; `--cpus-may-sleep` keeps them from touching the host's PM QoS.

use std::path::PathBuf;
mod common;

use common::wirespeed;

/// A file name in a fresh temporary folder, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        let dir = std::env::temp_dir().join(format!("wirespeed-plot-cli-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        TempFile(dir.join(name))
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            std::fs::remove_dir_all(dir).ok();
        }
    }
}

/// Runs a bench that must succeed with `--json`, returns its object and the SVG it wrote.
#[track_caller]
fn plotted(args: &[&str], file: &TempFile) -> (serde_json::Value, String) {
    let mut all = args.to_vec();
    all.extend(["--plot", file.arg(), "--json", "--cpus-may-sleep"]);
    let out = wirespeed(&all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{all:?}: status {:?}, stderr:\n{err}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let svg = std::fs::read_to_string(&file.0).unwrap_or_else(|e| panic!("{all:?}: no plot written: {e}"));
    (v, svg)
}

#[track_caller]
fn assert_has(svg: &str, texts: &[&str]) {
    for t in texts {
        assert!(svg.contains(t), "the SVG lacks {t:?}");
    }
}

#[test]
fn bench_delay_plots_nanosleep_against_delay() {
    let file = TempFile::new("delay.svg");
    let (v, svg) = plotted(&["bench", "delay", "--iterations", "64"], &file);
    assert_eq!(v["plot"].as_str(), Some(file.arg()));
    assert!(v["normal"]["delay_100us"]["median_us"].is_number(), "the figures are all there: {v}");
    assert_has(
        &svg,
        &[
            "<svg",
            "bench delay: 100 µs waits",
            "nanosleep(100 µs) (classic): p50",
            "wirespeed delay(100 µs) (fast): p50",
            "bare 100 µs spin (reference): p50",
            "wire limit 100 µs",
            "\np99.9 ",
        ],
    );
}

#[test]
fn bench_spi_plots_every_policy_with_the_wire_time() {
    let file = TempFile::new("spi.svg");
    let args = ["bench", "spi", "--count", "400", "--rounds", "2", "--no-ablation", "--threads", "0"];
    let (v, svg) = plotted(&args, &file);
    assert_eq!(v["plot"].as_str(), Some(file.arg()));
    let wire = v["fast"]["wire_us_per_msg"].as_f64().expect("wire time");
    assert_has(
        &svg,
        &[
            "classic (Linux 5.18): p50",
            "linux-6.9: p50",
            "fast: p50",
            "latency per message (µs)",
            &format!("wire limit {wire:.2} µs"),
        ],
    );
    // Every sample counted; samples past the axis' end (a host stall's
    // tail) are named after the count: "(n = 400, 3 past …)".
    assert!(svg.contains("(n = 400)") || svg.contains("(n = 400, "), "the SVG lacks \"(n = 400\": {svg}");
}

#[test]
fn a_png_is_written_too() {
    let file = TempFile::new("delay.png");
    let out = wirespeed(&["bench", "delay", "--iterations", "16", "--plot", file.arg(), "--cpus-may-sleep"]);
    assert!(out.status.success(), "stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&file.0).expect("the PNG");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains(&format!("latency histogram: {}", file.arg())), "{table}");
}

#[test]
fn a_bad_extension_is_refused_before_the_run() {
    let file = TempFile::new("latency.jpg");
    for bench in [
        &["bench", "delay", "--iterations", "16"][..],
        &["bench", "spi", "--count", "20"],
        &["bench", "canecho", "--quick"],
    ] {
        let mut args = bench.to_vec();
        args.extend(["--plot", file.arg(), "--cpus-may-sleep"]);
        let out = wirespeed(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: stderr:\n{err}");
        assert!(err.contains("must end in .svg or .png"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty(), "{args:?} ran: {}", String::from_utf8_lossy(&out.stdout));
        assert!(!file.0.exists());
    }
    let out = wirespeed(&["bench", "delay", "--plot", "/no/such/folder/x.svg", "--cpus-may-sleep"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no folder /no/such/folder"));
}

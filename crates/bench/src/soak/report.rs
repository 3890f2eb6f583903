//! A soak run's result: one JSON object (`{"scenario":"soak","soak":{…}}`,
//! so `soak.lost` and `soak.latency_us.p99` resolve) or a table.

use super::latency::LatencySummary;
use crate::stats::round;
use crate::table::Table;
use serde_json::{json, Map, Value};

/// Injected and reported faults of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultCount {
    /// The kind's name (`transfer_error`, …).
    pub kind: &'static str,
    /// Faults that took effect.
    pub injected: u64,
    /// Faults the software above reported.
    pub reported: u64,
}

/// What a soak run found.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// Worker threads.
    pub threads: usize,
    /// Messages completed (SPI messages and GPIO toggles), with or without error.
    pub messages: u64,
    /// Of them, completed with an error.
    pub failed: u64,
    /// Sent and never completed.
    pub lost: u64,
    /// Completed twice (or an extra GPIO edge).
    pub duplicated: u64,
    /// Completed out of order, summed over devices.
    pub reordered: u64,
    /// Completed out of order, per device name.
    pub reordered_per_device: Vec<(String, u64)>,
    /// Bad echoes, register read backs and flash pages with no injected fault to blame.
    pub corrupted: u64,
    /// Panics.
    pub untyped_errors: u64,
    /// Typed errors of a kind no injected fault causes.
    pub unexpected_errors: u64,
    /// Faults that took effect.
    pub faults_injected: u64,
    /// Faults reported (each once).
    pub faults_reported: u64,
    /// Both, per kind.
    pub faults_by_kind: Vec<FaultCount>,
    /// Bad echoes read from a stuck device (the stuck-device fault seen).
    pub stuck_reads: u64,
    /// Pump stalls that fired (no error by design; not in the fault counts).
    pub pump_stalls: u64,
    /// SPI NOR page programs by the flash worker (beside `messages`, not in it).
    pub flash_writes: u64,
    /// SPI NOR pages read back intact after their program.
    pub flash_verified: u64,
    /// Latency of successful SPI messages.
    pub latency_us: LatencySummary,
    /// Resident memory growth from after warm-up to the end, in KiB; `None`
    /// (null in JSON) when `/proc` gave no reading.
    pub rss_growth_kib: Option<i64>,
    /// Wall time of the run.
    pub elapsed_s: f64,
}

impl SoakReport {
    /// Whether every invariant holds: nothing lost, duplicated, reordered,
    /// corrupted, no untyped or unexpected error, every injected fault
    /// reported once (whether faults were injected at all is the caller's
    /// to judge: `faults_injected`).
    pub fn clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.reordered == 0
            && self.corrupted == 0
            && self.untyped_errors == 0
            && self.unexpected_errors == 0
            && self.faults_reported == self.faults_injected
    }

    /// The JSON object.
    pub fn to_json(&self) -> Value {
        let per_device: Map<String, Value> =
            self.reordered_per_device.iter().map(|(n, c)| (n.clone(), json!(c))).collect();
        let by_kind: Map<String, Value> = self
            .faults_by_kind
            .iter()
            .map(|f| (f.kind.to_owned(), json!({"injected": f.injected, "reported": f.reported})))
            .collect();
        let l = &self.latency_us;
        json!({
            "scenario": "soak",
            "soak": {
                "threads": self.threads,
                "messages": self.messages,
                "failed": self.failed,
                "lost": self.lost,
                "duplicated": self.duplicated,
                "reordered": self.reordered,
                "reordered_per_device": per_device,
                "corrupted": self.corrupted,
                "untyped_errors": self.untyped_errors,
                "unexpected_errors": self.unexpected_errors,
                "faults_injected": self.faults_injected,
                "faults_reported": self.faults_reported,
                "faults_by_kind": by_kind,
                "stuck_reads": self.stuck_reads,
                "pump_stalls": self.pump_stalls,
                "flash_writes": self.flash_writes,
                "flash_verified": self.flash_verified,
                "latency_us": {
                    "p50": round(l.p50_us, 2),
                    "p99": round(l.p99_us, 2),
                    "p99.9": round(l.p999_us, 2),
                    "max": round(l.max_us, 2),
                },
                "rss_growth_kib": self.rss_growth_kib,
                "elapsed_s": round(self.elapsed_s, 3),
                "messages_per_s": round(self.messages as f64 / self.elapsed_s.max(1e-9), 0),
                "clean": self.clean(),
            }
        })
    }

    /// The human-readable form.
    pub fn table(&self) -> String {
        let mut t = Table::new(&["soak", "value"]);
        let mut row = |k: &str, v: String| {
            t.row(vec![k.to_owned(), v]);
        };
        row("messages", self.messages.to_string());
        row("failed (typed errors)", self.failed.to_string());
        row("lost", self.lost.to_string());
        row("duplicated", self.duplicated.to_string());
        row("reordered", self.reordered.to_string());
        row("corrupted", self.corrupted.to_string());
        row("untyped errors", self.untyped_errors.to_string());
        row("unexpected errors", self.unexpected_errors.to_string());
        row("faults injected / reported", format!("{} / {}", self.faults_injected, self.faults_reported));
        for f in &self.faults_by_kind {
            row(&format!("  {}", f.kind), format!("{} / {}", f.injected, f.reported));
        }
        row("stuck reads", self.stuck_reads.to_string());
        row("pump stalls", self.pump_stalls.to_string());
        row("flash writes / verified", format!("{} / {}", self.flash_writes, self.flash_verified));
        let l = &self.latency_us;
        row(
            "latency p50 / p99 / p99.9 / max (µs)",
            format!("{:.1} / {:.1} / {:.1} / {:.1}", l.p50_us, l.p99_us, l.p999_us, l.max_us),
        );
        row("rss growth (KiB)", self.rss_growth_kib.map_or_else(|| "not measured".to_owned(), |k| k.to_string()));
        row("elapsed (s)", format!("{:.2}", self.elapsed_s));
        let verdict = if self.clean() { "clean" } else { "FAILED" };
        format!("{}verdict: {verdict}\n", t.render())
    }
}

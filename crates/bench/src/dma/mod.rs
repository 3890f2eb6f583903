//! E4 `dma`: what DMA mapping costs under an IOMMU (seed 003), and what it
//! leaves of bulk throughput.
//!
//! Three parts, each measured side by side in one run:
//! - **mapping**: map+unmap pairs per second with 1, 2, 4 and 8 threads,
//!   the IOVA allocator with per-thread magazines and a depot against one
//!   global lock (Linux's rbtree before its rcache), on the lab IOMMU in
//!   lazy mode (so that the invalidation, the same for both, does not hide
//!   the allocator); `dma.magazine_vs_lock_8t` is their ratio at 8 threads.
//! - **bulk**: long duplex SPI transfers through the stack (which maps
//!   them itself; the lab's DMA engine moves them at wire speed), with no
//!   IOMMU, identity (passthrough), strict and lazy, interleaved message by
//!   message; `dma.lazy_vs_none` and `dma.strict_vs_none` are throughput ratios.
//! - **faults**: every `every`-th mapping's page-table writes are skipped
//!   under the core's back; each such message must fail with a typed DMA
//!   fault naming the unmapped address (`dma.faults_injected`,
//!   `dma.faults_caught`), and no other message may suffer.
//!
//! ```no_run
//! use wirespeed_bench::dma::{run, DmaOptions};
//! let report = run(&DmaOptions::default()).unwrap();
//! println!("{}", report.table());
//! ```

pub mod bulk;
pub mod faults;
pub mod mapping;
pub mod rig;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wirespeed::backend::lab::LabIommu;
use wirespeed::dma::{IommuHw, IommuMode};
use wirespeed_lab::iommu::IommuConfig;
use wirespeed_lab::{Lab, LabConfig};

use crate::stats::round;
use crate::table::Table;

/// Options of the `dma` scenario.
#[derive(Clone, Debug)]
pub struct DmaOptions {
    /// Thread counts of the mapping run.
    pub threads: Vec<usize>,
    /// Interleaved windows per allocator and thread count.
    pub rounds: u32,
    /// Length of one mapping window.
    pub window: Duration,
    /// Bytes per bulk transfer.
    pub bulk_size: usize,
    /// SPI clock of the bulk and fault runs.
    pub hz: u32,
    /// Messages per mode in the bulk run.
    pub bulk_msgs: usize,
    /// Messages of the fault run.
    pub fault_msgs: u64,
    /// Every this many mappings, one is left out of the page tables.
    pub fault_every: u64,
}

impl Default for DmaOptions {
    fn default() -> DmaOptions {
        DmaOptions {
            threads: vec![1, 2, 4, 8],
            rounds: 5,
            window: Duration::from_millis(100),
            bulk_size: 65_536,
            hz: 20_000_000,
            bulk_msgs: 20,
            fault_msgs: 200,
            fault_every: 7,
        }
    }
}

impl DmaOptions {
    /// Whether the run can be made, and if not what was wrong and what is allowed.
    pub fn check(&self) -> Result<(), String> {
        if self.threads.is_empty() || self.threads.iter().any(|&t| t == 0 || t > 256) {
            return Err(format!("--threads {:?}: give 1 to 256 threads per count", self.threads));
        }
        if self.rounds == 0 || self.bulk_msgs == 0 || self.fault_msgs == 0 {
            return Err("--rounds, --bulk-msgs and --fault-msgs must be at least 1".into());
        }
        if !(1..=(1 << 24)).contains(&self.bulk_size) {
            return Err(format!("--bulk-size {}: allowed 1..=16777216 bytes", self.bulk_size));
        }
        if self.fault_every < 2 {
            return Err(format!(
                "--fault-every {}: allowed ≥ 2 (1 would leave no message to check against)",
                self.fault_every
            ));
        }
        Ok(())
    }
}

/// The scenario's results.
#[derive(Clone, Debug)]
pub struct DmaReport {
    pub options: DmaOptions,
    pub mapping: Vec<mapping::ThreadPoint>,
    /// What bounds the 8-thread ratio on this machine, estimated (`None` without an 8-thread point).
    pub bound: Option<mapping::Bound>,
    pub bulk: bulk::Bulk,
    pub faults: faults::Faults,
}

/// Runs the three parts.
pub fn run(o: &DmaOptions) -> Result<DmaReport, String> {
    o.check()?;
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let config = IommuConfig::default();
    let flush_ns = config.invalidate_all_ns;
    let iommu = lab.iommu(config).map_err(|e| e.to_string())?;
    let hw: Arc<dyn IommuHw> = Arc::new(LabIommu::new(iommu));
    let mapping = mapping::run(&hw, IommuMode::Lazy, flush_ns, &o.threads, o.rounds, o.window)?;
    let bound = if o.threads.contains(&8) {
        Some(mapping::bound(&hw, IommuMode::Lazy, flush_ns, &mapping, 8, o.rounds, o.window)?)
    } else {
        None
    };
    let bulk = bulk::run(o.bulk_size, o.hz, o.bulk_msgs)?;
    let faults = faults::run(4096, o.hz, o.fault_msgs, o.fault_every)?;
    Ok(DmaReport { options: o.clone(), mapping, bound, bulk, faults })
}

impl DmaReport {
    fn ratio_at(&self, threads: usize) -> Option<f64> {
        self.mapping.iter().find(|p| p.threads == threads).map(mapping::ThreadPoint::ratio)
    }

    /// The report as one JSON object (keys under `dma`).
    pub fn to_json(&self) -> Value {
        let mapping: Vec<Value> = self
            .mapping
            .iter()
            .map(|p| {
                json!({
                    "threads": p.threads,
                    "magazines_pairs_per_s": round(p.magazines_per_s, 0),
                    "magazines_flush_wait_ns_per_pair": round(p.magazines_flush_wait_ns, 2),
                    "global_lock_pairs_per_s": round(p.global_lock_per_s, 0),
                    "magazine_vs_lock": round(p.ratio(), 3),
                })
            })
            .collect();
        let bulk: Vec<Value> = self
            .bulk
            .modes
            .iter()
            .map(|m| json!({"mode": m.mode, "mb_per_s": round(m.bytes_per_s / 1e6, 4), "us_per_msg": round(m.us_per_msg, 2)}))
            .collect();
        let f = &self.faults;
        json!({
            "scenario": "dma",
            "dma": {
                "magazine_vs_lock_8t": self.ratio_at(8).map(|r| round(r, 3)),
                "magazine_vs_lock_8t_bound": self.bound.as_ref().map(|b| round(b.bound, 3)),
                "magazine_vs_lock_8t_bound_detail": self.bound.as_ref().map(|b| json!({
                    "cpus": b.cpus,
                    "magazines_1t_pairs_per_s": round(b.magazines_1t_per_s, 0),
                    "global_lock_8t_pairs_per_s": round(b.global_lock_per_s, 0),
                    "pair_ns": round(b.pair_ns, 1),
                    "lab_ns": round(b.lab_ns, 1),
                    "allocator_ns": round(b.allocator_ns, 1),
                    "domain_ns": round(b.domain_ns, 1),
                    "flush_wait_1t_ns": round(b.flush_wait_1t_ns, 1),
                    "flush_wait_8t_ns": round(b.flush_wait_ns, 1),
                    "cpu_pair_ns": round(b.cpu_pair_ns, 1),
                    "pair_ns_for_10": round(b.pair_ns_for_10, 1),
                    "global_lock_allocator_ns": round(b.global_lock_allocator_ns, 1),
                    "magazines_noop_1t_pairs_per_s": round(b.magazines_noop_1t_per_s, 0),
                    "global_lock_noop_1t_pairs_per_s": round(b.global_lock_noop_1t_per_s, 0),
                    "zero_allocator_bound": round(b.zero_allocator_bound, 3),
                })),
                "mapping_mode": "lazy",
                "mapping": mapping,
                "lazy_vs_none": round(self.bulk.vs_none("lazy"), 5),
                "strict_vs_none": round(self.bulk.vs_none("strict"), 5),
                "identity_vs_none": round(self.bulk.vs_none("identity"), 5),
                "bulk_size_bytes": self.bulk.size,
                "bulk_hz": self.bulk.hz,
                "bulk_msgs_per_mode": self.bulk.msgs,
                "wire_mb_per_s": round(self.bulk.wire_bytes_per_s / 1e6, 4),
                "bulk": bulk,
                "faults_injected": f.injected,
                "faults_caught": f.caught,
                "faults_logged_by_iommu": f.iommu_logged,
                "fault_messages": f.messages,
                "fault_collateral": f.collateral,
            }
        })
    }

    /// The human form.
    pub fn table(&self) -> String {
        let mut out = String::from("E4 dma: map+unmap pairs/s, lab IOMMU in lazy mode (seed 003)\n");
        let mut t = Table::new(&["threads", "magazines", "global lock", "ratio"]);
        for p in &self.mapping {
            t.row(vec![
                p.threads.to_string(),
                format!("{:.0}", p.magazines_per_s),
                format!("{:.0}", p.global_lock_per_s),
                format!("{:.2}", p.ratio()),
            ]);
        }
        out += &t.render();
        if let Some(b) = &self.bound {
            out += &format!(
                "{}-thread ratio bound on {} CPUs (an estimate): {:.2} ({} CPUs at one pair per {:.1} ns each ÷ the global lock's {}-thread rate; 10 needs {:.1} ns); one magazine pair (1 thread) {:.1} ns = lab {:.1} (of which flush wait {:.1}; {:.1} at {} threads) + allocator {:.1} + domain {:.1}\n",
                b.threads,
                b.cpus,
                b.bound,
                b.cpus.min(b.threads),
                b.cpu_pair_ns,
                b.threads,
                b.pair_ns_for_10,
                b.pair_ns,
                b.lab_ns,
                b.flush_wait_1t_ns,
                b.flush_wait_ns,
                b.threads,
                b.allocator_ns,
                b.domain_ns
            );
        }
        out += &format!(
            "\nbulk SPI DMA, {} bytes per transfer at {} Hz (wire limit {:.3} MB/s)\n",
            self.bulk.size,
            self.bulk.hz,
            self.bulk.wire_bytes_per_s / 1e6
        );
        let mut t = Table::new(&["IOMMU", "MB/s", "µs/msg", "vs none"]);
        for m in &self.bulk.modes {
            t.row(vec![
                m.mode.to_owned(),
                format!("{:.4}", m.bytes_per_s / 1e6),
                format!("{:.1}", m.us_per_msg),
                format!("{:.5}", self.bulk.vs_none(m.mode)),
            ]);
        }
        out += &t.render();
        let f = &self.faults;
        out += &format!(
            "\nfaults: {} of {} messages had a mapping left out of the page tables; {} failed with a typed DMA fault at that address; IOMMU logged {}; {} other messages suffered\n",
            f.injected, f.messages, f.caught, f.iommu_logged, f.collateral
        );
        out
    }
}

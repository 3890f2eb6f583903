//! The host under an experiment: whether idle CPUs are kept awake while it
//! runs.
//!
//! The lab is hardware in real time: its interrupt thread must wake when a
//! frame ends or a transfer completes, and the driver's thread when the
//! interrupt arrives; the delay experiment measures how late a sleeping
//! thread wakes. On a board an idle CPU leaves its idle state in a few µs;
//! on a virtual machine a halted vCPU goes back to the hypervisor and returns
//! when the host gets round to it. Measured on this project's 2-vCPU VMs:
//! 7–38 % "steal" during a classic CAN echo and 17–1175 frames lost;
//! 100 µs delays late by 5–16 µs on average against 0.4–1.2 µs with idle
//! CPUs polling. That is the host's idle exit, not the software under test.
//! So the experiments hold a PM QoS request of 0 µs ([`CpuLatencyRequest`])
//! while they run, as cyclictest does by default, and report whether they
//! could. The library never takes it on its own.
//!
//! ```no_run
//! use wirespeed_bench::host::CpuIdle;
//!
//! let idle = CpuIdle::keep_awake(true); // before the experiment
//! // … run it …
//! println!("{}", idle.to_json());       // {"cpu_idle":"poll"} or why not
//! ```

use serde_json::{json, Value};
use wirespeed_time::CpuLatencyRequest;

/// How idle CPUs behaved during an experiment.
#[derive(Debug)]
pub enum CpuIdle {
    /// Kept polling by a held request (withdrawn when this is dropped).
    Poll(CpuLatencyRequest),
    /// The system's default: they may halt. `why` says why no request was
    /// held (`None`: none was asked for).
    Default {
        /// The error that kept the request from being taken.
        why: Option<String>,
    },
}

impl CpuIdle {
    /// Holds a 0 µs request if `wanted` and the system allows it.
    pub fn keep_awake(wanted: bool) -> CpuIdle {
        if !wanted {
            return CpuIdle::Default { why: None };
        }
        match CpuLatencyRequest::hold(0) {
            Ok(r) => CpuIdle::Poll(r),
            Err(e) => CpuIdle::Default { why: Some(e.to_string()) },
        }
    }

    /// Whether idle CPUs were kept polling.
    pub fn polling(&self) -> bool {
        matches!(self, CpuIdle::Poll(_))
    }

    /// `{"cpu_idle": "poll" | "default", "cpu_idle_note": why}` (the note
    /// only when a request was wanted and refused).
    pub fn to_json(&self) -> Value {
        match self {
            CpuIdle::Poll(_) => json!({ "cpu_idle": "poll" }),
            CpuIdle::Default { why: None } => json!({ "cpu_idle": "default" }),
            CpuIdle::Default { why: Some(w) } => json!({ "cpu_idle": "default", "cpu_idle_note": w }),
        }
    }

    /// One line for a table's foot.
    pub fn line(&self) -> String {
        match self {
            CpuIdle::Poll(_) => "host: idle CPUs kept polling during the run (/dev/cpu_dma_latency = 0)\n".into(),
            CpuIdle::Default { why: None } => "host: idle CPUs could sleep during the run (as asked)\n".into(),
            CpuIdle::Default { why: Some(w) } => {
                format!("host: idle CPUs could sleep during the run: {w}; wake-ups include the idle exit\n")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_asked_holds_nothing_and_says_so() {
        let idle = CpuIdle::keep_awake(false);
        assert!(!idle.polling());
        assert_eq!(idle.to_json(), json!({ "cpu_idle": "default" }));
        assert!(idle.line().contains("as asked"));
    }

    #[test]
    fn asked_either_polls_or_says_why_not() {
        let idle = CpuIdle::keep_awake(true);
        let j = idle.to_json();
        if idle.polling() {
            assert_eq!(j, json!({ "cpu_idle": "poll" }));
        } else {
            assert_eq!(j["cpu_idle"], "default");
            assert!(j["cpu_idle_note"].as_str().is_some_and(|n| !n.is_empty()), "{j}");
        }
    }
}

//! `--realtime`: the opt-in realtime setup, as a clap flag group that every
//! long-running command flattens in:
//!
//! ```ignore
//! #[derive(clap::Args)]
//! struct MyCommand {
//!     #[command(flatten)]
//!     realtime: RealtimeArgs,
//! }
//! // first thing in the command:
//! my.realtime.apply();
//! ```
//!
//! Nothing happens without `--realtime`. With it, each step of
//! [`wirespeed_time::realtime::setup`] is tried; a step the system refuses
//! is reported on stderr as one informational line and the command goes on.

use wirespeed_time::realtime::{self, CpuList, FifoPriority, RealtimeOptions, RealtimeReport};

/// The `--realtime` options.
#[derive(Debug, Clone, clap::Args)]
pub struct RealtimeArgs {
    /// Try to run at realtime priority: SCHED_FIFO, mlockall, 1 ns timer
    /// slack, /dev/cpu_dma_latency = 0. Steps the system refuses are reported
    /// and skipped; none is required.
    #[arg(long)]
    pub realtime: bool,
    /// SCHED_FIFO priority used by --realtime (1-99).
    #[arg(long, value_name = "1-99", default_value_t = FifoPriority::default(), requires = "realtime")]
    pub rt_priority: FifoPriority,
    /// With --realtime, also pin to these CPUs, e.g. "1" or "0,2-3".
    #[arg(long, value_name = "LIST", requires = "realtime")]
    pub rt_cpus: Option<CpuList>,
}

impl RealtimeArgs {
    /// What `--realtime` asks for, or `None` without it.
    pub fn options(&self) -> Option<RealtimeOptions> {
        self.realtime
            .then(|| RealtimeOptions { cpu_affinity: self.rt_cpus.clone(), ..RealtimeOptions::all(self.rt_priority) })
    }

    /// Runs the setup if `--realtime` was given, printing one line on stderr
    /// per step that could not be taken; returns the report.
    pub fn apply(&self) -> Option<RealtimeReport> {
        let report = realtime::setup(&self.options()?);
        eprint!("{report}");
        Some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        rt: RealtimeArgs,
    }

    #[test]
    fn off_by_default() {
        let c = Cmd::try_parse_from(["x"]).unwrap();
        assert!(!c.rt.realtime);
        assert!(c.rt.options().is_none());
        assert!(c.rt.apply().is_none());
    }

    #[test]
    fn parses_priority_and_cpus() {
        let c = Cmd::try_parse_from(["x", "--realtime", "--rt-priority", "20", "--rt-cpus", "0-1"]).unwrap();
        let o = c.rt.options().unwrap();
        assert_eq!(o.fifo, Some(FifoPriority::new(20).unwrap()));
        assert!(o.lock_memory && o.timer_slack && o.cpu_dma_latency);
        assert_eq!(o.cpu_affinity.unwrap().cpus(), &[0, 1]);
    }

    #[test]
    fn rejects_bad_values() {
        let e = Cmd::try_parse_from(["x", "--realtime", "--rt-priority", "0"]).unwrap_err();
        assert!(e.to_string().contains("1 to 99"), "{e}");
        assert!(Cmd::try_parse_from(["x", "--realtime", "--rt-cpus", "3-1"]).is_err());
        // The sub-options need --realtime.
        assert!(Cmd::try_parse_from(["x", "--rt-priority", "5"]).is_err());
    }
}

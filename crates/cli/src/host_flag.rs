//! `--cpus-may-sleep`: every experiment keeps idle CPUs polling while it
//! runs (see [`wirespeed_bench::host`]); this flag measures without it.

use wirespeed_bench::host::CpuIdle;

/// The host options of an experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// Let idle CPUs sleep during the run. By default the experiments hold
    /// /dev/cpu_dma_latency at 0 while they run (as cyclictest does): a CPU
    /// that halts when idle — on a virtual machine, into the hypervisor —
    /// wakes late, and the host's idle exit would be measured instead of the
    /// software. The library itself never takes this request. Without root it
    /// is refused, reported, and the run goes on.
    #[arg(long)]
    pub cpus_may_sleep: bool,
}

impl HostArgs {
    /// Takes the request unless `--cpus-may-sleep`; hold the result for the run.
    pub fn apply(&self) -> CpuIdle {
        CpuIdle::keep_awake(!self.cpus_may_sleep)
    }
}

/// Adds `"host": {...}` to a report's JSON object.
pub fn with_host(mut report: serde_json::Value, idle: &CpuIdle) -> serde_json::Value {
    if let Some(o) = report.as_object_mut() {
        o.insert("host".into(), idle.to_json());
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        host: HostArgs,
    }

    #[test]
    fn the_flag_turns_the_request_off() {
        let c = Cmd::try_parse_from(["x", "--cpus-may-sleep"]).unwrap();
        let idle = c.host.apply();
        assert!(!idle.polling());
        let j = with_host(serde_json::json!({ "scenario": "t" }), &idle);
        assert_eq!(j["host"]["cpu_idle"], "default");
        assert_eq!(j["scenario"], "t");
        assert!(!Cmd::try_parse_from(["x"]).unwrap().host.cpus_may_sleep);
    }
}

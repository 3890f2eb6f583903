//! E2 (`wirespeed bench spi`) on the real kernel's spidev: the same scenario
//! the CLI runs with `--dev /dev/spidev0.0`, classic against fast on the one
//! device, small enough for the emulation (one ioctl costs 100–300 µs
//! here). The flash ignores the 0xA5 bytes the scenario sends (no command
//! of the SST25VF016B has that opcode). The host compares its keys with a
//! lab run's.

use serde_json::{json, Map, Value};
use wirespeed_bench::host::CpuIdle;
use wirespeed_bench::spi::target::Target;
use wirespeed_bench::spi::{run as run_spi, SpiOptions};

/// Runs the scenario and puts its JSON under `bench_spi`.
pub fn run(out: &mut Map<String, Value>, errors: &mut Vec<String>) {
    let opts = SpiOptions {
        hz: 1_000_000,
        msgs: 200,
        rounds: 2,
        async_threads: 2,
        async_msgs: 50,
        trace_msgs: 10,
        target: Target::Node(crate::spi_checks::NODE.into()),
        ..SpiOptions::default()
    };
    // As the CLI does: idle CPUs kept polling while it runs, and said so.
    let idle = CpuIdle::keep_awake(true);
    match run_spi(&opts) {
        Ok(r) => {
            let mut v = r.to_json();
            v["host"] = idle.to_json();
            out.insert("bench_spi".into(), v);
        }
        Err(e) => {
            errors.push(format!("bench spi --dev {}: {e}", crate::spi_checks::NODE));
            out.insert("bench_spi".into(), json!(null));
        }
    }
}

//! `wirespeed bench <scenario>`: one subcommand per experiment.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use wirespeed_bench::canecho::CanechoOptions;
use wirespeed_bench::delay::{self as delay_bench, DelayOptions};
use wirespeed_bench::dma::DmaOptions;
use wirespeed_bench::flash::FlashOptions;
use wirespeed_bench::plot::{write_latency_plot, Format, LatencyPlot};
use wirespeed_bench::regmap::RegmapOptions;
use wirespeed_bench::shim::{Launcher, ShimOptions};
use wirespeed_bench::spi::SpiOptions;
use wirespeed_time::realtime::{CpuList, FifoPriority};

use crate::cli_error::CliError;
use crate::host_flag::{with_host, HostArgs};
use crate::realtime_flag::RealtimeArgs;
use wirespeed_bench::host::CpuIdle;

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// E1: seed 000's CAN echo (cangen → MCP2518FD → driver → echo), classic against fast.
    Canecho {
        #[command(flatten)]
        args: CanechoArgs,
        /// Write a latency histogram (each frame's RX EOF → echo SOF gap, classic, linux-6.9 and
        /// fast, the echo's physical limit drawn) to this file, as SVG or PNG by
        /// its extension; the JSON then has `"plot": FILE`.
        #[arg(long, value_name = "FILE.svg|png")]
        plot: Option<PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E2: back-to-back sync messages (seed 000's 72-bit status read),
    /// classic against fast, each mechanism's share, sync against async.
    Spi {
        /// Bytes per transfer (1-65536).
        #[arg(long, default_value_t = SpiOptions::default().size)]
        size: usize,
        /// SPI clock in Hz.
        #[arg(long, default_value_t = SpiOptions::default().hz, value_parser = clap::value_parser!(u32).range(1..))]
        hz: u32,
        /// Messages per policy [default: 20000, fewer for long messages: as
        /// many as take about 10 s of wire time, at least 100].
        #[arg(long)]
        count: Option<u64>,
        /// Interleaved rounds the messages are split into; each policy's
        /// figure is the median of its rounds [default: 10, more for long
        /// messages: each round about 50 ms of wire, at least 10 messages].
        #[arg(long)]
        rounds: Option<u32>,
        /// Skip the per-switch ablation.
        #[arg(long)]
        no_ablation: bool,
        /// Threads of the sync/async comparison (0 skips it; at most 256).
        #[arg(long, default_value_t = SpiOptions::default().async_threads)]
        threads: usize,
        /// Messages per thread in the sync/async comparison [default: 10000,
        /// fewer for long messages: all threads' together about 10 s of wire, at least 50].
        #[arg(long)]
        thread_msgs: Option<usize>,
        /// Write the bus trace of 20 fast and 20 classic messages as VCD to this file.
        #[arg(long)]
        vcd: Option<std::path::PathBuf>,
        /// Write a latency histogram (every message's latency, classic, linux-6.9 and fast, the
        /// wire time drawn; times --count more messages per policy after the
        /// measured rounds, which it leaves as they are) to this file, as SVG or PNG by
        /// its extension; the JSON then has `"plot": FILE`.
        #[arg(long, value_name = "FILE.svg|png")]
        plot: Option<PathBuf>,
        /// Where the messages go: `lab` (the default: the lab's SPI block with a
        /// loopback, driven by the stack), a spidev node such as /dev/spidev0.0
        /// (both policies on the same real device; CS figures and the instant
        /// wire need the lab's bus trace and are null there), or `lab-spidev`
        /// (the spidev backend on an emulated node of a lab loopback). On a
        /// real device the bytes sent are 0xA5: point it at a loopback or a
        /// device that ignores them.
        #[arg(long, default_value = "lab", value_name = "DEVICE")]
        dev: wirespeed_bench::spi::target::Target,
        /// The lab block's IOMMU, which its DMA engine (transfers longer than
        /// the 64-byte FIFO) works behind: none, identity (passthrough),
        /// strict (invalidate at every unmap) or lazy (batched invalidation).
        /// Only with --dev lab.
        #[arg(long, value_parser = wirespeed_bench::spi::target::parse_iommu, default_value = "strict")]
        iommu: wirespeed::dma::IommuMode,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E5: what sleeping costs (seed 004's table: nop, sched_yield, nanosleep)
    /// and wirespeed's delay() from 1 µs to 1 ms, at normal priority and at
    /// SCHED_FIFO where permitted.
    Delay {
        /// Iterations of each test in each pass (1-1000000).
        #[arg(long, default_value_t = DelayOptions::default().iterations as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        iterations: u64,
        /// Write a latency histogram (the normal pass' 100 µs waits: nanosleep against
        /// wirespeed's delay, the bare spin beside them, 100 µs drawn) to this file, as SVG or PNG by
        /// its extension; the JSON then has `"plot": FILE`.
        #[arg(long, value_name = "FILE.svg|png")]
        plot: Option<PathBuf>,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E4: DMA mapping under an IOMMU (seed 003): map+unmap pairs per second
    /// with 1-8 threads, per-thread magazines against one global lock; bulk
    /// SPI DMA throughput with no IOMMU, identity, strict and lazy; DMA to
    /// unmapped addresses, every fault caught.
    Dma {
        /// Thread counts of the mapping run, comma-separated (1-256 each).
        #[arg(long, value_delimiter = ',', default_values_t = DmaOptions::default().threads)]
        threads: Vec<usize>,
        /// Interleaved windows per allocator and thread count.
        #[arg(long, default_value_t = DmaOptions::default().rounds)]
        rounds: u32,
        /// Length of one mapping window, in ms.
        #[arg(long, default_value_t = DmaOptions::default().window.as_millis() as u64)]
        window_ms: u64,
        /// Bytes per bulk transfer (1-16777216).
        #[arg(long, default_value_t = DmaOptions::default().bulk_size)]
        bulk_size: usize,
        /// Messages per IOMMU mode in the bulk run.
        #[arg(long, default_value_t = DmaOptions::default().bulk_msgs)]
        bulk_msgs: usize,
        /// SPI clock of the bulk and fault runs, in Hz.
        #[arg(long, default_value_t = DmaOptions::default().hz, value_parser = clap::value_parser!(u32).range(1..))]
        hz: u32,
        /// Messages of the fault run.
        #[arg(long, default_value_t = DmaOptions::default().fault_msgs)]
        fault_msgs: u64,
        /// Leave every this-many-th mapping out of the page tables (at least 2).
        #[arg(long, default_value_t = DmaOptions::default().fault_every)]
        fault_every: u64,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E3: cost of removal safety on GPIO toggles (none / interlock / wirespeed).
    Gpio {
        /// High/low cycles per pass.
        #[arg(long, default_value_t = 1_000_000)]
        toggles: u64,
        /// Passes (each runs all three guards, interleaved).
        #[arg(long, default_value_t = 10)]
        passes: u32,
        /// Slices each pass is cut into, interleaved across guards; the
        /// figure is the median of the slice-by-slice ratios.
        #[arg(long, default_value_t = 200)]
        slices: u32,
        /// Do not attach the edge-counting probe to the toggled pad.
        #[arg(long)]
        no_probe: bool,
        /// spi_gpio_cs: rounds per chip select, native/GPIO interleaved (0 skips it).
        #[arg(long, default_value_t = wirespeed_bench::gpio::spi_cs::SpiCsOptions::default().rounds)]
        spi_rounds: u32,
        /// spi_gpio_cs: back-to-back messages per round.
        #[arg(long, default_value_t = wirespeed_bench::gpio::spi_cs::SpiCsOptions::default().messages)]
        spi_messages: u32,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        host: HostArgs,
    },
    /// Register map over SPI on the lab register file: cached and uncached
    /// reads, 8 adjacent registers in one multi_write against 8 writes.
    Regmap {
        /// SPI clock in Hz.
        #[arg(long, default_value_t = RegmapOptions::default().speed_hz)]
        speed_hz: u32,
        /// SPI core policy: fast, linux-6.9 or classic.
        #[arg(long, default_value_t = RegmapOptions::default().policy)]
        policy: String,
        /// Timed batches of cached reads.
        #[arg(long, default_value_t = RegmapOptions::default().samples)]
        samples: usize,
        /// Interleaved rounds of multi_write against separate writes.
        #[arg(long, default_value_t = RegmapOptions::default().rounds)]
        rounds: usize,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E7: smart write + verify of a random image onto a lab W25Q128JV at
    /// 50 MHz holding other data, then of an image differing in 10 % of its
    /// sectors, against the least time the chip allows.
    Flash {
        /// Image size in bytes (a multiple of 4096, at most 16 MiB).
        #[arg(long, default_value_t = FlashOptions::default().size)]
        size: usize,
        /// SPI clock in Hz.
        #[arg(long, default_value_t = FlashOptions::default().speed_hz)]
        speed_hz: u32,
        /// Multiplies the chip's times and the driver's waits (1: the datasheet's).
        #[arg(long, default_value_t = FlashOptions::default().time_scale)]
        time_scale: f64,
        /// Skip flashrom's write of the same image through the shim (flashrom_s
        /// and flashrom_ratio are then null).
        #[arg(long)]
        no_flashrom: bool,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HostArgs,
    },
    /// E6: the highest sustained 8-channel sample rate of a lab AD7606 at
    /// 20 MHz SPI with no overrun (Rust driver; Python: wirespeed.ad7606,
    /// wirespeed by hand, py-spidev + python gpiod under the shim), against
    /// the part's limit (conversion time + wire time).
    Adc {
        /// SPI clock in Hz.
        #[arg(long, default_value_t = wirespeed_bench::adc::AdcOptions::default().speed_hz)]
        speed_hz: u32,
        /// Oversampling ratio of the part (1, 2, 4, 8, 16, 32, 64).
        #[arg(long, default_value_t = wirespeed_bench::adc::AdcOptions::default().oversampling)]
        oversampling: u8,
        /// Sample periods per paced trial.
        #[arg(long, default_value_t = wirespeed_bench::adc::AdcOptions::default().search.periods)]
        periods: u64,
        /// Rounds of the free-running throughput measurement.
        #[arg(long, default_value_t = wirespeed_bench::adc::AdcOptions::default().rounds)]
        rounds: usize,
        /// The Rust driver only (no Python runners).
        #[arg(long)]
        no_python: bool,
        /// A Python that imports wirespeed (default: target/py-venv/bin/python3).
        #[arg(long, value_name = "PATH")]
        python: Option<std::path::PathBuf>,
        /// A Python that imports spidev and gpiod 2.x (default: target/shim-venv/bin/python3).
        #[arg(long, value_name = "PATH")]
        shim_python: Option<std::path::PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        host: HostArgs,
    },
    /// What the LD_PRELOAD shim costs a program: median time of a 9-byte
    /// SPI_IOC_MESSAGE(1) on an instant-wire lab loopback from C and from
    /// Python's fcntl.ioctl through the shim, and in-process without it.
    Shim {
        /// Timed rounds of each client.
        #[arg(long, default_value_t = ShimOptions::default().rounds)]
        rounds: usize,
        /// Messages per round.
        #[arg(long, default_value_t = ShimOptions::default().count)]
        count: usize,
        /// Skip the Python client (python_ioctl_ns is then null).
        #[arg(long)]
        no_python: bool,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HostArgs,
    },
}

/// Runs one experiment and prints its report.
/// Bad options are [`CliError::Usage`] (exit code 2); a plain `String`
/// error converts to [`CliError::Runtime`].
pub fn run(cmd: BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Canecho { args, plot, json, realtime, host } => {
            check_plot_path(plot.as_deref())?;
            let idle = host_setup(Some(&realtime), &host);
            let r = wirespeed_bench::canecho::run(&args.options())?;
            let chart = plot.as_deref().map(|p| (p, Some(r.latency_plot())));
            print_report_and_plot(json, &idle, r.to_json(), || r.table(), chart)?;
        }
        BenchCommand::Spi {
            size,
            hz,
            count,
            rounds,
            no_ablation,
            threads,
            thread_msgs,
            vcd,
            plot,
            dev,
            iommu,
            json,
            realtime,
            host,
        } => {
            use wirespeed_bench::spi::target::Target;
            let dev = match dev {
                Target::Lab(_) => Target::Lab(iommu),
                other if iommu != wirespeed_bench::spi::target::DEFAULT_IOMMU => {
                    return Err(CliError::Usage(format!(
                        "--iommu applies to the lab's own block (--dev lab), not to {other}"
                    )));
                }
                other => other,
            };
            let idle = host_setup(Some(&realtime), &host);
            let msgs = count.unwrap_or_else(|| SpiOptions::messages_for(size, hz));
            let opts = SpiOptions {
                size,
                hz,
                msgs,
                rounds: rounds.unwrap_or_else(|| SpiOptions::rounds_for(size, hz, msgs)),
                ablation: !no_ablation,
                async_threads: threads,
                async_msgs: thread_msgs.unwrap_or_else(|| SpiOptions::thread_messages_for(size, hz, threads)),
                target: dev,
                latency_samples: plot.is_some(),
                ..SpiOptions::default()
            };
            // First: a path that cannot be written fails in a second, not
            // after the whole benchmark; options the run refuses write nothing.
            opts.check().map_err(CliError::Usage)?;
            check_plot_path(plot.as_deref())?;
            if let Some(path) = vcd {
                crate::lab_cmd::write_sample_vcd(&path, size, hz)?;
            }
            let r = wirespeed_bench::spi::run(&opts)?;
            let chart = plot.as_deref().map(|p| (p, r.latency_plot()));
            print_report_and_plot(json, &idle, r.to_json(), || r.table(), chart)?;
        }
        BenchCommand::Delay { iterations, plot, json, realtime, host } => {
            check_plot_path(plot.as_deref())?;
            let idle = host_setup(Some(&realtime), &host);
            let opts = DelayOptions {
                iterations: iterations as usize,
                keep_samples: plot.is_some(),
                ..DelayOptions::default()
            };
            let r = delay_bench::run(&opts)?;
            let chart = plot.as_deref().map(|p| (p, r.latency_plot()));
            print_report_and_plot(json, &idle, r.to_json(), || r.table(), chart)?;
        }
        BenchCommand::Dma {
            threads,
            rounds,
            window_ms,
            bulk_size,
            bulk_msgs,
            hz,
            fault_msgs,
            fault_every,
            json,
            host,
        } => {
            let idle = host_setup(None, &host);
            let opts = DmaOptions {
                threads,
                rounds,
                window: std::time::Duration::from_millis(window_ms),
                bulk_size,
                hz,
                bulk_msgs,
                fault_msgs,
                fault_every,
            };
            opts.check().map_err(CliError::Usage)?;
            let r = wirespeed_bench::dma::run(&opts)?;
            print_report(json, &idle, r.to_json(), || r.table());
        }
        BenchCommand::Gpio { toggles, passes, slices, no_probe, spi_rounds, spi_messages, json, realtime, host } => {
            let idle = host_setup(Some(&realtime), &host);
            let spi = wirespeed_bench::gpio::spi_cs::SpiCsOptions {
                rounds: spi_rounds,
                messages: spi_messages,
                ..Default::default()
            };
            let opts = wirespeed_bench::gpio::GpioOptions { toggles, passes, slices, probe: !no_probe, spi };
            let r = wirespeed_bench::gpio::run(&opts)?;
            print_report(json, &idle, r.to_json(), || r.table());
        }
        BenchCommand::Regmap { speed_hz, policy, samples, rounds, json, host } => {
            let idle = host_setup(None, &host);
            let opts = RegmapOptions { speed_hz, policy, samples, rounds, ..RegmapOptions::default() };
            let r = wirespeed_bench::regmap::run(&opts)?;
            print_report(json, &idle, r.to_json(), || r.table());
        }
        BenchCommand::Flash { size, speed_hz, time_scale, no_flashrom, json, host } => {
            let idle = host_setup(None, &host);
            let flashrom = (!no_flashrom).then(shim_launcher);
            let opts = FlashOptions { size, speed_hz, time_scale, flashrom, ..FlashOptions::default() };
            let r = wirespeed_bench::flash::run(&opts)?;
            print_report(json, &idle, r.to_json(), || r.table());
        }
        BenchCommand::Adc {
            speed_hz,
            oversampling,
            periods,
            rounds,
            no_python,
            python,
            shim_python,
            json,
            realtime,
            host,
        } => {
            use wirespeed_bench::adc::{default_python, PythonOptions};
            let idle = host_setup(Some(&realtime), &host);
            let mut opts = wirespeed_bench::adc::AdcOptions { speed_hz, oversampling, rounds, ..Default::default() };
            opts.search.periods = periods;
            let r = if no_python {
                wirespeed_bench::adc::run(&opts)?
            } else {
                let py = PythonOptions {
                    python: python.unwrap_or_else(|| default_python("py-venv")),
                    shim_python: shim_python.unwrap_or_else(|| default_python("shim-venv")),
                    launcher: shim_launcher(),
                };
                wirespeed_bench::adc::run_all(&opts, &py)?
            };
            print_report(json, &idle, r.to_json(), || r.table());
        }
        BenchCommand::Shim { rounds, count, no_python, json, host } => {
            let idle = host_setup(None, &host);
            let opts = ShimOptions { rounds, count, python: !no_python, ..ShimOptions::default() };
            let r = wirespeed_bench::shim::run(&opts, &shim_launcher())?;
            print_report(json, &idle, r.to_json(), || r.table());
        }
    }
    Ok(())
}

/// Options of `bench canecho` (also used by `demo`).
#[derive(Debug, clap::Args)]
pub struct CanechoArgs {
    #[arg(long, help = with_quick_default("Frames in the timed run (cangen -n)", |o| o.frames))]
    frames: Option<u64>,
    /// Payload bytes (cangen -L), 0-8.
    #[arg(long, default_value_t = CanechoOptions::default().len)]
    len: usize,
    /// Identifier of the generated frames (cangen -I), e.g. 0x077; 0-0x7ff.
    #[arg(long, value_parser = parse_id, default_value_t = CanechoOptions::default().id)]
    id: u16,
    /// Gap between frames in µs (cangen -g, ×1000).
    #[arg(long, default_value_t = CanechoOptions::default().gap_us)]
    gap_us: u64,
    /// Nominal bit rate in bit/s.
    #[arg(long, default_value_t = CanechoOptions::default().bitrate)]
    bitrate: u32,
    #[arg(long, help = with_quick_default("Frames in the back-to-back load run (0: skip)", |o| o.load_frames))]
    load_frames: Option<u64>,
    /// Echo identifier = request identifier + this.
    #[arg(long, allow_hyphen_values = true, default_value_t = CanechoOptions::default().echo_id_offset)]
    echo_id_offset: i32,
    /// A shorter run for CI (300 frames, 3,000 in the load run).
    #[arg(long)]
    quick: bool,
    /// Run the MCP2518FD model as an ideal chip: none of its silicon errata
    /// (by default they are all on, and each policy also runs once on the
    /// ideal chip, interleaved, to show what the errata cost).
    #[arg(long)]
    no_errata: bool,
    /// With errata on, skip the interleaved runs on the ideal chip (half the time).
    #[arg(long, conflicts_with = "no_errata")]
    no_errata_comparison: bool,
    /// Split each policy's runs into this many rounds, interleaved with the
    /// other policies' (A B A B …); figures pool the rounds. 0: one round
    /// per 100 timed frames, 1 to 10.
    #[arg(long, default_value_t = CanechoOptions::default().rounds, value_parser = clap::value_parser!(u64).range(0..=100))]
    rounds: u64,
    /// Keep the emulated hardware off the software's CPUs: each lab's
    /// interrupt thread runs on these CPUs (e.g. "1"), the stack's threads
    /// on the others. By default the scheduler may run the lab's thread on
    /// the CPU of the echo thread, in the middle of its transfers (the JSON's
    /// `*_echo_preemptions_per_echo` count how often the echo thread was
    /// preempted)
    #[arg(long, value_name = "LIST")]
    lab_cpus: Option<CpuList>,
    /// SCHED_FIFO priority of the IRQ path: the echo thread (the kernel's
    /// IRQ thread), the SPI core's pump thread and the labs' interrupt
    /// threads, for every policy alike. The kernel runs a threaded IRQ
    /// handler and the pump of a device that asks for it (mcp251xfd does) at
    /// 50. 0: leave them at this process's policy (SCHED_OTHER unless
    /// --realtime), where the lab's thread may preempt the echo thread.
    /// Refused without the privilege: reported, and the run goes on.
    #[arg(long, value_name = "0-99", default_value_t = wirespeed_bench::canecho::IRQ_THREAD_PRIORITY,
          value_parser = clap::value_parser!(u32).range(0..=99))]
    irq_priority: u32,
}

/// A help line with the default and the `--quick` one (the two differ).
fn with_quick_default(what: &str, field: fn(&CanechoOptions) -> u64) -> String {
    format!("{what} [default: {}; --quick: {}]", field(&CanechoOptions::default()), field(&CanechoOptions::quick()))
}

impl CanechoArgs {
    /// The options, from the defaults (or `--quick`) and the flags given.
    pub fn options(&self) -> CanechoOptions {
        let base = if self.quick { CanechoOptions::quick() } else { CanechoOptions::default() };
        CanechoOptions {
            frames: self.frames.unwrap_or(base.frames),
            len: self.len,
            id: self.id,
            gap_us: self.gap_us,
            bitrate: self.bitrate,
            load_frames: self.load_frames.unwrap_or(base.load_frames),
            echo_id_offset: self.echo_id_offset,
            errata: !self.no_errata,
            compare_errata: !self.no_errata && !self.no_errata_comparison,
            rounds: self.rounds,
            lab_cpus: self.lab_cpus.clone(),
            irq_priority: FifoPriority::new(self.irq_priority).ok(),
        }
    }
}

/// `wirespeed demo`: the quick canecho run with a short introduction.
pub fn demo(realtime: RealtimeArgs, host: HostArgs) -> Result<(), String> {
    let idle = host_setup(Some(&realtime), &host);
    let o = wirespeed_bench::canecho::CanechoOptions {
        frames: 200,
        load_frames: 2_000,
        compare_errata: false,
        ..Default::default()
    };
    println!(
        "wirespeed demo: a CAN node sends {} frames of {} bytes at {} kbit/s, {} ms apart, to an emulated MCP2518FD on SPI;\n\
         the mcp251xfd driver echoes each one. Once with the SPI core as the seed's kernel (A = classic), once with every\n\
         mechanism on (C = fast); then {} back-to-back frames for CPU. Figures are medians.\n",
        o.frames, o.len, o.bitrate / 1000, o.gap_us / 1000, o.load_frames
    );
    let r = wirespeed_bench::canecho::run(&o)?;
    print!("{}{}", r.table(), idle.line());
    Ok(())
}

/// Runs programs under the shim as `wirespeed lab run` does (no bus trace).
fn shim_launcher() -> Launcher {
    Launcher::new(|board, program, args| crate::lab_run::command(board, None, program, args))
}

/// The host setup every benchmark starts with: the `--realtime` steps (if the
/// command has them and they were asked for), then the PM QoS request of
/// `--host`, whose state the report carries.
fn host_setup(realtime: Option<&RealtimeArgs>, host: &HostArgs) -> CpuIdle {
    if let Some(r) = realtime {
        r.apply();
    }
    host.apply()
}

fn parse_id(s: &str) -> Result<u16, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16),
        None => s.parse(),
    };
    v.map_err(|e| format!("{s}: {e}"))
}

/// Prints a report as JSON (with `"host"` added) or as its table (with the
/// host's line at the foot).
fn print_report(json: bool, idle: &CpuIdle, value: serde_json::Value, table: impl FnOnce() -> String) {
    if json {
        println!("{}", with_host(value, idle));
    } else {
        print!("{}{}", table(), idle.line());
    }
}

/// `--plot`: a file name that is neither .svg nor .png, or whose folder does
/// not exist, is bad input that fails before the run, not after it.
pub(crate) fn check_plot_path(path: Option<&Path>) -> Result<(), CliError> {
    let Some(path) = path else { return Ok(()) };
    Format::of(path).map_err(|e| CliError::Usage(e.to_string()))?;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Err(CliError::Usage(format!("cannot plot to {}: no folder {}", path.display(), dir.display())))
        }
        _ => Ok(()),
    }
}

/// Writes the latency histogram (if `--plot` asked for one: its path and the
/// chart the run kept samples for), then prints the report as
/// [`print_report`] does, with `"plot": FILE` in the JSON and the file named
/// under the table. A plot that cannot be written still leaves the report
/// printed (without the key), then fails.
fn print_report_and_plot(
    json: bool,
    idle: &CpuIdle,
    mut value: serde_json::Value,
    table: impl FnOnce() -> String,
    plot: Option<(&Path, Option<LatencyPlot>)>,
) -> Result<(), String> {
    let Some((path, chart)) = plot else {
        print_report(json, idle, value, table);
        return Ok(());
    };
    let written = chart
        .ok_or_else(|| format!("cannot plot to {}: the run kept no latency samples", path.display()))
        .and_then(|c| write_latency_plot(path, &c).map_err(|e| e.to_string()));
    match written {
        Ok(()) => {
            value["plot"] = serde_json::Value::from(path.display().to_string());
            print_report(json, idle, value, || format!("{}\nlatency histogram: {}\n", table(), path.display()));
            Ok(())
        }
        Err(e) => {
            print_report(json, idle, value, table);
            Err(e)
        }
    }
}

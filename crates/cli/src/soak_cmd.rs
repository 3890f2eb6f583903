//! `wirespeed soak`: every mechanism at once on two lab buses, with faults
//! injected, every message checked (`wirespeed_bench::soak`).

use crate::cli_error::CliError;
use crate::flash_cmd::parse_number;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_bench::plot::{write_latency_plot, LatencyPlot, Series};
use wirespeed_bench::soak::{self, Limit, SoakOptions, SoakRun};

/// The soak run's options.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  wirespeed soak                               # 10 s, 8 worker threads, faults injected
  wirespeed soak --messages 1000000 --json     # scripts/soak checks the figures
  wirespeed soak --duration 2m --plot soak.svg

Exit status 1 when an invariant fails (anything lost, duplicated, reordered, corrupted,
an untyped or unexpected error, or faults_reported != faults_injected).")]
pub struct SoakArgs {
    /// SPI worker threads.
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// Stop after this many messages (SPI messages and GPIO toggles), e.g. 1000000 or 1_000_000.
    #[arg(long, value_parser = parse_number, value_name = "N", conflicts_with = "duration")]
    messages: Option<u64>,
    /// Stop after this long: 30, 30s, 500ms, 2m (default 10s).
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    duration: Option<Duration>,
    /// Seed of the random mix and of the fault injector.
    #[arg(long, default_value_t = SoakOptions::default().seed)]
    seed: u64,
    /// Inject no faults (a clean run; the fault counts stay 0).
    #[arg(long)]
    no_faults: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Also write a latency histogram (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (digits, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|(suf, k)| t.strip_suffix(suf).map(|d| (d, *k)))
        .unwrap_or((t, 1.0));
    let v: f64 = digits.trim().parse().map_err(|_| format!("{s:?} is not a time such as 30, 30s, 500ms or 2m"))?;
    Duration::try_from_secs_f64(v * scale).map_err(|_| format!("{s:?} is not a time such as 30, 30s, 500ms or 2m"))
}

impl SoakArgs {
    fn options(&self) -> SoakOptions {
        let limit = match (self.messages, self.duration) {
            (Some(n), _) => Limit::Messages(n),
            (None, Some(d)) => Limit::Duration(d),
            (None, None) => SoakOptions::default().limit,
        };
        SoakOptions { threads: self.threads, limit, seed: self.seed, faults: !self.no_faults, progress: !self.quiet }
    }
}

/// Runs the soak. A bad `--plot` name is refused before the run.
pub fn run(args: SoakArgs) -> Result<(), CliError> {
    crate::bench_cmd::check_plot_path(args.plot.as_deref())?;
    let run = soak::run(&args.options()).map_err(|e| e.to_string())?;
    let plotted = args.plot.as_deref().map(|path| {
        let chart = plot_of(&run);
        write_latency_plot(path, &chart).map(|()| path.display().to_string()).map_err(|e| e.to_string())
    });
    let mut value = run.report.to_json();
    if let Some(Ok(path)) = &plotted {
        value["plot"] = serde_json::Value::from(path.clone());
    }
    if args.json {
        println!("{value}");
    } else {
        print!("{}", run.report.table());
        if let Some(Ok(path)) = &plotted {
            println!("latency histogram: {path}");
        }
    }
    if let Some(Err(e)) = plotted {
        return Err(e.into());
    }
    if !run.report.clean() {
        return Err(CliError::Runtime("soak: an invariant failed (see the report)".into()));
    }
    Ok(())
}

fn plot_of(run: &SoakRun) -> LatencyPlot {
    let r = &run.report;
    LatencyPlot {
        title: format!("wirespeed soak: {} messages, {} faults injected", r.messages, r.faults_injected),
        x_label: "latency per SPI message (µs)".into(),
        series: vec![Series { label: format!("{} threads", r.threads), samples_us: run.latency.samples_us(200_000) }],
        wire_limit_us: None,
    }
}

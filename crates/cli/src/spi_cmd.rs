//! `wirespeed spi --dev DEVICE xfer SEGMENT...`: one SPI message from the
//! shell, hex in, hex out. Each segment is one transfer; a lone `/` between
//! two segments is a `cs_change` (CS drops and rises again inside the one
//! message: on spidev, still one `SPI_IOC_MESSAGE`).

use crate::spi_segments::{parse_segments, Op, Segment, SegmentError};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::fmt;
use std::time::{Duration, Instant};
use wirespeed::spi::{DeviceConfig, EffectiveTiming, InvalidMessage, Mode, ModeFlags, Policy, SpiError, Transfer};
use wirespeed_bench::spi::target::{open, Target};
use wirespeed_lab::trace::{cs_high_gaps_ns, cs_windows};

const EXAMPLES: &str = "\
Segments (after xfer), one transfer each, in one message:
  9f000000   sends these bytes, prints as many received (also 0x9f_00_00_00, 9f:00:00:00, \"9f 00 00 00\")
  r:N        sends N zero bytes, prints what came back
  w:HEX      only writes: nothing is printed for it
  /          alone between two segments: cs_change, CS drops and rises again inside the message

Examples:
  wirespeed spi --dev /dev/spidev0.0 xfer 9f000000
      sends 9f 00 00 00 and prints the 4 bytes that came back (a SPI flash's JEDEC ID)
  wirespeed spi --dev /dev/spidev0.0 xfer w:9f r:3
      a write, then a read, in one CS window: prints only the 3 bytes read
  wirespeed spi --dev /dev/spidev0.0 --hz 10000000 --mode 3 xfer 0x03_00_10_00 r:16
      a read command with a 24-bit address, then 16 bytes, at 10 MHz in mode 3
  wirespeed spi --dev /dev/spidev0.0 xfer w:06 / w:02001000 w:deadbeef
      two CS windows in one message (one ioctl): write-enable, CS drops, page program
  wirespeed spi --dev /dev/spidev0.0 --cs-change-ns 20000 xfer w:06 / 05 00
      CS stays inactive 20 us at the / (longer than spidev's fixed 10 us: the message is cut there)
  wirespeed spi --dev lab-spidev xfer 9f000000
      no hardware: the spidev backend on an emulated node whose device loops MOSI back
  wirespeed spi --dev lab-spidev --repeat 1000 --json xfer 30303030
      1000 runs of the message: the last RX and the median time per message, as JSON

`wirespeed list` shows the spidev nodes of this machine and the lab.";

/// `wirespeed spi` options.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub struct SpiArgs {
    /// The device: a spidev node /dev/spidevB.C (bus B, chip select C;
    /// `wirespeed list` shows them), `lab-spidev` (the spidev backend on an
    /// emulated node of the lab, with a loopback device: no hardware needed)
    /// or `lab` (the lab's SPI block driven by the stack directly, loopback on CS 0).
    #[arg(long, value_name = "DEVICE")]
    dev: Target,
    /// SPI clock in Hz (the device's speed; spidev passes it to the
    /// controller driver, which may divide lower).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    hz: u32,
    /// Clock mode: 0 (CPOL 0, CPHA 0), 1 (0, 1), 2 (1, 0) or 3 (1, 1).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3), global = true)]
    mode: u8,
    /// Bits per word (1-32). Words wider than 8 bits take 2 or 4 bytes each,
    /// in the machine's byte order, as spidev takes them.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=32), global = true)]
    bits: u8,
    /// Least significant bit first (SPI_LSB_FIRST).
    #[arg(long, global = true)]
    lsb_first: bool,
    /// Chip select active high (SPI_CS_HIGH).
    #[arg(long, global = true)]
    cs_high: bool,
    /// MOSI and MISO share one wire (SPI_3WIRE).
    #[arg(long = "3wire", global = true)]
    three_wire: bool,
    /// The controller loops MOSI back to MISO (SPI_LOOP), where it can.
    #[arg(long = "loop", global = true)]
    loopback: bool,
    /// No chip select (SPI_NO_CS).
    #[arg(long, global = true)]
    no_cs: bool,
    /// How long CS stays inactive at each `/` (ns). Without it, the device's
    /// default: spidev's kernel waits a fixed 10 us; a longer gap cuts the
    /// message there into two ioctls, with the gap waited between them.
    #[arg(long, value_name = "NS", global = true)]
    cs_change_ns: Option<u32>,
    /// Runs the message this many times: prints the last RX and the median
    /// time per message (a quick latency check).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000), global = true)]
    repeat: u32,
    /// Print one JSON object (keys: device, hz, mode, bits, flags,
    /// transfers [{tx, rx, kind, cs_change}], messages, ioctls,
    /// effective_timing, cs_change_gap_ns, timing, lab_trace).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: SpiCommand,
}

/// `wirespeed spi` subcommands.
#[derive(Debug, Subcommand)]
pub enum SpiCommand {
    /// Sends one message and prints what came back, in hex: one transfer per segment.
    #[command(after_long_help = EXAMPLES)]
    Xfer {
        /// The message, one transfer per segment, in order. HEX sends those
        /// bytes and prints as many that came back (9f000000, 0x9f_00_00_00,
        /// 9f:00:00:00, or "9f 00 00 00" quoted); r:N sends N zero bytes and
        /// prints what came back; w:HEX only writes (nothing to print). A lone
        /// / between two segments is cs_change: CS goes inactive after the
        /// transfer before it and active again for the next, in the one message.
        #[arg(required = true, value_name = "SEGMENT")]
        segments: Vec<String>,
    },
}

/// Why `wirespeed spi` failed.
#[derive(Debug)]
pub enum SpiCmdError {
    /// The segments do not make a message.
    Segment(SegmentError),
    /// `--cs-change-ns` with no `/` to apply it to.
    CsChangeWithoutSlash {
        /// The gap asked.
        ns: u32,
    },
    /// `--dev` names a path that is not there.
    NoNode(String),
    /// The device could not be opened.
    Open(String),
    /// The device's settings are refused.
    Device {
        /// The device.
        dev: String,
        /// Why.
        error: InvalidMessage,
    },
    /// The message failed.
    Transfer {
        /// The device.
        dev: String,
        /// Why.
        error: SpiError,
    },
}

impl fmt::Display for SpiCmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpiCmdError::Segment(e) => write!(f, "{e}"),
            SpiCmdError::CsChangeWithoutSlash { ns } => write!(
                f,
                "--cs-change-ns {ns}: the message has no cs_change to apply it to; put a lone / between two segments \
                 (xfer 06 / 05 00)"
            ),
            SpiCmdError::NoNode(e) | SpiCmdError::Open(e) => write!(f, "{e}"),
            SpiCmdError::Device { dev, error } => write!(f, "{dev}: the device settings are refused: {error}"),
            SpiCmdError::Transfer { dev, error } => {
                // Backend errors name the device themselves.
                let text = error.to_string();
                if text.starts_with(dev.as_str()) {
                    write!(f, "the message failed: {text}")
                } else {
                    write!(f, "{dev}: the message failed: {text}")
                }
            }
        }
    }
}

impl std::error::Error for SpiCmdError {}

impl From<SegmentError> for SpiCmdError {
    fn from(e: SegmentError) -> SpiCmdError {
        SpiCmdError::Segment(e)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn flags_of(a: &SpiArgs) -> ModeFlags {
    let mut f = ModeFlags::NONE;
    for (on, flag) in [
        (a.lsb_first, ModeFlags::LSB_FIRST),
        (a.cs_high, ModeFlags::CS_HIGH),
        (a.three_wire, ModeFlags::THREE_WIRE),
        (a.loopback, ModeFlags::LOOP),
        (a.no_cs, ModeFlags::NO_CS),
    ] {
        if on {
            f |= flag;
        }
    }
    f
}

fn mode_of(m: u8) -> Mode {
    match m {
        0 => Mode::Mode0,
        1 => Mode::Mode1,
        2 => Mode::Mode2,
        _ => Mode::Mode3,
    }
}

/// What the lab's bus trace saw of the last message (lab targets only).
struct LabTrace {
    windows: usize,
    gaps_ns: Vec<u64>,
}

/// What a run gave.
struct Outcome {
    txs: Vec<Vec<u8>>,
    rxs: Vec<Vec<u8>>,
    times: Vec<Duration>,
    ioctls: Option<u64>,
    timing: EffectiveTiming,
    lab_trace: Option<LabTrace>,
}

/// Runs `wirespeed spi`.
pub fn run(args: SpiArgs) -> Result<(), SpiCmdError> {
    let SpiCommand::Xfer { segments } = &args.command;
    let segs = parse_segments(segments)?;
    let has_cs_change = segs.iter().any(|s| s.cs_change);
    if let (Some(ns), false) = (args.cs_change_ns, has_cs_change) {
        return Err(SpiCmdError::CsChangeWithoutSlash { ns });
    }
    let out = xfer(&args, &segs)?;
    if args.json {
        println!("{}", to_json(&args, &segs, &out));
    } else {
        print!("{}", table(&args, &segs, &out));
    }
    Ok(())
}

fn xfer(args: &SpiArgs, segs: &[Segment]) -> Result<Outcome, SpiCmdError> {
    let name = args.dev.to_string();
    let opened = open(&args.dev, Policy::fast(), false).map_err(|e| match &args.dev {
        Target::Node(path) => {
            let e = format!("{e} (--dev lab-spidev tries the command on the emulated lab)");
            if path.exists() {
                SpiCmdError::Open(e)
            } else {
                SpiCmdError::NoNode(e)
            }
        }
        _ => SpiCmdError::Open(e),
    })?;
    let cfg = DeviceConfig::new(0, args.hz).mode(mode_of(args.mode)).flags(flags_of(args)).bits_per_word(args.bits);
    let dev = opened.bus.device(cfg).map_err(|error| SpiCmdError::Device { dev: name.clone(), error })?;
    let txs: Vec<Vec<u8>> = segs
        .iter()
        .map(|s| match &s.op {
            Op::Duplex(b) | Op::Write(b) => b.clone(),
            Op::Read(n) => vec![0; *n],
        })
        .collect();
    let mut rxs: Vec<Vec<u8>> = segs
        .iter()
        .map(|s| match &s.op {
            Op::Duplex(b) => vec![0; b.len()],
            Op::Read(n) => vec![0; *n],
            Op::Write(_) => Vec::new(),
        })
        .collect();
    let ioctls_before = opened.counters.as_ref().map(|c| c.ioctls());
    let repeat = args.repeat as usize;
    let mut times = Vec::with_capacity(repeat);
    let mut lab_trace = None;
    {
        let mut transfers: Vec<Transfer<'_>> = segs
            .iter()
            .zip(&txs)
            .zip(rxs.iter_mut())
            .map(|((s, tx), rx)| {
                let t = match s.op {
                    Op::Duplex(_) => Transfer::duplex(tx, rx),
                    Op::Read(_) => Transfer::read(rx),
                    Op::Write(_) => Transfer::write(tx),
                };
                if s.cs_change {
                    t.cs_change(args.cs_change_ns)
                } else {
                    t
                }
            })
            .collect();
        for i in 0..repeat {
            // The lab's bus trace records the last message, like a scope.
            let traced = opened.block.as_ref().filter(|_| i + 1 == repeat);
            if let Some(block) = traced {
                let bytes: usize = txs.iter().map(Vec::len).sum();
                block.trace_start(bytes + 4 * segs.len() + 16);
            }
            let t0 = Instant::now();
            let r = dev.sync(&mut transfers);
            times.push(t0.elapsed());
            if let Some(block) = traced {
                block.trace_stop();
                let windows: Vec<_> = cs_windows(&block.trace_take()).into_iter().filter(|w| w.line == 0).collect();
                lab_trace = Some(LabTrace { windows: windows.len(), gaps_ns: cs_high_gaps_ns(&windows) });
            }
            r.map_err(|error| SpiCmdError::Transfer { dev: name.clone(), error })?;
        }
    }
    let ioctls = opened.counters.as_ref().zip(ioctls_before).map(|(c, before)| c.ioctls() - before);
    Ok(Outcome { txs, rxs, times, ioctls, timing: dev.effective_timing(), lab_trace })
}

/// The CS gap a `/` gets: what was asked (or the device's default, 0 here)
/// and what the backend gives, at least.
fn cs_change_gap(args: &SpiArgs, timing: &EffectiveTiming) -> (Option<u32>, u64) {
    let asked = args.cs_change_ns;
    (asked, u64::from(asked.unwrap_or(0)).max(timing.cs_change_gap_ns))
}

fn flags_text(args: &SpiArgs) -> String {
    flags_of(args).to_string()
}

fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort_unstable();
    let n = t.len();
    if !n.is_multiple_of(2) {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2
    }
}

/// Microseconds, to the nanosecond.
fn us(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1000.0
}

/// Bytes per table line in each column.
const ROW_BYTES: usize = 16;

fn table(args: &SpiArgs, segs: &[Segment], out: &Outcome) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} Hz, mode {}, {} bits per word, flags {}",
        args.dev,
        args.hz,
        args.mode,
        args.bits,
        flags_text(args)
    );
    let width = segs.iter().map(|x| (2 * x_len(x)).min(2 * ROW_BYTES)).max().unwrap_or(0).max(2);
    let _ = writeln!(s, "{:>3}  {:<width$}  rx", "#", "tx");
    let (_, gap) = cs_change_gap(args, &out.timing);
    for (i, seg) in segs.iter().enumerate() {
        let tx: Vec<String> = out.txs[i].chunks(ROW_BYTES).map(hex).collect();
        let rx: Vec<String> = match seg.op {
            Op::Write(_) => vec!["- (write only)".to_owned()],
            _ => out.rxs[i].chunks(ROW_BYTES).map(hex).collect(),
        };
        for line in 0..tx.len().max(rx.len()) {
            let idx = if line == 0 { i.to_string() } else { String::new() };
            let t = tx.get(line).map_or("", String::as_str);
            let r = rx.get(line).map_or("", String::as_str);
            let _ = writeln!(s, "{idx:>3}  {t:<width$}  {r}");
        }
        if seg.cs_change {
            let for_ns = if gap > 0 { format!(" for at least {gap} ns") } else { String::new() };
            let _ = writeln!(s, "{:>3}  / cs_change: CS inactive{for_ns}, then active again", "");
        }
    }
    let msgs = out.times.len();
    match out.ioctls {
        Some(n) => {
            let per = n as f64 / msgs as f64;
            let _ = write!(s, "ioctls: {n} (SPI_IOC_MESSAGE) for {msgs} message{}", if msgs == 1 { "" } else { "s" });
            if msgs > 1 {
                let _ = write!(s, ", {per} per message");
            }
            if n as usize > msgs {
                let _ = write!(
                    s,
                    "; cut where CS drops: a cs_change gap longer than the kernel's fixed 10 us, or more than bufsiz \
                     bytes"
                );
            }
            let _ = writeln!(s);
        }
        None => {
            let _ = writeln!(s, "ioctls: none (the lab's SPI block, driven by the stack itself)");
        }
    }
    for line in effective_differences(args, segs, out) {
        let _ = writeln!(s, "effective: {line}");
    }
    if let Some(t) = &out.lab_trace {
        let gaps: Vec<String> = t.gaps_ns.iter().map(|g| format!("{:.1} us", *g as f64 / 1000.0)).collect();
        let _ = write!(s, "lab trace: {} CS window{}", t.windows, if t.windows == 1 { "" } else { "s" });
        if !gaps.is_empty() {
            let _ = write!(s, ", CS inactive {} between them", gaps.join(", "));
        }
        let _ = writeln!(s);
    }
    if msgs > 1 {
        let (min, max) = (out.times.iter().min().copied(), out.times.iter().max().copied());
        let _ = writeln!(
            s,
            "{msgs} messages: median {:.1} us per message (min {:.1}, max {:.1}); rx above is the last one's",
            us(median(&out.times)),
            us(min.unwrap_or_default()),
            us(max.unwrap_or_default())
        );
    }
    s
}

fn x_len(seg: &Segment) -> usize {
    match &seg.op {
        Op::Duplex(b) | Op::Write(b) => b.len(),
        Op::Read(n) => *n,
    }
}

/// What the device really gets where it differs from what was asked.
fn effective_differences(args: &SpiArgs, segs: &[Segment], out: &Outcome) -> Vec<String> {
    let mut v = Vec::new();
    let t = &out.timing;
    if t.speed_hz != args.hz {
        v.push(format!("clock {} Hz (asked {} Hz: the controller divides its clock)", t.speed_hz, args.hz));
    }
    let (asked, gap) = cs_change_gap(args, t);
    if segs.iter().any(|s| s.cs_change) && gap != u64::from(asked.unwrap_or(0)) {
        let asked = asked.map_or("none".to_owned(), |a| format!("{a} ns"));
        let why = if out.ioctls.is_some() { "spidev's kernel keeps CS inactive a fixed 10 us" } else { "" };
        v.push(format!(
            "cs_change gap at least {gap} ns (asked {asked}{}{why})",
            if why.is_empty() { "" } else { "; " }
        ));
    }
    v
}

fn to_json(args: &SpiArgs, segs: &[Segment], out: &Outcome) -> Value {
    let transfers: Vec<Value> = segs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let rx = match s.op {
                Op::Write(_) => Value::Null,
                _ => json!(hex(&out.rxs[i])),
            };
            json!({"tx": hex(&out.txs[i]), "rx": rx, "kind": s.op.kind(), "cs_change": s.cs_change})
        })
        .collect();
    let t = &out.timing;
    let (asked, gap) = cs_change_gap(args, t);
    let cs_change_gap =
        if segs.iter().any(|s| s.cs_change) { json!({"asked": asked, "effective": gap}) } else { Value::Null };
    let timing = if out.times.len() > 1 {
        let min = out.times.iter().min().copied().unwrap_or_default();
        let max = out.times.iter().max().copied().unwrap_or_default();
        json!({"median_us": us(median(&out.times)), "min_us": us(min), "max_us": us(max)})
    } else {
        json!({"elapsed_us": us(out.times.first().copied().unwrap_or_default())})
    };
    let lab_trace =
        out.lab_trace.as_ref().map_or(Value::Null, |l| json!({"cs_windows": l.windows, "cs_inactive_ns": l.gaps_ns}));
    json!({
        "device": args.dev.to_string(),
        "hz": args.hz,
        "mode": args.mode,
        "bits": args.bits,
        "flags": flags_text(args),
        "transfers": transfers,
        "messages": out.times.len(),
        "ioctls": out.ioctls,
        "effective_timing": {
            "speed_hz": t.speed_hz,
            "cs_setup_ns": t.cs_setup_ns,
            "cs_hold_ns": t.cs_hold_ns,
            "cs_inactive_ns": t.cs_inactive_ns,
            "cs_change_gap_ns": t.cs_change_gap_ns,
            "delay_step_ns": t.delay_step_ns,
        },
        "cs_change_gap_ns": cs_change_gap,
        "timing": timing,
        "lab_trace": lab_trace,
    })
}

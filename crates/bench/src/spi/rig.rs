//! A bench rig: one lab with a WSPI block, a loopback on CS 0, and a bus;
//! and [`round`], the back-to-back message loop every `spi` figure (and the
//! `spi_message_cost` example's instruction count) is taken over.

use super::target::Target;
use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy, PreparedMessage, SpiDevice, Transfer};
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::trace::{cs_high_gaps_ns, cs_windows};
use wirespeed_lab::Lab;
use wirespeed_time::now;

use crate::stats::median;
use crate::usage::ProcessUsage;
use wirespeed_lab::WakeCost;

/// One bus run with one policy on its target (a lab of its own by default).
#[derive(Debug)]
pub struct Rig {
    _lab: Option<Lab>,
    /// The lab block the messages end on, if any (for bus traces).
    pub block: Option<SpiController>,
    pub bus: Bus,
    pub dev: SpiDevice,
    /// Whether its wire is instant (asked for, on the lab's own block).
    pub instant_wire: bool,
}

impl Rig {
    /// A rig on a lab of its own: a WSPI block with a loopback on CS 0.
    pub fn new(policy: Policy, hz: u32, instant_wire: bool) -> Result<Rig, String> {
        Rig::on(&Target::default(), policy, hz, instant_wire)
    }

    /// A rig on `target` (`instant_wire` only on the lab).
    pub fn on(target: &Target, policy: Policy, hz: u32, instant_wire: bool) -> Result<Rig, String> {
        let opened = super::target::open(target, policy, instant_wire)?;
        let dev = opened.bus.device(DeviceConfig::new(0, hz)).map_err(|e| e.to_string())?;
        let instant_wire = instant_wire && target.is_lab_block();
        Ok(Rig { _lab: opened.lab, block: opened.block, bus: opened.bus, dev, instant_wire })
    }

    pub fn prepared(&self, size: usize) -> Result<PreparedMessage, String> {
        self.dev.prepare(vec![OwnedTransfer::duplex(vec![0xA5; size])]).map_err(|e| e.to_string())
    }
}

/// Totals of back-to-back messages timed together: a round, or a chunk of one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Round {
    pub msgs: u64,
    pub elapsed_ns: u64,
    pub usage: ProcessUsage,
    /// What waking the lab's interrupt thread cost the sending thread.
    pub lab_wakes: WakeCost,
    pub pump_wakeups: u64,
    pub pump_kicks: u64,
    pub pump_kicks_coalesced: u64,
    /// The longest a kick waited for the pump to run (ns).
    pub pump_kick_wait_max_ns: u64,
    pub pump_timer_wakeups: u64,
}

/// How a round sends its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `dev.sync(&mut [Transfer::duplex(..)])`: validated on every call.
    Unprepared,
    /// `dev.run(&mut prepared)`.
    Prepared,
}

/// Sends one sync message in `style`: `tx` out and `rx` in, or `pm`.
#[inline]
pub fn send(rig: &Rig, style: Style, tx: &[u8], rx: &mut [u8], pm: &mut PreparedMessage) -> Result<(), String> {
    match style {
        Style::Unprepared => rig.dev.sync(&mut [Transfer::duplex(tx, rx)]),
        Style::Prepared => rig.dev.run(pm),
    }
    .map_err(|e| e.to_string())
}

/// Sends `msgs` back-to-back sync messages of `size` bytes.
pub fn round(rig: &Rig, style: Style, size: usize, msgs: u64, pm: &mut PreparedMessage) -> Result<Round, String> {
    let (tx, mut rx) = (vec![0xA5u8; size], vec![0u8; size]);
    round_with(rig, style, (&tx, &mut rx), msgs, pm)
}

/// [`round`] with the caller's buffers (`tx` out, `rx` in, one message's
/// worth each), for a caller that runs many short rounds.
pub fn round_with(
    rig: &Rig,
    style: Style,
    (tx, rx): (&[u8], &mut [u8]),
    msgs: u64,
    pm: &mut PreparedMessage,
) -> Result<Round, String> {
    let wake0 = rig.bus.pump_wakeups();
    let kicks0 = rig.bus.pump_kicks();
    let coalesced0 = rig.bus.pump_kicks_coalesced();
    let timer0 = rig.bus.pump_timer_wakeups();
    rig.bus.take_pump_kick_wait_max();
    let u0 = ProcessUsage::now();
    let lab0 = WakeCost::of_this_thread();
    let t0 = now();
    for _ in 0..msgs {
        send(rig, style, tx, rx, pm)?;
    }
    let elapsed_ns = now().ns_since(t0);
    Ok(Round {
        msgs,
        elapsed_ns,
        usage: ProcessUsage::now().since(u0),
        lab_wakes: WakeCost::of_this_thread().since(lab0),
        pump_wakeups: rig.bus.pump_wakeups() - wake0,
        pump_kicks: rig.bus.pump_kicks() - kicks0,
        pump_kicks_coalesced: rig.bus.pump_kicks_coalesced() - coalesced0,
        pump_kick_wait_max_ns: rig.bus.take_pump_kick_wait_max().as_nanos() as u64,
        pump_timer_wakeups: rig.bus.pump_timer_wakeups() - timer0,
    })
}

/// CS→clock and CS-high gap medians (µs) over `msgs` traced messages;
/// NaN (null in JSON) where no bus trace can be had (a real device, seen
/// with no scope).
pub fn traced_cs_figures(rig: &Rig, size: usize, msgs: u64) -> Result<(f64, f64), String> {
    let Some(block) = &rig.block else {
        return Ok((f64::NAN, f64::NAN));
    };
    let mut pm = rig.prepared(size)?;
    block.trace_start(super::trace_capacity(size, msgs));
    round(rig, Style::Unprepared, size, msgs, &mut pm)?;
    block.trace_stop();
    let w = cs_windows(&block.trace_take());
    let c2c: Vec<f64> = w.iter().filter_map(|w| w.cs_to_clock_ns()).map(|n| n as f64 / 1e3).collect();
    let gaps: Vec<f64> = cs_high_gaps_ns(&w).into_iter().map(|n| n as f64 / 1e3).collect();
    Ok((median(&c2c), median(&gaps)))
}

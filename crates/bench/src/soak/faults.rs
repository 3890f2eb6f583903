//! The fault injector, and the ledger that matches every injected fault
//! with the one report of it.
//!
//! | fault | injected (counted when it takes effect) | reported (counted once) |
//! |---|---|---|
//! | `transfer_error` | the lab refuses a bus's next `START` (backdoor `refuse_next_start`); counted by the lab when it fires | the one message whose transfer hit it fails with `SpiError::Controller` |
//! | `timeout` | the lab stalls a bus's next burst (`stall_next_burst`, at most one a second); counted by the lab when it fires | that message fails with `SpiError::Timeout` after the driver's timeout (≥ 200 ms); its `RESET` ends the stall |
//!
//! (A register-map access hit by either fails with `RegmapError::Bus`
//! carrying the same SPI error as text, and is reported the same way.)
//!
//! | `stuck_device` | a loopback's MISO is stuck high for a window (until a worker has seen it, 2 s at most) | a window in which at least one message read back a bad echo; those reads count as `stuck_reads`, not as corrupted |
//! | `gpio_removal` | the GPIO chip is unplugged; a new chip is plugged in once the worker has seen it gone (2 s at most) | the GPIO worker's first `GpioError::ChipGone` from that chip |
//! | `nor_power_cut` | the injector arms a cut (a flag in the ledger, until it fired, 2 s at most); the flash worker takes it at the start of a page program and arms the power switch, which cuts power (`SpiNor::power_cut`) 10–90 % into that program's busy window, at the first bus event after that instant; counted by the switch when it fires | the worker's read back of that page differs (`PageFault::VerifyMismatch`; the driver's program itself returns `Ok`, the chip being back up and idle); then the sector is erased and rewritten, each page verified. A mismatch with no cut in its program counts as `corrupted` |
//!
//! (The flash is on `spi0`: a transfer error or timeout that hits one of
//! the flash driver's messages comes back as `spi_nor::Error::Spi`, or
//! inside `ProgramFailed`/`EraseFailed`, and is reported as above; the
//! flash worker then redoes the step. See [`super::flash_worker`].)
//!
//! A stuck-device window is known by an epoch per device, odd while stuck:
//! a worker reads it before sending and after completion, and a bad echo
//! whose message overlapped a window (odd before, or changed since) is
//! that window's fault; any other bad echo is corruption. (So a genuine
//! corruption inside a stuck window would be blamed on the window.)
//!
//! A pump stall (a completion callback that sleeps 3 ms on the pump
//! thread, armed per bus) produces no error by design: the messages
//! queued behind it must still complete, in order. It is counted apart, as
//! `pump_stalls`, and not in the fault counts.
//!
//! Any other typed error (an `SpiError` or `GpioError` of another kind)
//! counts as `unexpected_errors`; a panic as `untyped_errors`.

use super::rig::Rig;
use super::rng::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use wirespeed::regmap::{BusError, RegmapError};
use wirespeed::spi::SpiError;
use wirespeed_lab::spi::InjectedFaults;
use wirespeed_time::{now, Instant};

/// The faults that produce errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A refused burst start (`STATUS.ERR`).
    TransferError,
    /// A burst that never ends.
    Timeout,
    /// A device whose MISO is stuck high.
    StuckDevice,
    /// The GPIO chip unplugged.
    GpioRemoval,
    /// Power cut during a SPI NOR page program.
    NorPowerCut,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 5] = [
        FaultKind::TransferError,
        FaultKind::Timeout,
        FaultKind::StuckDevice,
        FaultKind::GpioRemoval,
        FaultKind::NorPowerCut,
    ];

    /// The report's name for it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::TransferError => "transfer_error",
            FaultKind::Timeout => "timeout",
            FaultKind::StuckDevice => "stuck_device",
            FaultKind::GpioRemoval => "gpio_removal",
            FaultKind::NorPowerCut => "nor_power_cut",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Default)]
struct StuckWindow {
    /// Odd while the device is stuck; +1 at each start and end of a window.
    epoch: AtomicU64,
    /// The latest window (its odd epoch) in which a bad echo was seen.
    detected: AtomicU64,
}

/// Faults injected and reported, by kind.
#[derive(Debug)]
pub struct FaultLedger {
    injected: [AtomicU64; 5],
    reported: [AtomicU64; 5],
    stuck: Vec<StuckWindow>,
    pump_stall_armed: Vec<AtomicBool>,
    pump_stalls: AtomicU64,
    /// Generation + 1 of the last GPIO chip unplugged.
    gpio_unplugged: AtomicU64,
    /// Generation + 1 of the last GPIO chip seen gone.
    gpio_seen_gone: AtomicU64,
    /// A NOR power cut armed by the injector, not yet taken by the flash worker.
    nor_cut_armed: AtomicBool,
}

impl FaultLedger {
    /// A ledger for `devices` SPI devices on `buses` buses.
    pub fn new(devices: usize, buses: usize) -> FaultLedger {
        FaultLedger {
            injected: Default::default(),
            reported: Default::default(),
            stuck: (0..devices).map(|_| StuckWindow::default()).collect(),
            pump_stall_armed: (0..buses).map(|_| AtomicBool::new(false)).collect(),
            pump_stalls: AtomicU64::new(0),
            gpio_unplugged: AtomicU64::new(0),
            gpio_seen_gone: AtomicU64::new(0),
            nor_cut_armed: AtomicBool::new(false),
        }
    }

    /// Injected faults of `kind`.
    pub fn injected(&self, kind: FaultKind) -> u64 {
        self.injected[kind.index()].load(Ordering::Acquire)
    }

    /// Reported faults of `kind`.
    pub fn reported(&self, kind: FaultKind) -> u64 {
        self.reported[kind.index()].load(Ordering::Acquire)
    }

    /// Pump stalls that fired.
    pub fn pump_stalls(&self) -> u64 {
        self.pump_stalls.load(Ordering::Acquire)
    }

    fn report(&self, kind: FaultKind) {
        self.reported[kind.index()].fetch_add(1, Ordering::AcqRel);
    }

    /// Reports a failed register access; `false` if its error is of a kind
    /// no injected fault causes. The register map keeps the SPI error whole
    /// (`BusError::Spi`), so it maps as [`report_spi`](Self::report_spi) does.
    pub fn report_regmap(&self, e: &RegmapError) -> bool {
        match e {
            RegmapError::Bus { error: BusError::Spi(spi), .. } => self.report_spi(spi),
            _ => false,
        }
    }

    /// Reports a failed SPI message; `false` if its error is of a kind no
    /// injected fault causes.
    pub fn report_spi(&self, e: &SpiError) -> bool {
        match e {
            SpiError::Controller { .. } => self.report(FaultKind::TransferError),
            SpiError::Timeout { .. } => self.report(FaultKind::Timeout),
            _ => return false,
        }
        true
    }

    /// The stuck-window epoch of `device` now (read before sending).
    pub fn stuck_epoch(&self, device: usize) -> u64 {
        self.stuck.get(device).map_or(0, |w| w.epoch.load(Ordering::Acquire))
    }

    /// A bad echo from `device` of a message sent at epoch `sent_at`:
    /// whether a stuck window overlapped it (then it is that window's fault).
    pub fn blame_stuck(&self, device: usize, sent_at: u64) -> bool {
        let Some(w) = self.stuck.get(device) else { return false };
        let now_epoch = w.epoch.load(Ordering::Acquire);
        let window = if sent_at % 2 == 1 {
            sent_at
        } else if now_epoch != sent_at {
            sent_at + 1
        } else {
            return false;
        };
        w.detected.fetch_max(window, Ordering::AcqRel);
        true
    }

    /// On the pump thread of `bus`, in a completion callback: whether to
    /// stall now (an armed stall fires once).
    pub fn take_pump_stall(&self, bus: usize) -> bool {
        let fire = self.pump_stall_armed.get(bus).is_some_and(|a| a.swap(false, Ordering::AcqRel));
        if fire {
            self.pump_stalls.fetch_add(1, Ordering::AcqRel);
        }
        fire
    }

    /// Arms a NOR power cut for the flash worker's next page program.
    pub fn arm_nor_cut(&self) {
        self.nor_cut_armed.store(true, Ordering::Release);
    }

    /// At the start of a page program: whether a NOR power cut is armed
    /// (taken: it is the flash worker's from now on).
    pub fn take_nor_cut(&self) -> bool {
        self.nor_cut_armed.swap(false, Ordering::AcqRel)
    }

    /// The flash worker saw a NOR power cut (a verify mismatch after it).
    pub fn report_nor_cut(&self) {
        self.report(FaultKind::NorPowerCut);
    }

    /// The GPIO worker saw chip `generation` gone; `false` if the injector
    /// never unplugged it (an unexpected error). Counted once per chip.
    pub fn gpio_chip_gone(&self, generation: u64) -> bool {
        if generation + 1 > self.gpio_unplugged.load(Ordering::Acquire) {
            return false;
        }
        if self.gpio_seen_gone.fetch_max(generation + 1, Ordering::AcqRel) < generation + 1 {
            self.report(FaultKind::GpioRemoval);
        }
        true
    }
}

/// How long the injector waits for an armed fault to fire or be seen.
const FIRE_LIMIT_NS: u64 = 2_000_000_000;
/// Least time between two timeout faults (each blocks its bus ≥ 200 ms).
const TIMEOUT_SPACING_NS: u64 = 1_000_000_000;

/// Injects faults at random until `stop`, then disarms what did not fire.
#[derive(Debug)]
pub struct Injector<'a> {
    rig: &'a Rig,
    ledger: &'a FaultLedger,
    rng: Rng,
    last_timeout: Option<Instant>,
}

impl<'a> Injector<'a> {
    /// An injector for `rig`, recording into `ledger`.
    pub fn new(rig: &'a Rig, ledger: &'a FaultLedger, seed: u64) -> Injector<'a> {
        Injector { rig, ledger, rng: Rng::new(seed), last_timeout: None }
    }

    /// Injects until `stop` is set; returns with nothing armed.
    pub fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_micros(self.rng.between(2_000, 20_000)));
            let bus = self.rng.below(self.rig.blocks.len() as u64) as usize;
            match self.rng.below(100) {
                0..=34 => self.arm_and_wait(bus, |b| b.refuse_next_start(), |f| f.refused_starts),
                35..=44 if self.timeout_allowed() => {
                    self.last_timeout = Some(now());
                    self.arm_and_wait(bus, |b| b.stall_next_burst(), |f| f.stalled_bursts);
                }
                35..=64 => self.stuck_window(),
                65..=81 => self.ledger.pump_stall_armed[bus].store(true, Ordering::Release),
                82..=89 => self.nor_cut(),
                _ => self.unplug_gpio(),
            }
        }
        for armed in &self.ledger.pump_stall_armed {
            armed.store(false, Ordering::Release);
        }
        self.ledger.nor_cut_armed.store(false, Ordering::Release);
        for block in &self.rig.blocks {
            block.disarm_faults();
        }
    }

    fn timeout_allowed(&self) -> bool {
        self.last_timeout.is_none_or(|t| now().ns_since(t) >= TIMEOUT_SPACING_NS)
    }

    /// Arms a one-shot lab fault on `bus` and waits (bounded) until it fired.
    fn arm_and_wait(
        &self,
        bus: usize,
        arm: impl Fn(&wirespeed_lab::spi::SpiController),
        fired: impl Fn(&InjectedFaults) -> u64,
    ) {
        let block = &self.rig.blocks[bus];
        let before = fired(&block.injected_faults());
        arm(block);
        wait_until(|| fired(&block.injected_faults()) > before);
        block.disarm_faults();
    }

    /// Makes one device's MISO stuck until a worker has seen it (bounded).
    fn stuck_window(&mut self) {
        let device = self.rng.below(self.rig.devices.len() as u64) as usize;
        let (w, loopback) = (&self.ledger.stuck[device], &self.rig.devices[device].loopback);
        let window = w.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        loopback.set_miso_stuck(Some(true));
        wait_until(|| w.detected.load(Ordering::Acquire) >= window);
        loopback.set_miso_stuck(None);
        w.epoch.fetch_add(1, Ordering::AcqRel);
        self.ledger.injected[FaultKind::StuckDevice.index()].fetch_add(1, Ordering::AcqRel);
        if w.detected.load(Ordering::Acquire) >= window {
            self.ledger.report(FaultKind::StuckDevice);
        }
    }

    /// Arms a NOR power cut and waits (bounded) until it fired; disarms it
    /// if the flash worker did not take it. (Once taken it fires: the
    /// worker's next page program starts it.)
    fn nor_cut(&self) {
        let power = &self.rig.flash.power;
        let before = power.cuts();
        self.ledger.arm_nor_cut();
        wait_until(|| power.cuts() > before);
        self.ledger.nor_cut_armed.store(false, Ordering::Release);
    }

    /// Unplugs the GPIO chip, waits (bounded) for the worker to see it
    /// gone, and plugs in a new one.
    fn unplug_gpio(&self) {
        let slot = &self.rig.gpio;
        let generation = slot.generation();
        self.ledger.gpio_unplugged.store(generation + 1, Ordering::Release);
        slot.unplug();
        self.ledger.injected[FaultKind::GpioRemoval.index()].fetch_add(1, Ordering::AcqRel);
        wait_until(|| self.ledger.gpio_seen_gone.load(Ordering::Acquire) > generation);
        slot.plug_new();
    }

    /// Records the lab's counts of the faults that fired (call once every
    /// message has completed).
    pub fn count_lab_faults(rig: &Rig, ledger: &FaultLedger) {
        let (mut refused, mut stalled) = (0, 0);
        for block in &rig.blocks {
            let f = block.injected_faults();
            refused += f.refused_starts;
            stalled += f.stalled_bursts;
        }
        ledger.injected[FaultKind::TransferError.index()].store(refused, Ordering::Release);
        ledger.injected[FaultKind::Timeout.index()].store(stalled, Ordering::Release);
        ledger.injected[FaultKind::NorPowerCut.index()].store(rig.flash.power.cuts(), Ordering::Release);
    }
}

fn wait_until(done: impl Fn() -> bool) {
    let limit = now().add_ns(FIRE_LIMIT_NS);
    while !done() && now() < limit {
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed::regmap::RegmapError;

    #[test]
    fn a_bad_echo_is_the_stuck_window_s_only_when_it_overlapped_one() {
        let ledger = FaultLedger::new(1, 1);
        let w = &ledger.stuck[0];
        let before = ledger.stuck_epoch(0);
        assert!(!ledger.blame_stuck(0, before), "no window: corruption");
        w.epoch.fetch_add(1, Ordering::AcqRel); // window 1 opens
        assert!(ledger.blame_stuck(0, before), "sent before, completed inside");
        assert!(ledger.blame_stuck(0, ledger.stuck_epoch(0)), "sent inside");
        w.epoch.fetch_add(1, Ordering::AcqRel); // window 1 closes
        assert_eq!(w.detected.load(Ordering::Acquire), 1);
        assert!(!ledger.blame_stuck(0, ledger.stuck_epoch(0)), "after the window: corruption again");
    }

    #[test]
    fn a_gpio_removal_is_reported_once_and_only_if_injected() {
        let ledger = FaultLedger::new(0, 0);
        assert!(!ledger.gpio_chip_gone(0), "never unplugged: unexpected");
        ledger.gpio_unplugged.store(1, Ordering::Release);
        assert!(ledger.gpio_chip_gone(0));
        assert!(ledger.gpio_chip_gone(0));
        assert_eq!(ledger.reported(FaultKind::GpioRemoval), 1);
    }

    #[test]
    fn spi_and_register_map_errors_map_to_their_fault() {
        let ledger = FaultLedger::new(0, 0);
        let controller = SpiError::Controller { index: 0, reason: "refused" };
        let timeout = SpiError::Timeout { index: 1, waited_us: 200_000 };
        assert!(ledger.report_spi(&controller) && ledger.report_spi(&timeout));
        assert!(!ledger.report_spi(&SpiError::BusGone));
        let bus = |e: &SpiError| RegmapError::Bus { reg: 0x10, error: BusError::Spi(e.clone()) };
        assert!(ledger.report_regmap(&bus(&controller)) && ledger.report_regmap(&bus(&timeout)));
        assert!(!ledger.report_regmap(&bus(&SpiError::BusGone)));
        assert_eq!((ledger.reported(FaultKind::TransferError), ledger.reported(FaultKind::Timeout)), (2, 2));
    }
}

//! The executor: runs one validated message on the controller, with the bus
//! held. Shared by the caller-context fast path, the pump thread, prepared
//! messages and embedded-hal transactions.
//!
//! Chip select is always released when a transfer fails, whatever the policy.

use super::bounce::{Bounce, BounceSlot};
use super::controller::{
    Completion, Controller, ControllerCaps, ControllerFault, DmaAddrs, DmaSupport, InFlight, TransferTiming,
};
use super::device::{ChipSelect, DeviceConfig};
use super::dma_map::TransferMapping;
use super::error::{InvalidMessage, SpiError};
use super::message::{MessageBackend, MessageView};
use super::plan::{plan_step, Step};
use super::policy::Policy;
use super::poll_budget::PollBudget;
use super::stats::Stats;
use super::transfer::{Data, Mode, Transfer};
use super::waits::{classic_delay_ns, wait_until};
use super::wakeup::IrqCost;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wirespeed_time::{now, Deadline, Instant};

/// The kernel's `cs_change` delay when none is given: a zeroed
/// `cs_change_delay` (unit µs, value 0) waits 10 µs, while a zero in ns or
/// clock cycles waits nothing (`_spi_transfer_cs_change_delay_exec`).
pub(crate) const KERNEL_CS_CHANGE_DEFAULT_NS: u32 = 10_000;

/// A device as the executor sees it.
#[derive(Debug)]
pub(crate) struct DeviceState {
    pub id: u64,
    pub cfg: DeviceConfig,
    /// When this device's CS last went inactive (ns on the monotonic clock).
    /// Shared with the bus while this device's CS is held, so that whoever
    /// releases it stamps the release here.
    pub last_cs_off: Arc<AtomicU64>,
}

/// A chip select left active by a message's final `cs_change`.
#[derive(Debug)]
pub(crate) struct HeldCs {
    pub device: u64,
    pub cs: ChipSelect,
    /// The holding device's last-CS-off stamp, written on release.
    pub last_off: Arc<AtomicU64>,
}

/// The backend of a bus: a controller the core drives transfer by
/// transfer, or a backend that takes whole messages.
pub(crate) enum Face {
    Controller(Box<dyn Controller>),
    Messages(Box<dyn MessageBackend>),
}

/// The hardware side of a bus, owned by whoever holds the bus.
pub(crate) struct BusHw {
    pub face: Face,
    pub caps: ControllerCaps,
    /// The controller's DMA engine: transfers of at least its `min_len` go by DMA.
    pub dma: Option<DmaSupport>,
    /// The bounce buffers of policy `bounce_dma`, made at first use.
    pub bounce: BounceSlot,
    pub setup: Option<(Mode, u32, u8)>,
    pub powered: bool,
    /// A device whose CS was left active by `cs_change` on a message's last transfer.
    pub cs_held: Option<HeldCs>,
    /// The transfer the running message is at: a panic in the driver fails
    /// the message with this index.
    pub transfer: usize,
    /// What adaptive completion may still poll beyond its break-even point.
    pub poll_budget: PollBudget,
}

/// The controller of a controller-level bus (see [`BusHw::ctlr`]).
fn controller(face: &mut Face) -> &mut dyn Controller {
    match face {
        Face::Controller(c) => c.as_mut(),
        Face::Messages(_) => unreachable!("the controller path runs only on controller-level buses"),
    }
}

impl BusHw {
    /// The controller of a controller-level bus. Only the controller path
    /// calls it: [`execute`] hands message-level buses their whole message
    /// before that path starts.
    fn ctlr(&mut self) -> &mut dyn Controller {
        controller(&mut self.face)
    }

    /// Powers the backend up or down (a message-level backend has nothing to power).
    pub(crate) fn set_power(&mut self, on: bool) {
        if let Face::Controller(c) = &mut self.face {
            c.set_power(on);
        }
    }
}

impl std::fmt::Debug for BusHw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusHw").field("caps", &self.caps).field("powered", &self.powered).finish()
    }
}

/// A message the executor can run: a count of transfers, each with a step and data.
pub(crate) trait MessageSource {
    fn count(&self) -> usize;
    fn step(&self, i: usize, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<Step, InvalidMessage>;
    fn data(&mut self, i: usize) -> Data<'_>;
    /// Transfer `i`'s step and data, as the executor takes them: the step
    /// borrowed where it was planned ahead, else planned into `scratch`.
    #[inline]
    fn transfer<'a>(
        &'a mut self,
        i: usize,
        dev: &DeviceConfig,
        caps: &ControllerCaps,
        scratch: &'a mut Option<Step>,
    ) -> Result<(&'a Step, Data<'a>), InvalidMessage> {
        let step = scratch.insert(self.step(i, dev, caps)?);
        Ok((step, self.data(i)))
    }
    /// A message-level backend's translation of the message, made when it was prepared.
    fn backend_plan(&mut self) -> Option<&mut (dyn Any + Send)> {
        None
    }
    /// Transfer `i`'s buffers, mapped for DMA when the message was prepared
    /// (policy `premapped_dma`); `None`: the executor maps them if the
    /// transfer goes by DMA.
    fn dma_addrs(&self, i: usize) -> Option<DmaAddrs> {
        let _ = i;
        None
    }
}

/// Adapts `&mut M` (possibly unsized) to a sized `dyn MessageSource`.
pub(crate) struct MsgRef<'m, M: MessageSource + ?Sized>(pub &'m mut M);

impl<M: MessageSource + ?Sized> MessageSource for MsgRef<'_, M> {
    fn count(&self) -> usize {
        self.0.count()
    }
    fn step(&self, i: usize, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        self.0.step(i, dev, caps)
    }
    fn data(&mut self, i: usize) -> Data<'_> {
        self.0.data(i)
    }
    fn backend_plan(&mut self) -> Option<&mut (dyn Any + Send)> {
        self.0.backend_plan()
    }
    fn dma_addrs(&self, i: usize) -> Option<DmaAddrs> {
        self.0.dma_addrs(i)
    }
}

pub(crate) fn reborrow<'b>(d: &'b mut Data<'_>) -> Data<'b> {
    match d {
        Data::Write(b) => Data::Write(b),
        Data::Read(b) => Data::Read(b),
        Data::Duplex(t, r) => Data::Duplex(t, r),
        Data::InPlace(b) => Data::InPlace(b),
    }
}

impl MessageSource for [Transfer<'_>] {
    fn count(&self) -> usize {
        self.len()
    }
    fn step(&self, i: usize, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        plan_step(i, &self[i], dev, caps)
    }
    fn data(&mut self, i: usize) -> Data<'_> {
        reborrow(&mut self[i].data)
    }
}

/// A message of borrowed transfers whose steps were planned while validating
/// it, so that the executor does not plan them again.
pub(crate) struct Planned<'m, 't> {
    pub transfers: &'m mut [Transfer<'t>],
    pub steps: &'m [Step],
}

impl MessageSource for Planned<'_, '_> {
    fn count(&self) -> usize {
        self.steps.len()
    }
    #[inline]
    fn step(&self, i: usize, _dev: &DeviceConfig, _caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        Ok(self.steps[i])
    }
    #[inline]
    fn data(&mut self, i: usize) -> Data<'_> {
        reborrow(&mut self.transfers[i].data)
    }
    #[inline]
    fn transfer<'a>(
        &'a mut self,
        i: usize,
        _dev: &DeviceConfig,
        _caps: &ControllerCaps,
        _scratch: &'a mut Option<Step>,
    ) -> Result<(&'a Step, Data<'a>), InvalidMessage> {
        Ok((&self.steps[i], reborrow(&mut self.transfers[i].data)))
    }
}

/// Context of one execution.
pub(crate) struct ExecCtx<'a> {
    pub policy: &'a Policy,
    pub stats: &'a Stats,
    pub irq_cost: &'a IrqCost,
}

/// Drives a chip select. The edge's instant is read afterwards only when a
/// deadline depends on it (`stamp`), so that zero CS times cost no clock read.
#[inline]
fn drive_cs(hw: &mut BusHw, cs: &ChipSelect, active: bool, stamp: bool) -> Result<Instant, SpiError> {
    match cs {
        ChipSelect::Native(n) => hw.ctlr().set_cs(*n, active),
        ChipSelect::Gpio(pin) => pin.set_active(active).map_err(SpiError::ChipSelect)?,
        ChipSelect::None => {}
    }
    Ok(if stamp { now() } else { Instant::ZERO })
}

/// Waits `ns` from `from`: by deadline, or the kernel's way (policy `cs_deadlines`).
#[inline]
fn wait_or_delay(policy: &Policy, from: Instant, ns: impl Into<u64>) {
    let ns = ns.into();
    if ns == 0 {
        return;
    }
    if policy.cs_deadlines {
        wait_until(Deadline::after_ns_from(from, ns));
    } else {
        classic_delay_ns(ns);
    }
}

/// How to wait for a transfer of `len` bytes and `wire_ns` of wire time.
/// Long ones sleep until just before their end (`timed_completion`); with
/// adaptive completion, short ones poll and the rest sleep — until just
/// before their end too when they fit the FIFO (with `timed_completion`),
/// where a controller can raise its interrupt at a FIFO level ahead of the
/// end instead of after it. With the measured threshold, a transfer above
/// it (and short of the timed sleeps above) is polled anyway while the
/// bus's polling budget allows ([`PollBudget`]).
#[inline]
fn choose_completion(
    policy: &Policy,
    caps: &ControllerCaps,
    wire_ns: u64,
    len: usize,
    irq_cost: &IrqCost,
    budget: &mut PollBudget,
) -> Completion {
    if !caps.has_irq {
        Completion::Poll
    } else if policy.timed_completion && caps.can_poll && is_long(wire_ns) {
        Completion::Timed
    } else if !caps.can_poll || !policy.adaptive_completion {
        Completion::Irq
    } else if wire_ns < irq_cost.poll_below_ns(policy)
        || (policy.poll_below_ns.is_none() && budget.take(wire_ns, now().as_ns()))
    {
        Completion::Poll
    } else if policy.timed_completion && len <= caps.fifo_bytes as usize {
        Completion::Timed
    } else {
        Completion::Irq
    }
}

/// Whether a transfer is long enough to sleep through: longer than the
/// delay layer's spin threshold, below which a delay spins too.
#[inline]
fn is_long(wire_ns: u64) -> bool {
    // No sleep pays below this; it spares short transfers the threshold's atomic load.
    const NEVER_BELOW_NS: u64 = 20_000;
    wire_ns >= NEVER_BELOW_NS && u128::from(wire_ns) >= wirespeed_time::spin_threshold().as_nanos()
}

/// Powers the controller up if idle teardown powered it down. Returns true if
/// it did (the caller then tells the pump to arm its idle timer again).
pub(crate) fn ensure_powered(hw: &mut BusHw) -> bool {
    if hw.powered {
        return false;
    }
    hw.set_power(true);
    hw.powered = true;
    hw.setup = None;
    true
}

/// The error of a message during which the controller driver panicked.
pub(crate) const DRIVER_PANICKED: &str =
    "the controller driver or chip select panicked during the message (see the panic message)";

/// Puts the bus back in a known state after a panic during `dev`'s message:
/// the transfer aborted and the FIFOs emptied, the device's chip select
/// (and any other held by `cs_change`) inactive, the controller set up
/// again before the next message. A second panic here is swallowed: the
/// hook has reported it, and the bus must stay usable.
pub(crate) fn recover_from_panic(hw: &mut BusHw, dev: &DeviceState) {
    hw.setup = None;
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Face::Controller(c) = &mut hw.face {
            c.abort();
        }
        let _ = release_held_cs(hw);
        release_after_failure(hw, dev);
    }));
    hw.cs_held = None;
}

/// Releases a CS left active by a previous message's final `cs_change`.
/// If it cannot be driven, the error says that it was that other device's
/// select (the message that needed it released fails, nothing sent); the
/// bus then forgets it, so that later messages are not refused for ever
/// because of a chip that has gone.
#[inline]
pub(crate) fn release_held_cs(hw: &mut BusHw) -> Result<(), SpiError> {
    match hw.cs_held.take() {
        None => Ok(()),
        Some(held) => release_other_cs(hw, held),
    }
}

#[inline(never)]
fn release_other_cs(hw: &mut BusHw, held: HeldCs) -> Result<(), SpiError> {
    let t = drive_cs(hw, &held.cs, false, true).map_err(held_cs_error)?;
    held.last_off.store(t.as_ns(), Ordering::Relaxed);
    Ok(())
}

#[cold]
fn held_cs_error(e: SpiError) -> SpiError {
    match e {
        SpiError::ChipSelect(why) => SpiError::ChipSelect(format!(
            "the select of another device, left active by its message's final cs_change, could not be released: {why}"
        )),
        other => other,
    }
}

/// Runs `msg` for `dev`. The message was validated before anything reaches
/// here; each step comes from `msg` (precomputed for prepared and inline-
/// planned messages, planned again only for messages of more than
/// [`INLINE_STEPS`](super::plan::INLINE_STEPS) transfers).
/// `in_flight` runs while the first transfer shifts, if one starts.
pub(crate) fn execute<M: MessageSource + ?Sized>(
    hw: &mut BusHw,
    dev: &DeviceState,
    ctx: &ExecCtx<'_>,
    msg: &mut M,
    in_flight: &mut InFlight<'_>,
) -> Result<(), SpiError> {
    if let Face::Messages(backend) = &mut hw.face {
        return run_message(backend.as_mut(), &hw.caps, dev, ctx, msg);
    }
    let mut cs_active = hw.cs_held.as_ref().is_some_and(|h| h.device == dev.id);
    if !cs_active {
        release_held_cs(hw)?;
    } else {
        hw.cs_held = None;
        // A GPIO chip select held since the last message may have gone with
        // its chip: drive it again (no edge) so that nothing is shifted to a
        // device whose select is no longer under control.
        if let ChipSelect::Gpio(pin) = &dev.cfg.cs {
            if let Err(e) = pin.set_active(true) {
                let _ = pin.set_active(false);
                return Err(SpiError::ChipSelect(e));
            }
        }
    }
    let result = run_steps(hw, dev, ctx, msg, &mut cs_active, in_flight);
    if result.is_err() && cs_active {
        release_after_failure(hw, dev);
    }
    result
}

/// Hands a whole message to a message-level backend, which drives chip
/// select and timing itself; counts its transfers when it succeeds.
fn run_message<M: MessageSource + ?Sized>(
    backend: &mut dyn MessageBackend,
    caps: &ControllerCaps,
    dev: &DeviceState,
    ctx: &ExecCtx<'_>,
    msg: &mut M,
) -> Result<(), SpiError> {
    let mut src = MsgRef(msg);
    backend.run(&dev.cfg, &mut MessageView::new(&mut src, &dev.cfg, caps))?;
    for i in 0..src.count() {
        let st = src.step(i, &dev.cfg, caps)?;
        if st.len > 0 {
            ctx.stats.transfer(st.tx, st.rx, st.len);
        }
    }
    Ok(())
}

/// Releases `dev`'s chip select after its message failed (best effort: a
/// chip select that cannot be driven has already failed the message) and
/// stamps the release for the device's CS-inactive time.
fn release_after_failure(hw: &mut BusHw, dev: &DeviceState) {
    if let Ok(t) = drive_cs(hw, &dev.cfg.cs, false, true) {
        dev.last_cs_off.store(t.as_ns(), Ordering::Relaxed);
    }
    hw.cs_held = None;
}

fn run_steps<M: MessageSource + ?Sized>(
    hw: &mut BusHw,
    dev: &DeviceState,
    ctx: &ExecCtx<'_>,
    msg: &mut M,
    cs_active: &mut bool,
    in_flight: &mut InFlight<'_>,
) -> Result<(), SpiError> {
    let n = msg.count();
    let mut scratch = None;
    // With deadlines, a `cs_change` gap is waited for at the next selection,
    // after the next transfer's FIFO preload: the two overlap.
    let mut gap_until = None;
    for i in 0..n {
        hw.transfer = i;
        let premapped = msg.dma_addrs(i);
        let (st, mut data) = msg.transfer(i, &dev.cfg, &hw.caps, &mut scratch)?;
        let by_dma = hw.dma.as_ref().is_some_and(|d| st.len >= d.min_len && st.word_delay_ns == 0);
        set_up(hw, &dev.cfg, st, ctx.policy);
        let mut preloaded = 0;
        if !*cs_active {
            preloaded = select(hw, dev, ctx.policy, st, &data, !by_dma, gap_until.take())?;
            *cs_active = true;
        }
        if st.delay_before_ns > 0 {
            wait_or_delay(ctx.policy, now(), st.delay_before_ns);
        }
        let completed = if by_dma {
            shift_dma(hw, ctx, i, st, &mut data, premapped, in_flight)?
        } else {
            shift(hw, ctx, i, st, &mut data, preloaded, in_flight)?
        };
        if st.len > 0 {
            ctx.stats.transfer(st.tx, st.rx, st.len);
        }
        gap_until = after_transfer(hw, dev, ctx.policy, st, completed, i + 1 == n, cs_active)?;
    }
    if *cs_active {
        hw.cs_held = Some(HeldCs { device: dev.id, cs: dev.cfg.cs.clone(), last_off: dev.last_cs_off.clone() });
    }
    Ok(())
}

/// Writes mode, clock and word size for `st` when they change (with policy
/// `skip_redundant_setup` off, for every transfer).
#[inline(always)]
fn set_up(hw: &mut BusHw, cfg: &DeviceConfig, st: &Step, policy: &Policy) {
    let setup = (cfg.mode, st.speed_hz, st.bits);
    if !policy.skip_redundant_setup || hw.setup != Some(setup) {
        hw.ctlr().configure(cfg.mode, st.speed_hz, st.bits);
        hw.setup = Some(setup);
    }
}

/// Selects `dev` for transfer `st`: loads the FIFO first (policy
/// `preload_fifo`), waits out the device's CS inactive time and, with
/// deadlines, the gap the previous transfer's `cs_change` asked
/// (`gap_until`), drives CS and waits its setup time. Returns the words
/// preloaded.
#[inline(always)]
fn select(
    hw: &mut BusHw,
    dev: &DeviceState,
    policy: &Policy,
    st: &Step,
    data: &Data<'_>,
    may_preload: bool,
    gap_until: Option<Deadline>,
) -> Result<usize, SpiError> {
    let cfg = &dev.cfg;
    let mut preloaded = 0;
    if may_preload && policy.preload_fifo && st.word_delay_ns == 0 && st.len > 0 {
        preloaded = hw.ctlr().preload(data, st.bits);
    }
    if policy.cs_deadlines && cfg.cs_inactive_ns > 0 {
        let off = Instant::from_ns(dev.last_cs_off.load(Ordering::Relaxed));
        let inactive = Deadline::after_ns_from(off, u64::from(cfg.cs_inactive_ns));
        wait_until(gap_until.map_or(inactive, |g| g.max(inactive)));
    } else if let Some(g) = gap_until {
        wait_until(g);
    }
    let on = match drive_cs(hw, &cfg.cs, true, cfg.cs_setup_ns > 0) {
        Ok(t) => t,
        Err(e) => {
            if preloaded > 0 {
                hw.ctlr().discard_preload();
            }
            return Err(e);
        }
    };
    wait_or_delay(policy, on, cfg.cs_setup_ns);
    Ok(preloaded)
}

/// Shifts transfer `i` (`st`, with `preloaded` words already in the FIFO),
/// polled or on the interrupt as the policy chooses; returns when the driver
/// saw it complete, if it says.
#[inline(always)]
fn shift(
    hw: &mut BusHw,
    ctx: &ExecCtx<'_>,
    i: usize,
    st: &Step,
    data: &mut Data<'_>,
    preloaded: usize,
    in_flight: &mut InFlight<'_>,
) -> Result<Option<Instant>, SpiError> {
    if st.len == 0 {
        // A CS window with no data (an embedded-hal transaction of delays only).
        return Ok(None);
    }
    let completion = choose_completion(ctx.policy, &hw.caps, st.wire_ns, st.len, ctx.irq_cost, &mut hw.poll_budget);
    let timeout_ns = transfer_timeout_ns(st.wire_ns, st.len, hw.caps.fifo_bytes);
    let timing = if st.word_delay_ns > 0 {
        run_word_by_word(hw, data, st, ctx.policy, timeout_ns, in_flight)
    } else {
        hw.ctlr().transfer(data, st.bits, preloaded, completion, timeout_ns, in_flight)
    }
    .map_err(|f| transfer_error(f, i, timeout_ns))?;
    if let (Completion::Irq, Some(started), Some(done), 0) =
        (completion, timing.started, timing.completed, st.word_delay_ns)
    {
        ctx.irq_cost.observe(done.ns_since(started.add_ns(st.wire_ns)));
    }
    Ok(timing.completed)
}

/// Where a DMA transfer's bytes are while the engine moves them.
enum DmaBuffers<'b> {
    /// In the prepared message's buffers, mapped for its lifetime.
    Premapped(DmaAddrs),
    /// Copied through the bus's bounce buffers.
    Bounced(&'b mut Bounce),
    /// In the transfer's own buffers, mapped for it.
    Mapped(TransferMapping),
}

/// Shifts transfer `i` by DMA: its buffers mapped now and unmapped after,
/// or mapped when the message was prepared (`premapped`), or copied through
/// the bus's bounce buffers (policy `bounce_dma`).
fn shift_dma(
    hw: &mut BusHw,
    ctx: &ExecCtx<'_>,
    i: usize,
    st: &Step,
    data: &mut Data<'_>,
    premapped: Option<DmaAddrs>,
    in_flight: &mut InFlight<'_>,
) -> Result<Option<Instant>, SpiError> {
    let completion = choose_completion(ctx.policy, &hw.caps, st.wire_ns, st.len, ctx.irq_cost, &mut hw.poll_budget);
    let timeout_ns = transfer_timeout_ns(st.wire_ns, st.len, hw.caps.fifo_bytes);
    let BusHw { face, dma, bounce: slot, .. } = hw;
    let Some(DmaSupport { domain, .. }) = dma.as_ref() else { unreachable!("shift_dma runs only on a bus with DMA") };
    let mut buffers = match premapped {
        Some(a) => DmaBuffers::Premapped(a),
        None => match slot.get_for(ctx.policy, domain, st.len) {
            Some(b) => DmaBuffers::Bounced(b),
            // SAFETY: `data` borrows the buffers until this returns, after the
            // unmap below; the driver returns only once the engine has stopped.
            None => DmaBuffers::Mapped(
                unsafe { TransferMapping::map(domain, data) }.map_err(|reason| SpiError::Dma { index: i, reason })?,
            ),
        },
    };
    let addrs = match &mut buffers {
        DmaBuffers::Premapped(a) => *a,
        DmaBuffers::Bounced(b) => b.load(data),
        DmaBuffers::Mapped(m) => {
            m.sync_for_device();
            m.addrs()
        }
    };
    let ctlr = controller(face);
    let timing = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `addrs` are mapped in the controller's domain for `st.len`
        // bytes with the access each needs, and stay mapped until after this
        // call (after a panic too: the engine is stopped before the unmap).
        unsafe { ctlr.transfer_dma(st.len, st.bits, addrs, completion, timeout_ns, in_flight) }
    }));
    let timing = match timing {
        Ok(t) => t,
        Err(panic) => {
            ctlr.abort();
            if let DmaBuffers::Mapped(m) = buffers {
                let _ = m.unmap(domain);
            }
            std::panic::resume_unwind(panic);
        }
    };
    let unmapped = match buffers {
        DmaBuffers::Premapped(_) => Ok(()),
        DmaBuffers::Bounced(b) => {
            b.unload(data);
            Ok(())
        }
        DmaBuffers::Mapped(m) => m.unmap(domain),
    };
    let timing = timing.map_err(|f| transfer_error(f, i, timeout_ns))?;
    unmapped.map_err(|reason| SpiError::Dma { index: i, reason })?;
    if let (Completion::Irq, Some(started), Some(done)) = (completion, timing.started, timing.completed) {
        ctx.irq_cost.observe(done.ns_since(started.add_ns(st.wire_ns)));
    }
    Ok(timing.completed)
}

#[cold]
fn transfer_error(f: ControllerFault, index: usize, timeout_ns: u64) -> SpiError {
    match f {
        ControllerFault::Timeout => SpiError::Timeout { index, waited_us: timeout_ns / 1_000 },
        ControllerFault::Fault(reason) => SpiError::Controller { index, reason },
        ControllerFault::DmaFault { device_addr } => SpiError::DmaFault { index, device_addr },
    }
}

/// After transfer `st` (seen complete at `completed`, if the driver says):
/// its delay, then the kernel's `cs_change`: CS released after a middle
/// transfer (with the device's hold time, and the gap before the next
/// transfer), kept after the last one. With deadlines (policy
/// `cs_deadlines`) the gap is not waited here: it is returned, for the next
/// selection to wait once the next transfer is loaded.
#[inline(always)]
fn after_transfer(
    hw: &mut BusHw,
    dev: &DeviceState,
    policy: &Policy,
    st: &Step,
    completed: Option<Instant>,
    last: bool,
    cs_active: &mut bool,
) -> Result<Option<Deadline>, SpiError> {
    let cfg = &dev.cfg;
    let needs_end = st.delay_after_ns > 0 || cfg.cs_hold_ns > 0;
    let completed = match completed {
        Some(t) => t,
        None if needs_end => now(),
        None => Instant::ZERO,
    };
    wait_or_delay(policy, completed, st.delay_after_ns);
    if st.cs_change == last {
        return Ok(None);
    }
    wait_or_delay(policy, completed, cfg.cs_hold_ns);
    let needs_stamp = cfg.cs_inactive_ns > 0 || (st.cs_change && !last);
    let off = drive_cs(hw, &cfg.cs, false, needs_stamp)?;
    if needs_stamp {
        dev.last_cs_off.store(off.as_ns(), Ordering::Relaxed);
    }
    *cs_active = false;
    if !policy.cs_deadlines {
        // The kernel's spi_set_cs(false) waits cs_inactive itself,
        // before any cs_change delay.
        classic_delay_ns(u64::from(cfg.cs_inactive_ns));
    }
    if last {
        return Ok(None);
    }
    if policy.cs_deadlines {
        // Without a delay of its own the gap is the inactive time, which
        // the selection waits anyway.
        return Ok(st.cs_change_delay_ns.map(|d| Deadline::after_ns_from(off, u64::from(d))));
    }
    let gap = st.cs_change_delay_ns.unwrap_or(KERNEL_CS_CHANGE_DEFAULT_NS);
    classic_delay_ns(u64::from(gap));
    Ok(None)
}

/// A transfer with a pause between words: one word per burst.
fn run_word_by_word(
    hw: &mut BusHw,
    data: &mut Data<'_>,
    st: &Step,
    policy: &Policy,
    timeout_ns: u64,
    in_flight: &mut InFlight<'_>,
) -> Result<TransferTiming, ControllerFault> {
    let wb = super::plan::word_bytes(st.bits);
    let words = st.len / wb;
    // One word is far shorter than a wake-up: polled, unless the controller
    // offers only its interrupt.
    let completion = if hw.caps.can_poll || !hw.caps.has_irq { Completion::Poll } else { Completion::Irq };
    let mut first = None;
    let mut last = None;
    for w in 0..words {
        let r = w * wb..(w + 1) * wb;
        let mut one = match data {
            Data::Write(b) => Data::Write(&b[r]),
            Data::Read(b) => Data::Read(&mut b[r]),
            Data::Duplex(t, x) => Data::Duplex(&t[r.clone()], &mut x[r]),
            Data::InPlace(b) => Data::InPlace(&mut b[r]),
        };
        let t = hw.ctlr().transfer(&mut one, st.bits, 0, completion, timeout_ns, in_flight)?;
        let done = t.completed.unwrap_or_else(now);
        first.get_or_insert(t.started.unwrap_or(done));
        last = Some(done);
        if w + 1 < words {
            wait_or_delay(policy, done, st.word_delay_ns);
        }
    }
    Ok(TransferTiming { started: first, completed: last })
}

/// How long a transfer may take before it is a timeout: four times its wire
/// time and 200 ms (the kernel's `spi_transfer_wait` allows twice the wire
/// time and 200 ms), plus 1 ms for every FIFO's worth of data. A PIO
/// transfer longer than the FIFO is refilled once per FIFO, and each refill
/// may wait for a thread wake-up: on a loaded or virtual machine those run
/// to hundreds of µs, and a 64 KiB transfer through a 64-byte FIFO takes
/// 1024 of them.
fn transfer_timeout_ns(wire_ns: u64, len: usize, fifo_bytes: u32) -> u64 {
    let refills = (len as u64).div_ceil(u64::from(fifo_bytes.max(1)));
    wire_ns.saturating_mul(4).saturating_add(200_000_000).saturating_add(refills.saturating_mul(1_000_000))
}

#[cfg(test)]
mod timeout_tests {
    use super::transfer_timeout_ns;

    #[test]
    fn a_transfer_within_one_fifo_gets_four_wire_times_and_200_ms_and_one_refill() {
        assert_eq!(transfer_timeout_ns(1_000, 9, 64), 4_000 + 200_000_000 + 1_000_000);
    }

    #[test]
    fn a_long_pio_transfer_gets_a_millisecond_per_fifo_refill() {
        // 64 KiB through a 64-byte FIFO: 1024 refills.
        let wire = 10_485_760;
        assert_eq!(transfer_timeout_ns(wire, 65_536, 64), 4 * wire + 200_000_000 + 1_024_000_000);
        // A FIFO size of 0 (a controller that does not say) counts bytes, not a division by zero.
        assert!(transfer_timeout_ns(0, 10, 0) >= 200_000_000 + 10_000_000);
    }
}

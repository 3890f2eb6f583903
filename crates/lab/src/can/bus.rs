//! The virtual CAN bus: nodes, arbitration, ACK, error frames and fault
//! confinement, event-driven on the lab's interrupt thread.
//!
//! The bus never runs a thread per node. When a node has something to send it
//! calls [`Bus::request`]; the bus schedules an arbitration at the earliest
//! idle instant (the end of the previous frame's intermission) and, at that
//! instant, asks every node for its highest-priority frame
//! ([`CanNode::tx_request`]). The lowest arbitration field wins; losers are
//! told ([`TxOutcome::LostArbitration`]) and polled again at the next idle
//! slot. The winner's frame occupies the bus for its bit-accurate duration
//! ([`FrameBits`]); at its EOF the bus delivers it to every receiver
//! ([`CanNode::rx_frame`], first, before its own bookkeeping) and tells the
//! transmitter ([`CanNode::tx_done`]), both on the interrupt thread, at
//! real time EOF or just after. The outcome is known at arbitration, so the
//! receivers of a frame that will arrive intact hear of it then
//! ([`CanNode::rx_coming`]): a controller model stages its store there, and
//! at EOF has little left to do before its interrupt.
//!
//! Errors: a frame that nobody acknowledges (a lone node, or only
//! listen-only receivers) gets an ACK error; frames corrupted by
//! [`Bus::corrupt_next`] get a CRC error; an FD frame meeting an active
//! receiver that does not tolerate FD gets a form error; two different frames
//! with the same arbitration field collide (bit error). An error frame (6 +
//! 8 bits) follows the bit where the error was detected, and the transmitter
//! retries (it is simply polled again). TEC/REC follow ISO 11898-1's main
//! rules (+8 per transmit error, except ACK errors while error passive; +1
//! per receive error; −1 per success); TEC > 255 is bus-off, from which a
//! node recovers automatically after 128 × 11 recessive bit times.
//!
//! Simplifications: every receiver that detects an error counts +1 (no +8
//! "first to detect" rule); overload frames do not exist; nodes with a
//! bit rate more than 0.5 % off neither acknowledge nor disturb frames (they only count
//! receive errors); the time a frame becomes valid is the end of EOF for
//! receivers and transmitter alike.

use super::bits::{BitRates, FrameBits, ERROR_FRAME_BITS, INTERMISSION_BITS, SUSPEND_BITS};
use super::frame::Frame;
use crate::lab::Lab;
use crate::scheduler::{Scheduler, TimerId};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use wirespeed_time::Instant;

/// A node's handle on a bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u16);

/// How a node takes part in bus traffic at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Not on the bus (configuration mode, sleep, powered off).
    Off,
    /// Receives, never acknowledges, never transmits.
    ListenOnly,
    /// Receives, acknowledges and transmits.
    Active,
    /// Receives and acknowledges, never transmits (ISO restricted operation).
    Restricted,
}

/// A node's answer to "how are you on the bus now?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Participation {
    /// Its role.
    pub role: Role,
    /// Its configured bit rates; `None` follows the bus (lab tools).
    pub rates: Option<BitRates>,
    /// Whether it accepts CAN FD frames (a CAN 2.0-only active node destroys them).
    pub fd_tolerant: bool,
}

impl Participation {
    /// An active, FD-tolerant node at the bus's rates.
    pub const ACTIVE: Participation = Participation { role: Role::Active, rates: None, fd_tolerant: true };
}

/// A frame a node offers for the next arbitration.
#[derive(Clone, Copy, Debug)]
pub struct TxRequest {
    /// The frame.
    pub frame: Frame,
    /// The node's own tag, handed back in [`CanNode::tx_done`].
    pub token: u64,
    /// The node acknowledges its own frame (external loopback): no ACK error when alone.
    pub self_ack: bool,
}

/// Errors the bus detects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusError {
    /// No receiver acknowledged.
    Ack,
    /// Two transmitters sent different bits after the same arbitration field.
    Bit,
    /// The frame was corrupted on the wire (injected).
    Crc,
    /// A receiver rejected the frame's format (FD frame, CAN 2.0 node).
    Form,
}

/// What became of a node's transmission attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxOutcome {
    /// Sent and acknowledged.
    Sent,
    /// Another node won arbitration; the node will be polled again.
    LostArbitration,
    /// An error frame ended the attempt.
    Error(BusError),
}

/// Start and end of a frame on the bus (lab clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameStamp {
    /// Start of SOF.
    pub sof: Instant,
    /// End of EOF (or of the error frame when the attempt failed).
    pub eof: Instant,
}

/// A node's error counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ErrorCounters {
    /// Transmit error counter (256 = bus-off).
    pub tec: u16,
    /// Receive error counter.
    pub rec: u16,
}

/// Fault-confinement state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorState {
    /// TEC and REC ≤ 127.
    Active,
    /// TEC or REC > 127.
    Passive,
    /// TEC > 255.
    BusOff,
}

impl ErrorCounters {
    /// The state these counters put a node in.
    pub fn state(&self) -> ErrorState {
        if self.tec > 255 {
            ErrorState::BusOff
        } else if self.tec > 127 || self.rec > 127 {
            ErrorState::Passive
        } else {
            ErrorState::Active
        }
    }
}

/// Something attached to a bus. Methods are called on the lab's interrupt
/// thread without any bus lock held, so they may call back into the bus.
pub trait CanNode: Send + Sync {
    /// How the node takes part at `at`.
    fn participation(&self, at: Instant) -> Participation;
    /// The frame the node would start at `at`, if any.
    fn tx_request(&self, at: Instant) -> Option<TxRequest>;
    /// The end of an attempt of the frame tagged `token`.
    fn tx_done(&self, token: u64, outcome: TxOutcome, stamp: FrameStamp);
    /// A frame sent by another node, delivered at its EOF.
    fn rx_frame(&self, frame: &Frame, stamp: FrameStamp);
    /// Told at arbitration, for a frame the bus will deliver to this node
    /// at its EOF ([`CanNode::rx_frame`] follows, with the same frame and
    /// stamp): the node may stage the reception ahead, so that what it does
    /// at EOF is short and on time, but must not show any of it before
    /// `stamp.eof`. The default does nothing.
    fn rx_coming(&self, _frame: &Frame, _stamp: FrameStamp) {}
    /// The node's error counters changed (after an error, a success that
    /// changed them, bus-off or recovery).
    fn error_counters_changed(&self, _counters: ErrorCounters, _at: Instant) {}
    /// The node saw a frame fail with `error` while receiving.
    fn rx_error(&self, _error: BusError, _at: Instant) {}
}

/// One transmission on the bus, as a logic analyser decodes it.
#[derive(Clone, Copy, Debug)]
pub struct FrameRecord {
    /// The frame.
    pub frame: Frame,
    /// Who sent it.
    pub transmitter: NodeId,
    /// Start of SOF and end of EOF (or of the error frame).
    pub stamp: FrameStamp,
    /// `None` if the frame was sent and acknowledged.
    pub error: Option<BusError>,
    /// Bits at the nominal rate, from SOF to end of EOF.
    pub nominal_bits: u32,
    /// Bits at the data rate.
    pub data_bits: u32,
}

/// Sees every transmission (a bus probe, e.g. [`Recorder`](super::tools::Recorder)).
pub trait BusObserver: Send + Sync {
    /// A transmission ended (called at its end, on the interrupt thread).
    fn frame(&self, record: &FrameRecord);
}

/// Bad bus configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusConfigError {
    /// A bit rate of 0, or above 10 Mbit/s (nominal above 1 Mbit/s).
    BadBitRate {
        /// The rates given.
        rates: BitRates,
    },
}

impl fmt::Display for BusConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusConfigError::BadBitRate { rates } => write!(
                f,
                "bad CAN bit rates {} / {} bit/s (nominal 1..=1000000, data nominal..=10000000)",
                rates.nominal, rates.data
            ),
        }
    }
}

impl std::error::Error for BusConfigError {}

struct NodeEntry {
    node: Arc<dyn CanNode>,
    name: String,
    counters: ErrorCounters,
    bus_off_until: Option<Instant>,
    suspend_until: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Scheduled { at: Instant, timer: TimerId },
    Arbitrating,
    Busy,
}

struct State {
    nodes: Vec<NodeEntry>,
    observers: Vec<Arc<dyn BusObserver>>,
    phase: Phase,
    /// Instants at which some node asked to be polled.
    wakes: BTreeSet<Instant>,
    /// Earliest next SOF: end of the last frame plus intermission.
    idle_at: Instant,
    /// End (EOF or error frame) of the frame in flight or last sent.
    corrupt_next: u32,
    frames_ok: u64,
    frames_failed: u64,
    arbitrations: u64,
}

struct Inner {
    name: String,
    rates: BitRates,
    scheduler: Scheduler,
    state: Mutex<State>,
}

/// A virtual CAN bus. Clones share it.
#[derive(Clone)]
pub struct Bus {
    inner: Arc<Inner>,
}

impl fmt::Debug for Bus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bus").field("name", &self.inner.name).field("rates", &self.inner.rates).finish()
    }
}

/// A node's way back to the bus that holds it: a strong one would make a
/// cycle (bus → node → bus) that keeps the whole lab, and its interrupt
/// thread, alive after the last user handle is dropped.
#[derive(Clone)]
pub(crate) struct WeakBus(std::sync::Weak<Inner>);

impl WeakBus {
    /// The bus, unless it is gone (then a node behaves as detached).
    pub(crate) fn upgrade(&self) -> Option<Bus> {
        self.0.upgrade().map(|inner| Bus { inner })
    }
}

struct Contender {
    id: NodeId,
    req: TxRequest,
}

struct Outcome {
    frame: Frame,
    stamp: FrameStamp,
    error: Option<BusError>,
    transmitters: Vec<(NodeId, u64)>,
    /// The receivers, taken at arbitration: told first at EOF.
    receivers: Vec<(NodeId, Arc<dyn CanNode>)>,
    mismatched: Vec<NodeId>,
    nominal_bits: u32,
    data_bits: u32,
    /// Some node lost arbitration and still holds its frame: the bus must
    /// arbitrate again once idle.
    retry: bool,
}

impl Bus {
    /// A bus on `lab` at `rates`.
    pub fn new(lab: &Lab, name: &str, rates: BitRates) -> Result<Bus, BusConfigError> {
        if rates.nominal == 0 || rates.nominal > 1_000_000 || rates.data < rates.nominal || rates.data > 10_000_000 {
            return Err(BusConfigError::BadBitRate { rates });
        }
        Ok(Bus {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                rates,
                scheduler: lab.scheduler().clone(),
                state: Mutex::new(State {
                    nodes: Vec::new(),
                    observers: Vec::new(),
                    phase: Phase::Idle,
                    wakes: BTreeSet::new(),
                    idle_at: Instant::ZERO,
                    corrupt_next: 0,
                    frames_ok: 0,
                    frames_failed: 0,
                    arbitrations: 0,
                }),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.inner)
    }

    /// A handle for a node that the bus itself holds (see [`WeakBus`]).
    pub(crate) fn downgrade(&self) -> WeakBus {
        WeakBus(Arc::downgrade(&self.inner))
    }

    /// The bus's bit rates.
    pub fn rates(&self) -> BitRates {
        self.inner.rates
    }

    /// The bus's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Attaches a node; returns its id.
    pub fn attach(&self, node: Arc<dyn CanNode>, name: &str) -> NodeId {
        let mut st = self.lock();
        st.nodes.push(NodeEntry {
            node,
            name: name.to_owned(),
            counters: ErrorCounters::default(),
            bus_off_until: None,
            suspend_until: Instant::ZERO,
        });
        NodeId((st.nodes.len() - 1) as u16)
    }

    /// A node's name.
    pub fn node_name(&self, id: NodeId) -> Option<String> {
        self.lock().nodes.get(usize::from(id.0)).map(|n| n.name.clone())
    }

    /// Adds an observer that sees every transmission.
    pub fn observe(&self, observer: Arc<dyn BusObserver>) {
        self.lock().observers.push(observer);
    }

    /// A node has (or may have) a frame ready from `at`: arbitrate at the
    /// first idle instant at or after `at`.
    pub fn request(&self, at: Instant) {
        request(&self.inner, at);
    }

    /// How long one frame occupies the bus (SOF to end of EOF), in ns.
    pub fn frame_duration_ns(&self, frame: &Frame) -> u64 {
        FrameBits::encode(frame).duration_ns(self.inner.rates)
    }

    /// Nanoseconds of `n` nominal bits.
    pub fn nominal_bits_ns(&self, n: u64) -> u64 {
        self.inner.rates.nominal_ns(n)
    }

    /// The earliest instant a new SOF may start (end of the last frame's
    /// intermission); in the past when the bus is idle.
    pub fn idle_at(&self) -> Instant {
        self.lock().idle_at
    }

    /// Whether a frame occupies the bus at `at`; if so, when it ends.
    pub fn busy_until(&self, at: Instant) -> Option<Instant> {
        let st = self.lock();
        (st.idle_at > at).then_some(st.idle_at)
    }

    /// A node's error counters.
    pub fn error_counters(&self, id: NodeId) -> ErrorCounters {
        self.lock().nodes.get(usize::from(id.0)).map(|n| n.counters).unwrap_or_default()
    }

    /// Frames sent and acknowledged so far.
    pub fn frames_ok(&self) -> u64 {
        self.lock().frames_ok
    }

    /// Arbitration rounds run so far (each looks for frames ready to send;
    /// an idle bus runs none).
    pub fn arbitrations(&self) -> u64 {
        self.lock().arbitrations
    }

    /// Transmission attempts that ended in an error frame so far.
    pub fn frames_failed(&self) -> u64 {
        self.lock().frames_failed
    }

    /// Fault: corrupt the next `n` frames on the wire (receivers see a CRC error).
    pub fn corrupt_next(&self, n: u32) {
        self.lock().corrupt_next = n;
    }

    /// Fault: drive a node's TEC past 255 at `at` (bus-off). It recovers
    /// automatically after 128 × 11 bit times.
    pub fn force_bus_off(&self, id: NodeId, at: Instant) {
        let rec = self.inner.rates.nominal_ns(128 * 11);
        let node = {
            let mut st = self.lock();
            let Some(n) = st.nodes.get_mut(usize::from(id.0)) else { return };
            n.counters.tec = 256;
            n.bus_off_until = Some(at.add_ns(rec));
            (n.node.clone(), n.counters)
        };
        schedule_recovery(&self.inner, id, at.add_ns(rec));
        node.0.error_counters_changed(node.1, at);
    }

    /// Test hook: sets a node's error counters (e.g. to start error passive).
    pub fn set_error_counters(&self, id: NodeId, counters: ErrorCounters) {
        if let Some(n) = self.lock().nodes.get_mut(usize::from(id.0)) {
            n.counters = counters;
        }
    }
}

/// Whether a node's bit rate is within the 0.5 % an oscillator tolerance allows.
fn close(a: u32, b: u32) -> bool {
    u64::from(a.abs_diff(b)) * 200 <= u64::from(b)
}

fn lock(inner: &Inner) -> MutexGuard<'_, State> {
    inner.state.lock().unwrap_or_else(|e| e.into_inner())
}

fn request(inner: &Arc<Inner>, at: Instant) {
    let mut st = lock(inner);
    st.wakes.insert(at);
    rearm(inner, &mut st);
}

/// Makes sure an arbitration is scheduled for the earliest wake, unless one
/// is running or a frame is in flight (its completion rearms).
fn rearm(inner: &Arc<Inner>, st: &mut State) {
    let Some(&first) = st.wakes.first() else { return };
    let want = first.max(st.idle_at);
    match st.phase {
        Phase::Busy | Phase::Arbitrating => {}
        Phase::Scheduled { at: old, timer } => {
            if want < old {
                inner.scheduler.cancel(timer);
                schedule_arbitration(inner, st, want);
            }
        }
        Phase::Idle => schedule_arbitration(inner, st, want),
    }
}

fn schedule_arbitration(inner: &Arc<Inner>, st: &mut State, at: Instant) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let timer = inner.scheduler.schedule(at, move |_| {
        if let Some(inner) = weak.upgrade() {
            arbitrate(&inner, at);
        }
    });
    st.phase = Phase::Scheduled { at, timer };
}

fn schedule_recovery(inner: &Arc<Inner>, id: NodeId, at: Instant) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    inner.scheduler.schedule(at, move |_| {
        let Some(inner) = weak.upgrade() else { return };
        let notify = {
            let mut st = lock(&inner);
            let Some(n) = st.nodes.get_mut(usize::from(id.0)) else { return };
            if n.bus_off_until.is_some_and(|t| t <= at) {
                n.bus_off_until = None;
                n.counters = ErrorCounters::default();
                Some((n.node.clone(), n.counters))
            } else {
                None
            }
        };
        if let Some((node, c)) = notify {
            node.error_counters_changed(c, at);
            request(&inner, at);
        }
    });
}

fn arbitrate(inner: &Arc<Inner>, t: Instant) {
    // Snapshot the nodes that may transmit or receive now.
    let nodes: Vec<(NodeId, Arc<dyn CanNode>, bool, Instant)> = {
        let mut st = lock(inner);
        match st.phase {
            Phase::Scheduled { at, .. } if at == t => {}
            _ => return, // superseded
        }
        st.phase = Phase::Arbitrating;
        st.arbitrations += 1;
        while st.wakes.first().is_some_and(|&w| w <= t) {
            st.wakes.pop_first();
        }
        st.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u16), n.node.clone(), n.bus_off_until.is_some(), n.suspend_until))
            .collect()
    };
    let rates = inner.rates;
    let mut contenders: Vec<Contender> = Vec::new();
    let mut parts: Vec<(NodeId, Participation)> = Vec::with_capacity(nodes.len());
    let mut wake_at: Option<Instant> = None;
    for (id, node, bus_off, suspend_until) in &nodes {
        if *bus_off {
            continue;
        }
        let p = node.participation(t);
        parts.push((*id, p));
        if p.role != Role::Active {
            continue;
        }
        if *suspend_until > t {
            wake_at = Some(wake_at.map_or(*suspend_until, |w| w.min(*suspend_until)));
            continue;
        }
        if let Some(req) = node.tx_request(t) {
            contenders.push(Contender { id: *id, req });
        }
    }
    let Some(best) = contenders.iter().map(|c| c.req.frame.arbitration_key()).min() else {
        let mut st = lock(inner);
        st.phase = Phase::Idle;
        if let Some(w) = wake_at {
            st.wakes.insert(w);
        }
        rearm(inner, &mut st);
        return;
    };
    let (winners, losers): (Vec<&Contender>, Vec<&Contender>) =
        contenders.iter().partition(|c| c.req.frame.arbitration_key() == best);
    let frame = winners[0].req.frame;
    let collision = winners.iter().any(|w| w.req.frame != frame);
    let fb = FrameBits::encode(&frame);
    let self_ack = winners.iter().any(|w| w.req.self_ack);
    let tx_ids: Vec<NodeId> = winners.iter().map(|w| w.id).collect();
    let mut receivers = Vec::new();
    let mut mismatched = Vec::new();
    let mut ackers = 0;
    let mut fd_reject = false;
    for (id, p) in &parts {
        if tx_ids.contains(id) || p.role == Role::Off {
            continue;
        }
        let rates_ok = p.rates.is_none_or(|r| {
            close(r.nominal, rates.nominal) && (!(frame.is_fd() && frame.brs()) || close(r.data, rates.data))
        });
        if !rates_ok {
            mismatched.push(*id);
            continue;
        }
        if frame.is_fd() && !p.fd_tolerant && p.role == Role::Active {
            fd_reject = true;
        }
        if matches!(p.role, Role::Active | Role::Restricted) {
            ackers += 1;
        }
        receivers.push((*id, nodes[usize::from(id.0)].1.clone()));
    }
    let corrupt = {
        let mut st = lock(inner);
        if st.corrupt_next > 0 {
            st.corrupt_next -= 1;
            true
        } else {
            false
        }
    };
    // Where the first error is detected (bit index), if any.
    let error = if collision {
        Some((BusError::Bit, fb.arbitration_end() + 1))
    } else if fd_reject {
        Some((BusError::Form, fb.arbitration_end() + 2))
    } else if corrupt {
        Some((BusError::Crc, fb.ack_slot()))
    } else if ackers == 0 && !self_ack {
        Some((BusError::Ack, fb.ack_slot()))
    } else {
        None
    };
    let end = match error {
        Some((_, bit)) => t.add_ns(fb.bit_end_ns(bit, rates) + rates.nominal_ns(u64::from(ERROR_FRAME_BITS))),
        None => t.add_ns(fb.duration_ns(rates)),
    };
    let stamp = FrameStamp { sof: t, eof: end };
    if error.is_none() {
        for (_, node) in &receivers {
            node.rx_coming(&frame, stamp);
        }
    }
    let outcome = Outcome {
        frame,
        stamp,
        error: error.map(|e| e.0),
        transmitters: winners.iter().map(|w| (w.id, w.req.token)).collect(),
        receivers,
        mismatched,
        nominal_bits: fb.nominal_bits(),
        data_bits: fb.data_bits(),
        retry: !losers.is_empty(),
    };
    {
        let mut st = lock(inner);
        st.phase = Phase::Busy;
        st.idle_at = end.add_ns(rates.nominal_ns(u64::from(INTERMISSION_BITS)));
        let weak = Arc::downgrade(inner);
        inner.scheduler.schedule(end, move |_| {
            if let Some(inner) = weak.upgrade() {
                complete(&inner, outcome);
            }
        });
    }
    for l in losers {
        nodes[usize::from(l.id.0)].1.tx_done(l.req.token, TxOutcome::LostArbitration, FrameStamp { sof: t, eof: t });
    }
}

fn complete(inner: &Arc<Inner>, o: Outcome) {
    let rates = inner.rates;
    let end = o.stamp.eof;
    // Receivers first, before the bus's own bookkeeping: a controller model
    // raising its RX interrupt is what software waits for; nothing below
    // (counters, telling transmitters or observers, either of which may
    // wake a thread) must delay that interrupt.
    match o.error {
        None => {
            for (_, node) in &o.receivers {
                node.rx_frame(&o.frame, o.stamp);
            }
        }
        Some(e) => {
            for (_, node) in &o.receivers {
                node.rx_error(e, end);
            }
        }
    }
    let mut changed: Vec<(Arc<dyn CanNode>, ErrorCounters)> = Vec::new();
    let mut recover: Vec<(NodeId, Instant)> = Vec::new();
    let (tx_nodes, mm_nodes, observers) = {
        let mut st = lock(inner);
        if o.error.is_some() {
            st.frames_failed += 1;
        } else {
            st.frames_ok += 1;
        }
        let idle = st.idle_at;
        for &(id, _) in &o.transmitters {
            let n = &mut st.nodes[usize::from(id.0)];
            if n.bus_off_until.is_some() {
                // Forced bus-off while its frame was on the wire: the node
                // stays off; the frame's outcome does not move its counters.
                continue;
            }
            let before = n.counters;
            let passive = before.state() != ErrorState::Active;
            match o.error {
                None => n.counters.tec = n.counters.tec.saturating_sub(1),
                Some(BusError::Ack) if passive => {}
                Some(_) => n.counters.tec += 8,
            }
            if n.counters.tec > 255 && n.bus_off_until.is_none() {
                n.counters.tec = 256;
                let until = end.add_ns(rates.nominal_ns(128 * 11));
                n.bus_off_until = Some(until);
                recover.push((id, until));
            }
            if n.counters.state() == ErrorState::Passive {
                n.suspend_until = idle.add_ns(rates.nominal_ns(u64::from(SUSPEND_BITS)));
            }
            if n.counters != before {
                changed.push((n.node.clone(), n.counters));
            }
        }
        for id in o.receivers.iter().map(|r| r.0).chain(o.mismatched.iter().copied()) {
            let mismatched = o.mismatched.contains(&id);
            let n = &mut st.nodes[usize::from(id.0)];
            let before = n.counters;
            if o.error.is_some() || mismatched {
                n.counters.rec = (n.counters.rec + 1).min(255);
            } else if n.counters.rec > 127 {
                n.counters.rec = 120;
            } else {
                n.counters.rec = n.counters.rec.saturating_sub(1);
            }
            if n.counters != before {
                changed.push((n.node.clone(), n.counters));
            }
        }
        let tx: Vec<(Arc<dyn CanNode>, u64)> =
            o.transmitters.iter().map(|&(id, tok)| (st.nodes[usize::from(id.0)].node.clone(), tok)).collect();
        let mm: Vec<Arc<dyn CanNode>> =
            o.mismatched.iter().map(|id| st.nodes[usize::from(id.0)].node.clone()).collect();
        st.phase = Phase::Idle;
        // Arbitrate again at idle only for a frame still waiting (a loser,
        // or a transmitter retrying after an error); a node with a new frame
        // calls `request`. An idle bus schedules nothing.
        if o.retry || o.error.is_some() {
            st.wakes.insert(idle);
        }
        rearm(inner, &mut st);
        (tx, mm, st.observers.clone())
    };
    for (id, until) in recover {
        schedule_recovery(inner, id, until);
    }
    let record = FrameRecord {
        frame: o.frame,
        transmitter: o.transmitters[0].0,
        stamp: o.stamp,
        error: o.error,
        nominal_bits: o.nominal_bits,
        data_bits: o.data_bits,
    };
    for node in &mm_nodes {
        node.rx_error(BusError::Form, end);
    }
    let outcome = match o.error {
        None => TxOutcome::Sent,
        Some(e) => TxOutcome::Error(e),
    };
    // Observers before transmitters: once a sender learns its frame went
    // out, every recorder already holds it.
    for obs in &observers {
        obs.frame(&record);
    }
    for (node, token) in &tx_nodes {
        node.tx_done(*token, outcome, o.stamp);
    }
    for (node, c) in changed {
        node.error_counters_changed(c, end);
    }
}

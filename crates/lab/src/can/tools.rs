//! Peer tools on the bus, like can-utils: a frame [`Generator`] (`cangen`),
//! a bus-side [`Recorder`] of every frame's SOF/EOF and content, and
//! [`pair_echoes`], which pairs each generated frame with the next frame from
//! another node to measure echo gaps (RX EOF → echo SOF).

use super::bus::{
    Bus, BusObserver, CanNode, FrameRecord, FrameStamp, NodeId, Participation, TxOutcome, TxRequest, WeakBus,
};
use super::frame::{CanId, Frame, FrameError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use wirespeed_time::Instant;

/// Payload of generated frames (cangen `-D`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataMode {
    /// The same bytes every time (the first `len` of the array).
    Fixed([u8; 64]),
    /// The frame's index as a little-endian u64, repeated to fill the payload.
    Incrementing,
    /// Pseudo-random bytes from a seeded generator (xorshift64*).
    Random {
        /// Seed (0 is replaced by a fixed non-zero value).
        seed: u64,
    },
}

/// What a [`Generator`] sends.
#[derive(Clone, Copy, Debug)]
pub struct GeneratorConfig {
    /// Identifier of every frame (cangen `-I`).
    pub id: CanId,
    /// Payload length in bytes (cangen `-L`); FD lengths need `fd`.
    pub len: usize,
    /// Send CAN FD frames.
    pub fd: bool,
    /// With `fd`: switch to the data bit rate.
    pub brs: bool,
    /// Time from the end (EOF) of one frame to the moment the next is ready
    /// (cangen `-g`, here in ns). 0 = back to back: 100 % bus load.
    pub gap_ns: u64,
    /// Frames to send (cangen `-n`).
    pub count: u64,
    /// Payload (cangen `-D`).
    pub data: DataMode,
}

impl Default for GeneratorConfig {
    /// `cangen -g 10 -n 1000 -I 0x077 -L 8 -D r`.
    fn default() -> Self {
        GeneratorConfig {
            id: CanId::Standard(0x077),
            len: 8,
            fd: false,
            brs: false,
            gap_ns: 10_000_000,
            count: 1000,
            data: DataMode::Random { seed: 0x5EED },
        }
    }
}

/// One frame a generator sent.
#[derive(Clone, Copy, Debug)]
pub struct SentFrame {
    /// 0-based index in the run.
    pub index: u64,
    /// The frame.
    pub frame: Frame,
    /// Its SOF and EOF.
    pub stamp: FrameStamp,
}

struct GenState {
    next: u64,
    ready_at: Option<Instant>,
    current: Option<Frame>,
    rng: u64,
    sent: Vec<SentFrame>,
    attempts_failed: u64,
    received: u64,
}

struct GenInner {
    bus: WeakBus,
    cfg: GeneratorConfig,
    state: Mutex<GenState>,
    done: Condvar,
}

/// A `cangen`-like node. Clones share it.
#[derive(Clone)]
pub struct Generator {
    inner: Arc<GenInner>,
    id: NodeId,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").field("node", &self.id).field("cfg", &self.inner.cfg).finish()
    }
}

struct GenNode(Arc<GenInner>);

impl GenInner {
    fn lock(&self) -> MutexGuard<'_, GenState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn make(&self, st: &mut GenState, index: u64) -> Frame {
        let mut buf = [0u8; 64];
        let n = self.cfg.len;
        match self.cfg.data {
            DataMode::Fixed(b) => buf = b,
            DataMode::Incrementing => {
                for (i, b) in buf[..n].iter_mut().enumerate() {
                    *b = index.to_le_bytes()[i % 8];
                }
            }
            DataMode::Random { .. } => {
                for b in buf[..n].iter_mut() {
                    st.rng ^= st.rng >> 12;
                    st.rng ^= st.rng << 25;
                    st.rng ^= st.rng >> 27;
                    *b = (st.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
                }
            }
        }
        build(&self.cfg, &buf[..n]).unwrap_or_else(|_| Frame::new_classic(self.cfg.id, &[]).expect("empty frame"))
    }
}

fn build(cfg: &GeneratorConfig, data: &[u8]) -> Result<Frame, FrameError> {
    if cfg.fd {
        Frame::new_fd(cfg.id, data, cfg.brs)
    } else {
        Frame::new_classic(cfg.id, data)
    }
}

impl Generator {
    /// Attaches a generator to `bus`; it sends nothing until [`start`](Self::start).
    pub fn attach(bus: &Bus, name: &str, cfg: GeneratorConfig) -> Result<Generator, FrameError> {
        build(&cfg, &[0u8; 64][..cfg.len.min(64)])?;
        if cfg.len > 64 {
            return Err(FrameError::DataTooLong { len: cfg.len, max: 64 });
        }
        let seed = match cfg.data {
            DataMode::Random { seed } if seed != 0 => seed,
            _ => 0x9E37_79B9_7F4A_7C15,
        };
        let inner = Arc::new(GenInner {
            bus: bus.downgrade(),
            cfg,
            state: Mutex::new(GenState {
                next: 0,
                ready_at: None,
                current: None,
                rng: seed,
                sent: Vec::with_capacity(cfg.count.min(1 << 20) as usize),
                attempts_failed: 0,
                received: 0,
            }),
            done: Condvar::new(),
        });
        let id = bus.attach(Arc::new(GenNode(inner.clone())), name);
        Ok(Generator { inner, id })
    }

    /// The generator's node id (to find its frames in a recording).
    pub fn node(&self) -> NodeId {
        self.id
    }

    /// Makes the first frame ready at `at` (lab clock).
    pub fn start(&self, at: Instant) {
        {
            let mut st = self.inner.lock();
            if self.inner.cfg.count == 0 {
                return;
            }
            let f = self.inner.make(&mut st, 0);
            st.current = Some(f);
            st.ready_at = Some(at);
        }
        if let Some(bus) = self.inner.bus.upgrade() {
            bus.request(at);
        }
    }

    /// Frames sent so far.
    pub fn frames_sent(&self) -> u64 {
        self.inner.lock().sent.len() as u64
    }

    /// Attempts that ended in an error frame.
    pub fn attempts_failed(&self) -> u64 {
        self.inner.lock().attempts_failed
    }

    /// Frames from other nodes this generator received.
    pub fn frames_received(&self) -> u64 {
        self.inner.lock().received
    }

    /// Whether every frame was sent.
    pub fn is_done(&self) -> bool {
        self.frames_sent() >= self.inner.cfg.count
    }

    /// Sleeps until every frame was sent; false on timeout.
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut st = self.inner.lock();
        while (st.sent.len() as u64) < self.inner.cfg.count {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self.inner.done.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }

    /// The frames sent so far, with their stamps.
    pub fn sent(&self) -> Vec<SentFrame> {
        self.inner.lock().sent.clone()
    }
}

impl CanNode for GenNode {
    fn participation(&self, _at: Instant) -> Participation {
        Participation::ACTIVE
    }

    fn tx_request(&self, at: Instant) -> Option<TxRequest> {
        let st = self.0.lock();
        match (st.current, st.ready_at) {
            (Some(frame), Some(r)) if r <= at => Some(TxRequest { frame, token: st.next, self_ack: false }),
            _ => None,
        }
    }

    fn tx_done(&self, token: u64, outcome: TxOutcome, stamp: FrameStamp) {
        let next_at = {
            let mut st = self.0.lock();
            if token != st.next {
                return;
            }
            match outcome {
                TxOutcome::LostArbitration => return,
                TxOutcome::Error(_) => {
                    st.attempts_failed += 1;
                    Some(stamp.eof)
                }
                TxOutcome::Sent => {
                    let Some(frame) = st.current.take() else { return };
                    st.sent.push(SentFrame { index: token, frame, stamp });
                    st.next += 1;
                    if st.next < self.0.cfg.count {
                        let idx = st.next;
                        let f = self.0.make(&mut st, idx);
                        st.current = Some(f);
                        let at = stamp.eof.add_ns(self.0.cfg.gap_ns);
                        st.ready_at = Some(at);
                        Some(at)
                    } else {
                        st.ready_at = None;
                        self.0.done.notify_all();
                        None
                    }
                }
            }
        };
        if let Some(at) = next_at {
            if let Some(bus) = self.0.bus.upgrade() {
                bus.request(at);
            }
        }
    }

    fn rx_frame(&self, _frame: &Frame, _stamp: FrameStamp) {
        self.0.lock().received += 1;
    }
}

struct RecState {
    records: Vec<FrameRecord>,
    capacity: usize,
    dropped: u64,
}

/// Records every transmission on a bus (SOF, EOF, content, outcome), like a
/// logic analyser with a CAN decoder. Clones share the recording.
#[derive(Clone)]
pub struct Recorder {
    state: Arc<Mutex<RecState>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("records", &self.len()).finish()
    }
}

struct RecObserver(Arc<Mutex<RecState>>);

impl BusObserver for RecObserver {
    fn frame(&self, record: &FrameRecord) {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if st.records.len() < st.capacity {
            st.records.push(*record);
        } else {
            st.dropped += 1;
        }
    }
}

impl Recorder {
    /// Starts recording `bus`, keeping up to `capacity` records.
    pub fn attach(bus: &Bus, capacity: usize) -> Recorder {
        let state =
            Arc::new(Mutex::new(RecState { records: Vec::with_capacity(capacity.min(1 << 20)), capacity, dropped: 0 }));
        bus.observe(Arc::new(RecObserver(state.clone())));
        Recorder { state }
    }

    fn lock(&self) -> MutexGuard<'_, RecState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records so far (successful and failed transmissions, in bus order).
    pub fn records(&self) -> Vec<FrameRecord> {
        self.lock().records.clone()
    }

    /// Takes the records, leaving the recorder empty.
    pub fn take(&self) -> Vec<FrameRecord> {
        std::mem::take(&mut self.lock().records)
    }

    /// Number of records held.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records lost because the recorder was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }
}

/// A generated frame and the frame another node sent next.
#[derive(Clone, Copy, Debug)]
pub struct EchoPair {
    /// The generator's frame.
    pub request: FrameRecord,
    /// The next successful frame from another node.
    pub echo: FrameRecord,
    /// From the request's EOF to the echo's SOF, in ns.
    pub gap_ns: u64,
    /// Whether the echo carries the same data bytes.
    pub payload_match: bool,
    /// Whether the echo has the same identifier.
    pub id_match: bool,
}

/// Result of [`pair_echoes`].
#[derive(Clone, Debug, Default)]
pub struct EchoReport {
    /// One entry per answered generated frame.
    pub pairs: Vec<EchoPair>,
    /// Generated frames no echo answered.
    pub unanswered: usize,
}

impl EchoReport {
    /// Pairs whose payload differs.
    pub fn payload_mismatches(&self) -> usize {
        self.pairs.iter().filter(|p| !p.payload_match).count()
    }
    /// The gaps in µs, in bus order.
    pub fn gaps_us(&self) -> Vec<f64> {
        self.pairs.iter().map(|p| p.gap_ns as f64 / 1_000.0).collect()
    }
}

/// Pairs each successful frame from `generator` with a successful frame
/// from any other node (its echo), in order: an echo answers the oldest
/// generated frame not answered yet, so an echo that comes after the next
/// request (a stall longer than the generator's gap) still pairs with its
/// own request, and its gap says how late it was.
pub fn pair_echoes(records: &[FrameRecord], generator: NodeId) -> EchoReport {
    let mut report = EchoReport::default();
    let mut pending: std::collections::VecDeque<FrameRecord> = std::collections::VecDeque::new();
    for r in records.iter().filter(|r| r.error.is_none()) {
        if r.transmitter == generator {
            pending.push_back(*r);
        } else if let Some(req) = pending.pop_front() {
            report.pairs.push(EchoPair {
                request: req,
                echo: *r,
                gap_ns: r.stamp.sof.ns_since(req.stamp.eof),
                payload_match: r.frame.data() == req.frame.data(),
                id_match: r.frame.id() == req.frame.id(),
            });
        }
    }
    report.unanswered = pending.len();
    report
}

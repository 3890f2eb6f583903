//! An SPI worker: a random mix of sync, prepared, async (waited) and
//! callback messages and bus-locked sequences, to random devices, each
//! message framed ([`super::frame`]), settled in its stream
//! ([`super::checker`]) and its echo checked.
//!
//! - **sync**: `SpiDevice::sync` with one duplex transfer;
//! - **prepared**: `SpiDevice::run` of a prepared message;
//! - **pending**: 1–8 `submit`s, waited newest first: once the newest has
//!   completed, every older one must have (per-device FIFO), else each one
//!   still pending counts as reordered;
//! - **callback**: 1–8 `submit_with`s whose callbacks (on the pump thread)
//!   hand the message back through a channel, so the worker sees them in
//!   completion order; a callback may be the injector's pump stall;
//! - **locked**: `lock_bus`, then 2–4 messages through the lock (sync and prepared);
//! - **regmap**: a register-map write of the worker's own register of the
//!   register file, then a read back that must return the value written
//!   (two messages; a write that failed is not read back).
//!
//! Latency is from just before sending to completion (the callback's
//! instant, or when the worker saw it: a waited message's latency includes
//! the wait for those before it).

use super::budget::Budget;
use super::checker::Checker;
use super::faults::FaultLedger;
use super::frame::{self, MAX_FRAME_BYTES};
use super::latency::LatencyHistogram;
use super::rig::{Rig, REGMAP_FIRST};
use super::rng::Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;
use wirespeed::regmap::RegmapError;
use wirespeed::spi::{OwnedTransfer, Pending, PreparedMessage, SpiError, Transfer};
use wirespeed_time::{now, Instant};

/// Most messages in one async batch (below the checker's window).
const MAX_BATCH: u64 = 8;
/// How long a worker waits for an async message before calling it lost.
const WAIT_LIMIT: Duration = Duration::from_secs(10);
/// How long an injected pump stall holds the pump thread.
const PUMP_STALL: Duration = Duration::from_millis(3);

/// A message on its way: its number, the stuck epoch and the instant it was sent.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u32,
    epoch: u64,
    at: Instant,
}

/// A callback message handed back by its callback, with the device and
/// the send it belongs to (a late one from an earlier batch settles as
/// itself, not as a message of the batch that finds it).
struct Done {
    device: usize,
    sent: Sent,
    msg: PreparedMessage,
    result: Result<(), SpiError>,
    at: Instant,
}

/// What one worker shares with the others.
#[derive(Debug, Clone, Copy)]
pub struct Shared<'a> {
    /// The board.
    pub rig: &'a Rig,
    /// Sequence bookkeeping and counts.
    pub checker: &'a Checker,
    /// Faults injected and reported.
    pub ledger: &'a Arc<FaultLedger>,
    /// When to stop.
    pub budget: &'a Budget,
}

/// One SPI worker thread's state.
pub struct Worker<'a> {
    id: usize,
    shared: Shared<'a>,
    rng: Rng,
    pools: Vec<Vec<PreparedMessage>>,
    pending: Vec<(Sent, Pending)>,
    done_tx: Sender<Done>,
    done_rx: Receiver<Done>,
    latency: LatencyHistogram,
}

impl std::fmt::Debug for Worker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).finish_non_exhaustive()
    }
}

impl<'a> Worker<'a> {
    /// Worker number `id` (below 256), seeded with `seed`.
    pub fn new(id: usize, shared: Shared<'a>, seed: u64) -> Worker<'a> {
        let (done_tx, done_rx) = channel();
        Worker {
            id,
            shared,
            rng: Rng::new(seed ^ (id as u64).wrapping_mul(0x9E37_79B9)),
            pools: shared.rig.devices.iter().map(|_| Vec::new()).collect(),
            pending: Vec::with_capacity(MAX_BATCH as usize),
            done_tx,
            done_rx,
            latency: LatencyHistogram::default(),
        }
    }

    /// Runs until the budget says stop; returns the latencies seen.
    pub fn run(mut self) -> LatencyHistogram {
        loop {
            let device = self.rng.below(self.shared.rig.devices.len() as u64) as usize;
            let kind = self.rng.below(100);
            let count = self.rng.between(1, MAX_BATCH);
            let messages = match kind {
                0..=44 => 1,
                80..=89 => count.clamp(2, 4),
                90.. => 2,
                _ => count,
            };
            if !self.shared.budget.claim(messages) {
                break;
            }
            let op = catch_unwind(AssertUnwindSafe(|| match kind {
                0..=24 => self.sync_one(device),
                25..=44 => self.prepared_one(device),
                45..=59 => self.pending_batch(device, messages),
                60..=79 => self.callback_batch(device, messages),
                80..=89 => self.locked_sequence(device, messages),
                _ => self.register_round_trip(),
            }));
            if op.is_err() {
                self.shared.checker.tally.untyped_errors.fetch_add(1, Relaxed);
                // Async messages of the op may be anywhere: start afresh.
                self.pending.clear();
            }
        }
        self.latency
    }

    fn frame_bytes(&self, device: usize) -> usize {
        self.shared.rig.devices[device].frame_bytes
    }

    /// Numbers the next message of `device` and fills `tx` with its frame.
    fn start(&self, device: usize, tx: &mut [u8]) -> Sent {
        let seq = self.shared.checker.issue(device, self.id);
        frame::fill(tx, device as u8, self.id as u8, seq);
        Sent { seq, epoch: self.shared.ledger.stuck_epoch(device), at: now() }
    }

    /// A prepared message for `device`, from the pool or new.
    fn take_message(&mut self, device: usize) -> Option<PreparedMessage> {
        if let Some(m) = self.pools[device].pop() {
            return Some(m);
        }
        let n = self.frame_bytes(device);
        match self.shared.rig.devices[device].dev.prepare(vec![OwnedTransfer::duplex(vec![0; n])]) {
            Ok(m) => Some(m),
            Err(_) => {
                self.shared.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
                None
            }
        }
    }

    /// Numbers a prepared message and fills its TX.
    fn start_message(&self, device: usize, msg: &mut PreparedMessage) -> Sent {
        let mut tx = [0u8; MAX_FRAME_BYTES];
        let n = self.frame_bytes(device);
        let sent = self.start(device, &mut tx[..n]);
        if let Some(t) = msg.tx_mut(0) {
            t.copy_from_slice(&tx[..t.len().min(n)]);
        }
        sent
    }

    /// Settles a completed message and checks what it brought back.
    fn finish(&mut self, device: usize, sent: Sent, result: Result<(), SpiError>, rx: Option<&[u8]>, at: Instant) {
        let (checker, ledger) = (self.shared.checker, self.shared.ledger);
        let tally = &checker.tally;
        tally.messages.fetch_add(1, Relaxed);
        checker.settle(device, self.id, sent.seq);
        match result {
            Ok(()) => {
                self.latency.record_ns(at.ns_since(sent.at));
                let n = self.frame_bytes(device);
                let mut expected = [0u8; MAX_FRAME_BYTES];
                frame::fill(&mut expected[..n], device as u8, self.id as u8, sent.seq);
                if !rx.is_some_and(|rx| frame::intact_echo(&expected[..n], rx)) {
                    let counter =
                        if ledger.blame_stuck(device, sent.epoch) { &tally.stuck_reads } else { &tally.corrupted };
                    counter.fetch_add(1, Relaxed);
                }
            }
            Err(e) => {
                tally.failed.fetch_add(1, Relaxed);
                if !ledger.report_spi(&e) {
                    tally.unexpected_errors.fetch_add(1, Relaxed);
                }
            }
        }
    }

    fn sync_one(&mut self, device: usize) {
        let n = self.frame_bytes(device);
        let (mut tx, mut rx) = ([0u8; MAX_FRAME_BYTES], [0u8; MAX_FRAME_BYTES]);
        let sent = self.start(device, &mut tx[..n]);
        let r = self.shared.rig.devices[device].dev.sync(&mut [Transfer::duplex(&tx[..n], &mut rx[..n])]);
        self.finish(device, sent, r, Some(&rx[..n]), now());
    }

    fn prepared_one(&mut self, device: usize) {
        let Some(mut msg) = self.take_message(device) else { return };
        let sent = self.start_message(device, &mut msg);
        let r = self.shared.rig.devices[device].dev.run(&mut msg);
        self.finish(device, sent, r, msg.rx(0), now());
        self.pools[device].push(msg);
    }

    fn pending_batch(&mut self, device: usize, count: u64) {
        let rig = self.shared.rig;
        let dev = &rig.devices[device].dev;
        for _ in 0..count {
            let Some(mut msg) = self.take_message(device) else { break };
            let sent = self.start_message(device, &mut msg);
            self.pending.push((sent, dev.submit(msg)));
        }
        let mut batch = std::mem::take(&mut self.pending);
        let Some((last_sent, last)) = batch.pop() else { return };
        // Per-device FIFO: once the newest has completed, all older ones have.
        let last = last.wait_timeout(WAIT_LIMIT).ok();
        if last.is_some() {
            for _ in batch.iter().filter(|(_, p)| !p.is_done()) {
                self.shared.checker.note_reordered(device);
            }
        }
        for (sent, p) in batch.drain(..) {
            if let Ok((msg, r)) = p.wait_timeout(WAIT_LIMIT) {
                self.finish(device, sent, r, msg.rx(0), now());
                self.pools[device].push(msg);
            }
        }
        if let Some((msg, r)) = last {
            self.finish(device, last_sent, r, msg.rx(0), now());
            self.pools[device].push(msg);
        }
        self.pending = batch;
    }

    fn callback_batch(&mut self, device: usize, count: u64) {
        let rig = self.shared.rig;
        let d = &rig.devices[device];
        let mut submitted = 0;
        for _ in 0..count {
            let Some(mut msg) = self.take_message(device) else { break };
            let sent = self.start_message(device, &mut msg);
            submitted += 1;
            let (tx, ledger, bus) = (self.done_tx.clone(), Arc::clone(self.shared.ledger), d.bus);
            d.dev.submit_with(msg, move |msg, result| {
                if ledger.take_pump_stall(bus) {
                    std::thread::sleep(PUMP_STALL);
                }
                let _ = tx.send(Done { device, sent, msg, result, at: now() });
            });
        }
        // As many completions as were submitted: a late one from an earlier
        // batch may be among them, and then one of this batch is settled by
        // the next batch; each settles as the message it is.
        for _ in 0..submitted {
            let Ok(done) = self.done_rx.recv_timeout(WAIT_LIMIT) else { break };
            self.finish(done.device, done.sent, done.result, done.msg.rx(0), done.at);
            self.pools[done.device].push(done.msg);
        }
    }

    fn register_round_trip(&mut self) {
        let (map, tally, ledger) = (&self.shared.rig.regmap, &self.shared.checker.tally, self.shared.ledger);
        let reg = REGMAP_FIRST + self.id as u32;
        let value = self.rng.below(256) as u32;
        let failed = |e: &RegmapError| {
            tally.failed.fetch_add(1, Relaxed);
            if !ledger.report_regmap(e) {
                tally.unexpected_errors.fetch_add(1, Relaxed);
            }
        };
        tally.messages.fetch_add(1, Relaxed);
        if let Err(e) = map.write(reg, value) {
            failed(&e);
            return;
        }
        tally.messages.fetch_add(1, Relaxed);
        match map.read(reg) {
            Ok(v) if v == value => {}
            Ok(_) => {
                tally.corrupted.fetch_add(1, Relaxed);
            }
            Err(e) => failed(&e),
        }
    }

    fn locked_sequence(&mut self, device: usize, count: u64) {
        let rig = self.shared.rig;
        let dev = &rig.devices[device].dev;
        let mut lock = match dev.lock_bus() {
            Ok(l) => l,
            Err(_) => {
                self.shared.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
                return;
            }
        };
        let n = self.frame_bytes(device);
        for i in 0..count {
            if i % 2 == 0 {
                let (mut tx, mut rx) = ([0u8; MAX_FRAME_BYTES], [0u8; MAX_FRAME_BYTES]);
                let sent = self.start(device, &mut tx[..n]);
                let r = lock.sync(&mut [Transfer::duplex(&tx[..n], &mut rx[..n])]);
                self.finish(device, sent, r, Some(&rx[..n]), now());
            } else if let Some(mut msg) = self.take_message(device) {
                let sent = self.start_message(device, &mut msg);
                let r = lock.run(&mut msg);
                self.finish(device, sent, r, msg.rx(0), now());
                self.pools[device].push(msg);
            }
        }
    }
}

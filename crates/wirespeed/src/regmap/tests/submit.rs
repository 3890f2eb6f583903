//! A bus whose submitted batches complete later (as over SPI): errors are
//! reported by the call they belong to, never by a later one.

use super::rig::{suite_config, suite_format};
use crate::regmap::{Batch, BusError, CacheType, RamBus, Regmap, RegmapBus};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What the bus does with the next submitted batch.
#[derive(Debug, Clone)]
enum Step {
    /// Accepted; `complete` reports this outcome.
    Accept(Result<(), BusError>),
    /// Refused at once.
    Reject(BusError),
}

/// A RAM bus with an asynchronous submit: outcomes queue until `complete`.
struct AsyncBus {
    ram: RamBus,
    script: Arc<Mutex<VecDeque<Step>>>,
    in_flight: Vec<Result<(), BusError>>,
}

impl RegmapBus for AsyncBus {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        self.ram.write(segments)
    }
    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        self.ram.write_then_read(tx, rx)
    }
    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        self.ram.write_batch(batch)
    }
    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        match self.script.lock().unwrap().pop_front().unwrap_or(Step::Accept(Ok(()))) {
            Step::Reject(e) => Err(e),
            Step::Accept(outcome) => {
                if outcome.is_ok() {
                    self.ram.submit_batch(batch)?;
                }
                self.in_flight.push(outcome);
                Ok(())
            }
        }
    }
    fn complete(&mut self) -> Result<(), BusError> {
        self.in_flight.drain(..).collect()
    }
    fn max_message_bytes(&self) -> Option<usize> {
        self.ram.max_message_bytes()
    }
}

#[test]
fn a_submit_refused_midway_does_not_leave_earlier_batches_to_fail_the_next_sync() {
    let ram = RamBus::new(Arc::new(suite_format()), 1, 0xFF);
    ram.set_max_message_bytes(Some(8)); // two 3-byte windows per message
    let script = Arc::new(Mutex::new(VecDeque::new()));
    let bus = AsyncBus { ram: ram.clone(), script: script.clone(), in_flight: Vec::new() };
    let map = Regmap::new(suite_config(CacheType::Flat), bus).unwrap();
    map.set_cache_only(true);
    for reg in [0x40, 0x50, 0x60, 0x70] {
        map.write(reg, 1).unwrap();
    }
    map.set_cache_only(false);
    // First message accepted but fails on the wire; the second is refused.
    script.lock().unwrap().extend([
        Step::Accept(Err(BusError::Transport("nak".into()))),
        Step::Reject(BusError::Transport("queue full".into())),
    ]);
    assert!(matches!(map.sync(), Err(crate::regmap::RegmapError::Bus { .. })));
    // The bus is healthy again: this sync must succeed on its own merits.
    let rep = map.sync().expect("the earlier sync's failures belong to the earlier sync");
    assert_eq!((rep.written, rep.messages), (4, 2));
    assert!([0x40, 0x50, 0x60, 0x70].iter().all(|&r| ram.peek(r) == 1));
}

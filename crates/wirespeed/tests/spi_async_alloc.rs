//! Async messages allocate nothing per message, counted over every thread
//! of the process (the pump's too): a binary of its own, so that no other
//! test allocates while this one counts.

mod common;

use common::{alloc_count, bench};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wirespeed::spi::{DeviceConfig, OwnedTransfer, Policy, PreparedMessage, SpiDevice, SpiError};

/// Where a stream hands its message back. A mutex and a condvar, not a
/// channel: a thread that blocks on a std channel for the first time
/// allocates its wait context, which this test would count.
#[derive(Default)]
struct Handoff {
    slot: Mutex<Option<(PreparedMessage, u32)>>,
    ready: Condvar,
}

impl Handoff {
    fn put(&self, v: (PreparedMessage, u32)) {
        *self.slot.lock().unwrap() = Some(v);
        self.ready.notify_one();
    }

    fn take(&self) -> (PreparedMessage, u32) {
        let slot = self.slot.lock().unwrap();
        let (mut slot, timeout) =
            self.ready.wait_timeout_while(slot, Duration::from_secs(30), |s| s.is_none()).unwrap();
        assert!(!timeout.timed_out(), "the stream stopped");
        slot.take().unwrap()
    }
}

/// A stream: the callback checks the message's echo and submits it again
/// until `left` runs out, then hands it back through `done`.
fn stream(
    dev: SpiDevice,
    left: u32,
    done: Arc<Handoff>,
) -> impl FnOnce(PreparedMessage, Result<(), SpiError>) + Send + 'static {
    move |mut pm, r| {
        r.unwrap();
        let echoed = pm.rx(0).unwrap()[0] == pm.tx_mut(0).unwrap()[0];
        if left == 0 || !echoed {
            done.put((pm, left));
            return;
        }
        pm.tx_mut(0).unwrap()[0] = left as u8;
        let next = dev.clone();
        next.submit_with(pm, stream(dev, left - 1, done));
    }
}

#[test]
fn async_messages_do_not_allocate_per_submit_waited_or_streamed_by_callback() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut pm = dev.prepare(vec![OwnedTransfer::duplex(vec![0; 9])]).unwrap();
    let handoff = Arc::new(Handoff::default());
    let run_stream = |pm: PreparedMessage, n: u32| {
        dev.submit_with(pm, stream(dev.clone(), n, handoff.clone()));
        let (pm, left) = handoff.take();
        assert_eq!(left, 0, "the stream ended early: a message did not echo");
        pm
    };
    // Warm: the pump's statistics shard, the queue, the threads' first use.
    for _ in 0..10 {
        pm = dev.submit(pm).wait().0;
    }
    pm = run_stream(pm, 10);
    let before = alloc_count::process();
    for i in 0..1000u32 {
        pm.tx_mut(0).unwrap()[0] = i as u8;
        pm = dev.submit(pm).wait().0;
        assert_eq!(pm.rx(0).unwrap()[0], i as u8);
    }
    let waited = alloc_count::process() - before;
    let before = alloc_count::process();
    let pm = run_stream(pm, 1000);
    let streamed = alloc_count::process() - before;
    assert_eq!((waited, streamed), (0, 0), "allocations in the process: 1000 submit-and-wait, a 1000-message stream");
    assert_eq!(b.bus.stats().messages, 10 + 11 + 1000 + 1001);
    assert_eq!(pm.rx(0).unwrap()[0], 1, "the stream's last message carried its last count");
}

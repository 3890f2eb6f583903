//! Async messages allocate nothing per message, counted over every thread
//! of the process (the pump's too): a binary of its own, so that no other
//! test allocates while this one counts.

mod common;

use common::{alloc_count, bench};
use std::time::Duration;
use wirespeed::spi::{DeviceConfig, OwnedTransfer, Policy, PreparedMessage, SpiDevice, SpiError};

/// A stream: the callback checks the message's echo and submits it again
/// until `left` runs out, then hands it back on `done`.
fn stream(
    dev: SpiDevice,
    left: u32,
    done: std::sync::mpsc::SyncSender<(PreparedMessage, u32)>,
) -> impl FnOnce(PreparedMessage, Result<(), SpiError>) + Send + 'static {
    move |mut pm, r| {
        r.unwrap();
        let echoed = pm.rx(0).unwrap()[0] == pm.tx_mut(0).unwrap()[0];
        if left == 0 || !echoed {
            let _ = done.send((pm, left));
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
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let run_stream = |pm: PreparedMessage, n: u32| {
        dev.submit_with(pm, stream(dev.clone(), n, tx.clone()));
        let (pm, left) = rx.recv_timeout(Duration::from_secs(30)).expect("the stream stopped");
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

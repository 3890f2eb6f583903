//! Loom model of the lock-free statistics: threads that record into their
//! own shards (registered with the bus on first use) while another thread
//! sums them. Run with `RUSTFLAGS="--cfg loom" cargo test -p wirespeed --release --lib loom`.

use super::{MessageRecord, Stats};
use crate::sync::{thread, Arc};

fn record(stats: &Stats, ok: bool) {
    stats.transfer(true, true, 9);
    stats.message(MessageRecord { immediate: true, ok, timeout: false, latency_ns: 1_000 });
}

/// A thread records two messages on a bus it first touches inside the model
/// (so its shard is made and registered concurrently) while the main thread
/// records one (registering its own shard) and takes a snapshot. The
/// snapshot counts the main thread's message and at most what the other
/// recorded; once the writer is joined the sums are exact: no update lost,
/// none counted twice, whichever way the registrations interleave with the
/// read.
#[test]
fn stats_loom_shards_registered_while_read_sum_exactly() {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    // A snapshot loads every latency bucket of every shard: hundreds of
    // loads, each a branch point for loom (most with one possible value).
    b.max_branches = 100_000;
    b.check(|| {
        let stats = Arc::new(Stats::new(true));
        let s = stats.clone();
        let writer = thread::spawn(move || {
            record(&s, true);
            record(&s, false);
        });
        record(&stats, true);
        let seen = stats.snapshot();
        assert!((1..=3).contains(&seen.messages) && (1..=3).contains(&seen.transfers), "{seen:?}");
        // Each counter on its own is exact; a snapshot taken mid-flight is
        // not a consistent cut across counters (loom finds transfers = 2
        // beside bytes_tx = 27), which the docs of `Stats` say.
        assert!(seen.errors <= 1 && [9, 18, 27].contains(&seen.bytes_tx), "{seen:?}");
        writer.join().unwrap();
        let end = stats.snapshot();
        assert_eq!((end.messages, end.transfers, end.bytes_tx, end.bytes_rx), (3, 3, 27, 27), "{end:?}");
        assert_eq!((end.errors, end.sync_immediate, end.latency.count()), (1, 3, 3), "{end:?}");
    });
}

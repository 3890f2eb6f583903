//! How late the lab's interrupt thread runs events: schedules events 2 ms
//! apart and prints the median and 99th percentile of (ran − due), in µs.

use std::sync::mpsc;
use wirespeed_lab::Scheduler;
use wirespeed_time::now;

fn main() {
    let s = Scheduler::start("lateness");
    let (tx, rx) = mpsc::channel();
    let n = 300u64;
    let base = now().add_ns(5_000_000);
    for i in 0..n {
        let at = base.add_ns(i * 2_000_000);
        let tx = tx.clone();
        s.schedule(at, move |ran| {
            let _ = tx.send(ran.ns_since(at));
        });
    }
    let mut late: Vec<u64> = (0..n).map(|_| rx.recv().unwrap_or(0)).collect();
    late.sort_unstable();
    println!(
        "lateness over {n} events: median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        late[late.len() / 2] as f64 / 1e3,
        late[late.len() * 99 / 100] as f64 / 1e3,
        late[late.len() - 1] as f64 / 1e3
    );
}

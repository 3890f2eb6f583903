//! Time for the wirespeed stack: a cheap monotonic clock, [`Deadline`]s,
//! spinning until a deadline with the CPU's pause hint, precise delays
//! ([`delay`], [`delay_until`]: spin below a threshold, sleep then spin above),
//! an opt-in [`realtime`] setup, and a scoped bound on CPU wake-up latency
//! ([`CpuLatencyRequest`]).
//!
//! Everything in wirespeed that waits — chip-select setup times, a transfer's
//! delay-after, the lab's notion of when a bit leaves the wire — is expressed
//! as a [`Deadline`] on the one monotonic clock read by [`now`]. Nothing here
//! changes the host's scheduling unless asked: [`realtime::setup`], a
//! [`realtime::FifoGuard`] (or [`realtime::run_at_fifo`]),
//! [`realtime::set_current_timer_slack_ns`] and a held
//! [`CpuLatencyRequest`] are the only ways, each called explicitly.
//!
//! ```
//! use wirespeed_time::{now, Deadline, spin_until};
//! let start = now();
//! let d = Deadline::after_ns(2_000);
//! spin_until(d);
//! assert!(now().ns_since(start) >= 2_000);
//! ```

mod clock;
mod cpu_latency;
mod deadline;
mod delay;
pub mod realtime;
mod sleep;
mod spin;
mod wake_margin;

pub use clock::{now, thread_cpu_ns, Instant};
pub use cpu_latency::CpuLatencyRequest;
pub use deadline::Deadline;
pub use delay::{delay, delay_ns, delay_until, set_spin_threshold, spin_threshold, BUILD_SPIN_THRESHOLD};
pub use spin::{spin_for_ns, spin_until};
pub use wake_margin::{forget_wake_margins, remeasure_wake_margins, wake_margin, WakeMargins};

//! Time for the wirespeed stack: a cheap monotonic clock, [`Deadline`]s, and
//! spinning until a deadline with the CPU's pause hint.
//!
//! Everything in wirespeed that waits — chip-select setup times, a transfer's
//! delay-after, the lab's notion of when a bit leaves the wire — is expressed
//! as a [`Deadline`] on the one monotonic clock read by [`now`]. Nothing here
//! changes the host's scheduling.
//!
//! ```
//! use wirespeed_time::{now, Deadline, spin_until};
//! let start = now();
//! let d = Deadline::after_ns(2_000);
//! spin_until(d);
//! assert!(now().ns_since(start) >= 2_000);
//! ```

mod clock;
mod deadline;
mod spin;

pub use clock::{now, Instant};
pub use deadline::Deadline;
pub use spin::{spin_for_ns, spin_until};

//! [`Deadline`]: "not before this instant", the unit of every wait in wirespeed.

use crate::clock::{now, Instant};

/// An instant that some event must not precede, e.g. "CS asserted + 50 ns
/// setup time". Checking a deadline that has already passed costs one clock
/// read, which is how a setup time that is already satisfied costs nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// A deadline at an absolute instant.
    pub const fn at(at: Instant) -> Deadline {
        Deadline { at }
    }

    /// A deadline `ns` nanoseconds from now.
    pub fn after_ns(ns: u64) -> Deadline {
        Deadline { at: now().add_ns(ns) }
    }

    /// A deadline `ns` nanoseconds after `from`.
    pub const fn after_ns_from(from: Instant, ns: u64) -> Deadline {
        Deadline { at: from.add_ns(ns) }
    }

    /// The instant of this deadline.
    pub const fn instant(self) -> Instant {
        self.at
    }

    /// Whether the deadline has passed at `t`.
    pub fn is_past_at(self, t: Instant) -> bool {
        t >= self.at
    }

    /// Whether the deadline has passed now.
    pub fn is_past(self) -> bool {
        self.is_past_at(now())
    }

    /// Nanoseconds left until the deadline, zero once it has passed.
    pub fn remaining_ns(self) -> u64 {
        self.at.ns_since(now())
    }

    /// The later of two deadlines.
    #[must_use]
    pub fn max(self, other: Deadline) -> Deadline {
        if other.at > self.at {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_and_future() {
        let t = now();
        assert!(Deadline::at(t).is_past());
        let d = Deadline::after_ns(1_000_000_000);
        assert!(!d.is_past());
        assert!(d.remaining_ns() > 900_000_000);
        assert_eq!(Deadline::at(t).max(d), d);
        assert_eq!(d.max(Deadline::at(t)), d);
    }
}

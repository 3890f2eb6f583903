//! Pins: the wires between lab blocks (a device's INT output to a GPIO input,
//! a GPIO output to a device's CS or CONVST input).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use wirespeed_time::Instant;

/// Something a pin drives: a GPIO chip's input line, a device's input.
pub trait PinSink: Send + Sync {
    /// The driven level changed to `high` at `at` (lab clock).
    fn drive(&self, high: bool, at: Instant);

    /// The driver has determined that the level will be `high` from `at`
    /// (a later instant) unless it drives the net before then; the change
    /// itself still comes through [`PinSink::drive`], from the lab's
    /// interrupt thread. A sink that software reads by polling (a GPIO
    /// input) shows the level from `at` on, whether that thread has run yet
    /// or not, as hardware would. Returns whether the sink still needs the
    /// change driven at its instant (it has to wake someone: a GPIO input
    /// with edge detection); the default ignores the announcement and does.
    fn expect(&self, _high: bool, _at: Instant) -> bool {
        true
    }
}

struct Inner {
    name: &'static str,
    level: AtomicBool,
    sinks: Mutex<Vec<Arc<dyn PinSink>>>,
}

/// One net with one driver and any number of [`PinSink`]s. Clones share it.
#[derive(Clone)]
pub struct Pin {
    inner: Arc<Inner>,
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pin").field("name", &self.inner.name).field("high", &self.is_high()).finish()
    }
}

impl Pin {
    /// A new net at `initial` level.
    pub fn new(name: &'static str, initial: bool) -> Pin {
        Pin { inner: Arc::new(Inner { name, level: AtomicBool::new(initial), sinks: Mutex::new(Vec::new()) }) }
    }

    /// Connects a sink; it is told the current level at once.
    pub fn connect(&self, sink: Arc<dyn PinSink>, at: Instant) {
        sink.drive(self.is_high(), at);
        self.inner.sinks.lock().unwrap_or_else(|e| e.into_inner()).push(sink);
    }

    /// Drives the net; sinks hear only real changes.
    pub fn set(&self, high: bool, at: Instant) {
        // A plain load first: most calls re-assert the level the net already has.
        if self.inner.level.load(Ordering::Acquire) != high && self.inner.level.swap(high, Ordering::AcqRel) != high {
            for s in self.inner.sinks.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                s.drive(high, at);
            }
        }
    }

    /// Announces that the net will be driven to `high` at `at` (see
    /// [`PinSink::expect`]); the driver still calls [`Pin::set`], at `at`
    /// if this returns true (a sink needs it then), or whenever it next
    /// runs otherwise.
    pub fn expect(&self, high: bool, at: Instant) -> bool {
        let mut needed = false;
        for s in self.inner.sinks.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            needed |= s.expect(high, at);
        }
        needed
    }

    /// The net's level now.
    pub fn is_high(&self) -> bool {
        self.inner.level.load(Ordering::Acquire)
    }

    /// The net's name.
    pub fn name(&self) -> &'static str {
        self.inner.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Count(AtomicUsize);
    impl PinSink for Count {
        fn drive(&self, _high: bool, _at: Instant) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn sinks_hear_changes_only() {
        let p = Pin::new("int", true);
        let c = Arc::new(Count(AtomicUsize::new(0)));
        p.connect(c.clone(), Instant::ZERO);
        p.set(true, Instant::ZERO);
        p.set(false, Instant::ZERO);
        p.set(false, Instant::ZERO);
        assert_eq!(c.0.load(Ordering::Relaxed), 2);
        assert!(!p.is_high());
    }
}

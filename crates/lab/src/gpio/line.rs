//! One line of the lab GPIO chip: its register bits (atomics, read and
//! written without a lock on the fast path) and its slow state (pulls,
//! external drive, edge detection, debounce) under a per-line mutex.

use super::{Drive, EdgeDetect, LineEvent, LineListener, LineSetup, Pull};
use crate::pin::Pin;
use crate::scheduler::Scheduler;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, Weak};
use wirespeed_time::Instant;

/// `mode`: the line is a push-pull output, so a write of the output
/// register is its pad level and needs no lock.
pub(super) const MODE_FAST_OUT: u8 = 0;
/// `mode`: anything else (input, open drain/source): writes take the slow path.
pub(super) const MODE_SLOW: u8 = 1;

pub(super) struct Slow {
    pub setup: LineSetup,
    /// What a lab device drives onto the line (`None`: nothing, high impedance).
    pub external: Option<bool>,
    /// Level last reported by edge detection (after debounce).
    pub debounced: bool,
    /// Bumped on every raw input change; a debounce timer that finds it
    /// changed was overtaken by a newer edge.
    pub generation: u64,
    /// When the pad level last changed (for a push-pull output, whose
    /// writes bypass this state: its last update): the debounce period runs
    /// from here (an update that keeps the level does not restart it).
    pub changed_at: Instant,
    pub listener: Option<LineListener>,
    /// A device's announced drive (level, from when): see `PinSink::expect`.
    pub expected: Option<(bool, Instant)>,
}

pub(super) struct Line {
    pub offset: u32,
    pub mode: AtomicU8,
    /// Output register bit.
    pub out: AtomicBool,
    /// Pad level now.
    pub level: AtomicBool,
    /// The pad as a net lab devices listen to; created on first use so that
    /// an unobserved line costs no clock read.
    pub pin: OnceLock<Pin>,
    pub slow: Mutex<Slow>,
    /// When `Slow::expected` takes effect, ns of the lab clock (0: none):
    /// a level read checks it without the lock.
    pub expected_at: AtomicU64,
}

impl Line {
    pub fn new(offset: u32) -> Line {
        Line {
            offset,
            mode: AtomicU8::new(MODE_SLOW),
            out: AtomicBool::new(false),
            level: AtomicBool::new(false),
            pin: OnceLock::new(),
            slow: Mutex::new(Slow {
                setup: LineSetup::default(),
                external: None,
                debounced: false,
                generation: 0,
                changed_at: Instant::ZERO,
                listener: None,
                expected: None,
            }),
            expected_at: AtomicU64::new(0),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Slow> {
        self.slow.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pad level the line's state implies. A floating input (no drive,
    /// no pull) keeps its last level, as a real pad's capacitance roughly does.
    fn resolve(&self, s: &Slow) -> bool {
        let out = self.out.load(Ordering::Relaxed);
        if s.setup.output {
            match s.setup.drive {
                Drive::PushPull => return out,
                Drive::OpenDrain if !out => return false,
                Drive::OpenSource if out => return true,
                _ => {}
            }
        }
        match (s.external, s.setup.pull) {
            (Some(v), _) => v,
            (None, Pull::Up) => true,
            (None, Pull::Down) => false,
            (None, Pull::None) => self.level.load(Ordering::Relaxed),
        }
    }

    /// Whether the chip itself drives the pad (edge detection sees only
    /// levels the chip does not drive, as with the kernel's input-only edges).
    fn is_input_like(s: &Slow) -> bool {
        !s.setup.output
    }

    /// Recomputes the pad level after a change of state, tells the pin, and
    /// runs edge detection. Called with the line's lock held.
    pub fn update(&self, s: &mut Slow, at: Instant, sched: &Scheduler, weak: &Weak<super::Shared>) {
        if self.mode.load(Ordering::Relaxed) == MODE_FAST_OUT {
            // Fast-path writes change the level without this lock: when it
            // last changed is unknown, and a debounce period starting now
            // (the line may be turning into an input) must not start before.
            s.changed_at = at;
        }
        let fast = s.setup.output && s.setup.drive == Drive::PushPull;
        self.mode.store(if fast { MODE_FAST_OUT } else { MODE_SLOW }, Ordering::Relaxed);
        let new = self.resolve(s);
        let old = self.level.swap(new, Ordering::AcqRel);
        if old != new {
            s.changed_at = at;
            if let Some(pin) = self.pin.get() {
                pin.set(new, at);
            }
        }
        if !Self::is_input_like(s) || s.setup.edge == EdgeDetect::None {
            s.debounced = new;
            return;
        }
        if old == new && s.debounced == new {
            return;
        }
        s.generation = s.generation.wrapping_add(1);
        if s.setup.debounce_ns == 0 {
            self.report(s, new, at);
            return;
        }
        let generation = s.generation;
        let offset = self.offset;
        let weak = weak.clone();
        let due = s.changed_at.add_ns(s.setup.debounce_ns);
        sched.schedule(due, move |_ran| {
            if let Some(shared) = weak.upgrade() {
                shared.debounce_expired(offset, generation, due);
            }
        });
    }

    /// A debounce timer expired: report the level if it has been stable.
    pub fn debounce_expired(&self, s: &mut Slow, generation: u64, due: Instant) {
        if s.generation != generation || !Self::is_input_like(s) {
            return;
        }
        let level = self.level.load(Ordering::Acquire);
        self.report(s, level, due);
    }

    fn report(&self, s: &mut Slow, level: bool, at: Instant) {
        if s.debounced == level {
            return;
        }
        s.debounced = level;
        let wanted = match s.setup.edge {
            EdgeDetect::None => false,
            EdgeDetect::Rising => level,
            EdgeDetect::Falling => !level,
            EdgeDetect::Both => true,
        };
        if wanted {
            if let Some(l) = &s.listener {
                l(LineEvent { offset: self.offset, rising: level, at });
            }
        }
    }
}

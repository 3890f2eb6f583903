//! The lab's GPIO chip block: N lines with pulls, push-pull or open
//! drain/source outputs, edge detection with debounce, and hot removal.
//!
//! Two faces, as every lab block:
//! - **Software face** (what a GPIO driver touches): [`GpioChip::configure`],
//!   and the register-like fast path [`GpioChip::set_output`] /
//!   [`GpioChip::value`], which are a few atomic loads and stores with no
//!   lock for a push-pull output (the bench toggles a line 10 million times).
//!   Edge events go to one [`LineListener`] per line, stamped with the lab
//!   clock: the instant passed by whoever drove the line, or, with debounce,
//!   the instant the level had been stable for the debounce period.
//! - **Board face** (the wiring to lab devices): a line's pad is a [`Pin`]
//!   ([`GpioChip::output_pin`]) that a device's CS, CONVST or RESET input can
//!   listen to, and a line's input is a [`PinSink`] ([`GpioChip::input_sink`])
//!   that a device's INT or BUSY `Pin` connects to.
//!
//! [`GpioChip::remove`] unplugs the chip: it first runs the callbacks
//! registered with [`GpioChip::on_remove`] (the stack's glue, which waits
//! there until software has let go), then every later software access fails
//! with [`LabGpioError::Removed`] and is counted
//! ([`GpioChip::accesses_after_removal`]) so tests can prove none happened.
//!
//! ```
//! use wirespeed_lab::{Lab, LabConfig, gpio::{GpioChipConfig, LineSetup}};
//! let lab = Lab::new(LabConfig::default());
//! let chip = lab.gpio_chip(GpioChipConfig::default());
//! chip.configure(3, &LineSetup::output(true), wirespeed_time::now()).unwrap();
//! let pad = chip.output_pin(3);
//! chip.set_output(3, false).unwrap();
//! assert!(!pad.is_high());
//! ```

mod config;
mod line;

use crate::lab::Lab;
use crate::pin::{Pin, PinSink};
use crate::scheduler::Scheduler;
pub use config::{GpioChipConfig, GpioConfigError};
use line::{Line, MODE_FAST_OUT};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use wirespeed_time::{now, Instant};

/// Receives a line's edge events (set with [`GpioChip::set_listener`]).
pub type LineListener = Arc<dyn Fn(LineEvent) + Send + Sync>;

/// Bias of a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pull {
    /// No bias: an undriven input floats (keeps its last level).
    #[default]
    None,
    /// Pull-up: an undriven line reads high.
    Up,
    /// Pull-down: an undriven line reads low.
    Down,
}

/// Output stage of a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Drive {
    /// Drives both levels.
    #[default]
    PushPull,
    /// Drives low only; high releases the line (to its pull or a device).
    OpenDrain,
    /// Drives high only; low releases the line.
    OpenSource,
}

/// Which pad-level changes of an input raise an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EdgeDetect {
    /// None.
    #[default]
    None,
    /// Low to high.
    Rising,
    /// High to low.
    Falling,
    /// Both.
    Both,
}

/// Configuration of one line, as a GPIO driver programs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineSetup {
    /// Output (true) or input.
    pub output: bool,
    /// Output register value (physical level; ignored for inputs).
    pub value: bool,
    /// Bias.
    pub pull: Pull,
    /// Output stage.
    pub drive: Drive,
    /// Edge detection (inputs only; ignored for outputs).
    pub edge: EdgeDetect,
    /// A level must be stable this long before its edge is reported; 0: no debounce.
    pub debounce_ns: u64,
}

impl LineSetup {
    /// A push-pull output at `value`.
    pub fn output(value: bool) -> LineSetup {
        LineSetup { output: true, value, ..LineSetup::default() }
    }

    /// An input with `pull` and edge detection `edge`.
    pub fn input(pull: Pull, edge: EdgeDetect) -> LineSetup {
        LineSetup { pull, edge, ..LineSetup::default() }
    }
}

/// An edge seen by a line's edge detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineEvent {
    /// The line.
    pub offset: u32,
    /// Rising (true) or falling edge.
    pub rising: bool,
    /// When, on the lab clock.
    pub at: Instant,
}

/// What went wrong on a software access to the chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabGpioError {
    /// The chip was removed (unplugged).
    Removed,
    /// No such line.
    OffsetOutOfRange {
        /// The offset asked for.
        offset: u32,
        /// The chip's line count (valid offsets are below it).
        lines: u32,
    },
}

impl fmt::Display for LabGpioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabGpioError::Removed => write!(f, "the GPIO chip was removed"),
            LabGpioError::OffsetOutOfRange { offset, lines } => {
                write!(f, "line offset {offset} out of range: the chip has {lines} lines (0..{lines})")
            }
        }
    }
}

impl std::error::Error for LabGpioError {}

type RemoveCallback = Box<dyn FnOnce() + Send>;

/// Names one [`GpioChip::on_remove`] registration, to withdraw it with
/// [`GpioChip::forget_on_remove`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoveCallbackId(u64);

pub(crate) struct Shared {
    config: GpioChipConfig,
    id: u64,
    lines: Box<[Line]>,
    removed: AtomicBool,
    after_removal: AtomicU64,
    on_remove: Mutex<Vec<(RemoveCallbackId, RemoveCallback)>>,
    next_callback: AtomicU64,
    /// Held by a removal for its whole run: a concurrent one waits for it.
    removing: Mutex<()>,
    scheduler: Scheduler,
    weak: Weak<Shared>,
}

impl Shared {
    fn debounce_expired(&self, offset: u32, generation: u64, due: Instant) {
        if self.removed.load(Ordering::Acquire) {
            return;
        }
        let line = &self.lines[offset as usize];
        let mut s = line.lock();
        line.debounce_expired(&mut s, generation, due);
    }
}

/// Handle to one GPIO chip block. Clones share the block.
#[derive(Clone)]
pub struct GpioChip {
    shared: Arc<Shared>,
}

impl fmt::Debug for GpioChip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpioChip")
            .field("name", &self.shared.config.name)
            .field("lines", &self.shared.config.lines)
            .field("removed", &self.is_removed())
            .finish()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl GpioChip {
    /// A new chip on `lab` (see [`Lab::gpio_chip`]).
    ///
    /// # Panics
    /// If no chip can have `config` (see [`GpioChipConfig::validate`]);
    /// [`try_new`](GpioChip::try_new) returns that as an error.
    pub fn new(lab: &Lab, config: GpioChipConfig) -> GpioChip {
        GpioChip::try_new(lab, config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A new chip on `lab`, or why no chip can have `config`.
    pub fn try_new(lab: &Lab, config: GpioChipConfig) -> Result<GpioChip, GpioConfigError> {
        config.validate()?;
        let n = config.lines;
        let shared = Arc::new_cyclic(|weak| Shared {
            config,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            lines: (0..n).map(Line::new).collect(),
            removed: AtomicBool::new(false),
            after_removal: AtomicU64::new(0),
            on_remove: Mutex::new(Vec::new()),
            next_callback: AtomicU64::new(0),
            removing: Mutex::new(()),
            scheduler: lab.scheduler().clone(),
            weak: weak.clone(),
        });
        Ok(GpioChip { shared })
    }

    /// A number unique to this block in the process (clones share it).
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The chip's name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// The chip's label.
    pub fn label(&self) -> &str {
        &self.shared.config.label
    }

    /// Number of lines.
    pub fn num_lines(&self) -> u32 {
        self.shared.config.lines
    }

    #[inline]
    fn line(&self, offset: u32) -> Result<&Line, LabGpioError> {
        if self.shared.removed.load(Ordering::Relaxed) {
            return Err(self.removed_access());
        }
        self.shared
            .lines
            .get(offset as usize)
            .ok_or(LabGpioError::OffsetOutOfRange { offset, lines: self.shared.config.lines })
    }

    #[cold]
    fn removed_access(&self) -> LabGpioError {
        self.shared.after_removal.fetch_add(1, Ordering::Relaxed);
        LabGpioError::Removed
    }

    /// Software face: programs a line (direction, output value, pull, drive,
    /// edge detection, debounce). Edge detection applies to inputs only.
    pub fn configure(&self, offset: u32, setup: &LineSetup, at: Instant) -> Result<(), LabGpioError> {
        let line = self.line(offset)?;
        let mut s = line.lock();
        line.out.store(setup.value, Ordering::Relaxed);
        s.setup = *setup;
        line.update(&mut s, at, &self.shared.scheduler, &self.shared.weak);
        if let (Some((_, due)), EdgeDetect::Rising | EdgeDetect::Falling | EdgeDetect::Both) = (s.expected, setup.edge)
        {
            // Edge detection now watches a change announced without it:
            // report it on time.
            let weak = self.shared.weak.clone();
            self.shared.scheduler.schedule(due, move |_| {
                if let Some(shared) = weak.upgrade() {
                    apply_expected(&shared, offset);
                }
            });
        }
        Ok(())
    }

    /// Software face: the line's current configuration.
    pub fn setup(&self, offset: u32) -> Result<LineSetup, LabGpioError> {
        let line = self.line(offset)?;
        let mut s = line.lock().setup;
        s.value = line.out.load(Ordering::Relaxed);
        Ok(s)
    }

    /// Software face, fast path: writes the line's output register bit
    /// (physical level). For a push-pull output this is one load of the
    /// chip's presence, one of the line's mode and a store, with no lock;
    /// the clock is read only if a device listens to the pad.
    /// On an input the bit is stored and takes effect when it becomes an output.
    #[inline]
    pub fn set_output(&self, offset: u32, high: bool) -> Result<(), LabGpioError> {
        let line = self.line(offset)?;
        if line.mode.load(Ordering::Relaxed) == MODE_FAST_OUT {
            line.out.store(high, Ordering::Relaxed);
            if line.level.load(Ordering::Relaxed) != high {
                line.level.store(high, Ordering::Release);
                if let Some(pin) = line.pin.get() {
                    pin.set(high, now());
                }
            }
            return Ok(());
        }
        self.set_output_slow(line, high, now());
        Ok(())
    }

    /// As [`GpioChip::set_output`], stamping any resulting edge with `at`.
    pub fn set_output_at(&self, offset: u32, high: bool, at: Instant) -> Result<(), LabGpioError> {
        let line = self.line(offset)?;
        self.set_output_slow(line, high, at);
        Ok(())
    }

    #[cold]
    fn set_output_slow(&self, line: &Line, high: bool, at: Instant) {
        let mut s = line.lock();
        line.out.store(high, Ordering::Relaxed);
        line.update(&mut s, at, &self.shared.scheduler, &self.shared.weak);
    }

    /// Software face, fast path: the pad level of a line (inputs and outputs).
    #[inline]
    pub fn value(&self, offset: u32) -> Result<bool, LabGpioError> {
        let line = self.line(offset)?;
        let due = line.expected_at.load(Ordering::Acquire);
        if due != 0 && now().as_ns() >= due {
            apply_expected(&self.shared, offset);
        }
        Ok(line.level.load(Ordering::Acquire))
    }

    /// Software face: sets the edge listener of a line (replacing any).
    pub fn set_listener(&self, offset: u32, listener: Option<LineListener>) -> Result<(), LabGpioError> {
        let line = self.line(offset)?;
        line.lock().listener = listener;
        Ok(())
    }

    /// Board face: the pad of line `offset` as a net (devices `connect` to it).
    ///
    /// # Panics
    /// If `offset` is not below [`GpioChip::num_lines`] (a wiring error in a test bench).
    pub fn output_pin(&self, offset: u32) -> Pin {
        let line = &self.shared.lines[offset as usize];
        line.pin
            .get_or_init(|| {
                let _s = line.lock();
                Pin::new("gpio", line.level.load(Ordering::Acquire))
            })
            .clone()
    }

    /// Board face: the input of line `offset`, for a device's output `Pin`
    /// (INT, BUSY) to `connect` to.
    ///
    /// # Panics
    /// If `offset` is not below [`GpioChip::num_lines`] (a wiring error in a test bench).
    pub fn input_sink(&self, offset: u32) -> Arc<dyn PinSink> {
        assert!(offset < self.num_lines(), "{} has {} lines", self.name(), self.num_lines());
        Arc::new(InputSink { chip: Arc::downgrade(&self.shared), offset })
    }

    /// Backdoor: drive line `offset` from outside (`Some(level)`) or stop
    /// driving it (`None`: high impedance, the pull decides).
    ///
    /// # Panics
    /// If `offset` is not below [`GpioChip::num_lines`].
    pub fn drive_external(&self, offset: u32, level: Option<bool>, at: Instant) {
        drive_external(&self.shared, offset, level, at);
    }

    /// Backdoor: registers `f` to run when the chip is removed, before it
    /// goes away (the stack's glue waits there for in-flight accesses).
    /// Runs `f` at once if the chip is already removed.
    pub fn on_remove(&self, f: impl FnOnce() + Send + 'static) -> RemoveCallbackId {
        let id = RemoveCallbackId(self.shared.next_callback.fetch_add(1, Ordering::Relaxed));
        let mut cbs = self.shared.on_remove.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_removed() {
            drop(cbs);
            f();
        } else {
            cbs.push((id, Box::new(f)));
        }
        id
    }

    /// Backdoor: withdraws a callback registered with
    /// [`GpioChip::on_remove`] that has not run (a client that let go of the
    /// chip); a callback already run or withdrawn is not affected.
    pub fn forget_on_remove(&self, id: RemoveCallbackId) {
        self.shared.on_remove.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != id);
    }

    /// Backdoor: callbacks registered with [`GpioChip::on_remove`] that
    /// have neither run nor been withdrawn.
    pub fn remove_callbacks(&self) -> usize {
        self.shared.on_remove.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Backdoor: unplugs the chip. Runs the [`GpioChip::on_remove`]
    /// callbacks, then marks the chip gone: later software accesses fail with
    /// [`LabGpioError::Removed`] and are counted. Idempotent; a call made
    /// while another runs returns once that one has finished. (A callback
    /// must not call `remove` itself.)
    pub fn remove(&self) {
        let _one_at_a_time = self.shared.removing.lock().unwrap_or_else(|e| e.into_inner());
        let cbs = std::mem::take(&mut *self.shared.on_remove.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, cb) in cbs {
            cb();
        }
        let mut guard = self.shared.on_remove.lock().unwrap_or_else(|e| e.into_inner());
        if !self.shared.removed.swap(true, Ordering::AcqRel) {
            for line in self.shared.lines.iter() {
                line.lock().listener = None;
            }
        }
        // Callbacks registered while the first ones ran.
        let late = std::mem::take(&mut *guard);
        drop(guard);
        for (_, cb) in late {
            cb();
        }
    }

    /// Backdoor: whether the chip was removed.
    pub fn is_removed(&self) -> bool {
        self.shared.removed.load(Ordering::Acquire)
    }

    /// Backdoor: software accesses attempted after removal (a correct stack
    /// makes none: it fails them before they reach the chip).
    pub fn accesses_after_removal(&self) -> u64 {
        self.shared.after_removal.load(Ordering::Relaxed)
    }
}

fn drive_external(shared: &Shared, offset: u32, level: Option<bool>, at: Instant) {
    let line = &shared.lines[offset as usize];
    let mut s = line.lock();
    // A real drive supersedes an announced one.
    if s.expected.take().is_some() {
        line.expected_at.store(0, Ordering::Release);
    }
    if s.external != level {
        s.external = level;
        line.update(&mut s, at, &shared.scheduler, &shared.weak);
    }
}

/// Applies line `offset`'s announced drive if its instant has come
/// (re-checked under the lock: a real drive may have superseded it).
#[cold]
fn apply_expected(shared: &Shared, offset: u32) {
    let line = &shared.lines[offset as usize];
    let mut s = line.lock();
    if let Some((high, at)) = s.expected {
        if now() >= at {
            s.expected = None;
            line.expected_at.store(0, Ordering::Release);
            if s.external != Some(high) {
                s.external = Some(high);
                line.update(&mut s, at, &shared.scheduler, &shared.weak);
            }
        }
    }
}

/// A line's input, as a sink for a device's output pin.
struct InputSink {
    chip: Weak<Shared>,
    offset: u32,
}

impl PinSink for InputSink {
    fn drive(&self, high: bool, at: Instant) {
        if let Some(shared) = self.chip.upgrade() {
            drive_external(&shared, self.offset, Some(high), at);
        }
    }

    fn expect(&self, high: bool, at: Instant) -> bool {
        let Some(shared) = self.chip.upgrade() else { return false };
        let line = &shared.lines[self.offset as usize];
        let mut s = line.lock();
        s.expected = Some((high, at));
        line.expected_at.store(at.as_ns().max(1), Ordering::Release);
        // Without edge detection nobody waits for the change: level reads
        // apply it. With it, the edge must be reported on time.
        s.setup.output || s.setup.edge != EdgeDetect::None
    }
}

#[cfg(test)]
mod tests;

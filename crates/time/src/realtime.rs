//! Opt-in realtime setup: make the host wake this process on time.
//!
//! Seed 004: at SCHED_FIFO a `nanosleep(1 µs)` costs 2–13 µs instead of
//! 53–82 µs, and 100 µs sleeps become accurate to a few percent. But a
//! library must not change its host's scheduling on its own, and realtime
//! priority is never *required*: so nothing here runs unless asked, every step
//! is tried independently, and the [`RealtimeReport`] says what worked and,
//! for what did not, why. Its `Display` prints one informational line per step
//! that could not be taken (nothing when all went well), which is what a
//! command-line tool shows its user.
//!
//! ```no_run
//! use wirespeed_time::realtime::{self, FifoPriority, RealtimeOptions};
//!
//! let opts = RealtimeOptions::all(FifoPriority::new(10).unwrap());
//! let report = realtime::setup(&opts);
//! eprint!("{report}"); // e.g. "realtime: could not lock memory (mlockall): ..."
//! ```
//!
//! Steps (each optional):
//! * **SCHED_FIFO** at a priority, for the calling thread and the threads it
//!   creates afterwards (they inherit it);
//! * **`mlockall(MCL_CURRENT | MCL_FUTURE)`**: no page faults on the hot path;
//! * **timer slack** of 1 ns (`PR_SET_TIMERSLACK`) for the calling thread and
//!   its future threads (a normal thread is woken up to 50 µs late otherwise);
//! * **`/dev/cpu_dma_latency` = 0**: keeps CPUs out of idle states that are
//!   slow to leave (a [`CpuLatencyRequest`], held until the process exits);
//! * **CPU affinity** to a list of CPUs.
//!
//! For running one piece of code at SCHED_FIFO without touching anything else
//! (a benchmark's realtime pass), use [`FifoGuard`] or [`run_at_fifo`], which
//! change only the calling thread and restore it afterwards.

use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::str::FromStr;
use std::sync::Mutex;

use crate::cpu_latency::CpuLatencyRequest;
use crate::wake_margin::forget_wake_margins;

/// A SCHED_FIFO priority, 1 (lowest) to 99 (highest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FifoPriority(u8);

impl FifoPriority {
    /// The lowest realtime priority (what `chrt --fifo 1` gives): above every
    /// normal thread, below every other realtime thread, e.g. the kernel's
    /// threaded interrupt handlers (50).
    pub const MIN: FifoPriority = FifoPriority(1);
    /// The highest.
    pub const MAX: FifoPriority = FifoPriority(99);

    /// A priority in `1..=99`.
    pub fn new(priority: u32) -> Result<FifoPriority, RealtimeError> {
        match u8::try_from(priority) {
            Ok(p @ 1..=99) => Ok(FifoPriority(p)),
            _ => Err(RealtimeError::Priority(priority)),
        }
    }

    /// The priority as a number.
    pub fn get(self) -> u32 {
        u32::from(self.0)
    }
}

impl Default for FifoPriority {
    /// 10: above ordinary realtime helpers at 1, below interrupt threads.
    fn default() -> FifoPriority {
        FifoPriority(10)
    }
}

impl fmt::Display for FifoPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for FifoPriority {
    type Err = RealtimeError;
    fn from_str(s: &str) -> Result<FifoPriority, RealtimeError> {
        let n: u32 = s.trim().parse().map_err(|_| RealtimeError::PriorityText(s.to_owned()))?;
        FifoPriority::new(n)
    }
}

/// The largest CPU number a [`CpuList`] may hold (exclusive): `CPU_SETSIZE`.
pub const MAX_CPUS: usize = 1024;

/// A set of CPU numbers, e.g. parsed from `"0,2-3"`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// A list of CPU numbers, each below [`MAX_CPUS`]; duplicates are merged.
    /// An empty list is an error (it would leave the thread nowhere to run).
    pub fn new(cpus: &[usize]) -> Result<CpuList, RealtimeError> {
        if cpus.is_empty() {
            return Err(RealtimeError::EmptyCpuList);
        }
        if let Some(&c) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(RealtimeError::Cpu(c));
        }
        let mut v = cpus.to_vec();
        v.sort_unstable();
        v.dedup();
        Ok(CpuList(v))
    }

    /// The CPU numbers, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl FromStr for CpuList {
    type Err = RealtimeError;
    /// Parses the kernel's list format: `"3"`, `"0,2"`, `"0-3,6"`.
    fn from_str(s: &str) -> Result<CpuList, RealtimeError> {
        let bad = || RealtimeError::CpuListText(s.to_owned());
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => {
                    (a.trim().parse::<usize>().map_err(|_| bad())?, b.trim().parse::<usize>().map_err(|_| bad())?)
                }
                None => {
                    let c = part.parse::<usize>().map_err(|_| bad())?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(bad());
            }
            if hi >= MAX_CPUS {
                return Err(RealtimeError::Cpu(hi));
            }
            cpus.extend(lo..=hi);
        }
        CpuList::new(&cpus)
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&s.join(","))
    }
}

/// Bad input to this module; nothing was changed.
#[derive(Debug)]
pub enum RealtimeError {
    /// A SCHED_FIFO priority outside 1..=99.
    Priority(u32),
    /// A priority that is not a number.
    PriorityText(String),
    /// A CPU number at or above [`MAX_CPUS`].
    Cpu(usize),
    /// A CPU list that does not parse.
    CpuListText(String),
    /// An empty CPU list.
    EmptyCpuList,
    /// The kernel refused to change the calling thread's scheduling.
    Sched {
        /// The priority asked for.
        priority: FifoPriority,
        /// The kernel's answer.
        source: io::Error,
    },
}

impl fmt::Display for RealtimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RealtimeError::Priority(p) => write!(f, "SCHED_FIFO priority {p} is out of range; allowed: 1 to 99"),
            RealtimeError::PriorityText(s) => write!(f, "SCHED_FIFO priority {s:?} is not a number; allowed: 1 to 99"),
            RealtimeError::Cpu(c) => write!(f, "CPU {c} is out of range; allowed: 0 to {}", MAX_CPUS - 1),
            RealtimeError::CpuListText(s) => {
                write!(f, "CPU list {s:?} does not parse; expected numbers and ranges like \"0,2-3\"")
            }
            RealtimeError::EmptyCpuList => write!(f, "the CPU list is empty; give at least one CPU"),
            RealtimeError::Sched { priority, source } => {
                write!(f, "could not set SCHED_FIFO priority {priority}: {}", explain(source))
            }
        }
    }
}

impl std::error::Error for RealtimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RealtimeError::Sched { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`setup`] should try. `Default` asks for nothing;
/// [`RealtimeOptions::all`] asks for everything except CPU affinity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RealtimeOptions {
    /// Switch the calling thread (and threads it creates later) to SCHED_FIFO
    /// at this priority.
    pub fifo: Option<FifoPriority>,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)`.
    pub lock_memory: bool,
    /// Set the calling thread's timer slack to 1 ns.
    pub timer_slack: bool,
    /// Write 0 to `/dev/cpu_dma_latency` and hold it open for the process's life.
    pub cpu_dma_latency: bool,
    /// Restrict the calling thread (and threads it creates later) to these CPUs.
    pub cpu_affinity: Option<CpuList>,
}

impl RealtimeOptions {
    /// Every step but CPU affinity, at the given SCHED_FIFO priority.
    pub fn all(priority: FifoPriority) -> RealtimeOptions {
        RealtimeOptions {
            fifo: Some(priority),
            lock_memory: true,
            timer_slack: true,
            cpu_dma_latency: true,
            cpu_affinity: None,
        }
    }
}

/// How one step went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Done.
    Ok,
    /// Not asked for.
    Skipped,
    /// Tried and refused; the reason includes the system's error text.
    Failed {
        /// Why, e.g. "Operation not permitted (os error 1); needs root or CAP_SYS_NICE".
        reason: String,
    },
}

impl StepOutcome {
    /// Whether the step failed.
    pub fn failed(&self) -> bool {
        matches!(self, StepOutcome::Failed { .. })
    }

    fn from_io(r: io::Result<()>) -> StepOutcome {
        match r {
            Ok(()) => StepOutcome::Ok,
            Err(e) => StepOutcome::Failed { reason: explain(&e) },
        }
    }
}

impl fmt::Display for StepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepOutcome::Ok => f.write_str("ok"),
            StepOutcome::Skipped => f.write_str("skipped"),
            StepOutcome::Failed { reason } => write!(f, "failed: {reason}"),
        }
    }
}

/// The outcome of each step of [`setup`]. `Display` prints one line per step
/// that failed, prefixed `realtime:`, and nothing if none did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealtimeReport {
    /// SCHED_FIFO at the priority asked.
    pub fifo: StepOutcome,
    /// `mlockall`.
    pub lock_memory: StepOutcome,
    /// Timer slack 1 ns.
    pub timer_slack: StepOutcome,
    /// `/dev/cpu_dma_latency` = 0.
    pub cpu_dma_latency: StepOutcome,
    /// CPU affinity.
    pub cpu_affinity: StepOutcome,
}

impl RealtimeReport {
    /// (what the step does, its outcome) for every step, in order.
    pub fn steps(&self) -> [(&'static str, &StepOutcome); 5] {
        [
            ("set SCHED_FIFO priority", &self.fifo),
            ("lock memory (mlockall)", &self.lock_memory),
            ("set timer slack to 1 ns", &self.timer_slack),
            ("hold /dev/cpu_dma_latency at 0", &self.cpu_dma_latency),
            ("set CPU affinity", &self.cpu_affinity),
        ]
    }

    /// Whether every step asked for was taken.
    pub fn all_ok(&self) -> bool {
        self.steps().iter().all(|(_, o)| !o.failed())
    }
}

impl fmt::Display for RealtimeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (what, outcome) in self.steps() {
            if let StepOutcome::Failed { reason } = outcome {
                writeln!(f, "realtime: could not {what}: {reason}; continuing without it")?;
            }
        }
        Ok(())
    }
}

/// Tries each step `options` asks for and reports how each went. Nothing is
/// required: a refused step does not stop the others. Changing the
/// scheduling policy or the timer slack makes the delays re-measure their
/// wake-up margins.
pub fn setup(options: &RealtimeOptions) -> RealtimeReport {
    let fifo = match options.fifo {
        None => StepOutcome::Skipped,
        Some(p) => StepOutcome::from_io(set_thread_policy(libc::SCHED_FIFO, p.get() as i32)),
    };
    let lock_memory = if options.lock_memory {
        // SAFETY: mlockall takes flags only.
        StepOutcome::from_io(check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }))
    } else {
        StepOutcome::Skipped
    };
    let timer_slack = if options.timer_slack {
        // 1 ns: 0 would mean "back to the default".
        StepOutcome::from_io(set_current_timer_slack_ns(1))
    } else {
        StepOutcome::Skipped
    };
    let cpu_dma_latency =
        if options.cpu_dma_latency { StepOutcome::from_io(hold_cpu_dma_latency_zero()) } else { StepOutcome::Skipped };
    let cpu_affinity = match &options.cpu_affinity {
        None => StepOutcome::Skipped,
        Some(list) => StepOutcome::from_io(pin_current_thread(list)),
    };
    if fifo == StepOutcome::Ok || timer_slack == StepOutcome::Ok {
        forget_wake_margins();
    }
    RealtimeReport { fifo, lock_memory, timer_slack, cpu_dma_latency, cpu_affinity }
}

/// The request [`setup`] takes: it lives until the process exits.
static CPU_DMA_LATENCY: Mutex<Option<CpuLatencyRequest>> = Mutex::new(None);

fn hold_cpu_dma_latency_zero() -> io::Result<()> {
    let mut held = CPU_DMA_LATENCY.lock().unwrap_or_else(|e| e.into_inner());
    if held.is_none() {
        *held = Some(CpuLatencyRequest::hold(0)?);
    }
    Ok(())
}

/// The CPUs the calling thread may run on (`sched_getaffinity`).
pub fn current_thread_cpus() -> io::Result<CpuList> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its
    // size into it, and CPU_ISSET reads inside it for numbers below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        check(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set))?;
        let cpus: Vec<usize> = (0..MAX_CPUS).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
        CpuList::new(&cpus).map_err(|e| io::Error::other(e.to_string()))
    }
}

/// Lets the calling thread run only on `list`'s CPUs (`sched_setaffinity`).
pub fn pin_current_thread(list: &CpuList) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it and
    // every number was checked against CPU_SETSIZE when the list was built.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in list.cpus() {
            libc::CPU_SET(c, &mut set);
        }
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set))
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The system's error text plus what usually fixes it.
pub(crate) fn explain(e: &io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => "; needs root, CAP_SYS_NICE / CAP_IPC_LOCK or a higher RLIMIT_RTPRIO / RLIMIT_MEMLOCK",
        Some(libc::EACCES) => "; needs write access to the device (usually root)",
        Some(libc::ENOMEM) => "; RLIMIT_MEMLOCK is too low (see `ulimit -l`)",
        Some(libc::ENOENT) => "; the kernel does not offer it",
        Some(libc::EINVAL) => "; not supported or invalid here (e.g. a CPU that is offline)",
        _ => "",
    };
    format!("{e}{hint}")
}

/// The calling thread's scheduling policy and priority.
fn thread_policy() -> io::Result<(libc::c_int, libc::c_int)> {
    // SAFETY: plain queries about the calling thread into a valid struct.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        if policy == -1 {
            return Err(io::Error::last_os_error());
        }
        let mut param: libc::sched_param = std::mem::zeroed();
        check(libc::sched_getparam(0, &mut param))?;
        Ok((policy, param.sched_priority))
    }
}

fn set_thread_policy(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    // SAFETY: zeroed sched_param is valid; pid 0 is the calling thread.
    unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        param.sched_priority = priority;
        check(libc::sched_setscheduler(0, policy, &param))
    }
}

/// Runs the calling thread at SCHED_FIFO while it lives and restores its
/// previous policy and priority (its `SCHED_RESET_ON_FORK` flag included) on
/// drop. Touches nothing else: not the other threads, not memory locking, and
/// the timer slack is the thread's own again after the drop (recent kernels
/// hold a realtime thread's slack at 0 and, when it turns normal again, give
/// it the default slack rather than the one it had, as measured on 6.18: 5 ms
/// before, 0 under FIFO, 50 µs after; the guard sets it back). Not `Send`: it belongs to the thread it changed.
#[derive(Debug)]
pub struct FifoGuard {
    previous: (libc::c_int, libc::c_int),
    /// The thread's timer slack before (ns); 0 if it had none (realtime).
    previous_slack_ns: u64,
    _not_send: PhantomData<*const ()>,
}

impl FifoGuard {
    /// Switches the calling thread to SCHED_FIFO at `priority`; on error
    /// nothing was changed.
    pub fn enter(priority: FifoPriority) -> Result<FifoGuard, RealtimeError> {
        let err = |source| RealtimeError::Sched { priority, source };
        let previous = thread_policy().map_err(err)?;
        let previous_slack_ns = current_timer_slack_ns();
        // Keep SCHED_RESET_ON_FORK as it was: threads forked meanwhile get
        // what they would have got without the guard.
        let reset_on_fork = previous.0 & libc::SCHED_RESET_ON_FORK;
        set_thread_policy(libc::SCHED_FIFO | reset_on_fork, priority.get() as i32).map_err(err)?;
        Ok(FifoGuard { previous, previous_slack_ns, _not_send: PhantomData })
    }
}

impl Drop for FifoGuard {
    fn drop(&mut self) {
        // Lowering one's own priority is always allowed; the policy as
        // `sched_getscheduler` gave it, SCHED_RESET_ON_FORK included.
        let (policy, prio) = self.previous;
        let _ = set_thread_policy(policy, prio);
        // Back at a normal policy the kernel may have reset the slack to the
        // thread's default; a realtime thread had none (0: nothing to set).
        // Setting the slack it still has is harmless: no read to compare first.
        if self.previous_slack_ns > 0 {
            let _ = set_current_timer_slack_ns(self.previous_slack_ns);
        }
    }
}

/// Runs `f` on the calling thread at SCHED_FIFO `priority`, then restores the
/// thread's previous policy. Fails, without running `f`, if the kernel
/// refuses (e.g. without root or CAP_SYS_NICE).
pub fn run_at_fifo<R>(priority: FifoPriority, f: impl FnOnce() -> R) -> Result<R, RealtimeError> {
    let _guard = FifoGuard::enter(priority)?;
    Ok(f())
}

/// Whether the calling thread runs under a realtime policy (FIFO or RR).
pub fn current_thread_is_realtime() -> bool {
    matches!(thread_policy(), Ok((p, _)) if matches!(p & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO | libc::SCHED_RR))
}

/// Sets the calling thread's timer slack to `ns` nanoseconds
/// (`PR_SET_TIMERSLACK`; 0 means the thread's default slack again). Only
/// the calling thread changes. Recent kernels (6.18 here) keep a realtime
/// thread's slack at 0 whatever is set.
pub fn set_current_timer_slack_ns(ns: u64) -> std::io::Result<()> {
    let slack = libc::c_ulong::try_from(ns).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: PR_SET_TIMERSLACK takes the slack as a plain value and touches
    // no memory of ours.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack, 0, 0, 0) })
}

/// The calling thread's timer slack in nanoseconds (`PR_GET_TIMERSLACK`).
pub fn current_timer_slack_ns() -> u64 {
    // The kernel returns the slack as a long; glibc's prctl() cuts it to an
    // int, which turns 2^31 ns (2.1 s) and more negative: ask directly.
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack.
    let r = unsafe { libc::syscall(libc::SYS_prctl, libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(r).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_asks_for_nothing_and_changes_nothing() {
        let before = (thread_policy().unwrap(), current_timer_slack_ns());
        let r = setup(&RealtimeOptions::default());
        assert!(r.steps().iter().all(|(_, o)| **o == StepOutcome::Skipped));
        assert!(r.all_ok());
        assert_eq!(r.to_string(), "");
        assert_eq!((thread_policy().unwrap(), current_timer_slack_ns()), before);
    }

    #[test]
    fn priorities_are_checked() {
        assert!(FifoPriority::new(0).is_err());
        assert!(FifoPriority::new(100).is_err());
        assert_eq!(FifoPriority::new(1).unwrap(), FifoPriority::MIN);
        assert_eq!("99".parse::<FifoPriority>().unwrap(), FifoPriority::MAX);
        let e = "x".parse::<FifoPriority>().unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
        let e = FifoPriority::new(150).unwrap_err();
        assert!(e.to_string().contains("150") && e.to_string().contains("1 to 99"), "{e}");
    }

    #[test]
    fn cpu_lists_parse() {
        let l: CpuList = "0-2, 5,1".parse().unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 5]);
        assert_eq!(l.to_string(), "0,1,2,5");
        assert!("".parse::<CpuList>().is_err());
        assert!("3-1".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!(matches!("0-5000".parse::<CpuList>(), Err(RealtimeError::Cpu(5000))));
        assert!(matches!(CpuList::new(&[]), Err(RealtimeError::EmptyCpuList)));
    }

    #[test]
    fn failures_print_one_line_each() {
        let r = RealtimeReport {
            fifo: StepOutcome::Failed { reason: "Operation not permitted (os error 1)".into() },
            lock_memory: StepOutcome::Ok,
            timer_slack: StepOutcome::Skipped,
            cpu_dma_latency: StepOutcome::Failed { reason: "No such file or directory (os error 2)".into() },
            cpu_affinity: StepOutcome::Skipped,
        };
        let s = r.to_string();
        assert_eq!(s.lines().count(), 2, "{s}");
        assert!(s.contains("SCHED_FIFO") && s.contains("os error 1"));
        assert!(s.contains("cpu_dma_latency") && s.contains("os error 2"));
        assert!(!r.all_ok());
    }

    #[test]
    fn fifo_guard_restores_the_thread() {
        // On a separate thread so the test harness's threads are untouched.
        std::thread::spawn(|| {
            let before = thread_policy().unwrap();
            match FifoGuard::enter(FifoPriority::MIN) {
                Ok(g) => {
                    assert!(current_thread_is_realtime());
                    assert_eq!(thread_policy().unwrap(), (libc::SCHED_FIFO, 1));
                    drop(g);
                    assert_eq!(thread_policy().unwrap(), before);
                }
                // Without privileges: a typed error, and nothing changed.
                Err(e) => {
                    assert!(matches!(e, RealtimeError::Sched { .. }), "{e}");
                    assert_eq!(thread_policy().unwrap(), before);
                }
            }
            assert!(run_at_fifo(FifoPriority::MIN, || 7).map_or(true, |v| v == 7));
            assert_eq!(thread_policy().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_guard_leaves_the_timer_slack_as_it_was() {
        // Recent kernels (6.18 here) zero a realtime thread's slack and, when it
        // goes back to SCHED_OTHER, give it the default slack, not the one it had.
        std::thread::spawn(|| {
            set_current_timer_slack_ns(5_000_000).unwrap();
            assert_eq!(current_timer_slack_ns(), 5_000_000);
            // In and out of SCHED_FIFO (where the kernel allows it).
            drop(FifoGuard::enter(FifoPriority::MIN));
            assert_eq!(current_timer_slack_ns(), 5_000_000);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn timer_slack_is_reported_beyond_two_seconds() {
        // PR_GET_TIMERSLACK returns a long; glibc's prctl() an int.
        std::thread::spawn(|| {
            set_current_timer_slack_ns(3_000_000_000).unwrap();
            assert_eq!(current_timer_slack_ns(), 3_000_000_000);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_guard_keeps_reset_on_fork() {
        // A thread started with SCHED_RESET_ON_FORK (e.g. under `chrt -R`)
        // has it again after the guard, so its children still start normal.
        std::thread::spawn(|| {
            set_thread_policy(libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK, 0).unwrap();
            let before = thread_policy().unwrap();
            assert_eq!(before.0, libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK);
            // In and out of SCHED_FIFO (where the kernel allows it).
            drop(FifoGuard::enter(FifoPriority::MIN));
            assert_eq!(thread_policy().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn setup_on_a_thread_reports_every_step() {
        // Thread-scoped steps only (the process-wide ones would outlive the test).
        std::thread::spawn(|| {
            let opts = RealtimeOptions {
                fifo: Some(FifoPriority::MIN),
                timer_slack: true,
                cpu_affinity: Some(CpuList::new(&[0]).unwrap()),
                ..RealtimeOptions::default()
            };
            let r = setup(&opts);
            assert_eq!(r.lock_memory, StepOutcome::Skipped);
            assert_eq!(r.cpu_dma_latency, StepOutcome::Skipped);
            assert_ne!(r.fifo, StepOutcome::Skipped);
            assert_ne!(r.timer_slack, StepOutcome::Skipped);
            if r.timer_slack == StepOutcome::Ok {
                // Recent kernels (6.18 here) keep a realtime thread's slack at 0.
                assert!(current_timer_slack_ns() <= 1, "slack {}", current_timer_slack_ns());
            }
            if r.fifo == StepOutcome::Ok {
                assert!(current_thread_is_realtime());
            }
            // Every failure is one line of the Display form.
            let failed = r.steps().iter().filter(|(_, o)| o.failed()).count();
            assert_eq!(r.to_string().lines().count(), failed);
        })
        .join()
        .unwrap();
    }
}

//! What a run cost the machine: CPU time per thread and per process, and
//! context switches of all the process's threads; and what the machine took
//! away from the run: time a virtual machine's CPUs were runnable but not
//! run by the hypervisor ("steal").

/// CPU time of the calling thread, in ns (`CLOCK_THREAD_CPUTIME_ID`).
pub use wirespeed_time::thread_cpu_ns;

/// Resource usage of the whole process (all threads) at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessUsage {
    /// User + system CPU time, ns.
    pub cpu_ns: u64,
    /// Voluntary + involuntary context switches.
    pub ctx_switches: u64,
}

impl ProcessUsage {
    /// Reads `getrusage(RUSAGE_SELF)`.
    pub fn now() -> ProcessUsage {
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ProcessUsage { cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime), ctx_switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64 }
    }

    /// Usage since `earlier`.
    pub fn since(self, earlier: ProcessUsage) -> ProcessUsage {
        ProcessUsage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
        }
    }
}

/// How many times the calling thread has been preempted so far: its
/// involuntary context switches (`getrusage(RUSAGE_THREAD)`).
pub fn thread_preemptions() -> u64 {
    thread_rusage().ru_nivcsw as u64
}

/// How many times the calling thread has slept so far (waited for a
/// wake-up, a timeout, or yielded): its voluntary context switches
/// (`getrusage(RUSAGE_THREAD)`).
pub fn thread_sleeps() -> u64 {
    thread_rusage().ru_nvcsw as u64
}

fn thread_rusage() -> libc::rusage {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru
}

/// The hypervisor's steal time so far, from `/proc/stat`: the total over
/// all CPUs and how many CPUs that total covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostSteal {
    /// Stolen CPU time, summed over all CPUs, ns.
    pub ns: u64,
    /// CPUs counted (the `cpuN` lines).
    pub cpus: u64,
}

impl HostSteal {
    /// Reads `/proc/stat`; `None` where the kernel does not report steal.
    pub fn now() -> Option<HostSteal> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        HostSteal::parse(&stat, 1_000_000_000 / clock_ticks_per_s())
    }

    /// Steal since `earlier`, over `elapsed_ns` of wall time, as a
    /// percentage of all CPUs' time.
    pub fn pct_since(self, earlier: HostSteal, elapsed_ns: u64) -> f64 {
        let ns = self.ns.saturating_sub(earlier.ns);
        ns as f64 * 100.0 / (elapsed_ns.max(1) as f64 * self.cpus.max(1) as f64)
    }

    /// Steal is the 8th value of the aggregate `cpu` line (user nice system
    /// idle iowait irq softirq **steal** …).
    fn parse(stat: &str, ns_per_tick: u64) -> Option<HostSteal> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
        let cpus = stat.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count() as u64;
        Some(HostSteal { ns: ticks * ns_per_tick, cpus })
    }
}

fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line_over_every_cpu() {
        let stat = "cpu  2078548 19980 165529 2301580 7065 0 9709 51901 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 9 0 0\nintr 5\n";
        let s = HostSteal::parse(stat, 10_000_000).unwrap();
        assert_eq!(s, HostSteal { ns: 519_010_000_000, cpus: 2 });
        assert_eq!(HostSteal::parse("cpu  1 2 3\n", 1), None);
        assert_eq!(HostSteal::parse("intr 5\n", 1), None);
        // 1 s stolen from 2 CPUs over 1 s: half their time.
        let later = HostSteal { ns: s.ns + 1_000_000_000, ..s };
        assert_eq!(later.pct_since(s, 1_000_000_000), 50.0);
        assert!(HostSteal::now().is_some_and(|h| h.cpus >= 1), "this kernel reports steal time");
    }

    #[test]
    fn cpu_time_grows_with_work_and_sleep_switches_context() {
        // Spin until this thread has burned 20 ms of CPU, however long that
        // takes in wall time on a busy machine (bounded, so a broken clock
        // fails instead of hanging).
        let a = ProcessUsage::now();
        let t0 = thread_cpu_ns();
        let start = std::time::Instant::now();
        while thread_cpu_ns() - t0 < 20_000_000 {
            assert!(start.elapsed() < std::time::Duration::from_secs(30), "thread CPU time does not advance");
            std::hint::spin_loop();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        let d = ProcessUsage::now().since(a);
        assert!(d.cpu_ns >= 15_000_000, "process CPU lags the thread's 20 ms: {d:?}");
        assert!(d.ctx_switches >= 1, "{d:?}");
    }
}

//! [`Policy`]: one switch per mechanism, so that each one's share can be measured.
//!
//! [`Policy::fast`] (the default) turns every mechanism on; [`Policy::classic`]
//! turns them all off and is an honest model of the kernel the seeds measured
//! as "kernel A" (Linux 5.18, seed 000 and seed 001) — and nothing else.

use std::time::Duration;

/// The SPI core's mechanisms, each with the kernel behaviour its "off" models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// On: a sync message runs in the caller's thread when the bus is idle.
    /// Off: it is handed to the pump thread and the caller waits for its
    /// completion (queued `spi_sync`, `wait_for_completion`).
    pub sync_in_caller: bool,
    /// On: the pump thread is never woken by a sync message; idle teardown runs
    /// once, `idle_delay` after the last message.
    /// Off: the pump is woken after every message to look for idle work
    /// (`kthread_queue_work` in `spi_finalize_current_message`, seed 001).
    pub quiet_pump: bool,
    /// On: per-thread counters with no lock, summed on read.
    /// Off: shared counters under a lock, taken several times per message,
    /// in two copies (the controller's and the device's) as the kernel keeps
    /// them (`SPI_STATISTICS_ADD_TO_FIELD`, seed 000 §6.1).
    pub lockfree_stats: bool,
    /// On: CS setup/hold/inactive times are deadlines from the CS edge (a 50 ns
    /// setup already satisfied costs nothing); an unspecified `cs_change`
    /// delay is the device's `cs_inactive_ns`.
    /// Off: each delay is rounded up to whole microseconds and busy-waited
    /// (`udelay`; sleeps above 10 µs), and a `cs_change` delay of 0 means 10 µs.
    pub cs_deadlines: bool,
    /// On: the TX FIFO is loaded before CS asserts. Off: `spi_set_cs`, then
    /// `transfer_one` loads the FIFO.
    pub preload_fifo: bool,
    /// On: poll when the transfer's expected time is below the measured cost of
    /// an interrupt wake-up, sleep on the IRQ otherwise. Off: always wait on
    /// the IRQ (spi-imx before the polling patches).
    pub adaptive_completion: bool,
    /// On: mode, clock and word size are written only when they change.
    /// Off: written for every transfer (`spi_imx_setupxfer`).
    pub skip_redundant_setup: bool,
    /// On: while a queued message's first transfer is on the wire, the pump
    /// takes the next one from the queue and completes the async message
    /// before it (statistics, waking its waiter or running its callback), so
    /// the bus waits for neither. Off: each message is completed, and the
    /// next one taken, before the next one starts
    /// (`spi_finalize_current_message`, then `__spi_pump_messages`).
    pub pipelined_pump: bool,
    /// How long the bus stays idle before teardown (powering the controller down).
    pub idle_delay: Duration,
    /// Adaptive completion's threshold: `None` uses the measured cost of an
    /// interrupt wake-up (the default); `Some(ns)` fixes it (`Some(u64::MAX)`
    /// always polls, `Some(0)` always waits on the IRQ).
    pub poll_below_ns: Option<u64>,
}

impl Policy {
    /// Every mechanism on (the default).
    pub fn fast() -> Policy {
        Policy {
            sync_in_caller: true,
            quiet_pump: true,
            lockfree_stats: true,
            cs_deadlines: true,
            preload_fifo: true,
            adaptive_completion: true,
            skip_redundant_setup: true,
            pipelined_pump: true,
            idle_delay: Duration::from_secs(1),
            poll_below_ns: None,
        }
    }

    /// Every mechanism off: the baseline kernel of the seeds.
    pub fn classic() -> Policy {
        Policy {
            sync_in_caller: false,
            quiet_pump: false,
            lockfree_stats: false,
            cs_deadlines: false,
            preload_fifo: false,
            adaptive_completion: false,
            skip_redundant_setup: false,
            pipelined_pump: false,
            idle_delay: Duration::from_secs(1),
            poll_below_ns: None,
        }
    }

    /// The names of the switches, for ablation and the CLI.
    pub const SWITCHES: [&'static str; 8] = [
        "sync_in_caller",
        "quiet_pump",
        "lockfree_stats",
        "cs_deadlines",
        "preload_fifo",
        "adaptive_completion",
        "skip_redundant_setup",
        "pipelined_pump",
    ];

    /// Sets one switch by name; false if there is no such switch.
    pub fn set(&mut self, switch: &str, on: bool) -> bool {
        let field = match switch {
            "sync_in_caller" => &mut self.sync_in_caller,
            "quiet_pump" => &mut self.quiet_pump,
            "lockfree_stats" => &mut self.lockfree_stats,
            "cs_deadlines" => &mut self.cs_deadlines,
            "preload_fifo" => &mut self.preload_fifo,
            "adaptive_completion" => &mut self.adaptive_completion,
            "skip_redundant_setup" => &mut self.skip_redundant_setup,
            "pipelined_pump" => &mut self.pipelined_pump,
            _ => return false,
        };
        *field = on;
        true
    }

    /// A preset by name: `fast` or `classic`.
    pub fn by_name(name: &str) -> Option<Policy> {
        match name {
            "fast" => Some(Policy::fast()),
            "classic" => Some(Policy::classic()),
            _ => None,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::fast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_is_settable_and_presets_are_opposites() {
        for s in Policy::SWITCHES {
            let mut p = Policy::classic();
            assert!(p.set(s, true), "{s}");
            assert_ne!(p, Policy::classic(), "{s} changed nothing");
            let mut f = Policy::fast();
            assert!(f.set(s, false));
            assert_ne!(f, Policy::fast());
        }
        let mut p = Policy::classic();
        for s in Policy::SWITCHES {
            p.set(s, true);
        }
        assert_eq!(p, Policy::fast());
        assert!(!p.set("nope", true));
    }
}

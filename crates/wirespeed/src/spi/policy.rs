//! [`Policy`]: one switch per mechanism and three presets (see [`Policy`]
//! for the table of switches, the kernel behaviour each models, and sources).

use std::time::Duration;

/// The SPI core's mechanisms: one switch per mechanism, so that each one's share can be
/// measured, and three presets: [`Policy::fast`] (every mechanism on, the
/// default), and two honest models of the Linux SPI core with spi-imx, the
/// kernel the seeds measured and today's:
///
/// - [`Policy::classic`]: **Linux 5.18-rc1 as seed 000 measured it ("kernel
///   A")**, vanilla spi-imx (no polling patches).
/// - [`Policy::linux69`]: **Linux 6.9**: the 6.0 sync-path series (per-cpu
///   statistics, no queue and no pump kick for a sync message on an idle
///   controller), spi-imx's polling below 30 µs (5.19), and 6.9's
///   `spi_optimize_message` for prepared messages. The strongest baseline:
///   the one `fast` must beat.
///
/// Each switch, what its "off" models, and where (kernel source, `drivers/spi/`):
///
/// | switch | off (the kernel's way) | source | classic | linux-6.9 | fast |
/// |---|---|---|---|---|---|
/// | `sync_in_caller` | every sync message handed to the pump thread and waited for | `spi_async` + wait; no kernel preset: 5.18 and 6.x both pump a sync message in the caller when idle (`__spi_sync` → `__spi_pump_messages(ctlr, false)`, `spi_sync_immediate`) | on | on | on |
/// | `async_in_caller` | every async message queued for the pump thread, which is woken for it | 5.18 and 6.9 `spi_async` → `__spi_async` → `spi_queued_transfer` → `__spi_queued_transfer`: queued, `kthread_queue_work` when the controller is not busy (seed 000 §5 step 8: the CAN driver's TX; its kernel C replaced that `spi_async` with a sync equivalent) | off | off | on |
/// | `direct_sync` | a sync message on an idle bus goes through the queue in the caller's thread: queued under the queue lock, taken off under it, the lock taken again at finalize | 5.18 `__spi_sync` → `__spi_queued_transfer`, `__spi_pump_messages`, `spi_finalize_current_message`; 6.0 `__spi_transfer_message_noqueue` skips it | off | on | on |
/// | `quiet_pump` | the pump thread is kicked after every finalized message, to look for more work and tear down | 5.18 `spi_finalize_current_message` → `kthread_queue_work`; 6.0: no kick for the no-queue sync path | off | on | on |
/// | `lockfree_stats` | statistics under spinlocks, in two copies (controller's and device's): a sync message takes 3 round trips per copy (`spi_sync`, `spi_sync_immediate` in `__spi_sync`; `messages` in `spi_transfer_one_message`), a queued one 2 (`spi_async` or `spi_sync`, `messages`), each transfer 1 (`spi_statistics_add_transfer_stats`): 6 + 2 per transfer for a sync message | 5.18 `SPI_STATISTICS_ADD_TO_FIELD` (seed 000 §6.1); 6.0: per-cpu `u64_stats` | off | on | on |
/// | `cs_deadlines` | CS setup, hold and inactive times and transfer delays as `_spi_transfer_delay_ns`: `ndelay` up to 1 µs, `udelay` (rounded up to µs) up to 10 µs, `usleep_range(us, us + us/10)` above; a `cs_change` with no delay given waits 10 µs (a zeroed `cs_change_delay`, unit µs), one of `Some(0)` none (unit ns, value 0: the "fast mode" mcp251xfd asks for) | `spi_set_cs`, `spi_delay_exec`, `_spi_transfer_cs_change_delay_exec`, 5.18 and 6.9 alike; mcp251xfd `mcp251xfd-ring.c` | off | off | on |
/// | `preload_fifo` | `spi_set_cs`, then `transfer_one` fills the FIFO | spi-imx `spi_imx_transfer_one` | off | off | on |
/// | `adaptive_completion` | always sleep on the IRQ | vanilla 5.18 spi-imx (`spi_imx_dma_transfer`/`spi_imx_pio_transfer` wait for completion); linux-6.9 polls below 30 µs of estimated transfer time (spi-imx `polling_limit_us`, 5.19) | off | on, below 30 µs | on, below the measured wake-up latency plus the sleep's own CPU, and above it while such polling stays within 0.3 % of wall time (`poll_budget.rs`: a mostly idle bus polls, a busy one sleeps) |
/// | `skip_redundant_setup` | mode, clock and word size written for every transfer | spi-imx `spi_imx_setupxfer` in `transfer_one`, 5.18 and 6.9 | off | off | on |
/// | `pipelined_pump` | each queued message completed, and the next taken, before the next one starts | `spi_finalize_current_message`, then `__spi_pump_messages`, 5.18 and 6.9 | off | off | on |
/// | `optimize_message` | a prepared message is validated again at every run | 5.18 `__spi_validate` in every `__spi_sync`; 6.9 `spi_optimize_message` validates once | off | on | on |
/// | `premapped_dma` | a prepared message's DMA buffers are mapped and unmapped at every run (IOVA allocation, page-table writes, the IOTLB invalidation of a strict IOMMU) | `spi_map_msg`/`spi_unmap_msg` around every message in `__spi_pump_transfer_message` (5.18) and `spi_transfer_one_message`'s caller (6.9); `spi_optimize_message` does not map | off | off | on |
/// | `timed_completion` | a transfer longer than the spin threshold, or one that fits the FIFO and is not polled, sleeps on the interrupt (the wake-up lands after its end) | spi-imx `wait_for_completion_timeout` on the transfer's or the DMA's completion, 5.18 and 6.9 | off | off | on |
/// | `bounce_dma` | a DMA transfer that is not prepared has the caller's buffers mapped before it and unmapped after it, whatever the IOMMU costs | `spi_map_msg`/`spi_unmap_msg` → `spi_map_buf`, 5.18 and 6.9 (swiotlb bounces only for a device that cannot reach the memory) | off | off | on |
///
/// `idle_delay` stands for when the controller is really powered down: in
/// both kernels the pump marks the controller idle at once, but runtime PM
/// powers spi-imx down only after its 2 s autosuspend delay (`MXC_RPM_TIMEOUT`).
/// Seed 001's delayed teardown (a kthread work delayed by 1 s instead of the
/// kick, January 2019) was reverted weeks later: 5.18 kicks the pump after
/// every message. Not modelled: the race seed 001 mentions, where the kicked
/// kthread wins and pumps the caller's next message itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// On: a sync message runs in the caller's thread when the bus is idle.
    /// Off: it is handed to the pump thread and the caller waits for its
    /// completion (`spi_async` and a wait; no kernel preset does this for sync).
    pub sync_in_caller: bool,
    /// On: an async message without a callback, of at most
    /// [`ASYNC_IN_CALLER_MAX_NS`](super::ASYNC_IN_CALLER_MAX_NS) of wire
    /// time, submitted to an idle bus (held by nobody, nothing queued) runs
    /// in the submitting thread as a sync message does, and is complete when
    /// `submit` returns. Off: every async message is queued for the pump
    /// thread, which is woken for it (`spi_async`, 5.18 and 6.9).
    pub async_in_caller: bool,
    /// On: a sync message on an idle bus runs without touching the queue
    /// (6.0 `__spi_transfer_message_noqueue`). Off: it is queued and taken
    /// off the queue again in the caller's thread under the queue lock, which
    /// finalizing the message takes once more (5.18 `__spi_queued_transfer`,
    /// `__spi_pump_messages(ctlr, false)`, `spi_finalize_current_message`).
    pub direct_sync: bool,
    /// On: the pump thread is never woken by a sync message; idle teardown runs
    /// once, `idle_delay` after the last message.
    /// Off: the pump is woken after every message to look for idle work
    /// (`kthread_queue_work` in 5.18's `spi_finalize_current_message`, seed 001).
    pub quiet_pump: bool,
    /// On: per-thread counters with no lock, summed on read.
    /// Off: shared counters under a lock, in two copies (the controller's and
    /// the device's) as 5.18 keeps them: 3 round trips per copy for a sync
    /// message run at once, 2 for a queued one, 1 per transfer
    /// (`SPI_STATISTICS_ADD_TO_FIELD`, seed 000 §6.1).
    pub lockfree_stats: bool,
    /// On: CS setup/hold/inactive times are deadlines from the CS edge (a 50 ns
    /// setup already satisfied costs nothing); an unspecified `cs_change`
    /// delay is the device's `cs_inactive_ns`, and the gap after a
    /// `cs_change` is waited only once the next transfer's FIFO is loaded
    /// (the two overlap).
    /// Off: each delay as `_spi_transfer_delay_ns`: spun up to 1 µs
    /// (`ndelay`), rounded up to whole microseconds and spun up to 10 µs
    /// (`udelay`), slept above (`usleep_range`); a `cs_change` with no delay
    /// given waits the kernel's 10 µs, one with `Some(0)` none.
    pub cs_deadlines: bool,
    /// On: the TX FIFO is loaded before CS asserts. Off: `spi_set_cs`, then
    /// `transfer_one` loads the FIFO.
    pub preload_fifo: bool,
    /// On: poll when the transfer's expected time is below
    /// [`poll_below_ns`](Policy::poll_below_ns) (by default the measured
    /// latency of an interrupt wake-up plus the CPU the sleep itself costs:
    /// below that, sleeping adds more latency than it saves CPU), sleep on
    /// the IRQ otherwise — unless the measured threshold is in use and the
    /// bus's budget for polling beyond it (0.3 % of wall time) has room:
    /// a mostly idle bus polls for latency, a busy one sleeps for CPU.
    /// Off: always wait
    /// on the IRQ (spi-imx before the 5.19 polling patches).
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
    /// On: a prepared message is validated once, when prepared (6.9
    /// `spi_optimize_message`). Off: validated again at every run (5.18
    /// `__spi_validate` in every `__spi_sync`).
    pub optimize_message: bool,
    /// On: a prepared message's DMA buffers move, when it is prepared, to
    /// page-aligned DMA memory (a 4 KiB buffer then takes one IOMMU page,
    /// not the two a heap buffer usually straddles) and stay mapped for its
    /// lifetime (no IOVA allocation, page-table write or invalidation per
    /// run). Off: they are mapped and unmapped around every run, as the kernel's
    /// `spi_map_msg`/`spi_unmap_msg` do for every message.
    pub premapped_dma: bool,
    /// On: a transfer whose wire time is longer than the delay layer's spin
    /// threshold sleeps until just before its predicted end (less the
    /// thread's wake-up margin) and polls the rest ([`Completion::Timed`](super::Completion::Timed));
    /// so does, with adaptive completion, one too long to poll that fits the
    /// FIFO (the controller raises its interrupt at a FIFO level that many
    /// words before the end). Off: it sleeps on the interrupt, and the
    /// wake-up comes after the end.
    pub timed_completion: bool,
    /// On: behind an IOMMU that translates (strict or lazy), a DMA transfer
    /// that is not prepared and is at most [`BOUNCE_MAX`](super::BOUNCE_MAX)
    /// bytes goes through the bus's own pair of buffers, mapped once: its
    /// bytes are copied in and out instead of its buffers being mapped and
    /// unmapped (an IOTLB invalidation in strict mode).
    /// Off: the caller's buffers are mapped and unmapped around every such transfer.
    pub bounce_dma: bool,
    /// How long the bus stays idle before teardown (powering the controller down).
    pub idle_delay: Duration,
    /// Adaptive completion's threshold: `None` uses the measured latency of
    /// an interrupt wake-up plus the sleep's own CPU (the default); `Some(ns)` fixes it (`Some(u64::MAX)`
    /// always polls, `Some(0)` never polls: it waits on the IRQ, until just
    /// before the end with `timed_completion`).
    pub poll_below_ns: Option<u64>,
}

/// spi-imx's runtime-PM autosuspend delay (`MXC_RPM_TIMEOUT`), the kernel presets' `idle_delay`.
const SPI_IMX_AUTOSUSPEND: Duration = Duration::from_secs(2);

/// spi-imx's `polling_limit_us` default (5.19 on): transfers expected to take
/// less are polled.
pub const SPI_IMX_POLLING_LIMIT_NS: u64 = 30_000;

impl Policy {
    /// Every mechanism on (the default).
    pub fn fast() -> Policy {
        Policy {
            sync_in_caller: true,
            async_in_caller: true,
            direct_sync: true,
            quiet_pump: true,
            lockfree_stats: true,
            cs_deadlines: true,
            preload_fifo: true,
            adaptive_completion: true,
            skip_redundant_setup: true,
            pipelined_pump: true,
            optimize_message: true,
            premapped_dma: true,
            timed_completion: true,
            bounce_dma: true,
            idle_delay: Duration::from_secs(1),
            poll_below_ns: None,
        }
    }

    /// Linux 5.18-rc1 with vanilla spi-imx: the seeds' "kernel A" (see the table).
    pub fn classic() -> Policy {
        Policy {
            sync_in_caller: true,
            async_in_caller: false,
            direct_sync: false,
            quiet_pump: false,
            lockfree_stats: false,
            cs_deadlines: false,
            preload_fifo: false,
            adaptive_completion: false,
            skip_redundant_setup: false,
            pipelined_pump: false,
            optimize_message: false,
            premapped_dma: false,
            timed_completion: false,
            bounce_dma: false,
            idle_delay: SPI_IMX_AUTOSUSPEND,
            poll_below_ns: None,
        }
    }

    /// Linux 6.9 with spi-imx polling below 30 µs: today's kernel (see the table).
    pub fn linux69() -> Policy {
        Policy {
            sync_in_caller: true,
            async_in_caller: false,
            direct_sync: true,
            quiet_pump: true,
            lockfree_stats: true,
            cs_deadlines: false,
            preload_fifo: false,
            adaptive_completion: true,
            skip_redundant_setup: false,
            pipelined_pump: false,
            optimize_message: true,
            premapped_dma: false,
            timed_completion: false,
            bounce_dma: false,
            idle_delay: SPI_IMX_AUTOSUSPEND,
            poll_below_ns: Some(SPI_IMX_POLLING_LIMIT_NS),
        }
    }

    /// The presets' names, as [`by_name`](Policy::by_name) takes them.
    pub const PRESETS: [&'static str; 3] = ["classic", "linux-6.9", "fast"];

    /// The names of the switches, for ablation and the CLI.
    pub const SWITCHES: [&'static str; 14] = [
        "sync_in_caller",
        "async_in_caller",
        "direct_sync",
        "quiet_pump",
        "lockfree_stats",
        "cs_deadlines",
        "preload_fifo",
        "adaptive_completion",
        "skip_redundant_setup",
        "pipelined_pump",
        "optimize_message",
        "premapped_dma",
        "timed_completion",
        "bounce_dma",
    ];

    /// Sets one switch by name; false if there is no such switch.
    pub fn set(&mut self, switch: &str, on: bool) -> bool {
        let field = match switch {
            "sync_in_caller" => &mut self.sync_in_caller,
            "async_in_caller" => &mut self.async_in_caller,
            "direct_sync" => &mut self.direct_sync,
            "quiet_pump" => &mut self.quiet_pump,
            "lockfree_stats" => &mut self.lockfree_stats,
            "cs_deadlines" => &mut self.cs_deadlines,
            "preload_fifo" => &mut self.preload_fifo,
            "adaptive_completion" => &mut self.adaptive_completion,
            "skip_redundant_setup" => &mut self.skip_redundant_setup,
            "pipelined_pump" => &mut self.pipelined_pump,
            "optimize_message" => &mut self.optimize_message,
            "premapped_dma" => &mut self.premapped_dma,
            "timed_completion" => &mut self.timed_completion,
            "bounce_dma" => &mut self.bounce_dma,
            _ => return false,
        };
        *field = on;
        true
    }

    /// A preset by name: `fast`, `classic` or `linux-6.9` (also `linux69`).
    pub fn by_name(name: &str) -> Option<Policy> {
        match name {
            "fast" => Some(Policy::fast()),
            "classic" => Some(Policy::classic()),
            "linux-6.9" | "linux69" => Some(Policy::linux69()),
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
    fn every_switch_is_settable_and_all_on_is_fast() {
        for s in Policy::SWITCHES {
            let mut f = Policy::fast();
            assert!(f.set(s, false), "{s}");
            assert_ne!(f, Policy::fast(), "{s} changed nothing");
        }
        let mut p = Policy::classic();
        for s in Policy::SWITCHES {
            p.set(s, true);
        }
        assert_eq!(p, Policy { idle_delay: Policy::classic().idle_delay, ..Policy::fast() });
        assert!(!Policy::fast().set("nope", true));
    }

    #[test]
    fn the_kernel_presets_are_the_table_s() {
        let on = |p: &Policy| -> Vec<&str> {
            Policy::SWITCHES
                .iter()
                .copied()
                .filter(|s| !{
                    let mut q = p.clone();
                    q.set(s, false);
                    q == *p
                })
                .collect()
        };
        assert_eq!(on(&Policy::classic()), ["sync_in_caller"]);
        assert_eq!(
            on(&Policy::linux69()),
            [
                "sync_in_caller",
                "direct_sync",
                "quiet_pump",
                "lockfree_stats",
                "adaptive_completion",
                "optimize_message"
            ]
        );
        assert_eq!(Policy::linux69().poll_below_ns, Some(30_000));
        for name in Policy::PRESETS {
            assert!(Policy::by_name(name).is_some(), "{name}");
        }
    }
}

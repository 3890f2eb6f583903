//! Translating a validated message into `spi_ioc_transfer`s and ioctls.
//!
//! A message is cut into CS windows (a `cs_change` inside it ends one).
//! Windows go into one `SPI_IOC_MESSAGE(n)` together unless:
//! - the next one would pass spidev's `bufsiz` (TX and RX each count,
//!   every buffer rounded up as spidev rounds it) or 511 transfers;
//! - the CS gap between them is longer than the kernel's fixed 10 µs
//!   (spidev cannot set `cs_change_delay`): the backend then waits it;
//! - chip select is a GPIO line, which the kernel cannot toggle.
//!
//! A single window larger than `bufsiz` is refused: it cannot be cut
//! without dropping CS. Delays become microseconds, rounded up; CS setup
//! (and an embedded-hal delay before a transfer) becomes a zero-length
//! transfer carrying the delay, which the kernel waits with CS active;
//! CS hold lengthens the delay of a window's last transfer, which the
//! kernel waits before releasing CS.

use super::uapi::{SpiIocTransfer, MAX_TRANSFERS_PER_IOCTL};
use crate::spi::{ChipSelect, DeviceConfig, EffectiveTiming, InvalidMessage, MessagePlanner, TransferSpec};
use std::any::Any;

/// The kernel's CS-inactive time for a `cs_change` inside a message when
/// the transfer sets none (`_spi_transfer_cs_change_delay_exec`): 10 µs.
pub const KERNEL_CS_CHANGE_GAP_NS: u64 = 10_000;

/// The longest `delay_usecs` of one transfer (a `u16`).
const MAX_DELAY_US: u64 = u16::MAX as u64;

/// The limits of one spidev node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// spidev's `bufsiz` module parameter: TX bytes and RX bytes of one ioctl, each.
    pub bufsiz: usize,
    /// What spidev rounds each buffer up to when it counts them
    /// (`ARCH_KMALLOC_MINALIGN`; the stack assumes the largest of the architecture).
    pub align: usize,
}

impl Limits {
    /// spidev's default `bufsiz`.
    pub const DEFAULT_BUFSIZ: usize = 4096;

    /// `bufsiz` with this architecture's buffer rounding.
    pub fn with_bufsiz(bufsiz: usize) -> Limits {
        let align = if cfg!(target_arch = "aarch64") {
            128
        } else if cfg!(target_arch = "arm") {
            64
        } else {
            8
        };
        Limits { bufsiz, align }
    }
}

/// One ioctl of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Its transfers: `xfers[start..end]`.
    pub start: usize,
    pub end: usize,
    /// The first message transfer in it (for errors).
    pub first_transfer: usize,
    /// Its larger of the TX and RX byte counts as spidev counts them.
    pub bytes: usize,
    /// CS inactive time to wait after it, before the next ioctl (ns).
    pub gap_after_ns: u64,
}

/// A message translated for spidev: made once for a prepared message; a
/// backend's scratch copy is reused for the others.
#[derive(Debug, Default)]
pub struct SpidevPlan {
    pub(crate) xfers: Vec<SpiIocTransfer>,
    /// The entry of each message transfer in `xfers`.
    pub(crate) entry_of: Vec<usize>,
    pub(crate) chunks: Vec<Chunk>,
    /// Whether CS stays active after the message (a final `cs_change`).
    pub(crate) keeps_cs: bool,
}

fn align(len: usize, to: usize) -> usize {
    len.div_ceil(to) * to
}

fn us_up(ns: u64) -> u64 {
    ns.div_ceil(1000)
}

/// Zero-length transfers that wait `us` µs with CS active.
fn push_wait(xfers: &mut Vec<SpiIocTransfer>, mut us: u64, speed_hz: u32, bits: u8) {
    while us > 0 {
        let now = us.min(MAX_DELAY_US);
        xfers.push(SpiIocTransfer { delay_usecs: now as u16, speed_hz, bits_per_word: bits, ..Default::default() });
        us -= now;
    }
}

/// The CS gap after a window that ends with transfer `t` (inside the message).
fn gap_after(t: &TransferSpec, dev: &DeviceConfig) -> u64 {
    u64::from(t.cs_change_delay_ns.unwrap_or(dev.cs_inactive_ns))
}

/// Fills `out` with the translation of `specs` for `dev` under `limits`.
pub(crate) fn build(
    dev: &DeviceConfig,
    specs: impl Fn(usize) -> Result<TransferSpec, InvalidMessage>,
    count: usize,
    limits: Limits,
    out: &mut SpidevPlan,
) -> Result<(), InvalidMessage> {
    out.xfers.clear();
    out.entry_of.clear();
    out.chunks.clear();
    out.keeps_cs = false;
    let gpio_cs = matches!(dev.cs, ChipSelect::Gpio(_));
    let hold_ns = u64::from(dev.cs_hold_ns);
    // The chunk being filled: its start entry, TX and RX bytes, first transfer.
    let (mut c_start, mut c_tx, mut c_rx, mut c_first) = (0usize, 0usize, 0usize, 0usize);
    // A break is forced after the last window (its CS gap is longer than the kernel's).
    let mut prev_gap: Option<u64> = None;
    let mut a = 0;
    while a < count {
        let first = specs(a)?;
        let w_start = out.xfers.len();
        let (mut w_tx, mut w_rx) = (0usize, 0usize);
        push_wait(
            &mut out.xfers,
            us_up(u64::from(dev.cs_setup_ns) + first.delay_before_ns),
            first.speed_hz,
            first.bits,
        );
        let mut i = a;
        let last_spec = loop {
            let t = specs(i)?;
            if i > a {
                push_wait(&mut out.xfers, us_up(t.delay_before_ns), t.speed_hz, t.bits);
            }
            let last = i + 1 == count;
            let ends_window = last || t.cs_change;
            let releases_cs = ends_window && !(last && t.cs_change);
            let after_ns = if releases_cs { t.delay_after_ns.max(hold_ns) } else { t.delay_after_ns };
            let after_us = us_up(after_ns);
            let word_us = us_up(u64::from(t.word_delay_ns));
            if word_us > u64::from(u8::MAX) {
                return Err(InvalidMessage::DelayTooLong {
                    index: i,
                    what: "word delay",
                    ns: u64::from(t.word_delay_ns),
                    max_ns: u64::from(u8::MAX) * 1000,
                });
            }
            out.entry_of.push(out.xfers.len());
            out.xfers.push(SpiIocTransfer {
                len: u32::try_from(t.len).map_err(|_| too_large(t.len, limits))?,
                speed_hz: t.speed_hz,
                bits_per_word: t.bits,
                delay_usecs: after_us.min(MAX_DELAY_US) as u16,
                word_delay_usecs: word_us as u8,
                tx_nbits: t.tx_nbits,
                rx_nbits: t.rx_nbits,
                ..Default::default()
            });
            push_wait(&mut out.xfers, after_us.saturating_sub(MAX_DELAY_US), t.speed_hz, t.bits);
            if t.tx {
                w_tx += align(t.len, limits.align);
            }
            if t.rx {
                w_rx += align(t.len, limits.align);
            }
            if ends_window {
                break t;
            }
            i += 1;
        };
        let w_entries = out.xfers.len() - w_start;
        if w_tx.max(w_rx) > limits.bufsiz || w_entries > MAX_TRANSFERS_PER_IOCTL {
            return Err(too_large(w_tx.max(w_rx), limits));
        }
        if let Some(gap) = prev_gap {
            let fits = c_tx + w_tx <= limits.bufsiz
                && c_rx + w_rx <= limits.bufsiz
                && out.xfers.len() - c_start <= MAX_TRANSFERS_PER_IOCTL;
            if gpio_cs || gap > KERNEL_CS_CHANGE_GAP_NS || !fits {
                out.chunks.push(Chunk {
                    start: c_start,
                    end: w_start,
                    first_transfer: c_first,
                    bytes: c_tx.max(c_rx),
                    gap_after_ns: gap,
                });
                (c_start, c_tx, c_rx, c_first) = (w_start, 0, 0, a);
            } else {
                // The kernel drops CS after the window before, for its 10 µs.
                out.xfers[w_start - 1].cs_change = 1;
            }
        }
        c_tx += w_tx;
        c_rx += w_rx;
        let last = i + 1 == count;
        if last && last_spec.cs_change {
            out.keeps_cs = true;
            if let Some(x) = out.xfers.last_mut() {
                x.cs_change = u8::from(!gpio_cs);
            }
        }
        prev_gap = (!last).then(|| gap_after(&last_spec, dev));
        a = i + 1;
    }
    out.chunks.push(Chunk {
        start: c_start,
        end: out.xfers.len(),
        first_transfer: c_first,
        bytes: c_tx.max(c_rx),
        gap_after_ns: 0,
    });
    Ok(())
}

fn too_large(bytes: usize, limits: Limits) -> InvalidMessage {
    InvalidMessage::MessageTooLarge {
        bytes,
        limit: limits.bufsiz,
        hint: "spidev takes at most `bufsiz` bytes per ioctl (each buffer counted rounded up) and a message can only \
               be cut where it lets CS drop (cs_change); raise it with spidev.bufsiz= on the kernel command line \
               (see /sys/module/spidev/parameters/bufsiz), or add cs_change where the device allows",
    }
}

/// The [`MessagePlanner`] of a spidev node.
#[derive(Debug)]
pub struct SpidevPlanner {
    pub(crate) limits: Limits,
}

impl MessagePlanner for SpidevPlanner {
    fn plan(&self, dev: &DeviceConfig, transfers: &[TransferSpec]) -> Result<Box<dyn Any + Send>, InvalidMessage> {
        let mut plan = SpidevPlan::default();
        build(dev, |i| Ok(transfers[i]), transfers.len(), self.limits, &mut plan)?;
        Ok(Box::new(plan))
    }

    fn effective_timing(&self, dev: &DeviceConfig) -> EffectiveTiming {
        let up = |ns: u32| us_up(u64::from(ns)) * 1000;
        EffectiveTiming {
            speed_hz: dev.speed_hz,
            cs_setup_ns: up(dev.cs_setup_ns),
            cs_hold_ns: up(dev.cs_hold_ns),
            // Waited by deadline between ioctls.
            cs_inactive_ns: u64::from(dev.cs_inactive_ns),
            cs_change_gap_ns: if matches!(dev.cs, ChipSelect::Gpio(_)) {
                u64::from(dev.cs_inactive_ns)
            } else {
                u64::from(dev.cs_inactive_ns).max(KERNEL_CS_CHANGE_GAP_NS)
            },
            delay_step_ns: 1000,
        }
    }
}

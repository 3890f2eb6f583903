//! Validation: turns a transfer and its device into a [`Step`] the executor
//! runs, or says precisely why it cannot be sent.

use super::controller::ControllerCaps;
use super::device::{ChipSelect, DeviceConfig};
use super::error::InvalidMessage;
use super::transfer::Transfer;

/// A validated transfer with the device's defaults applied: everything the
/// executor (or a [`MessageBackend`](super::MessageBackend), which sees it as
/// [`TransferSpec`](super::TransferSpec)) needs, precomputed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes moved (0 only for a CS window of delays, from embedded-hal).
    pub len: usize,
    /// Bits per word.
    pub bits: u8,
    /// The clock asked for.
    pub speed_hz: u32,
    /// Expected wire time at the SCLK the controller makes of `speed_hz`.
    pub wire_ns: u64,
    /// Wait before the transfer starts, CS active (embedded-hal `DelayNs`).
    pub delay_before_ns: u64,
    /// Wait after the transfer, before CS changes.
    pub delay_after_ns: u64,
    /// Kernel `cs_change` (see [`Transfer::cs_change`](super::Transfer::cs_change)).
    pub cs_change: bool,
    /// CS inactive time of a `cs_change` inside the message (None: the device's `cs_inactive_ns`).
    pub cs_change_delay_ns: Option<u32>,
    /// Pause between words.
    pub word_delay_ns: u32,
    /// Whether TX bytes are sent (else zeros).
    pub tx: bool,
    /// Whether RX bytes are kept.
    pub rx: bool,
    /// TX data lines (1, 2 or 4).
    pub tx_nbits: u8,
    /// RX data lines (1, 2 or 4).
    pub rx_nbits: u8,
}

impl Step {
    /// A placeholder for fixed-size step arrays.
    pub(crate) const EMPTY: Step = Step {
        len: 0,
        bits: 8,
        speed_hz: 0,
        wire_ns: 0,
        delay_before_ns: 0,
        delay_after_ns: 0,
        cs_change: false,
        cs_change_delay_ns: None,
        word_delay_ns: 0,
        tx: false,
        rx: false,
        tx_nbits: 1,
        rx_nbits: 1,
    };
}

/// Messages (and embedded-hal operation lists) of up to this many steps are
/// planned once, on the stack, while they are validated; longer ones are
/// validated in one pass and each step planned again when it runs.
pub(crate) const INLINE_STEPS: usize = 8;

pub(crate) fn word_bytes(bits: u8) -> usize {
    usize::from(bits.div_ceil(8)).next_power_of_two()
}

/// Checks the device itself against the controller.
pub(crate) fn check_device(dev: &DeviceConfig, caps: &ControllerCaps) -> Result<(), InvalidMessage> {
    if let ChipSelect::Native(cs) = dev.cs {
        if cs >= caps.num_cs {
            return Err(InvalidMessage::NoSuchChipSelect { cs, available: caps.num_cs });
        }
    }
    let refused = dev.flags.without(caps.mode_flags);
    if !refused.is_empty() {
        return Err(InvalidMessage::UnsupportedModeFlags { refused, supported: caps.mode_flags });
    }
    check_speed(None, dev.speed_hz, dev, caps)?;
    check_bits(None, dev.bits_per_word, caps)
}

/// The data lines a transfer asks for, checked against the device's dual/quad flags.
#[inline]
fn check_lines(index: usize, nbits: u8, dir: Lines, dev: &DeviceConfig) -> Result<u8, InvalidMessage> {
    if nbits <= 1 {
        return Ok(1);
    }
    let (dual, quad) = dir.flags();
    let ok = match nbits {
        2 => dev.flags.contains(dual) || dev.flags.contains(quad),
        4 => dev.flags.contains(quad),
        _ => false,
    };
    if ok {
        Ok(nbits)
    } else {
        Err(InvalidMessage::UnsupportedLines { index, dir: dir.name(), nbits, device_flags: dev.flags })
    }
}

/// The direction whose data lines [`check_lines`] checks.
#[derive(Clone, Copy)]
enum Lines {
    Tx,
    Rx,
}

impl Lines {
    fn flags(self) -> (super::ModeFlags, super::ModeFlags) {
        use super::ModeFlags as F;
        match self {
            Lines::Tx => (F::TX_DUAL, F::TX_QUAD),
            Lines::Rx => (F::RX_DUAL, F::RX_QUAD),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Lines::Tx => "tx",
            Lines::Rx => "rx",
        }
    }
}

fn check_bits(index: Option<usize>, bits: u8, caps: &ControllerCaps) -> Result<(), InvalidMessage> {
    if caps.supports_bits(bits) {
        Ok(())
    } else {
        Err(InvalidMessage::UnsupportedBitsPerWord { index, bits, supported_mask: caps.bits_per_word_mask })
    }
}

fn check_speed(index: Option<usize>, hz: u32, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<(), InvalidMessage> {
    if hz == 0 {
        return Err(InvalidMessage::ZeroSpeed { index });
    }
    let max = dev.max_speed_hz.min(caps.max_speed_hz);
    if hz > max {
        return Err(InvalidMessage::SpeedTooHigh { index, requested_hz: hz, max_hz: max });
    }
    if hz < caps.min_speed_hz {
        return Err(InvalidMessage::SpeedTooLow { index, requested_hz: hz, min_hz: caps.min_speed_hz });
    }
    Ok(())
}

/// Validates transfer `index` of a message for `dev` on a controller with `caps`.
#[inline(always)]
pub(crate) fn plan_step(
    index: usize,
    t: &Transfer<'_>,
    dev: &DeviceConfig,
    caps: &ControllerCaps,
) -> Result<Step, InvalidMessage> {
    use super::transfer::Data;
    let (len, tx, rx) = match &t.data {
        Data::Write(b) => (b.len(), true, false),
        Data::Read(b) => (b.len(), false, true),
        Data::InPlace(b) => (b.len(), true, true),
        Data::Duplex(a, b) => {
            if a.len() != b.len() {
                return Err(InvalidMessage::LengthMismatch { index, tx: a.len(), rx: b.len() });
            }
            (a.len(), true, true)
        }
    };
    let shape = plan_shape(index, len, t.speed_hz, t.bits_per_word, dev, caps)?;
    Ok(Step {
        tx,
        rx,
        delay_after_ns: u64::from(t.delay_after_ns),
        cs_change: t.cs_change,
        cs_change_delay_ns: t.cs_change_delay_ns,
        word_delay_ns: t.word_delay_ns,
        tx_nbits: check_lines(index, t.tx_nbits, Lines::Tx, dev)?,
        rx_nbits: check_lines(index, t.rx_nbits, Lines::Rx, dev)?,
        ..shape
    })
}

/// Validates a transfer of `len` bytes with optional speed and word-size
/// overrides (0 = the device's); direction, delays and CS flags are left off.
///
/// `dev` is a device of the bus, checked against `caps` when it was created
/// ([`check_device`]): its own speed and word size are valid, and only an
/// override is checked again.
#[inline(always)]
pub(crate) fn plan_shape(
    index: usize,
    len: usize,
    speed_override: u32,
    bits_override: u8,
    dev: &DeviceConfig,
    caps: &ControllerCaps,
) -> Result<Step, InvalidMessage> {
    if len == 0 {
        return Err(InvalidMessage::EmptyTransfer { index });
    }
    let speed_hz = if speed_override == 0 || speed_override == dev.speed_hz {
        dev.speed_hz
    } else {
        check_speed(Some(index), speed_override, dev, caps)?;
        speed_override
    };
    let bits = if bits_override == 0 || bits_override == dev.bits_per_word {
        dev.bits_per_word
    } else {
        check_bits(Some(index), bits_override, caps)?;
        bits_override
    };
    let wb = word_bytes(bits);
    if !len.is_multiple_of(wb) {
        return Err(InvalidMessage::PartialWord { index, len, word_bytes: wb });
    }
    let wire_ns = wire_ns((len / wb) as u64 * u64::from(bits), caps.actual_speed_hz(speed_hz));
    Ok(Step { len, bits, speed_hz, wire_ns, ..Step::EMPTY })
}

/// How long `bits` take on the wire at `sclk_hz`, rounded up.
#[inline]
fn wire_ns(bits: u64, sclk_hz: u32) -> u64 {
    let sclk_hz = u64::from(sclk_hz.max(1));
    match bits.checked_mul(1_000_000_000) {
        Some(bit_ns) => bit_ns.div_ceil(sclk_hz),
        None => wire_ns_of_gigabytes(bits, sclk_hz),
    }
}

/// [`wire_ns`] above ~2.3 GB: 128-bit arithmetic (a library call, kept off the usual path).
#[cold]
#[inline(never)]
fn wire_ns_of_gigabytes(bits: u64, sclk_hz: u64) -> u64 {
    u64::try_from((u128::from(bits) * 1_000_000_000).div_ceil(u128::from(sclk_hz))).unwrap_or(u64::MAX)
}

/// Validates a whole message; nothing is sent unless every transfer is valid.
pub(crate) fn validate(
    transfers: &[Transfer<'_>],
    dev: &DeviceConfig,
    caps: &ControllerCaps,
) -> Result<(), InvalidMessage> {
    if transfers.is_empty() {
        return Err(InvalidMessage::Empty);
    }
    for (i, t) in transfers.iter().enumerate() {
        plan_step(i, t, dev, caps)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::controller::test_caps;

    #[test]
    fn wire_time_of_gigabytes_does_not_wrap() {
        let caps = test_caps();
        let dev = DeviceConfig::new(0, 20_000_000);
        // 2.4 GB × 8 bits × 10^9 does not fit in 64 bits.
        let st = plan_shape(0, 2_400_000_000, 0, 0, &dev, &caps).unwrap();
        assert_eq!(st.wire_ns, 960_000_000_000);
    }
}

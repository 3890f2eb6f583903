//! Validation: turns a transfer and its device into a [`Step`] the executor
//! runs, or says precisely why it cannot be sent.

use super::controller::ControllerCaps;
use super::device::{ChipSelect, DeviceConfig};
use super::error::InvalidMessage;
use super::transfer::Transfer;

/// A validated transfer: everything the executor needs, precomputed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub len: usize,
    pub bits: u8,
    pub speed_hz: u32,
    pub wire_ns: u64,
    pub delay_before_ns: u64,
    pub delay_after_ns: u64,
    pub cs_change: bool,
    pub cs_change_delay_ns: Option<u32>,
    pub word_delay_ns: u32,
    pub tx: bool,
    pub rx: bool,
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
    check_speed(None, dev.speed_hz, dev, caps)?;
    check_bits(None, dev.bits_per_word, caps)
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
    let mut st = plan_shape(index, len, t.speed_hz, t.bits_per_word, dev, caps)?;
    st.tx = tx;
    st.rx = rx;
    st.delay_after_ns = u64::from(t.delay_after_ns);
    st.cs_change = t.cs_change;
    st.cs_change_delay_ns = t.cs_change_delay_ns;
    st.word_delay_ns = t.word_delay_ns;
    Ok(st)
}

/// Validates a transfer of `len` bytes with optional speed and word-size
/// overrides (0 = the device's); direction, delays and CS flags are left off.
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
    let speed_hz = if speed_override == 0 { dev.speed_hz } else { speed_override };
    check_speed(Some(index), speed_hz, dev, caps)?;
    let bits = if bits_override == 0 { dev.bits_per_word } else { bits_override };
    check_bits(Some(index), bits, caps)?;
    let wb = word_bytes(bits);
    if !len.is_multiple_of(wb) {
        return Err(InvalidMessage::PartialWord { index, len, word_bytes: wb });
    }
    let actual = u64::from(caps.actual_speed_hz(speed_hz).max(1));
    let bits_on_wire = (len / wb) as u64 * u64::from(bits);
    let wire_ns = match bits_on_wire.checked_mul(1_000_000_000) {
        Some(bit_ns) => bit_ns.div_ceil(actual),
        // Above ~2.3 GB: 128-bit arithmetic (a library call, kept off the usual path).
        None => {
            u64::try_from((u128::from(bits_on_wire) * 1_000_000_000).div_ceil(u128::from(actual))).unwrap_or(u64::MAX)
        }
    };
    Ok(Step { len, bits, speed_hz, wire_ns, ..Step::EMPTY })
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

//! `wire = "spi<bus>.<cs>:<pin>"`: parsing, and resolving against the SPI
//! devices the board has (the device must exist and have the pin).

use super::model::{SpiBusSpec, WireRef};

/// Parses and resolves `text`, or says (in one line) why it names no pin.
pub fn resolve(text: &str, spi: &[SpiBusSpec]) -> Result<WireRef, String> {
    let (bus, cs, pin) = parse(text).ok_or_else(|| {
        format!("bad wire \"{text}\": expected \"spi<bus>.<cs>:<pin>\", e.g. \"spi0.2:int\" or \"spi0.0:wp\"")
    })?;
    let device = spi
        .iter()
        .filter(|b| b.bus == bus)
        .flat_map(|b| &b.devices)
        .find(|d| d.cs == cs)
        .ok_or_else(|| format!("wire \"{text}\": no device at spi{bus}.{cs} (devices: {})", device_list(spi)))?;
    let pins = device.kind.pins();
    let known = || {
        if pins.is_empty() {
            "none".to_owned()
        } else {
            pins.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        }
    };
    let pin = pins.iter().copied().find(|p| p.name().eq_ignore_ascii_case(pin)).ok_or_else(|| {
        format!("wire \"{text}\": spi{bus}.{cs} ({}) has no pin \"{pin}\" (pins: {})", device.kind.name(), known())
    })?;
    Ok(WireRef { bus, cs, pin })
}

/// `spi<bus>.<cs>:<pin>` split into its parts.
fn parse(text: &str) -> Option<(u32, u8, &str)> {
    let (device, pin) = text.trim().strip_prefix("spi")?.split_once(':')?;
    let (bus, cs) = device.split_once('.')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(bus) || !all_digits(cs) || pin.is_empty() {
        return None;
    }
    Some((bus.parse().ok()?, cs.parse().ok()?, pin))
}

/// `spi0.0 spi-nor, spi0.1 loopback`, or `none`.
fn device_list(spi: &[SpiBusSpec]) -> String {
    let all: Vec<String> = spi
        .iter()
        .flat_map(|b| b.devices.iter().map(move |d| format!("spi{}.{} {}", b.bus, d.cs, d.kind.name())))
        .collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

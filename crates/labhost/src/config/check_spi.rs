//! Checks `[[spi]]` tables and their devices: ranges, duplicates, kinds,
//! chips and which keys each kind takes.

use super::errors::{BoardError, Source};
use super::limits;
use super::model::{DeviceKind, DeviceSpec, SpiBusSpec};
use super::schema::{RawDevice, RawSpi};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use toml::Spanned;
use wirespeed_lab::devices::ad7606::{self, Range, Signal};
use wirespeed_lab::devices::spi_nor::CHIPS;
use wirespeed_lab::devices::ChipSpec;

/// The kinds of device, as a board file names them.
const KINDS: &str = "spi-nor, loopback, mcp2518fd, ad7606";

/// `value`, if in `range`; else an error at its line naming `key` and the range.
pub fn in_range<T: PartialOrd + Display + Copy>(
    src: &Source<'_>,
    value: &Spanned<T>,
    key: &str,
    range: RangeInclusive<T>,
) -> Result<T, BoardError> {
    let v = *value.get_ref();
    if range.contains(&v) {
        Ok(v)
    } else {
        Err(src
            .error(value.span(), format!("{key} = {v} is out of range (allowed: {}..={})", range.start(), range.end())))
    }
}

/// Checks every `[[spi]]` table.
pub fn check(src: &Source<'_>, raw: &[Spanned<RawSpi>]) -> Result<Vec<SpiBusSpec>, BoardError> {
    let mut buses: Vec<SpiBusSpec> = Vec::with_capacity(raw.len());
    for table in raw {
        let spec = check_bus(src, table)?;
        if let Some(first) = buses.iter().find(|b| b.bus == spec.bus) {
            let msg =
                format!("bus {} is already described at line {}; each [[spi]] needs its own bus", spec.bus, first.line);
            return Err(src.error(table.get_ref().bus.span(), msg));
        }
        buses.push(spec);
    }
    Ok(buses)
}

fn check_bus(src: &Source<'_>, table: &Spanned<RawSpi>) -> Result<SpiBusSpec, BoardError> {
    let raw = table.get_ref();
    let base_clock_hz = match &raw.base_clock_hz {
        Some(v) => in_range(src, v, "base_clock_hz", limits::BASE_CLOCK_HZ)?,
        None => limits::default_base_clock_hz(),
    };
    let fifo_bytes = match &raw.fifo_bytes {
        Some(v) => in_range(src, v, "fifo_bytes", limits::FIFO_BYTES)?,
        None => limits::default_fifo_bytes(),
    };
    let bufsiz = match &raw.bufsiz {
        Some(v) => in_range(src, v, "bufsiz", limits::BUFSIZ)? as usize,
        None => limits::DEFAULT_BUFSIZ,
    };
    let bus = *raw.bus.get_ref();
    let mut devices: Vec<DeviceSpec> = Vec::with_capacity(raw.device.len());
    for device in &raw.device {
        let spec = check_device(src, device, base_clock_hz)?;
        if let Some(first) = devices.iter().find(|d| d.cs == spec.cs) {
            let msg = format!("cs {} of bus {bus} is already used at line {}", spec.cs, first.line);
            return Err(src.error(device.get_ref().cs.span(), msg));
        }
        devices.push(spec);
    }
    Ok(SpiBusSpec { bus, line: src.line_of(table.span().start), base_clock_hz, fifo_bytes, bufsiz, devices })
}

fn check_device(src: &Source<'_>, table: &Spanned<RawDevice>, base_clock_hz: u64) -> Result<DeviceSpec, BoardError> {
    let raw = table.get_ref();
    let line = src.line_of(table.span().start);
    let num_cs = limits::num_cs();
    let cs = *raw.cs.get_ref();
    if cs >= num_cs {
        let msg =
            format!("cs = {cs} is out of range: the SPI block has {num_cs} chip selects (allowed: 0..={})", num_cs - 1);
        return Err(src.error(raw.cs.span(), msg));
    }
    let top = base_clock_hz / 2;
    let max_speed_hz = match &raw.max_speed_hz {
        Some(v) => {
            let bottom = base_clock_hz.div_ceil(limits::MAX_CLOCK_DIVIDER).max(1);
            let range = u32::try_from(bottom).unwrap_or(u32::MAX)..=u32::try_from(top).unwrap_or(u32::MAX);
            in_range(src, v, "max_speed_hz", range).map_err(|e| BoardError {
                message: format!("{} (the block's base_clock_hz is {base_clock_hz})", e.message),
                ..e
            })?
        }
        None => limits::DEFAULT_MAX_SPEED_HZ.min(u32::try_from(top).unwrap_or(u32::MAX)),
    };
    let kind_name = raw.kind.get_ref().as_str();
    let kind = match kind_name {
        "spi-nor" => check_nor(src, raw, line)?,
        "loopback" => DeviceKind::Loopback,
        "mcp2518fd" => check_mcp(src, raw)?,
        "ad7606" => check_ad7606(src, raw)?,
        other => return Err(src.error(raw.kind.span(), format!("unknown kind \"{other}\" (known: {KINDS})"))),
    };
    refuse_foreign_keys(src, raw, &kind)?;
    Ok(DeviceSpec { cs, line, max_speed_hz, kind })
}

fn check_nor(src: &Source<'_>, raw: &RawDevice, line: usize) -> Result<DeviceKind, BoardError> {
    let known = || CHIPS.iter().map(|c| c.name.to_ascii_lowercase()).collect::<Vec<_>>().join(", ");
    let Some(chip) = &raw.chip else {
        return Err(src.error_at_line(line, format!("a spi-nor device needs `chip` (known: {})", known())));
    };
    let chip = ChipSpec::by_name(chip.get_ref())
        .ok_or_else(|| src.error(chip.span(), format!("unknown chip \"{}\" (known: {})", chip.get_ref(), known())))?;
    let image = match &raw.image {
        Some(p) if p.get_ref().is_empty() => {
            return Err(src.error(p.span(), "image = \"\": give a file name, or leave image out for a chip in memory"));
        }
        Some(p) => Some(PathBuf::from(p.get_ref())),
        None => None,
    };
    let time_scale = match &raw.time_scale {
        Some(t) if !(t.get_ref().is_finite() && *t.get_ref() >= 0.0) => {
            let msg = format!(
                "time_scale = {} is out of range (allowed: a finite number >= 0; 1.0 is the datasheet's times)",
                t.get_ref()
            );
            return Err(src.error(t.span(), msg));
        }
        Some(t) => *t.get_ref(),
        None => 1.0,
    };
    Ok(DeviceKind::SpiNor { chip, image, time_scale })
}

fn check_mcp(src: &Source<'_>, raw: &RawDevice) -> Result<DeviceKind, BoardError> {
    let osc_hz = match &raw.osc_hz {
        Some(v) if !limits::OSC_HZ.contains(v.get_ref()) => {
            let allowed: Vec<String> = limits::OSC_HZ.iter().map(u64::to_string).collect();
            let msg = format!(
                "osc_hz = {} is not a crystal the MCP2518FD takes (allowed: {})",
                v.get_ref(),
                allowed.join(", ")
            );
            return Err(src.error(v.span(), msg));
        }
        Some(v) => *v.get_ref(),
        None => limits::OSC_HZ[2],
    };
    let can_bitrate = match &raw.can_bitrate {
        Some(v) => in_range(src, v, "can_bitrate", limits::CAN_BITRATE)?,
        None => limits::DEFAULT_CAN_BITRATE,
    };
    let can_data_bitrate = match &raw.can_data_bitrate {
        Some(v) => in_range(src, v, "can_data_bitrate", can_bitrate..=limits::MAX_CAN_DATA_BITRATE)?,
        None => limits::DEFAULT_CAN_DATA_BITRATE.max(can_bitrate),
    };
    Ok(DeviceKind::Mcp2518fd { osc_hz, can_bitrate, can_data_bitrate })
}

fn check_ad7606(src: &Source<'_>, raw: &RawDevice) -> Result<DeviceKind, BoardError> {
    let range = match &raw.range {
        None => Range::Pm10V,
        Some(r) => match r.get_ref().trim().trim_start_matches('±') {
            "10V" => Range::Pm10V,
            "5V" => Range::Pm5V,
            other => {
                return Err(src
                    .error(r.span(), format!("range = \"{other}\" is not an AD7606 range (allowed: \"5V\", \"10V\")")))
            }
        },
    };
    let oversampling = match &raw.oversampling {
        None => 1,
        Some(v) if ad7606::timing::oversampling_index(*v.get_ref()).is_none() => {
            let msg = format!(
                "oversampling = {} is not a ratio the OS pins select (allowed: 1, 2, 4, 8, 16, 32, 64)",
                v.get_ref()
            );
            return Err(src.error(v.span(), msg));
        }
        Some(v) => *v.get_ref(),
    };
    let mut signals = Vec::new();
    if let Some(list) = &raw.signals {
        if list.get_ref().len() > 8 {
            let msg =
                format!("signals has {} entries; the AD7606 has 8 channels (allowed: 0..=8)", list.get_ref().len());
            return Err(src.error(list.span(), msg));
        }
        for text in list.get_ref() {
            signals.push(text.parse::<Signal>().map_err(|e| src.error(list.span(), e))?);
        }
    }
    Ok(DeviceKind::Ad7606 { range, oversampling, signals })
}

/// Refuses a key that belongs to another kind of device.
fn refuse_foreign_keys(src: &Source<'_>, raw: &RawDevice, kind: &DeviceKind) -> Result<(), BoardError> {
    let (nor, mcp, adc) = match kind {
        DeviceKind::SpiNor { .. } => (true, false, false),
        DeviceKind::Loopback => (false, false, false),
        DeviceKind::Mcp2518fd { .. } => (false, true, false),
        DeviceKind::Ad7606 { .. } => (false, false, true),
    };
    let keys = [
        ("chip", raw.chip.as_ref().map(Spanned::span), nor),
        ("image", raw.image.as_ref().map(Spanned::span), nor),
        ("time_scale", raw.time_scale.as_ref().map(Spanned::span), nor),
        ("osc_hz", raw.osc_hz.as_ref().map(Spanned::span), mcp),
        ("can_bitrate", raw.can_bitrate.as_ref().map(Spanned::span), mcp),
        ("can_data_bitrate", raw.can_data_bitrate.as_ref().map(Spanned::span), mcp),
        ("range", raw.range.as_ref().map(Spanned::span), adc),
        ("oversampling", raw.oversampling.as_ref().map(Spanned::span), adc),
        ("signals", raw.signals.as_ref().map(Spanned::span), adc),
    ];
    for (key, span, allowed) in &keys {
        if let (Some(span), false) = (span, allowed) {
            let own: Vec<&str> = keys.iter().filter(|k| k.2).map(|k| k.0).collect();
            let mut all = vec!["cs", "kind", "max_speed_hz"];
            all.extend(own);
            let msg = format!("`{key}` is not a key of a {} device (its keys: {})", kind.name(), all.join(", "));
            return Err(src.error(span.clone(), msg));
        }
    }
    Ok(())
}

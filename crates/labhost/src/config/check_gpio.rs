//! Checks `[[gpio]]` tables and their lines: ranges, duplicates, names,
//! and each line's one driver (a wire is resolved against the SPI devices).

use super::check_spi::in_range;
use super::errors::{BoardError, Source};
use super::limits;
use super::model::{GpioChipSpec, LineDriver, LineDriverSpec, SpiBusSpec};
use super::schema::{RawGpio, RawLevel, RawLine};
use super::wire;
use std::ops::Range;
use toml::Spanned;

/// Checks every `[[gpio]]` table; wires name devices of `spi`.
pub fn check(src: &Source<'_>, raw: &[Spanned<RawGpio>], spi: &[SpiBusSpec]) -> Result<Vec<GpioChipSpec>, BoardError> {
    let mut chips: Vec<GpioChipSpec> = Vec::with_capacity(raw.len());
    for table in raw {
        let spec = check_chip(src, table, spi)?;
        if let Some(first) = chips.iter().find(|c| c.chip == spec.chip) {
            let msg = format!(
                "gpio chip {} is already described at line {}; each [[gpio]] needs its own chip",
                spec.chip, first.line
            );
            return Err(src.error(table.get_ref().chip.span(), msg));
        }
        chips.push(spec);
    }
    refuse_shared_inputs(src, &chips)?;
    Ok(chips)
}

fn check_chip(src: &Source<'_>, table: &Spanned<RawGpio>, spi: &[SpiBusSpec]) -> Result<GpioChipSpec, BoardError> {
    let raw = table.get_ref();
    let chip = *raw.chip.get_ref();
    let lines = in_range(src, &raw.lines, "lines", limits::LINES)?;
    let label = match &raw.label {
        Some(l) => check_name(src, l, "label")?,
        None => limits::default_label(),
    };
    let mut names = vec![None; lines as usize];
    let mut seen: Vec<(u32, usize)> = Vec::new();
    let mut drivers = Vec::new();
    for entry in &raw.line {
        let line = entry.get_ref();
        let offset = *line.offset.get_ref();
        if offset >= lines {
            let msg = format!(
                "offset = {offset} is out of range: gpiochip{chip} has {lines} lines (allowed: 0..={})",
                lines - 1
            );
            return Err(src.error(line.offset.span(), msg));
        }
        if let Some((_, at)) = seen.iter().find(|(o, _)| *o == offset) {
            let msg = format!("line {offset} of gpiochip{chip} is already described at line {at}");
            return Err(src.error(line.offset.span(), msg));
        }
        let header = src.line_of(entry.span().start);
        seen.push((offset, header));
        if let Some(name) = &line.name {
            names[offset as usize] = Some(check_name(src, name, "name")?);
        }
        if let Some(driver) = check_driver(src, line, spi)? {
            drivers.push(LineDriverSpec { offset, line: header, driver });
        }
    }
    Ok(GpioChipSpec { chip, line: src.line_of(table.span().start), lines, label, names, drivers })
}

/// A line name or chip label: 1 to 31 bytes, no NUL.
fn check_name(src: &Source<'_>, value: &Spanned<String>, key: &str) -> Result<String, BoardError> {
    let s = value.get_ref();
    if s.is_empty() || s.len() > limits::MAX_NAME_BYTES || s.contains('\0') {
        let msg = format!(
            "{key} = \"{}\" is not allowed: 1 to {} bytes with no NUL (the uAPI's name fields)",
            s.escape_default(),
            limits::MAX_NAME_BYTES
        );
        return Err(src.error(value.span(), msg));
    }
    Ok(s.clone())
}

/// The line's one driver, if it has one.
fn check_driver(src: &Source<'_>, line: &RawLine, spi: &[SpiBusSpec]) -> Result<Option<LineDriver>, BoardError> {
    let mut given: Vec<(&str, Range<usize>)> = [
        ("toggle_every_us", line.toggle_every_us.as_ref().map(Spanned::span)),
        ("level", line.level.as_ref().map(Spanned::span)),
        ("wire", line.wire.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(k, s)| Some((k, s?)))
    .collect();
    given.sort_by_key(|(_, span)| span.start);
    if let [(first, _), (second, span), ..] = given.as_slice() {
        let msg = format!(
            "line {} has two drivers ({first} and {second}); a line takes at most one of toggle_every_us, level, wire",
            line.offset.get_ref()
        );
        return Err(src.error(span.clone(), msg));
    }
    if let Some(t) = &line.toggle_every_us {
        return Ok(Some(LineDriver::Toggle { period_us: in_range(src, t, "toggle_every_us", limits::TOGGLE_US)? }));
    }
    if let Some(level) = &line.level {
        return Ok(Some(LineDriver::Level(*level.get_ref() == RawLevel::High)));
    }
    if let Some(w) = &line.wire {
        return Ok(Some(LineDriver::Wire(wire::resolve(w.get_ref(), spi).map_err(|m| src.error(w.span(), m))?)));
    }
    Ok(None)
}

/// Refuses two lines driving the same device input (a net with two drivers).
fn refuse_shared_inputs(src: &Source<'_>, chips: &[GpioChipSpec]) -> Result<(), BoardError> {
    let mut inputs: Vec<(super::model::WireRef, usize)> = Vec::new();
    for d in chips.iter().flat_map(|c| &c.drivers) {
        let LineDriver::Wire(w) = d.driver else { continue };
        if w.pin.is_device_output() {
            continue;
        }
        if let Some((_, first)) = inputs.iter().find(|(x, _)| *x == w) {
            let msg = format!(
                "spi{}.{}:{} is already driven by the line described at line {first}; a device input takes one line",
                w.bus,
                w.cs,
                w.pin.name()
            );
            return Err(src.error_at_line(d.line, msg));
        }
        inputs.push((w, d.line));
    }
    Ok(())
}

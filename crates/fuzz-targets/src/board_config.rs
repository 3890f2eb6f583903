//! Target `board_config`: the shim's board file (`WIRESPEED_LAB=lab.toml`,
//! `wirespeed_labhost::config::parse`).
//!
//! Half the inputs are raw text; the other half are board files assembled
//! from the format's own tables and keys with values drawn anywhere (in
//! range, at the edges, out of range, of the wrong type), so the checks
//! behind the TOML parser are reached. Either way `parse` returns a spec or
//! a one-line [`BoardError`](wirespeed_labhost::config::BoardError) whose
//! line is in the file; a spec it returns keeps the documented ranges.

use arbitrary::{Result, Unstructured};
use std::fmt::Write;
use wirespeed_labhost::config::{limits, parse, DeviceKind};

const SPI_KEYS: &[&str] = &["bus", "base_clock_hz", "fifo_bytes", "bufsiz", "name"];
const DEVICE_KEYS: &[&str] = &[
    "cs",
    "kind",
    "chip",
    "max_speed_hz",
    "time_scale",
    "osc_hz",
    "can_bitrate",
    "can_data_bitrate",
    "range",
    "oversampling",
    "signals",
];
const GPIO_KEYS: &[&str] = &["chip", "lines", "label"];
const LINE_KEYS: &[&str] = &["offset", "name", "toggle_every_us", "level", "wire"];
const STRINGS: &[&str] = &[
    "spi-nor",
    "loopback",
    "mcp2518fd",
    "ad7606",
    "w25q128jv",
    "mx25l12835f",
    "gd25q64c",
    "sst25vf016b",
    "w25q256jv",
    "10V",
    "5V",
    "high",
    "low",
    "spi0.0:wp",
    "spi0.1:int",
    "spi0.2:int0",
    "spi0.3:convst",
    "spi0.3:busy",
    "spi1.2:int1",
    "spi0.9:int",
    "",
    "a-name-that-is-longer-than-31-bytes!",
];
const SIGNALS: &[&str] =
    &["dc:2.5V", "sine:1.0V:50Hz", "sine:1V:1Hz:0.5V", "noise:0.01V", "noise:1V:-1V", "dc:xV", "sq:1V"];

fn value(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0u8..=9)? {
        0 => u.int_in_range(0u64..=5)?.to_string(),
        1 => u.arbitrary::<u32>()?.to_string(),
        2 => u.arbitrary::<i64>()?.to_string(),
        3 => format!("{:?}", u.choose(STRINGS)?),
        4 => format!("{:?}", u.arbitrary::<f64>()?).replace("NaN", "nan"),
        5 => {
            let n = u.int_in_range(0usize..=9)?;
            let items: Result<Vec<String>> = (0..n).map(|_| Ok(format!("{:?}", u.choose(SIGNALS)?))).collect();
            format!("[{}]", items?.join(", "))
        }
        6 => u.arbitrary::<bool>()?.to_string(),
        7 => ["4000000", "20000000", "40000000", "200000000", "4294967295", "4294967296", "65536", "65537"]
            [u.int_in_range(0usize..=7)?]
        .to_string(),
        8 => ["1", "2", "4", "8", "16", "32", "64", "3", "511", "512", "513", "10", "3600000000"]
            [u.int_in_range(0usize..=12)?]
        .to_string(),
        _ => {
            let n = u.int_in_range(0usize..=8)?;
            format!("{:?}", String::from_utf8_lossy(u.bytes(n)?))
        }
    })
}

fn table(u: &mut Unstructured<'_>, out: &mut String, header: &str, keys: &[&str]) -> Result<()> {
    writeln!(out, "{header}").ok();
    for _ in 0..u.int_in_range(0usize..=6)? {
        let key = if u.ratio(1u8, 16)? { "unknown_key" } else { u.choose(keys)? };
        writeln!(out, "{key} = {}", value(u)?).ok();
    }
    Ok(())
}

fn board(u: &mut Unstructured<'_>) -> Result<String> {
    let mut out = String::new();
    if u.arbitrary()? {
        writeln!(out, "[lab]\ninstant_wire = {}", value(u)?).ok();
    }
    for _ in 0..u.int_in_range(0usize..=3)? {
        table(u, &mut out, "[[spi]]", SPI_KEYS)?;
        for _ in 0..u.int_in_range(0usize..=5)? {
            table(u, &mut out, "[[spi.device]]", DEVICE_KEYS)?;
        }
    }
    for _ in 0..u.int_in_range(0usize..=2)? {
        table(u, &mut out, "[[gpio]]", GPIO_KEYS)?;
        for _ in 0..u.int_in_range(0usize..=5)? {
            table(u, &mut out, "[[gpio.line]]", LINE_KEYS)?;
        }
    }
    Ok(out)
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let text = match data.split_first() {
        Some((&b, rest)) if b & 1 == 0 => String::from_utf8_lossy(rest).into_owned(),
        Some((_, rest)) => match board(&mut Unstructured::new(rest)) {
            Ok(text) => text,
            Err(_) => return,
        },
        None => return,
    };
    match parse(&text, "lab.toml") {
        Err(e) => {
            let lines = text.lines().count().max(1);
            if let Some(line) = e.line {
                assert!((1..=lines + 1).contains(&line), "line {line} of {lines}: {e}");
            }
            assert!(!e.message.contains('\n'), "one line: {e:?}");
            assert!(!e.message.is_empty(), "empty message for {text:?}: {e:?}");
        }
        Ok(spec) => {
            let mut buses: Vec<u32> = spec.spi.iter().map(|b| b.bus).collect();
            buses.sort_unstable();
            buses.dedup();
            assert_eq!(buses.len(), spec.spi.len(), "bus numbers once");
            for b in &spec.spi {
                assert!(limits::BASE_CLOCK_HZ.contains(&b.base_clock_hz), "{b:?}");
                assert!(limits::FIFO_BYTES.contains(&b.fifo_bytes), "{b:?}");
                assert!(limits::BUFSIZ.contains(&(b.bufsiz as u64)), "{b:?}");
                let mut cs: Vec<u8> = b.devices.iter().map(|d| d.cs).collect();
                cs.sort_unstable();
                cs.dedup();
                assert_eq!(cs.len(), b.devices.len(), "chip selects once: {b:?}");
                for d in &b.devices {
                    assert!(d.cs < limits::num_cs(), "{d:?}");
                    assert!(d.max_speed_hz > 0 && u64::from(d.max_speed_hz) <= b.base_clock_hz / 2, "{d:?}");
                    match &d.kind {
                        DeviceKind::SpiNor { time_scale, .. } => assert!(time_scale.is_finite() && *time_scale >= 0.0),
                        DeviceKind::Ad7606 { oversampling, signals, .. } => {
                            assert!(oversampling.is_power_of_two() && *oversampling <= 64 && signals.len() <= 8)
                        }
                        DeviceKind::Mcp2518fd { osc_hz, can_bitrate, can_data_bitrate } => {
                            assert!(limits::OSC_HZ.contains(osc_hz));
                            assert!(limits::CAN_BITRATE.contains(can_bitrate));
                            assert!(
                                can_data_bitrate >= can_bitrate && *can_data_bitrate <= limits::MAX_CAN_DATA_BITRATE
                            );
                        }
                        DeviceKind::Loopback => {}
                    }
                }
            }
            for g in &spec.gpio {
                assert!(limits::LINES.contains(&g.lines), "{g:?}");
                assert!((1..=limits::MAX_NAME_BYTES).contains(&g.label.len()), "{g:?}");
            }
        }
    }
}

//! Writes a [`Trace`] as a Value Change Dump (IEEE 1364 §18), 1 ns timescale,
//! with one `cs<N>` wire per chip select seen, and `sclk`, `mosi`, `miso`
//! driven bit by bit (mode 0: data changes on the falling edge, sampled on
//! the rising edge in the middle of each bit). PulseView and GTKWave open it.

use super::{Trace, TraceEvent};
use std::collections::BTreeSet;
use std::io::{self, Write};

/// Writes `trace` as VCD to `out`. Times are relative to the first event.
pub fn write_vcd(trace: &Trace, out: &mut impl Write) -> io::Result<()> {
    let lines: BTreeSet<u8> = trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Cs { line, .. } => Some(*line),
            TraceEvent::Word { .. } => None,
        })
        .collect();
    let origin = trace
        .events
        .iter()
        .map(|e| match e {
            TraceEvent::Cs { at, .. } => *at,
            TraceEvent::Word { start, .. } => *start,
        })
        .min()
        .unwrap_or_default();

    writeln!(out, "$date wirespeed lab trace $end")?;
    writeln!(out, "$version wirespeed-lab {} $end", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "$timescale 1ns $end")?;
    writeln!(out, "$scope module spi $end")?;
    writeln!(out, "$var wire 1 c sclk $end")?;
    writeln!(out, "$var wire 1 o mosi $end")?;
    writeln!(out, "$var wire 1 i miso $end")?;
    for l in &lines {
        writeln!(out, "$var wire 1 s{l} cs{l} $end")?;
    }
    writeln!(out, "$upscope $end")?;
    writeln!(out, "$enddefinitions $end")?;
    writeln!(out, "#0")?;
    writeln!(out, "$dumpvars")?;
    writeln!(out, "0c\n0o\n0i")?;
    for l in &lines {
        writeln!(out, "1s{l}")?;
    }
    writeln!(out, "$end")?;

    // Changes are collected as (time, order, text) and sorted so that
    // interleaved CS edges and words come out in time order.
    let mut changes: Vec<(u64, u32, String)> = Vec::new();
    for (order, ev) in trace.events.iter().enumerate() {
        let order = order as u32;
        match *ev {
            TraceEvent::Cs { line, asserted, at } => {
                changes.push((at.ns_since(origin), order, format!("{}s{line}", if asserted { 0 } else { 1 })));
            }
            TraceEvent::Word { start, end, bits, mosi, miso } => {
                let span = end.ns_since(start);
                let b = u64::from(bits.max(1));
                for i in 0..b {
                    let t0 = start.ns_since(origin) + span * i / b;
                    let mid = start.ns_since(origin) + (span * (2 * i + 1)) / (2 * b);
                    let shift = b - 1 - i;
                    changes.push((t0, order, format!("0c\n{}o\n{}i", (mosi >> shift) & 1, (miso >> shift) & 1)));
                    changes.push((mid, order, "1c".to_owned()));
                }
                changes.push((end.ns_since(origin), order, "0c".to_owned()));
            }
        }
    }
    changes.sort_by_key(|c| (c.0, c.1));
    let mut last_t = Some(0);
    for (t, _, text) in changes {
        if last_t != Some(t) {
            writeln!(out, "#{t}")?;
            last_t = Some(t);
        }
        writeln!(out, "{text}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_time::Instant;

    #[test]
    fn vcd_has_header_signals_and_monotonic_times() {
        let trace = Trace {
            events: vec![
                TraceEvent::Cs { line: 0, asserted: true, at: Instant::from_ns(1_000) },
                TraceEvent::Word {
                    start: Instant::from_ns(1_050),
                    end: Instant::from_ns(1_450),
                    bits: 8,
                    mosi: 0x80,
                    miso: 0x01,
                },
                TraceEvent::Cs { line: 0, asserted: false, at: Instant::from_ns(1_500) },
            ],
            dropped: 0,
        };
        let mut buf = Vec::new();
        write_vcd(&trace, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("$timescale 1ns $end"));
        assert!(text.contains("$var wire 1 s0 cs0 $end"));
        let times: Vec<u64> = text.lines().filter_map(|l| l.strip_prefix('#')).map(|n| n.parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "times must increase: {times:?}");
        assert_eq!(*times.last().unwrap(), 500);
        // First bit of MOSI 0x80 is 1, of MISO 0x01 is 0; the last bit of MISO is 1.
        let after_50: Vec<&str> = text.split("#50\n").nth(1).unwrap().lines().take(3).collect();
        assert_eq!(after_50, vec!["0c", "1o", "0i"]);
    }
}

//! The bus trace: a logic analyzer on an SPI bus's wires.
//!
//! A controller records every chip-select edge and every word it shifts,
//! with the lab-clock instant of its first and last clock, and the bits on
//! MOSI and MISO. [`cs_windows`] turns that into per-CS-assertion windows, from
//! which benchmarks read "CS active → first clock" and "CS high between two
//! accesses" exactly as the seed's author read them from a scope. [`vcd`]
//! writes the trace for PulseView or GTKWave.

pub mod vcd;

use wirespeed_time::Instant;

/// Chip-select line numbers at or above this value are GPIO chip selects
/// (line = `GPIO_CS_BASE` + the order in which they were attached).
pub const GPIO_CS_BASE: u8 = 16;

/// One event on the wires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A chip select changed.
    Cs {
        /// Line number (native index, or `GPIO_CS_BASE + n` for GPIO chip selects).
        line: u8,
        /// True when the line went active.
        asserted: bool,
        /// When.
        at: Instant,
    },
    /// One word shifted.
    Word {
        /// First clock edge of the word.
        start: Instant,
        /// End of the word's last bit.
        end: Instant,
        /// Bits in the word.
        bits: u8,
        /// Master out.
        mosi: u32,
        /// Slave out.
        miso: u32,
    },
}

/// A bounded event recorder. Disabled recorders cost one branch per event.
#[derive(Debug, Default)]
pub struct Recorder {
    enabled: bool,
    capacity: usize,
    events: Vec<TraceEvent>,
    dropped: u64,
}

impl Recorder {
    /// Starts recording (clearing what was recorded) with room for `capacity` events.
    pub fn enable(&mut self, capacity: usize) {
        self.enabled = true;
        self.capacity = capacity;
        self.events = Vec::with_capacity(capacity.min(1 << 20));
        self.dropped = 0;
    }

    /// Stops recording; keeps what was recorded.
    pub fn disable(&mut self) {
        self.enabled = false;
    }

    /// Whether events are being recorded (so that a caller can skip building them).
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Records an event (dropped, and counted, once full).
    #[inline]
    pub fn record(&mut self, ev: TraceEvent) {
        if self.enabled {
            if self.events.len() < self.capacity {
                self.events.push(ev);
            } else {
                self.dropped += 1;
            }
        }
    }

    /// Takes the recorded events, leaving the recorder empty (still enabled if it was).
    pub fn take(&mut self) -> Trace {
        Trace { events: std::mem::take(&mut self.events), dropped: std::mem::take(&mut self.dropped) }
    }
}

/// A finished recording.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Events in time order per kind (CS edges and words interleave by time).
    pub events: Vec<TraceEvent>,
    /// Events that did not fit.
    pub dropped: u64,
}

/// One assertion of a chip select, as a scope shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsWindow {
    /// Chip-select line.
    pub line: u8,
    /// CS went active.
    pub asserted_at: Instant,
    /// CS went inactive (None if the trace ends with CS active).
    pub deasserted_at: Option<Instant>,
    /// First clock inside the window.
    pub first_clock: Option<Instant>,
    /// End of the last clocked bit inside the window.
    pub last_clock: Option<Instant>,
    /// Words shifted inside the window.
    pub words: u32,
    /// Bits shifted inside the window.
    pub bits: u64,
    /// MOSI bytes (words are split big-endian into their bytes).
    pub mosi: Vec<u8>,
    /// MISO bytes.
    pub miso: Vec<u8>,
}

impl CsWindow {
    /// CS active → first clock, in ns.
    pub fn cs_to_clock_ns(&self) -> Option<u64> {
        self.first_clock.map(|c| c.ns_since(self.asserted_at))
    }
    /// Last clock → CS inactive, in ns.
    pub fn clock_to_cs_ns(&self) -> Option<u64> {
        Some(self.deasserted_at?.ns_since(self.last_clock?))
    }
}

fn push_word_bytes(out: &mut Vec<u8>, word: u32, bits: u8) {
    let nbytes = bits.div_ceil(8) as usize;
    for i in (0..nbytes).rev() {
        out.push((word >> (8 * i)) as u8);
    }
}

/// Splits a trace into chip-select windows, in order of assertion. Words
/// shifted with no chip select active are ignored (as a scope triggered on CS would).
pub fn cs_windows(trace: &Trace) -> Vec<CsWindow> {
    let mut done = Vec::new();
    let mut open: Vec<CsWindow> = Vec::new();
    for ev in &trace.events {
        match *ev {
            TraceEvent::Cs { line, asserted: true, at } => open.push(CsWindow {
                line,
                asserted_at: at,
                deasserted_at: None,
                first_clock: None,
                last_clock: None,
                words: 0,
                bits: 0,
                mosi: Vec::new(),
                miso: Vec::new(),
            }),
            TraceEvent::Cs { line, asserted: false, at } => {
                if let Some(i) = open.iter().position(|w| w.line == line) {
                    let mut w = open.remove(i);
                    w.deasserted_at = Some(at);
                    done.push(w);
                }
            }
            TraceEvent::Word { start, end, bits, mosi, miso } => {
                for w in open.iter_mut() {
                    w.first_clock.get_or_insert(start);
                    w.last_clock = Some(end);
                    w.words += 1;
                    w.bits += u64::from(bits);
                    push_word_bytes(&mut w.mosi, mosi, bits);
                    push_word_bytes(&mut w.miso, miso, bits);
                }
            }
        }
    }
    done.extend(open);
    done.sort_by_key(|w| w.asserted_at);
    done
}

/// Gaps with CS inactive between consecutive windows of the same line, in ns.
pub fn cs_high_gaps_ns(windows: &[CsWindow]) -> Vec<u64> {
    let mut gaps = Vec::new();
    for pair in windows.windows(2) {
        if pair[0].line == pair[1].line {
            if let Some(d) = pair[0].deasserted_at {
                gaps.push(pair[1].asserted_at.ns_since(d));
            }
        }
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    #[test]
    fn windows_and_gaps_from_events() {
        let mut r = Recorder::default();
        r.record(TraceEvent::Cs { line: 0, asserted: true, at: t(0) }); // disabled: dropped silently
        r.enable(16);
        r.record(TraceEvent::Cs { line: 0, asserted: true, at: t(100) });
        r.record(TraceEvent::Word { start: t(150), end: t(550), bits: 8, mosi: 0xA5, miso: 0x5A });
        r.record(TraceEvent::Word { start: t(550), end: t(950), bits: 16, mosi: 0x1234, miso: 0 });
        r.record(TraceEvent::Cs { line: 0, asserted: false, at: t(1000) });
        r.record(TraceEvent::Cs { line: 0, asserted: true, at: t(1300) });
        r.record(TraceEvent::Cs { line: 0, asserted: false, at: t(1400) });
        let tr = r.take();
        assert_eq!(tr.events.len(), 6);
        let w = cs_windows(&tr);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].cs_to_clock_ns(), Some(50));
        assert_eq!(w[0].clock_to_cs_ns(), Some(50));
        assert_eq!(w[0].bits, 24);
        assert_eq!(w[0].mosi, vec![0xA5, 0x12, 0x34]);
        assert_eq!(w[1].words, 0);
        assert_eq!(cs_high_gaps_ns(&w), vec![300]);
    }

    #[test]
    fn full_recorder_counts_drops() {
        let mut r = Recorder::default();
        r.enable(1);
        for i in 0..3 {
            r.record(TraceEvent::Cs { line: 0, asserted: i % 2 == 0, at: t(i) });
        }
        let tr = r.take();
        assert_eq!((tr.events.len(), tr.dropped), (1, 2));
    }
}

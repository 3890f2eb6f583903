//! The converter's state: conversions started by CONVST, BUSY, the output
//! data registers latched at BUSY's falling edge, and the read frame the
//! serial interface shifts out.

use super::signal::{Rng, Signal};
use super::timing::{conversion_ns, Corner};
use super::{Range, Stats, CHANNELS};
use crate::pin::Pin;
use crate::scheduler::Scheduler;
use std::sync::{Mutex, Weak};
use wirespeed_time::Instant;

/// Bytes of one complete read: V1..V8, 16 bits each, MSB first.
pub(super) const FRAME_BYTES: usize = 2 * CHANNELS;

/// A conversion in progress.
#[derive(Clone, Copy, Debug)]
struct Conversion {
    ends: Instant,
    codes: [i16; CHANNELS],
}

/// The serial read in progress (one CS window).
#[derive(Clone, Copy, Debug)]
struct Frame {
    data: [u8; FRAME_BYTES],
    /// Generation of the output registers it was loaded from.
    generation: u64,
    bits: u32,
}

pub(super) struct Core {
    pub(super) range: Range,
    pub(super) oversampling: u8,
    pub(super) corner: Corner,
    pub(super) signals: [Signal; CHANNELS],
    rng: Rng,
    pub(super) busy: Pin,
    scheduler: Scheduler,
    pub(super) weak: Weak<Mutex<Core>>,
    converting: Option<Conversion>,
    output: [i16; CHANNELS],
    /// Bumped at each latch of new results.
    generation: u64,
    /// The output registers hold results no complete read has taken yet.
    unread: bool,
    frame: Option<Frame>,
    selected: bool,
    convst_high: bool,
    pub(super) reset_high: bool,
    pub(super) miso_stuck: Option<bool>,
    pub(super) stats: Stats,
}

impl Core {
    pub(super) fn new(scheduler: Scheduler, busy: Pin, range: Range, oversampling: u8, corner: Corner) -> Core {
        Core {
            range,
            oversampling,
            corner,
            signals: [Signal::default(); CHANNELS],
            rng: Rng::new(0x7606),
            busy,
            scheduler,
            weak: Weak::new(),
            converting: None,
            output: [0; CHANNELS],
            generation: 0,
            unread: false,
            frame: None,
            selected: false,
            convst_high: false,
            reset_high: false,
            miso_stuck: None,
            stats: Stats::default(),
        }
    }

    /// The code of `volts` on the current range: V / range · 32768, clamped.
    pub(super) fn code(&self, volts: f64) -> i16 {
        (volts / self.range.volts() * 32768.0).round().clamp(-32768.0, 32767.0) as i16
    }

    /// Whether a conversion is in progress as of `at`.
    pub(super) fn is_busy(&mut self, at: Instant) -> bool {
        self.advance(at);
        self.converting.is_some()
    }

    /// Applies a conversion that has ended by `at`: its results replace the
    /// output registers (counting results nobody read), BUSY falls.
    pub(super) fn advance(&mut self, at: Instant) {
        let Some(c) = self.converting else { return };
        if c.ends > at {
            return;
        }
        self.converting = None;
        if self.unread {
            self.stats.missed_conversions += 1;
        }
        self.output = c.codes;
        self.generation += 1;
        self.unread = true;
        self.stats.conversions += 1;
        self.busy.set(false, c.ends);
    }

    /// CONVST changed to `high` at `at`.
    pub(super) fn convst(&mut self, high: bool, at: Instant) {
        self.advance(at);
        let rising = high && !self.convst_high;
        self.convst_high = high;
        if !rising || self.reset_high {
            return;
        }
        if self.converting.is_some() {
            self.stats.convst_ignored += 1;
            return;
        }
        let Some(t_conv) = conversion_ns(self.oversampling, self.corner) else { return };
        let codes = self.sample(at, t_conv);
        let ends = at.add_ns(t_conv);
        self.converting = Some(Conversion { ends, codes });
        self.busy.set(true, at);
        // BUSY's fall is determined now: a GPIO input polled after `ends`
        // sees it without the interrupt thread, which is woken only if
        // something must hear the edge on time.
        if !self.busy.expect(false, ends) {
            return;
        }
        let weak = self.weak.clone();
        self.scheduler.schedule(ends, move |_| {
            if let Some(core) = weak.upgrade() {
                core.lock().unwrap_or_else(|e| e.into_inner()).advance(ends);
            }
        });
    }

    /// The codes of a conversion started at `at`: with oversampling N, the
    /// mean of N samples spread evenly over the conversion time.
    fn sample(&mut self, at: Instant, t_conv: u64) -> [i16; CHANNELS] {
        let n = u64::from(self.oversampling.max(1));
        let mut codes = [0i16; CHANNELS];
        for (ch, code) in codes.iter_mut().enumerate() {
            let signal = self.signals[ch];
            let mut sum = 0.0;
            for k in 0..n {
                let t = at.add_ns(k * t_conv / n).as_ns() as f64 * 1e-9;
                sum += signal.volts(t, &mut self.rng);
            }
            *code = self.code(sum / n as f64);
        }
        codes
    }

    /// RESET changed to `high`: a high level aborts any conversion, clears
    /// the output registers and holds the part in reset.
    pub(super) fn reset(&mut self, high: bool, at: Instant) {
        self.advance(at);
        if high && !self.reset_high {
            self.stats.resets += 1;
            self.converting = None;
            self.output = [0; CHANNELS];
            self.generation += 1;
            self.unread = false;
            self.frame = None;
            self.busy.set(false, at);
        }
        self.reset_high = high;
    }

    /// Chip select changed.
    pub(super) fn chip_select(&mut self, asserted: bool, at: Instant) {
        self.advance(at);
        self.selected = asserted;
        if !asserted {
            self.frame = None;
        }
    }

    /// One word of `bits` bits shifted out on DOUTA from `at`.
    pub(super) fn shift(&mut self, bits: u8, at: Instant) -> u32 {
        self.advance(at);
        if self.frame.is_none() {
            // The frame is loaded when the read starts: a read during BUSY
            // shifts out the previous conversion's results.
            if self.converting.is_some() {
                self.stats.reads_during_busy += 1;
            }
            self.stats.reads += 1;
            let mut data = [0u8; FRAME_BYTES];
            for (ch, v) in self.output.iter().enumerate() {
                data[2 * ch..2 * ch + 2].copy_from_slice(&v.to_be_bytes());
            }
            self.frame = Some(Frame { data, generation: self.generation, bits: 0 });
        }
        let frame = self.frame.as_mut().expect("loaded above");
        let mut word = 0u32;
        for _ in 0..bits {
            let b = frame.bits as usize;
            let bit = b < 8 * FRAME_BYTES && frame.data[b / 8] & (0x80 >> (b % 8)) != 0;
            word = (word << 1) | u32::from(bit);
            frame.bits += 1;
        }
        if frame.bits as usize >= 8 * FRAME_BYTES && frame.bits - u32::from(bits) < 8 * FRAME_BYTES as u32 {
            self.stats.complete_reads += 1;
            if frame.generation == self.generation {
                self.unread = false;
            }
        }
        match self.miso_stuck {
            None => word,
            Some(false) => 0,
            Some(true) => u32::MAX >> (32 - u32::from(bits.clamp(1, 32))),
        }
    }

    /// The output registers now (backdoor).
    pub(super) fn output(&mut self, at: Instant) -> [i16; CHANNELS] {
        self.advance(at);
        self.output
    }
}

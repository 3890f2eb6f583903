//! A loopback device: MISO wired to MOSI, so every word comes back as sent.

use crate::spi::SpiDeviceModel;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wirespeed_time::Instant;

#[derive(Debug, Default)]
struct Counters {
    words: AtomicU64,
    selects: AtomicU64,
    stuck: AtomicU64,
}

/// MISO = MOSI. Backdoor: word and CS counts; a "MISO stuck" fault.
#[derive(Clone, Debug, Default)]
pub struct Loopback {
    counters: Arc<Counters>,
}

impl Loopback {
    /// A new loopback device.
    pub fn new() -> Loopback {
        Loopback::default()
    }
    /// Backdoor: words exchanged so far.
    pub fn words(&self) -> u64 {
        self.counters.words.load(Ordering::Relaxed)
    }
    /// Backdoor: chip-select assertions so far.
    pub fn selects(&self) -> u64 {
        self.counters.selects.load(Ordering::Relaxed)
    }
    /// Fault: MISO stuck at `level` (`Some(true)` = all ones), or healthy (`None`).
    pub fn set_miso_stuck(&self, level: Option<bool>) {
        let v = match level {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        };
        self.counters.stuck.store(v, Ordering::Relaxed);
    }
}

impl SpiDeviceModel for Loopback {
    fn chip_select(&mut self, asserted: bool, _at: Instant) {
        if asserted {
            self.counters.selects.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn exchange(&mut self, mosi: u32, _bits: u8, _at: Instant) -> u32 {
        self.counters.words.fetch_add(1, Ordering::Relaxed);
        match self.counters.stuck.load(Ordering::Relaxed) {
            1 => 0,
            2 => u32::MAX,
            _ => mosi,
        }
    }
    fn exchange_burst(&mut self, mosi: &[u32], miso: &mut [u32], _bits: u8, _at: Instant, _word_ns: u64) {
        self.answer(mosi, miso, u32::MAX);
    }
    fn exchange_bytes(&mut self, mosi: &[u8], miso: &mut [u8], _bits: u8, _at: Instant, _word_ns: u64) {
        self.answer(mosi, miso, u8::MAX);
    }
}

impl Loopback {
    /// A burst's answers, in words of either width (`ones`: all bits set):
    /// `mosi` back, or the stuck level; the shorter slice bounds it.
    fn answer<W: Copy + Default>(&self, mosi: &[W], miso: &mut [W], ones: W) {
        let n = mosi.len().min(miso.len());
        self.counters.words.fetch_add(n as u64, Ordering::Relaxed);
        match self.counters.stuck.load(Ordering::Relaxed) {
            1 => miso[..n].fill(W::default()),
            2 => miso[..n].fill(ones),
            _ => miso[..n].copy_from_slice(&mosi[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_answers_and_counts_as_the_same_words_one_by_one_healthy_or_stuck() {
        let mosi: Vec<u32> = (0..300).map(|i| i * 7 + 1).collect();
        for stuck in [None, Some(false), Some(true)] {
            let (mut one, mut burst) = (Loopback::new(), Loopback::new());
            one.set_miso_stuck(stuck);
            burst.set_miso_stuck(stuck);
            let t = Instant::from_ns(1_000);
            let expected: Vec<u32> = mosi.iter().map(|&m| one.exchange(m, 16, t)).collect();
            let mut got = vec![0x55; mosi.len()];
            burst.exchange_burst(&mosi, &mut got, 16, t, 800);
            assert_eq!(got, expected, "stuck {stuck:?}");
            assert_eq!(burst.words(), one.words());
        }
    }

    #[test]
    fn a_burst_of_bytes_answers_and_counts_as_the_same_words_one_by_one_healthy_or_stuck() {
        let mosi: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for stuck in [None, Some(false), Some(true)] {
            let (mut one, mut burst) = (Loopback::new(), Loopback::new());
            one.set_miso_stuck(stuck);
            burst.set_miso_stuck(stuck);
            let t = Instant::from_ns(1_000);
            let expected: Vec<u8> = mosi.iter().map(|&m| one.exchange(u32::from(m), 8, t) as u8).collect();
            let mut got = vec![0x55; mosi.len()];
            burst.exchange_bytes(&mosi, &mut got, 8, t, 400);
            assert_eq!(got, expected, "stuck {stuck:?}");
            assert_eq!(burst.words(), one.words());
        }
    }
}

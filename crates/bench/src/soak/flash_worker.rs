//! The flash worker: writes pages of the board's SPI NOR chip through the
//! SPI NOR driver, verifies each by reading it back, and takes the
//! injector's power cuts.
//!
//! The region is [`REGION_SECTORS`] 4 KiB sectors from [`REGION_BASE`]. The
//! worker goes round them; per sector: it checks that the pages the last
//! pass left there still hold them (retention), erases it, and writes its
//! 16 pages one by one, each program followed by a read back. A page
//! carries `[seq (u32 LE), address (u32 LE), payload, FNV-1a of what
//! precedes (u32 LE), 0x5A]`, the payload a function of (seq, address);
//! the trailing `0x5A` (never `FF`) makes any page cut short read back
//! different.
//!
//! **Power cut** (`nor_power_cut`, see [`super::faults`]): when the
//! injector has armed one ([`FaultLedger::take_nor_cut`]), the worker arms
//! the power switch ([`super::nor_power`]) just before the page program, a
//! random 10–90 % into its busy window; after the program call it waits for
//! the cut's instant so the cut has fired before anything else is sent.
//! The driver sees no error (the chip comes back idle), so the worker does
//! not program again but reads back: the page differs (a
//! [`PageFault::VerifyMismatch`]), which is the cut's one report. The
//! worker then erases the sector and rewrites its pages up to this one,
//! each verified. A mismatch with no cut in that page's program is
//! counted as `corrupted`, and the sector is rewritten the same way.
//!
//! SPI errors (the injector's transfer errors and timeouts hit `spi0`, the
//! flash's bus, too) are reported as those faults, and the step is redone:
//! an erase or a program again (after waiting for WIP to clear, as a
//! message cut short may have started a partial program), a read again.
//! Other driver errors are `unexpected_errors`.
//!
//! Counts: `flash_writes` (page program calls), `flash_verified` (pages
//! read back intact), beside `messages` (which stays the count of framed
//! SPI messages and GPIO toggles). Memory: two page buffers and one
//! sequence number per page of the region.

use super::budget::Budget;
use super::checker::Checker;
use super::faults::FaultLedger;
use super::frame::checksum;
use super::nor_power::SoakFlash;
use super::rng::Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use wirespeed::spi::SpiError;
use wirespeed_drivers::spi_nor::{Error as NorError, SpiNor as NorDriver};

/// Bytes per page.
pub const PAGE: usize = 256;
/// Bytes per sector (the smallest erase).
pub const SECTOR: u32 = 4096;
/// Pages per sector.
const PAGES_PER_SECTOR: usize = SECTOR as usize / PAGE;
/// Sectors the worker writes.
pub const REGION_SECTORS: usize = 4;
/// First byte of the region.
pub const REGION_BASE: u32 = 0x10_0000;
/// Last byte of every page: never `FF`, so a page cut short reads back different.
const TRAILER: u8 = 0x5A;
/// Attempts at one step (with injected faults only, a few at most).
const MAX_TRIES: usize = 64;
/// Sector rewrites after mismatches before giving up on the sector.
const MAX_SECTOR_ROUNDS: usize = 16;

/// What a page write found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageFault {
    /// The read back differs from what was programmed, at `offset` of the page at `addr`.
    VerifyMismatch {
        /// The page.
        addr: u32,
        /// First differing byte.
        offset: usize,
    },
    /// The step kept failing with errors (`MAX_TRIES` times).
    GaveUp {
        /// The page.
        addr: u32,
    },
}

/// The content of the page at `addr` carrying `seq`.
pub fn page_image(addr: u32, seq: u32, page: &mut [u8; PAGE]) {
    page[..4].copy_from_slice(&seq.to_le_bytes());
    page[4..8].copy_from_slice(&addr.to_le_bytes());
    let mut x = u64::from(seq) << 32 ^ u64::from(addr) ^ 0x2545_F491_4F6C_DD1D;
    for b in &mut page[8..PAGE - 5] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    let sum = checksum(&page[..PAGE - 5]);
    page[PAGE - 5..PAGE - 1].copy_from_slice(&sum.to_le_bytes());
    page[PAGE - 1] = TRAILER;
}

/// The SPI error inside a driver error, if it is one.
fn spi_error(e: &NorError) -> Option<&SpiError> {
    match e {
        NorError::Spi(s) => Some(s),
        NorError::ProgramFailed { source, .. } | NorError::EraseFailed { source, .. } => spi_error(source),
        _ => None,
    }
}

/// The flash worker.
pub struct FlashWorker<'a> {
    flash: &'a SoakFlash,
    checker: &'a Checker,
    ledger: &'a FaultLedger,
    rng: Rng,
    next_seq: u32,
    /// The sequence number each page of the region holds (verified), if known.
    held: [Option<u32>; REGION_SECTORS * PAGES_PER_SECTOR],
    page: [u8; PAGE],
    back: [u8; PAGE],
}

impl std::fmt::Debug for FlashWorker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashWorker").field("next_seq", &self.next_seq).finish_non_exhaustive()
    }
}

impl<'a> FlashWorker<'a> {
    /// A worker on `flash`, counting into `checker` and `ledger`.
    pub fn new(flash: &'a SoakFlash, checker: &'a Checker, ledger: &'a FaultLedger, seed: u64) -> FlashWorker<'a> {
        FlashWorker {
            flash,
            checker,
            ledger,
            rng: Rng::new(seed ^ 0xF1A5_4000),
            next_seq: 0,
            held: [None; REGION_SECTORS * PAGES_PER_SECTOR],
            page: [0; PAGE],
            back: [0; PAGE],
        }
    }

    /// Writes sectors until the budget says stop (a sector is finished first).
    pub fn run(mut self, budget: &Budget) {
        let flash = self.flash;
        let mut driver = flash.driver.lock().unwrap_or_else(|e| e.into_inner());
        let mut sector = 0;
        while budget.claim(0) {
            if catch_unwind(AssertUnwindSafe(|| self.write_sector(&mut driver, sector))).is_err() {
                self.checker.tally.untyped_errors.fetch_add(1, Relaxed);
                self.held = [None; REGION_SECTORS * PAGES_PER_SECTOR];
            }
            sector = (sector + 1) % REGION_SECTORS;
        }
    }

    /// Checks sector `sector`'s pages from the last pass, erases it and
    /// writes its pages, rewriting the sector after a mismatch.
    pub fn write_sector(&mut self, driver: &mut NorDriver, sector: usize) {
        let base = REGION_BASE + sector as u32 * SECTOR;
        let first = sector * PAGES_PER_SECTOR;
        self.check_retention(driver, sector);
        let mut seqs = [0u32; PAGES_PER_SECTOR];
        for s in &mut seqs {
            *s = self.next_seq;
            self.next_seq = self.next_seq.wrapping_add(1);
        }
        'rounds: for _ in 0..MAX_SECTOR_ROUNDS {
            self.held[first..first + PAGES_PER_SECTOR].fill(None);
            if self.retry(driver, |d| d.erase(base, SECTOR)).is_none() {
                continue;
            }
            for (k, &seq) in seqs.iter().enumerate() {
                let addr = base + (k * PAGE) as u32;
                if self.write_page(driver, addr, seq).is_err() {
                    continue 'rounds;
                }
                self.held[first + k] = Some(seq);
            }
            return;
        }
        self.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
    }

    /// The pages of `sector` written by the last pass must still hold them.
    fn check_retention(&mut self, driver: &mut NorDriver, sector: usize) {
        let base = REGION_BASE + sector as u32 * SECTOR;
        for k in 0..PAGES_PER_SECTOR {
            let Some(seq) = self.held[sector * PAGES_PER_SECTOR + k] else { continue };
            let addr = base + (k * PAGE) as u32;
            page_image(addr, seq, &mut self.page);
            let mut back = self.back;
            if self.retry(driver, |d| d.read(addr, &mut back)).is_some() && back != self.page {
                self.checker.tally.corrupted.fetch_add(1, Relaxed);
            }
        }
    }

    /// Programs the page at `addr` with `seq`'s content and reads it back.
    /// A mismatch after a cut of this program is the cut's report.
    pub fn write_page(&mut self, driver: &mut NorDriver, addr: u32, seq: u32) -> Result<(), PageFault> {
        let (tally, power) = (&self.checker.tally, &self.flash.power);
        page_image(addr, seq, &mut self.page);
        let page = self.page;
        let mut cut = false;
        let mut programmed = false;
        for _ in 0..MAX_TRIES {
            if !programmed {
                let before = power.cuts();
                if !power.busy() && self.ledger.take_nor_cut() {
                    power.arm(self.rng.between(100, 900) as u32);
                }
                let r = driver.program(addr, &page);
                power.settle();
                tally.flash_writes.fetch_add(1, Relaxed);
                cut = power.cuts() > before;
                match r {
                    Ok(()) => programmed = true,
                    Err(e) => {
                        self.failed(&e);
                        // After a cut, read back (the cut is seen there);
                        // else program again once the chip is idle.
                        programmed = cut;
                        if !cut {
                            self.wait_idle(driver);
                        }
                    }
                }
                if !programmed {
                    continue;
                }
            }
            let mut back = self.back;
            match driver.read(addr, &mut back) {
                Err(e) => self.failed(&e),
                Ok(()) => {
                    let Some(offset) = back.iter().zip(&page).position(|(b, p)| b != p) else {
                        tally.flash_verified.fetch_add(1, Relaxed);
                        return Ok(());
                    };
                    if cut {
                        self.ledger.report_nor_cut();
                    } else {
                        tally.corrupted.fetch_add(1, Relaxed);
                    }
                    return Err(PageFault::VerifyMismatch { addr, offset });
                }
            }
        }
        tally.unexpected_errors.fetch_add(1, Relaxed);
        Err(PageFault::GaveUp { addr })
    }

    /// Runs `step` until it succeeds, reporting each error; `None` after [`MAX_TRIES`].
    fn retry<T>(
        &self,
        driver: &mut NorDriver,
        mut step: impl FnMut(&mut NorDriver) -> Result<T, NorError>,
    ) -> Option<T> {
        for _ in 0..MAX_TRIES {
            match step(driver) {
                Ok(v) => return Some(v),
                Err(e) => self.failed(&e),
            }
        }
        self.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
        None
    }

    /// Polls status until WIP is clear (a message cut short by a fault may
    /// have started a partial program, which would ignore a new one).
    fn wait_idle(&self, driver: &mut NorDriver) {
        for _ in 0..MAX_TRIES * 16 {
            match driver.read_status() {
                Ok(sr) if sr & 0x01 == 0 => return,
                Ok(_) => std::thread::sleep(Duration::from_micros(50)),
                Err(e) => self.failed(&e),
            }
        }
    }

    /// Reports a driver error: an injected SPI fault, or unexpected.
    fn failed(&self, e: &NorError) {
        let tally = &self.checker.tally;
        tally.failed.fetch_add(1, Relaxed);
        if !spi_error(e).is_some_and(|s| self.ledger.report_spi(s)) {
            tally.unexpected_errors.fetch_add(1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::faults::FaultKind;
    use wirespeed::backend::lab::LabSpi;
    use wirespeed::spi::{Bus, Policy};
    use wirespeed_lab::{Lab, LabConfig};

    fn flash() -> (Lab, SoakFlash) {
        let lab = Lab::new(LabConfig::default());
        let block = lab.spi_controller(Default::default());
        let bus = Bus::new(LabSpi::new(block.clone()), Policy::fast());
        let flash = SoakFlash::attach(&block, &bus, 0).expect("the flash probes");
        (lab, flash)
    }

    #[test]
    fn a_page_image_ends_in_a_byte_a_cut_cannot_leave() {
        let mut p = [0u8; PAGE];
        page_image(0x1234_5600, 7, &mut p);
        assert_eq!(p[PAGE - 1], TRAILER);
        assert_ne!(TRAILER, 0xFF);
        assert_eq!(p[PAGE - 5..PAGE - 1], checksum(&p[..PAGE - 5]).to_le_bytes());
        let mut q = [0u8; PAGE];
        page_image(0x1234_5600, 8, &mut q);
        assert_ne!(p[8..], q[8..]);
    }

    #[test]
    fn a_cut_is_reported_once_and_the_page_rewritten() {
        let (_lab, flash) = flash();
        let (checker, ledger) = (Checker::new(1, 1), FaultLedger::new(0, 1));
        let mut w = FlashWorker::new(&flash, &checker, &ledger, 1);
        let mut driver = flash.driver.lock().unwrap();
        let t = &checker.tally;

        w.write_sector(&mut driver, 0);
        assert_eq!((t.flash_writes.load(Relaxed), t.flash_verified.load(Relaxed)), (16, 16));

        // Armed: the next page program is cut mid-way, seen once, rewritten.
        ledger.arm_nor_cut();
        w.write_sector(&mut driver, 1);
        assert!(!ledger.take_nor_cut(), "the worker took the armed cut");
        assert_eq!(flash.power.cuts(), 1, "one cut fired");
        assert_eq!(ledger.reported(FaultKind::NorPowerCut), 1, "and was reported once");
        // Page 0 of the sector was cut: 1 cut write + 16 rewrites.
        assert_eq!((t.flash_writes.load(Relaxed), t.flash_verified.load(Relaxed)), (16 + 17, 16 + 16));
        for k in 0..PAGES_PER_SECTOR {
            let addr = REGION_BASE + SECTOR + (k * PAGE) as u32;
            let mut want = [0u8; PAGE];
            page_image(addr, 16 + k as u32, &mut want);
            assert_eq!(flash.power.chip().peek(addr, PAGE), want, "page {k} rewritten");
        }
        assert_eq!((t.corrupted.load(Relaxed), t.unexpected_errors.load(Relaxed), t.failed.load(Relaxed)), (0, 0, 0));

        // A mismatch with no cut is corruption.
        let addr = REGION_BASE + 2 * SECTOR;
        flash.power.chip().flip_on_read(addr + 9, 0x04);
        assert_eq!(w.write_page(&mut driver, addr, 99), Err(PageFault::VerifyMismatch { addr, offset: 9 }));
        assert_eq!((t.corrupted.load(Relaxed), ledger.reported(FaultKind::NorPowerCut)), (1, 1));
    }

    #[test]
    fn a_cut_in_a_later_page_rewrites_the_pages_before_it_too() {
        let (_lab, flash) = flash();
        let (checker, ledger) = (Checker::new(1, 1), FaultLedger::new(0, 1));
        let mut w = FlashWorker::new(&flash, &checker, &ledger, 3);
        let mut driver = flash.driver.lock().unwrap();
        let base = REGION_BASE;
        driver.erase(base, SECTOR).unwrap();
        for k in 0..5u32 {
            w.write_page(&mut driver, base + k * PAGE as u32, k).unwrap();
        }
        ledger.arm_nor_cut();
        let addr = base + 5 * PAGE as u32;
        let r = w.write_page(&mut driver, addr, 5);
        assert!(matches!(r, Err(PageFault::VerifyMismatch { addr: a, .. }) if a == addr), "{r:?}");
        let mut want = [0u8; PAGE];
        page_image(addr, 5, &mut want);
        let cut = flash.power.chip().peek(addr, PAGE);
        let kept = cut.iter().zip(&want).position(|(c, w)| c != w).expect("cut short");
        assert!(cut[kept..].iter().all(|&b| b == 0xFF), "a programmed prefix, the rest erased");
        assert!((25..=240).contains(&kept), "the cut landed inside the program: {kept} bytes programmed");
        assert_eq!(ledger.reported(FaultKind::NorPowerCut), 1);
        assert_eq!(checker.tally.corrupted.load(Relaxed), 0);
    }
}

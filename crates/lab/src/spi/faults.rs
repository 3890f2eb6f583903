//! Backdoor fault injection for the WSPI block: faults a test arms from
//! outside, which the block applies to the next burst software starts.
//!
//! Each armed fault is one-shot: it fires on the next `START` and counts as
//! fired once, so a test (or a soak run) can compare the faults that really
//! happened with those the software above reported.
//! - *Refused start*: the next `START` is refused as if the block could not
//!   run it: `STATUS.ERR` rises and no word shifts.
//! - *Stall*: the next FIFO burst starts (`BUSY`) but no word ever shifts,
//!   until software writes `RESET` (as a driver does when it times out).
//!   A DMA burst is not stalled: the stall waits for the next FIFO burst.

/// Faults armed through the backdoor, and how many of each fired.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFaults {
    /// The next `START` is refused (`STATUS.ERR`).
    pub refuse_next_start: bool,
    /// The next FIFO burst never shifts a word.
    pub stall_next_burst: bool,
    /// Refused starts that fired so far.
    pub refused_starts: u64,
    /// Stalled bursts that fired so far.
    pub stalled_bursts: u64,
}

impl InjectedFaults {
    /// At a `START`: whether it must be refused (consuming the armed fault).
    pub(super) fn take_refusal(&mut self) -> bool {
        let fire = std::mem::take(&mut self.refuse_next_start);
        self.refused_starts += u64::from(fire);
        fire
    }

    /// At the start of a FIFO burst: whether it must stall (consuming the armed fault).
    pub(super) fn take_stall(&mut self) -> bool {
        let fire = std::mem::take(&mut self.stall_next_burst);
        self.stalled_bursts += u64::from(fire);
        fire
    }
}

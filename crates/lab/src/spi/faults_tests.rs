//! The backdoor's injected faults: each fires once, on the next burst.

use super::regs::*;
use super::*;
use crate::devices::Loopback;
use crate::LabConfig;
use std::time::Duration;
use wirespeed_time::now;

fn block() -> (Lab, SpiController) {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, ..SpiControllerConfig::default() });
    block.attach(0, Loopback::new());
    block.write(CS, CS_ASSERT);
    (lab, block)
}

/// Starts a one-word burst of `word` and polls until `DONE` or `ERR`, for at most `limit`.
fn one_word(block: &SpiController, word: u32, limit: Duration) -> u32 {
    block.write(XFERLEN, 1);
    block.write(TXDATA, word);
    block.write(START, START_GO);
    let end = now().add_ns(limit.as_nanos() as u64);
    loop {
        let s = block.read(STATUS);
        if s & (STATUS_DONE | STATUS_ERR) != 0 || now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

#[test]
fn a_refused_start_fires_once_and_is_counted() {
    let (_lab, block) = block();
    block.refuse_next_start();
    let s = one_word(&block, 0x5A, Duration::from_secs(5));
    assert_eq!(s & (STATUS_ERR | STATUS_DONE), STATUS_ERR, "{s:#x}");
    assert_eq!(rx_level(block.read(STATUS)), 0, "nothing shifted");
    block.write(RESET, 1);
    let s = one_word(&block, 0x5A, Duration::from_secs(5));
    assert_eq!(s & (STATUS_ERR | STATUS_DONE), STATUS_DONE, "the next start runs: {s:#x}");
    assert_eq!(block.read(RXDATA), 0x5A);
    let f = block.injected_faults();
    assert_eq!((f.refuse_next_start, f.refused_starts, f.stalled_bursts), (false, 1, 0));
}

#[test]
fn a_stalled_burst_shifts_nothing_until_reset() {
    let (_lab, block) = block();
    block.stall_next_burst();
    let s = one_word(&block, 0x33, Duration::from_millis(20));
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_BUSY, "still busy, nothing done: {s:#x}");
    block.write(RESET, 1);
    assert_eq!(block.read(STATUS) & STATUS_BUSY, 0, "RESET ends the stall");
    let s = one_word(&block, 0x33, Duration::from_secs(5));
    assert_eq!(s & (STATUS_ERR | STATUS_DONE), STATUS_DONE, "the next burst runs: {s:#x}");
    assert_eq!(block.read(RXDATA), 0x33);
    assert_eq!(block.injected_faults().stalled_bursts, 1);
}

#[test]
fn disarming_leaves_nothing_to_fire() {
    let (_lab, block) = block();
    block.refuse_next_start();
    block.stall_next_burst();
    let armed = block.disarm_faults();
    assert!(armed.refuse_next_start && armed.stall_next_burst);
    let s = one_word(&block, 0x11, Duration::from_secs(5));
    assert_eq!(s & (STATUS_ERR | STATUS_DONE), STATUS_DONE, "{s:#x}");
    let f = block.injected_faults();
    assert_eq!((f.refused_starts, f.stalled_bursts), (0, 0));
}

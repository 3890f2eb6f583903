//! The FIFOCI erratum ([`Errata::fifoci`]): FIFOSTA.FIFOCI one too far
//! shortly after the controller moved a FIFO, with the switch on and off.

use super::regs::*;
use super::testkit::*;
use super::*;

/// Internal loopback; FIFO 1 receives (4 deep), FIFO 2 transmits (4 deep);
/// FIFOCI lies for `window_ns` after a move.
fn loopback(window_ns: u64, errata: Errata) -> T {
    let mut t = T::with(Mcp2518fdConfig { fifoci_window_ns: window_ns, ..Mcp2518fdConfig::default() }, errata);
    t.ready();
    t.write(c1fifocon(1), 3 << FIFOCON_FSIZE_SHIFT);
    t.write(c1fifocon(2), (3 << FIFOCON_FSIZE_SHIFT) | FIFOCON_TXEN);
    t.write(c1fltcon(0), u32::from(FLTCON_FLTEN | 1));
    t.set_mode(MODE_INTERNAL_LOOPBACK);
    t
}

/// Queues a frame in TX FIFO 2 and waits until it is looped back into FIFO 1.
fn send_one(t: &mut T) {
    let before = t.dev.stats().rx_stored;
    write_tx_obj(t, 2, 0x123, 1, &[0xAA; 8]);
    t.write_byte(c1fifocon(2) + 1, ((FIFOCON_UINC | FIFOCON_TXREQ) >> 8) as u8);
    t.wait_for(|t| t.dev.stats().rx_stored > before);
    t.wait_for(|t| t.read(c1fifosta(2)) & FIFOSTA_TFERFFIF != 0);
}

#[test]
fn fifoci_of_an_rx_fifo_reads_head_plus_one_within_the_window_after_a_store() {
    let mut t = loopback(1_000_000_000, Errata::ALL);
    send_one(&mut t);
    let sta = t.read(c1fifosta(1));
    assert_eq!((sta >> FIFOSTA_FIFOCI_SHIFT) & 0x1F, 2, "one stored: head 1, read as 2");
    assert_ne!(sta & FIFOSTA_TFNRFNIF, 0, "the flags stay true");
    assert_eq!(sta & FIFOSTA_TFERFFIF, 0);
    assert_eq!(t.read(c1fifoua(1)), u32::from(t.dev.lock().fifos[1].base), "FIFOUA stays true");
    let peeked = t.dev.peek(c1fifosta(1), t.t);
    assert_eq!((peeked >> FIFOSTA_FIFOCI_SHIFT) & 0x1F, 1, "the backdoor sees the register");
    assert!(t.dev.errata_hits().fifoci >= 1);
}

#[test]
fn fifoci_of_a_tx_fifo_reads_tail_plus_one_within_the_window_after_a_completion() {
    let mut t = loopback(1_000_000_000, Errata::ALL);
    send_one(&mut t);
    assert_eq!(t.fifoci(2), 2, "one sent: tail 1, read as 2");
    let hits = t.dev.errata_hits().fifoci;
    send_one(&mut t);
    assert_eq!(t.fifoci(2), 3);
    assert!(t.dev.errata_hits().fifoci > hits);
}

#[test]
fn fifoci_of_a_full_rx_fifo_is_true() {
    let mut t = loopback(1_000_000_000, Errata::ALL);
    for _ in 0..4 {
        send_one(&mut t);
    }
    let sta = t.read(c1fifosta(1));
    assert_ne!(sta & FIFOSTA_TFERFFIF, 0, "full");
    assert_eq!((sta >> FIFOSTA_FIFOCI_SHIFT) & 0x1F, 0, "head wrapped to 0, read right");
}

#[test]
fn fifoci_is_true_once_the_window_has_passed() {
    let mut t = loopback(1_000, Errata::ALL);
    send_one(&mut t);
    t.later(2_000);
    let hits = t.dev.errata_hits().fifoci;
    assert_eq!(t.fifoci(1), 1);
    assert_eq!(t.fifoci(2), 1);
    assert_eq!(t.dev.errata_hits().fifoci, hits);
}

#[test]
fn without_the_erratum_fifoci_is_always_true() {
    let mut t = loopback(1_000_000_000, Errata { fifoci: false, ..Errata::ALL });
    send_one(&mut t);
    assert_eq!(t.fifoci(1), 1);
    assert_eq!(t.fifoci(2), 1);
    assert_eq!(t.dev.errata_hits().fifoci, 0);
}

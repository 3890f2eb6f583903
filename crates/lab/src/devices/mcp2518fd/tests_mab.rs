//! Message-assembly-buffer system errors ([`Errata::mab_errors`]): a TX
//! underflow holds the message back and changes the mode until the host
//! asks for a normal mode again; an RX overflow loses a frame.

use super::regs::*;
use super::testkit::*;
use super::*;
use crate::can::tools::{Generator, GeneratorConfig, Recorder};
use std::time::Duration;

/// A device in normal FD mode on a bus with a silent peer that acknowledges.
fn on_bus(errata: Errata, serr2lom: bool) -> (T, crate::can::Bus, Recorder, Generator) {
    let mut t = T::with(Mcp2518fdConfig::default(), errata);
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    setup_fifos(&mut t);
    if serr2lom {
        let con = t.read(C1CON);
        t.write(C1CON, con | CON_SERR2LOM);
    }
    t.write(C1INT, (INT_SERRIF | INT_IVMIF | INT_MODIF | INT_TEFIF) << 16);
    t.set_mode(MODE_NORMAL_FD);
    t.write(C1INT, (INT_SERRIF | INT_IVMIF | INT_MODIF | INT_TEFIF) << 16); // MODIF of the switch cleared
    let peer = Generator::attach(&bus, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    (t, bus, rec, peer)
}

fn tx_underflow(serr2lom: bool, mode: u8) {
    let (mut t, _bus, rec, _peer) = on_bus(Errata::ALL, serr2lom);
    t.dev.inject_mab_error(MabError::TxUnderflow, t.t);
    queue_txq(&mut t, 0x55, false, &[5; 8], 1);
    t.wait_for(|t| t.opmod() == mode);
    let int = t.read(C1INT);
    assert_eq!(int & (INT_SERRIF | INT_IVMIF | INT_MODIF), INT_SERRIF | INT_IVMIF | INT_MODIF);
    assert_eq!(t.read(C1TXREQ), 1, "still queued");
    assert_eq!(t.read(C1TEFSTA) & TEFSTA_TEFNEIF, 0, "no TEF entry");
    std::thread::sleep(Duration::from_millis(2));
    assert!(rec.records().is_empty(), "nothing sent: {:?}", rec.records());
    assert_eq!(t.dev.errata_hits().mab, 1);
    // The host asks for normal mode again: the message goes out.
    t.write(C1INT, (INT_SERRIF | INT_IVMIF | INT_MODIF | INT_TEFIF) << 16);
    t.set_mode(MODE_NORMAL_FD);
    t.wait_for(|t| t.read(C1TEFSTA) & TEFSTA_TEFNEIF != 0);
    assert_eq!(t.dev.stats().tx_frames, 1);
    assert_eq!(rec.records().iter().filter(|r| r.error.is_none()).count(), 1);
    assert_eq!(t.read(C1TXREQ), 0);
}

#[test]
fn a_tx_mab_underflow_holds_the_message_in_restricted_operation_until_normal_mode() {
    tx_underflow(false, MODE_RESTRICTED);
}

#[test]
fn a_tx_mab_underflow_with_serr2lom_changes_to_listen_only() {
    tx_underflow(true, MODE_LISTEN_ONLY);
}

#[test]
fn an_rx_mab_overflow_loses_the_next_frame() {
    let (mut t, bus, _rec, _peer) = on_bus(Errata::ALL, false);
    t.dev.inject_mab_error(MabError::RxOverflow, t.t);
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 2, gap_ns: 0, ..Default::default() }).unwrap();
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)), "restricted operation still acknowledges");
    t.wait_for(|t| t.dev.stats().rx_frames == 2);
    assert_eq!(t.opmod(), MODE_RESTRICTED);
    let int = t.read(C1INT);
    assert_eq!(int & (INT_SERRIF | INT_IVMIF | INT_MODIF), INT_SERRIF | INT_IVMIF | INT_MODIF);
    assert_eq!(t.dev.stats().rx_stored, 1, "the first frame was lost");
    assert_ne!(t.read(c1fifosta(1)) & FIFOSTA_RXOVIF, 0, "RXOVIF on the FIFO it was for");
    assert_eq!(t.dev.errata_hits().mab, 1);
}

#[test]
fn without_the_erratum_a_mab_error_only_sets_serrif() {
    let (mut t, bus, rec, _peer) = on_bus(Errata { mab_errors: false, ..Errata::ALL }, false);
    t.dev.inject_mab_error(MabError::TxUnderflow, t.t);
    t.dev.inject_mab_error(MabError::RxOverflow, t.t);
    assert_eq!(t.read(C1INT) & (INT_SERRIF | INT_IVMIF | INT_MODIF), INT_SERRIF);
    queue_txq(&mut t, 0x55, false, &[5; 8], 1);
    t.wait_for(|t| t.read(C1TEFSTA) & TEFSTA_TEFNEIF != 0);
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.dev.stats().rx_stored == 1);
    assert_eq!(t.opmod(), MODE_NORMAL_FD);
    assert_eq!(rec.records().iter().filter(|r| r.error.is_none()).count(), 2);
    assert_eq!(t.dev.errata_hits().mab, 0);
}

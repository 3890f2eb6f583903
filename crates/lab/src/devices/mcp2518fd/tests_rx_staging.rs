//! A frame's reception staged at arbitration (`CanNode::rx_coming`): shown
//! to software no earlier than before, stored once, and dropped with the
//! rest of the state by a RESET during the frame.

use super::regs::*;
use super::testkit::*;
use super::*;
use crate::can::tools::{Generator, GeneratorConfig, Recorder};
use crate::can::{CanId, CanNode, FrameStamp};
use std::time::Duration;

#[test]
fn a_staged_frame_shows_no_earlier_than_its_store_and_is_stored_once() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 4);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let stored_before = t.dev.stats().rx_stored;
    let gen = Generator::attach(&bus, "gen", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    gen.start(now());
    // Poll RXIF through the SPI face until it shows (host time after each
    // read): no read may see it before the store's instant, EOF + 1 µs.
    let mut reads = Vec::new();
    loop {
        let rxif = t.read(C1RXIF) & (1 << 1) != 0;
        reads.push((now(), rxif));
        if rxif || reads.len() > 200_000 {
            break;
        }
    }
    assert!(reads.last().is_some_and(|r| r.1), "the frame was stored");
    assert!(gen.wait_done(Duration::from_secs(5)));
    // The first attempt may fail (no ACK while the chip still integrates
    // into the bus after its mode change): the stored frame is the good one.
    let good = rec.records().into_iter().find(|r| r.error.is_none()).expect("a good frame");
    let due = good.stamp.eof.add_ns(t.dev.config().store_delay_ns);
    let (after, _) = *reads.last().unwrap();
    assert!(after >= due, "RXIF showed {} ns before the store", due.ns_since(after));
    // Staged at arbitration and delivered at EOF: one store, not two.
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(t.dev.stats().rx_stored - stored_before, 1);
    let sta = t.read(c1fifosta(1));
    assert_ne!(sta & FIFOSTA_TFNRFNIF, 0);
    t.write_byte(c1fifocon(1) + 1, (FIFOCON_UINC >> 8) as u8);
    assert_eq!(t.read(c1fifosta(1)) & FIFOSTA_TFNRFNIF, 0, "one object, taken: the FIFO is empty");
}

#[test]
fn a_reset_during_a_staged_frame_drops_the_staging_and_the_frame_is_taken_at_eof() {
    let mut t = T::new();
    let _bus = ready_on_bus(&mut t);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let node = Node(t.dev.core.clone());
    let frame = Frame::new_classic(CanId::standard(0x123).unwrap(), &[1, 2, 3, 4]).unwrap();
    // A frame whose EOF is far enough ahead to reconfigure the chip before it.
    let sof = now();
    let stamp = FrameStamp { sof, eof: sof.add_ns(200_000_000) };
    node.rx_coming(&frame, stamp);
    // RESET: every register to its reset value, configuration mode, and
    // the pending store gone with the chip's other events.
    t.later(1_000);
    t.xfer(&[INSTR_RESET, 0]);
    assert_eq!(lock(&t.dev.core).rx_staged, None);
    t.ready();
    set_bit_timing(&mut t);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let stored_before = t.dev.stats().rx_stored;
    // At EOF the bus delivers it: taken then, as any frame not staged.
    node.rx_frame(&frame, stamp);
    t.later(stamp.eof.add_ns(10_000).ns_since(t.t));
    t.catch_up();
    t.wait_for(|t| t.read(C1RXIF) & (1 << 1) != 0);
    assert_eq!(t.dev.stats().rx_stored - stored_before, 1);
}

//! The device's pins, driven after its lock is released.
//!
//! Driving a pin runs its sinks: a GPIO chip that queues an edge event and
//! wakes the threads waiting for it (a system call, and on a VM an
//! inter-processor interrupt). Made under the device's lock, that would
//! hold every other access to the chip — the driver's chip select right
//! after the interrupt it was woken for — for as long as the wake-up takes,
//! a stall no silicon has: its SPI face does not wait for its INT pin.
//!
//! So the device state only records what its pins should do
//! ([`PinLatch::drive`]), and the [`CoreGuard`] that holds the lock applies
//! the recorded changes after releasing it, in the order they were made:
//! before the lock goes, it takes the [`PinOut`] queue's lock, so that an
//! access that locks the device next and changes a pin again applies its
//! changes after these.

use super::core::{Core, Pins};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed_time::Instant;

/// One of the device's three pins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PinId {
    Int = 0,
    Int0 = 1,
    Int1 = 2,
}

#[derive(Clone, Copy, Debug)]
struct Change {
    pin: PinId,
    high: bool,
    at: Instant,
}

/// The pins and the changes on their way to them.
pub(super) struct PinOut {
    pins: Pins,
    queue: Mutex<Vec<Change>>,
}

impl PinOut {
    fn pin(&self, id: PinId) -> &crate::pin::Pin {
        match id {
            PinId::Int => &self.pins.int,
            PinId::Int0 => &self.pins.int0,
            PinId::Int1 => &self.pins.int1,
        }
    }
}

/// What the device drives on its pins (kept with its state, under its lock).
pub(super) struct PinLatch {
    levels: [bool; 3],
    pending: Vec<Change>,
    out: Arc<PinOut>,
}

impl PinLatch {
    /// A latch for `pins`, whose nets are high (the device's reset level).
    pub(super) fn new(pins: Pins) -> PinLatch {
        PinLatch {
            levels: [true; 3],
            pending: Vec::with_capacity(8),
            out: Arc::new(PinOut { pins, queue: Mutex::new(Vec::with_capacity(8)) }),
        }
    }

    /// Drives `pin` to `high` at `at`: recorded if it changes the level,
    /// applied when the device's lock is released.
    pub(super) fn drive(&mut self, pin: PinId, high: bool, at: Instant) {
        let level = &mut self.levels[pin as usize];
        if *level != high {
            *level = high;
            self.pending.push(Change { pin, high, at });
        }
    }

    /// The level the device drives on `pin` (its net's, once applied).
    pub(super) fn level(&self, pin: PinId) -> bool {
        self.levels[pin as usize]
    }

    /// The pins themselves.
    pub(super) fn pins(&self) -> &Pins {
        &self.out.pins
    }
}

/// The device's lock; on release, its pin changes are applied.
pub(super) struct CoreGuard<'a>(Option<MutexGuard<'a, Core>>);

/// Locks the device (a panic that poisoned the lock left its state usable).
pub(super) fn lock(core: &Mutex<Core>) -> CoreGuard<'_> {
    CoreGuard(Some(core.lock().unwrap_or_else(|e| e.into_inner())))
}

impl Deref for CoreGuard<'_> {
    type Target = Core;
    fn deref(&self) -> &Core {
        self.0.as_ref().expect("held until dropped")
    }
}

impl DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Core {
        self.0.as_mut().expect("held until dropped")
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        let Some(mut core) = self.0.take() else { return };
        if core.pin_latch.pending.is_empty() {
            return;
        }
        let out = core.pin_latch.out.clone();
        let mut queue = out.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.extend(core.pin_latch.pending.drain(..));
        drop(core);
        for c in queue.drain(..) {
            out.pin(c.pin).set(c.high, c.at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::regs::*;
    use super::super::testkit::T;
    use crate::pin::PinSink;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Barrier, Mutex};
    use std::time::Duration;
    use wirespeed_time::{now, Instant};

    /// A sink that, on its first low, says so and then blocks until told
    /// to go on (as a wake-up that takes long).
    struct SlowSink {
        entered: Mutex<Sender<()>>,
        go_on: Mutex<Receiver<()>>,
    }
    impl PinSink for SlowSink {
        fn drive(&self, high: bool, _at: Instant) {
            if !high {
                let _ = self.entered.lock().unwrap().send(());
                let _ = self.go_on.lock().unwrap().recv_timeout(Duration::from_secs(10));
            }
        }
    }

    #[test]
    fn an_spi_access_does_not_wait_for_a_pin_sink_that_is_still_running() {
        let mut t = T::new();
        t.ready();
        let (entered_tx, entered) = channel();
        let (go_on, go_on_rx) = channel();
        let sink = Arc::new(SlowSink { entered: Mutex::new(entered_tx), go_on: Mutex::new(go_on_rx) });
        t.dev.int0_pin().connect(sink, now());
        let other = t.dev.clone();
        // INT0 as a GPIO output, driven low: the write's pin change runs the slow sink.
        let writer = std::thread::spawn(move || t.write(IOCON, IOCON_PM0));
        entered.recv_timeout(Duration::from_secs(10)).expect("the sink ran");
        // Meanwhile another thread reads DEVID through the SPI face.
        let (done_tx, done) = channel();
        let reader = std::thread::spawn(move || {
            use crate::spi::SpiDeviceModel;
            let mut d = other;
            let at = now();
            d.chip_select(true, at);
            let bytes: Vec<u8> = [0x30 | (DEVID >> 8) as u8, DEVID as u8, 0, 0, 0, 0]
                .iter()
                .map(|&b| d.exchange(u32::from(b), 8, at) as u8)
                .collect();
            d.chip_select(false, at);
            let _ = done_tx.send(u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]));
        });
        let devid = done.recv_timeout(Duration::from_secs(5));
        go_on.send(()).unwrap();
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(devid, Ok(DEVID_MCP2518FD), "the read finished while the sink still ran");
    }

    /// The pins are worked out again only after a byte that can move them
    /// (a register write, a CRC flag), not after every byte shifted: a
    /// command byte, a read and a write into RAM change nothing they show.
    #[test]
    fn only_register_writes_and_crc_flags_make_the_device_work_out_its_pins() {
        use super::super::crc16::crc16;
        let mut t = T::new();
        t.ready();
        let updates = |t: &T| t.dev.lock().pin_updates;
        let before = updates(&t);
        let mut ram_write = vec![0x20 | (RAM_START >> 8) as u8, RAM_START as u8];
        ram_write.extend(0..16u8);
        t.xfer(&ram_write);
        t.read(C1INT);
        assert_eq!(updates(&t), before, "a RAM write and a read worked out the pins");
        // IOCON's four bytes, each a register write; the last drives INT0 low.
        t.write(IOCON, IOCON_PM0);
        assert_eq!(updates(&t), before + 4, "each register byte written, once");
        assert!(!t.dev.int0_pin().is_high(), "INT0 follows its latch");
        // A WRITE_CRC into RAM with a wrong CRC raises CRCERRIF: the pins are worked out.
        let before = updates(&t);
        let cmd = [0xA0 | (RAM_START >> 8) as u8, RAM_START as u8, 1, 1, 2, 3, 4];
        let crc = crc16(&cmd) ^ 1;
        let mut bad = cmd.to_vec();
        bad.extend(crc.to_be_bytes());
        t.xfer(&bad);
        assert_ne!(t.read(CRC) & CRC_CRCERRIF, 0, "the wrong CRC was noticed");
        assert!(updates(&t) > before, "a CRC flag raised without working out the pins");
    }

    /// Writes IOCON through the SPI face of `d` at `at` (INT0 a GPIO output at `high`).
    fn drive_int0(d: &mut super::super::Mcp2518fd, high: bool, at: Instant) {
        use crate::spi::SpiDeviceModel;
        let v = IOCON_PM0 | if high { IOCON_LAT0 } else { 0 };
        d.chip_select(true, at);
        for b in [0x20 | (IOCON >> 8) as u8, IOCON as u8] {
            d.exchange(u32::from(b), 8, at);
        }
        for b in v.to_le_bytes() {
            d.exchange(u32::from(b), 8, at);
        }
        d.chip_select(false, at);
    }

    #[test]
    fn threads_that_drive_a_pin_in_turn_leave_the_net_at_the_last_level_driven() {
        // Two threads write INT0 low and high at once, round after round;
        // whatever order their writes took the device's lock in, their pin
        // changes must reach the net in that order: after each round the
        // net shows the level the last write latched (IOCON's GPIO0 reads
        // the latch).
        const ROUNDS: usize = 5_000;
        let mut t = T::new();
        t.ready();
        // A sink that takes its time (as a wake-up does) widens the window
        // in which a change could overtake another.
        struct Slow;
        impl PinSink for Slow {
            fn drive(&self, _high: bool, _at: Instant) {
                std::thread::yield_now();
            }
        }
        t.dev.int0_pin().connect(Arc::new(Slow), now());
        let (go, done) = (Arc::new(Barrier::new(3)), Arc::new(Barrier::new(3)));
        let workers: Vec<_> = [false, true]
            .into_iter()
            .map(|high| {
                let (mut d, go, done) = (t.dev.clone(), go.clone(), done.clone());
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        go.wait();
                        for _ in 0..3 {
                            drive_int0(&mut d, high, now());
                        }
                        done.wait();
                    }
                })
            })
            .collect();
        let mut mismatch = None;
        for round in 0..ROUNDS {
            go.wait();
            done.wait();
            let latched = t.read(IOCON) & IOCON_GPIO0 != 0;
            if t.dev.int0_pin().is_high() != latched && mismatch.is_none() {
                mismatch = Some(round);
            }
        }
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(mismatch, None, "the net and the latch disagreed after a round");
    }
}

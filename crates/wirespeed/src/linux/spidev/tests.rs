//! The spidev backend at its system-call boundary: a double of
//! [`SpidevIo`] records every call (and loops TX back to RX, as spidev's
//! `SPI_LOOP` would), so these tests see exactly what the kernel would be asked.

use super::uapi::SpiIocTransfer;
use super::*;
use crate::spi::{
    Bus, CsPin, DeviceConfig, InvalidMessage, Mode, ModeFlags, OwnedTransfer, Policy, SpiError, Transfer,
};
use std::sync::Mutex;

/// What the double saw, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Message(Vec<SpiIocTransfer>),
    SetMode(u32),
    Cs(bool),
}

#[derive(Default)]
struct Shared {
    calls: Mutex<Vec<Call>>,
    /// Mode bits the "controller" drops when written.
    unsupported: Mutex<u32>,
    /// The errno the next message fails with.
    fail_next: Mutex<Option<Errno>>,
}

struct FakeIo {
    shared: Arc<Shared>,
    mode: u32,
}

impl SpidevIo for FakeIo {
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno> {
        self.shared.calls.lock().unwrap().push(Call::Message(xfers.to_vec()));
        if let Some(e) = self.shared.fail_next.lock().unwrap().take() {
            return Err(e);
        }
        for x in xfers.iter() {
            if x.rx_buf != 0 {
                let len = x.len as usize;
                // SAFETY: the backend points rx_buf/tx_buf at live buffers of `len` bytes.
                unsafe {
                    let rx = std::slice::from_raw_parts_mut(x.rx_buf as *mut u8, len);
                    if x.tx_buf == 0 {
                        rx.fill(0);
                    } else {
                        std::ptr::copy(x.tx_buf as *const u8, rx.as_mut_ptr(), len);
                    }
                }
            }
        }
        Ok(())
    }
    fn mode32(&mut self) -> Result<u32, Errno> {
        Ok(self.mode)
    }
    fn set_mode32(&mut self, mode: u32) -> Result<(), Errno> {
        self.shared.calls.lock().unwrap().push(Call::SetMode(mode));
        self.mode = mode & !*self.shared.unsupported.lock().unwrap();
        Ok(())
    }
    fn max_speed_hz(&mut self) -> Result<u32, Errno> {
        Ok(10_000_000)
    }
}

struct RecordingPin(Arc<Shared>);

impl CsPin for RecordingPin {
    fn set_active(&self, active: bool) -> Result<(), String> {
        self.0.calls.lock().unwrap().push(Call::Cs(active));
        Ok(())
    }
}

struct Rig {
    shared: Arc<Shared>,
    counters: Arc<SpidevCounters>,
    bus: Bus,
}

fn rig_with(bufsiz: usize) -> Rig {
    let shared = Arc::new(Shared::default());
    let io = FakeIo { shared: shared.clone(), mode: 0 };
    let sp = Spidev::with_io(io, "/dev/spidev9.0", Limits { bufsiz, align: 8 }).unwrap();
    let counters = sp.counters();
    Rig { shared, counters, bus: Bus::with_message_backend(sp, Policy::fast()) }
}

fn rig() -> Rig {
    rig_with(4096)
}

impl Rig {
    fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.shared.calls.lock().unwrap())
    }
    fn messages(&self) -> Vec<Vec<SpiIocTransfer>> {
        self.take_calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Message(m) => Some(m),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_two_transfer_message_is_one_ioctl_pointing_at_the_caller_s_buffers() {
    let r = rig();
    let dev = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let cmd = [0x9f, 1, 2];
    let mut id = [0u8; 3];
    dev.sync(&mut [Transfer::write(&cmd), Transfer::duplex(&[7, 8, 9], &mut id).speed_hz(500_000)]).unwrap();
    assert_eq!(id, [7, 8, 9], "the RX buffer is the caller's own");
    let msgs = r.messages();
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!(m.len(), 2, "one spi_ioc_transfer per transfer");
    assert_eq!(m[0].tx_buf, cmd.as_ptr() as u64);
    assert_eq!((m[0].rx_buf, m[0].len, m[0].speed_hz, m[0].bits_per_word), (0, 3, 1_000_000, 8));
    assert_eq!(m[1].rx_buf, id.as_ptr() as u64);
    assert_eq!((m[1].len, m[1].speed_hz, m[1].cs_change, m[1].delay_usecs), (3, 500_000, 0, 0));
    assert_eq!((r.counters.ioctls(), r.counters.messages()), (1, 1));
    assert_eq!(r.bus.stats().transfers, 2, "the core counts the transfers");
}

#[test]
fn the_mode_is_written_only_when_it_changes_and_refused_bits_are_named() {
    let r = rig();
    let plain = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let mode3 = r.bus.device(DeviceConfig::new(0, 1_000_000).mode(Mode::Mode3)).unwrap();
    plain.write(&[1]).unwrap();
    plain.write(&[2]).unwrap();
    assert_eq!(r.counters.mode_writes(), 0, "the node already had mode 0");
    mode3.write(&[3]).unwrap();
    mode3.write(&[4]).unwrap();
    plain.write(&[5]).unwrap();
    let modes: Vec<Call> = r.take_calls().into_iter().filter(|c| matches!(c, Call::SetMode(_))).collect();
    assert_eq!(modes, [Call::SetMode(3), Call::SetMode(0)]);

    *r.shared.unsupported.lock().unwrap() = ModeFlags::RX_QUAD.bits();
    let quad = r.bus.device(DeviceConfig::new(0, 1_000_000).flags(ModeFlags::RX_QUAD | ModeFlags::CS_HIGH)).unwrap();
    let e = quad.write(&[6]).unwrap_err();
    match &e {
        SpiError::Backend(BackendError::ModeRefused { refused, .. }) => assert_eq!(*refused, ModeFlags::RX_QUAD),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("RX_QUAD"), "{e}");
    assert!(r.messages().is_empty(), "nothing is sent in a mode the controller refused");
}

#[test]
fn a_message_above_bufsiz_is_cut_only_where_cs_may_drop() {
    let r = rig_with(64);
    let dev = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let (a, b, c) = ([1u8; 40], [2u8; 40], [3u8; 16]);
    // Windows: [a] | [b, c]: 40 + 56 bytes do not fit in 64 together.
    dev.sync(&mut [Transfer::write(&a).cs_change(None), Transfer::write(&b), Transfer::write(&c)]).unwrap();
    let msgs = r.messages();
    assert_eq!(msgs.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(msgs[0][0].cs_change, 0, "the ioctl's end releases CS where the message asked for it");
    assert_eq!(r.counters.ioctls(), 2);

    // Windows that fit stay in one ioctl, the kernel toggling CS between them.
    dev.sync(&mut [Transfer::write(&c).cs_change(None), Transfer::write(&c)]).unwrap();
    let msgs = r.messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0][0].cs_change, 1);

    // One CS window larger than bufsiz cannot be cut: refused, nothing sent.
    let e = dev.sync(&mut [Transfer::write(&a), Transfer::write(&b)]).unwrap_err();
    match e {
        SpiError::Invalid(InvalidMessage::MessageTooLarge { bytes: 80, limit: 64, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("spidev.bufsiz="), "{e}");
    assert!(r.messages().is_empty());
    // Prepared messages are refused when prepared.
    let e = dev.prepare(vec![OwnedTransfer::write(vec![0; 65])]).unwrap_err();
    assert!(matches!(e, InvalidMessage::MessageTooLarge { bytes: 72, .. }), "{e:?}: 65 bytes count as 72");
}

#[test]
fn nanosecond_timing_is_rounded_up_never_down() {
    let r = rig();
    let cfg = DeviceConfig::new(0, 1_000_000).cs_timing_ns(50, 1_500, 0);
    let dev = r.bus.device(cfg).unwrap();
    dev.sync(&mut [Transfer::write(&[1]).delay_after_ns(1), Transfer::write(&[2]).word_delay_ns(1_001)]).unwrap();
    let m = &r.messages()[0];
    assert_eq!(m.len(), 3, "CS setup rides on a zero-length transfer");
    assert_eq!((m[0].len, m[0].tx_buf, m[0].rx_buf, m[0].delay_usecs), (0, 0, 0, 1));
    assert_eq!(m[1].delay_usecs, 1, "1 ns after the first transfer is 1 µs");
    assert_eq!((m[2].delay_usecs, m[2].word_delay_usecs), (2, 2), "CS hold 1.5 µs → 2 µs; word delay 1.001 µs → 2 µs");
    let t = dev.effective_timing();
    assert_eq!((t.cs_setup_ns, t.cs_hold_ns, t.cs_change_gap_ns, t.delay_step_ns), (1_000, 2_000, 10_000, 1_000));

    let e = dev.sync(&mut [Transfer::write(&[1]).word_delay_ns(256_000)]).unwrap_err();
    assert!(matches!(e, SpiError::Invalid(InvalidMessage::DelayTooLong { what: "word delay", .. })), "{e:?}");
    // A delay beyond a u16 of µs continues in zero-length transfers.
    dev.sync(&mut [Transfer::write(&[1]).delay_after_ns(70_000_000)]).unwrap();
    let m = &r.messages()[0];
    let waited: u64 = m.iter().map(|x| u64::from(x.delay_usecs)).sum();
    assert_eq!(waited, 1 + 70_000, "setup, then 70 ms after the transfer");
}

#[test]
fn a_cs_change_gap_longer_than_the_kernel_s_is_waited_between_ioctls() {
    let r = rig();
    let dev = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let t0 = now();
    dev.sync(&mut [Transfer::write(&[1]).cs_change(Some(300_000)), Transfer::write(&[2])]).unwrap();
    assert!(now().ns_since(t0) >= 300_000, "the 300 µs gap was waited");
    assert_eq!(r.messages().len(), 2);
}

#[test]
fn errnos_become_errors_that_say_what_to_do() {
    let r = rig();
    let dev = r.bus.device(DeviceConfig::new(0, 2_000_000)).unwrap();
    for (errno, want) in [(libc::EINVAL, "refused"), (libc::EMSGSIZE, "spidev.bufsiz="), (libc::ENODEV, "gone")] {
        *r.shared.fail_next.lock().unwrap() = Some(errno);
        let e = dev.write(&[1, 2]).unwrap_err();
        assert!(matches!(e, SpiError::Backend(_)), "{e:?}");
        assert!(e.to_string().contains(want), "{errno}: {e}");
        if errno == libc::EINVAL {
            assert!(e.to_string().contains("2000000 Hz"), "{e}");
        }
    }
    assert!(SpidevError::from_open(libc::ENOENT, "/dev/spidev7.0").to_string().contains("dtparam=spi=on"));
    assert!(matches!(SpidevError::from_open(libc::EACCES, "x"), SpidevError::PermissionDenied { .. }));
    assert!(SpidevError::from_open(libc::EACCES, "x").to_string().contains("udev"));
    assert!(matches!(SpidevError::from_call("SPI_IOC_RD_MODE32", libc::ENOTTY, "x"), SpidevError::NotSpidev { .. }));
    match Spidev::open("/dev/spidev-none-such.0") {
        Err(SpidevError::NotFound { path }) => assert_eq!(path, "/dev/spidev-none-such.0"),
        other => panic!("{other:?}"),
    }
    match Spidev::open("/dev/null") {
        Err(SpidevError::NotSpidev { .. }) => {}
        other => panic!("/dev/null is no spidev node: {other:?}"),
    }
}

#[test]
fn prepared_and_async_messages_reuse_the_array_built_at_prepare() {
    let r = rig();
    let dev = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let mut msg =
        dev.prepare(vec![OwnedTransfer::write(vec![3, 0, 0x10, 0]), OwnedTransfer::duplex(vec![5; 4])]).unwrap();
    dev.run(&mut msg).unwrap();
    msg.tx_mut(1).unwrap()[0] = 6;
    dev.run(&mut msg).unwrap();
    assert_eq!(msg.rx(1).unwrap(), &[6, 5, 5, 5]);
    let (msg, result) = dev.submit(msg).wait();
    result.unwrap();
    assert_eq!(msg.rx(1).unwrap(), &[6, 5, 5, 5]);
    let msgs = r.messages();
    assert_eq!(msgs.len(), 3);
    assert!(msgs.iter().all(|m| m == &msgs[0]), "every run sends the same array at the same buffers");
    assert_eq!(r.counters.ioctls(), 3);
}

#[test]
fn a_gpio_chip_select_is_driven_around_each_ioctl_with_no_cs_set() {
    let r = rig();
    let pin = Arc::new(RecordingPin(r.shared.clone()));
    let dev = r.bus.device(DeviceConfig::new(0, 1_000_000).gpio_cs(pin)).unwrap();
    dev.sync(&mut [Transfer::write(&[1]).cs_change(None), Transfer::write(&[2])]).unwrap();
    let calls = r.take_calls();
    let shape: Vec<String> = calls
        .iter()
        .map(|c| match c {
            Call::SetMode(m) => format!("mode {m:#x}"),
            Call::Cs(on) => format!("cs {on}"),
            Call::Message(m) => format!("ioctl {}", m.len()),
        })
        .collect();
    assert_eq!(shape, ["mode 0x40", "cs true", "ioctl 1", "cs false", "cs true", "ioctl 1", "cs false"]);
    // A final cs_change keeps the line active after the message.
    dev.sync(&mut [Transfer::write(&[1]).cs_change(None)]).unwrap();
    let calls = r.take_calls();
    assert!(matches!(calls.last(), Some(Call::Message(_))), "no release after a final cs_change: {calls:?}");
    assert_eq!(calls.iter().filter(|c| matches!(c, Call::Cs(_))).count(), 1);
}

#[test]
fn dual_and_quad_lines_pass_through_only_with_the_device_s_flags() {
    let r = rig();
    let plain = r.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let mut rx = [0u8; 4];
    let e = plain.sync(&mut [Transfer::write(&[0x3b]), Transfer::read(&mut rx).nbits(0, 2)]).unwrap_err();
    match &e {
        SpiError::Invalid(InvalidMessage::UnsupportedLines { index: 1, dir: "rx", nbits: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("RX_DUAL or RX_QUAD"), "{e}");
    let dual = r.bus.device(DeviceConfig::new(0, 1_000_000).flags(ModeFlags::RX_DUAL | ModeFlags::TX_QUAD)).unwrap();
    dual.sync(&mut [Transfer::write(&[0x3b]).nbits(4, 0), Transfer::read(&mut rx).nbits(0, 2)]).unwrap();
    let m = r.messages().pop().unwrap();
    assert_eq!([(m[0].tx_nbits, m[0].rx_nbits), (m[1].tx_nbits, m[1].rx_nbits)], [(4, 1), (1, 2)]);
    assert!(dual.sync(&mut [Transfer::read(&mut rx).nbits(0, 4)]).is_err(), "quad RX needs RX_QUAD");
    // The lab's block has no such lines: a device asking for them is refused when created.
}

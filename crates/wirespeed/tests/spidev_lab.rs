//! The spidev backend under the layers above it, on an emulated spidev
//! node of a lab block ([`LabSpidevIo`]): the same calls give the same
//! bytes on the wire as the controller-level bus, and what the kernel is
//! asked for (ioctls, CS windows) is what the backend promises.

mod common;

use common::bench;
use embedded_hal::spi::{Operation, SpiDevice as _};
use std::sync::Arc;
use wirespeed::backend::lab::LabSpidevIo;
use wirespeed::linux::spidev::{Limits, Spidev, SpidevCounters};
use wirespeed::regmap::format::StdFormat;
use wirespeed::regmap::{CacheType, Regmap, RegmapConfig, SpiBus};
use wirespeed::spi::{
    BackendError, Bus, DeviceConfig, InvalidMessage, ModeFlags, OwnedTransfer, Policy, SpiError, Transfer,
};
use wirespeed_lab::trace::cs_windows;

/// A spidev bus on native chip select `cs` of the bench's lab block.
fn spidev_on(b: &common::Bench, cs: u8, limits: Limits) -> (Bus, Arc<SpidevCounters>) {
    let node = LabSpidevIo::new(b.bus.clone(), cs, 10_000_000, limits);
    let sp = Spidev::with_io(node, format!("lab spidev0.{cs}"), limits).unwrap();
    let counters = sp.counters();
    (Bus::with_message_backend(sp, Policy::fast()), counters)
}

#[test]
fn sync_prepared_async_and_embedded_hal_run_unchanged_on_spidev() {
    let b = bench(Policy::fast());
    let (bus, counters) = spidev_on(&b, 0, Limits::with_bufsiz(4096));
    let dev = bus.device(DeviceConfig::new(0, 10_000_000)).unwrap();
    let mut rx = [0u8; 4];
    dev.sync(&mut [Transfer::write(&[0x03]), Transfer::duplex(&[1, 2, 3, 4], &mut rx)]).unwrap();
    assert_eq!(rx, [1, 2, 3, 4], "the loopback echoes through the emulated kernel");
    assert_eq!(counters.ioctls(), 1, "a two-transfer message is one ioctl");

    let mut msg = dev.prepare(vec![OwnedTransfer::write(vec![0x0b]), OwnedTransfer::duplex(vec![9, 8, 7])]).unwrap();
    dev.run(&mut msg).unwrap();
    assert_eq!(msg.rx(1).unwrap(), &[9, 8, 7]);
    msg.tx_mut(1).unwrap()[0] = 6;
    let (msg, result) = dev.submit(msg).wait();
    result.unwrap();
    assert_eq!(msg.rx(1).unwrap(), &[6, 8, 7]);

    // Per-device order of async messages holds through the pump.
    let pending: Vec<_> =
        (0..20u8).map(|i| dev.submit(dev.prepare(vec![OwnedTransfer::duplex(vec![i])]).unwrap())).collect();
    for (i, p) in pending.into_iter().enumerate() {
        let (m, r) = p.wait();
        r.unwrap();
        assert_eq!(m.rx(0).unwrap(), &[i as u8]);
    }

    let mut eh = dev.clone();
    let mut read = [0u8; 2];
    eh.transaction(&mut [Operation::Write(&[0x05]), Operation::DelayNs(2_000), Operation::TransferInPlace(&mut read)])
        .unwrap();
    assert_eq!(counters.ioctls(), 4 + 20, "every message, whatever its API, is one ioctl");
}

#[test]
fn regmap_runs_on_spidev_against_the_lab_register_file() {
    let b = bench(Policy::fast());
    let (bus, counters) = spidev_on(&b, 1, Limits::with_bufsiz(4096));
    let dev = bus.device(DeviceConfig::new(0, 10_000_000)).unwrap();
    let mut cfg = RegmapConfig::new(StdFormat::new(16, 8).with_flags(0x0300, 0x0200), 0xFF);
    cfg.cache = CacheType::None;
    let map = Regmap::new(cfg, SpiBus::new(dev)).unwrap();
    map.multi_write(&[(0x10, 0xA1), (0x11, 0xA2), (0x20, 0xA3)]).unwrap();
    assert_eq!((b.regfile.peek(0x10), b.regfile.peek(0x11), b.regfile.peek(0x20)), (0xA1, 0xA2, 0xA3));
    assert_eq!(map.read(0x11).unwrap(), 0xA2);
    assert_eq!(counters.ioctls(), 2, "the coalesced write is one message, so one ioctl");
}

#[test]
fn cs_change_and_bufsiz_cuts_show_on_the_wire() {
    let b = bench(Policy::fast());
    let (bus, counters) = spidev_on(&b, 0, Limits { bufsiz: 64, align: 8 });
    let dev = bus.device(DeviceConfig::new(0, 10_000_000)).unwrap();
    let mut id = [0u8; 3];
    b.block.trace_start(1 << 12);
    dev.sync(&mut [Transfer::write(&[0x9f]), Transfer::read(&mut id)]).unwrap();
    dev.sync(&mut [Transfer::write(&[0x9f]).cs_change(None), Transfer::read(&mut id)]).unwrap();
    // 3 windows of 40 bytes: they cannot share a 64-byte ioctl.
    let big = [0x5a; 40];
    dev.sync(&mut [
        Transfer::write(&big).cs_change(None),
        Transfer::write(&big).cs_change(None),
        Transfer::write(&big),
    ])
    .unwrap();
    b.block.trace_stop();
    let windows: Vec<u32> = cs_windows(&b.block.trace_take()).iter().filter(|w| w.line == 0).map(|w| w.words).collect();
    assert_eq!(windows, [4, 1, 3, 40, 40, 40], "one window; two with cs_change; three cut at their boundaries");
    assert_eq!(counters.ioctls(), 1 + 1 + 3);
    let gap = dev.sync(&mut [Transfer::write(&[0; 40]), Transfer::write(&[0; 40])]).unwrap_err();
    assert!(gap.to_string().contains("bufsiz"), "{gap}");
}

#[test]
fn mode_bits_the_block_lacks_are_refused_at_creation_on_the_lab_and_at_read_back_through_spidev() {
    let b = bench(Policy::fast());
    let e = b.bus.device(DeviceConfig::new(0, 1_000_000).flags(ModeFlags::CS_HIGH)).unwrap_err();
    assert!(matches!(e, InvalidMessage::UnsupportedModeFlags { refused: ModeFlags::CS_HIGH, .. }), "{e:?}");
    assert!(e.to_string().contains("CS_HIGH"), "{e}");
    // Through spidev the kernel decides: the emulated node drops the bit, the read-back shows it.
    let (bus, counters) = spidev_on(&b, 0, Limits::with_bufsiz(4096));
    let dev = bus.device(DeviceConfig::new(0, 1_000_000).flags(ModeFlags::CS_HIGH | ModeFlags::LSB_FIRST)).unwrap();
    match dev.write(&[1]).unwrap_err() {
        SpiError::Backend(BackendError::ModeRefused { refused, .. }) => {
            assert_eq!(refused, ModeFlags::CS_HIGH | ModeFlags::LSB_FIRST)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(counters.ioctls(), 0, "nothing is sent in a mode the controller refused");
}

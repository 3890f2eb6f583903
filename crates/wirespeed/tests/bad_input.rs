//! Bad input at the Rust API (docs/bad-input.md, surface "Rust API"): each
//! test feeds one bad value and checks the typed error, that its message
//! names the value and what is allowed, and that nothing reached the bus
//! (the lab block's trace is empty, the loopback saw no word, the register
//! file and the GPIO lines are as they were).

mod common;

use common::{bench, Bench};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;
use wirespeed::backend::lab::{LabIommu, LabSpidevIo};
use wirespeed::dma::{Direction as DmaDirection, DmaBuffer, DmaDomain, DmaError, DomainConfig, IommuMode};
use wirespeed::gpio::{Drive, Edge, GpioError, LineSettings, RequestConfig};
use wirespeed::linux::spidev::{Limits, Spidev};
use wirespeed::regmap::format::StdFormat;
use wirespeed::regmap::{CacheType, RegSet, Regmap, RegmapConfig, RegmapError, SpiBus};
use wirespeed::spi::{Bus, DeviceConfig, InvalidMessage, ModeFlags, OwnedTransfer, Policy, SpiError, Transfer};
use wirespeed_lab::gpio::GpioChipConfig;
use wirespeed_lab::iommu::IommuConfig;
use wirespeed_lab::{Lab, LabConfig};

/// The bench (loopback on CS 0, register file on CS 1) with its bus trace on.
fn rig() -> Bench {
    let b = bench(Policy::fast());
    b.block.trace_start(1 << 12);
    b
}

/// Nothing went on the wire: no trace event, no word through the loopback.
#[track_caller]
fn nothing_on_the_bus(b: &Bench) {
    let trace = b.block.trace_take();
    assert!(trace.events.is_empty(), "bad input put {} events on the wire", trace.events.len());
    assert_eq!(b.loopback.words(), 0, "bad input reached the loopback");
}

/// The message names every one of `needles` (the value, what is allowed).
#[track_caller]
fn says(e: &impl Display, needles: &[&str]) {
    let text = e.to_string();
    for n in needles {
        assert!(text.contains(n), "{n:?} missing from: {text}");
    }
}

/// A spidev bus (bufsiz `bufsiz`) on CS 0 of the bench, and its ioctl count.
fn spidev(b: &Bench, bufsiz: usize) -> (Bus, Arc<wirespeed::linux::spidev::SpidevCounters>) {
    let limits = Limits::with_bufsiz(bufsiz);
    let node = LabSpidevIo::new(b.bus.clone(), 0, 10_000_000, limits);
    let sp = Spidev::with_io(node, "lab spidev0.0", limits).unwrap();
    let counters = sp.counters();
    (Bus::with_message_backend(sp, Policy::fast()), counters)
}

// ---- SPI ------------------------------------------------------------------

#[test]
fn spi_a_message_longer_than_the_backend_takes_is_message_too_large() {
    let b = rig();
    let (bus, counters) = spidev(&b, 64);
    let dev = bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let e = dev.sync(&mut [Transfer::write(&[0x55; 96])]).unwrap_err();
    let SpiError::Invalid(InvalidMessage::MessageTooLarge { bytes: 96, limit: 64, .. }) = &e else { panic!("{e:?}") };
    says(&e, &["96 bytes", "at most 64", "spidev.bufsiz="]);
    assert_eq!(counters.ioctls(), 0);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_a_read_too_large_to_allocate_is_buffer_too_large() {
    let b = rig();
    let dev = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let e = dev.prepare(vec![OwnedTransfer::read(usize::MAX)]).unwrap_err();
    assert_eq!(e, InvalidMessage::BufferTooLarge { index: 0, len: usize::MAX });
    says(&e, &["transfer 0", &usize::MAX.to_string(), "could not be allocated"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_an_empty_message_or_a_zero_length_transfer_is_refused() {
    let b = rig();
    let dev = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let e = dev.sync(&mut []).unwrap_err();
    assert_eq!(e, SpiError::Invalid(InvalidMessage::Empty));
    says(&e, &["empty message", "at least one transfer"]);
    let e = dev.sync(&mut [Transfer::write(&[1]), Transfer::write(&[])]).unwrap_err();
    assert_eq!(e, SpiError::Invalid(InvalidMessage::EmptyTransfer { index: 1 }));
    says(&e, &["transfer 1 moves no data", "non-empty"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_speed_0_or_outside_the_controller_range_is_refused() {
    let b = rig();
    let e = b.bus.device(DeviceConfig::new(0, 0)).unwrap_err();
    assert_eq!(e, InvalidMessage::ZeroSpeed { index: None });
    says(&e, &["speed 0 Hz", "above 0 Hz"]);
    let caps = b.bus.caps();
    let e = b.bus.device(DeviceConfig::new(0, caps.min_speed_hz - 1)).unwrap_err();
    assert!(matches!(e, InvalidMessage::SpeedTooLow { index: None, .. }), "{e:?}");
    says(&e, &[&format!("{} Hz", caps.min_speed_hz - 1), &format!("minimum of {} Hz", caps.min_speed_hz)]);
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let e = dev.sync(&mut [Transfer::write(&[1]).speed_hz(40_000_000)]).unwrap_err();
    let want = InvalidMessage::SpeedTooHigh { index: Some(0), requested_hz: 40_000_000, max_hz: 20_000_000 };
    assert_eq!(e, SpiError::Invalid(want));
    says(&e, &["transfer 0", "40000000 Hz", "maximum of 20000000 Hz"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_bits_per_word_the_controller_cannot_shift_are_refused() {
    let b = rig();
    let e = b.bus.device(DeviceConfig::new(0, 1_000_000).bits_per_word(12)).unwrap_err();
    assert!(matches!(e, InvalidMessage::UnsupportedBitsPerWord { index: None, bits: 12, .. }), "{e:?}");
    says(&e, &["12 bits per word", "allowed: 8, 16, 32"]);
    let dev = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let e = dev.sync(&mut [Transfer::write(&[1, 2]).bits_per_word(12)]).unwrap_err();
    assert!(matches!(e, SpiError::Invalid(InvalidMessage::UnsupportedBitsPerWord { index: Some(0), .. })), "{e:?}");
    // A buffer that is not whole words of a supported size.
    let e = dev.sync(&mut [Transfer::write(&[1, 2, 3]).bits_per_word(16)]).unwrap_err();
    assert_eq!(e, SpiError::Invalid(InvalidMessage::PartialWord { index: 0, len: 3, word_bytes: 2 }));
    says(&e, &["3 bytes", "whole number of 2-byte words"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_mode_bits_the_controller_lacks_are_refused() {
    let b = rig();
    let e = b.bus.device(DeviceConfig::new(0, 1_000_000).flags(ModeFlags::CS_HIGH)).unwrap_err();
    assert!(matches!(e, InvalidMessage::UnsupportedModeFlags { refused: ModeFlags::CS_HIGH, .. }), "{e:?}");
    says(&e, &["CS_HIGH", "supported:"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_a_chip_select_out_of_range_is_refused() {
    let b = rig();
    let e = b.bus.device(DeviceConfig::new(9, 1_000_000)).unwrap_err();
    assert_eq!(e, InvalidMessage::NoSuchChipSelect { cs: 9, available: 4 });
    says(&e, &["chip select 9", "0..4"]);
    nothing_on_the_bus(&b);
}

#[test]
fn spi_tx_and_rx_of_different_lengths_are_refused() {
    let b = rig();
    let dev = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let mut rx = [0u8; 3];
    let e = dev.sync(&mut [Transfer::duplex(&[1, 2], &mut rx)]).unwrap_err();
    assert_eq!(e, SpiError::Invalid(InvalidMessage::LengthMismatch { index: 0, tx: 2, rx: 3 }));
    says(&e, &["TX is 2 bytes", "RX is 3 bytes", "equal lengths"]);
    assert_eq!(rx, [0; 3], "the RX buffer is untouched");
    nothing_on_the_bus(&b);
}

#[test]
fn spi_a_delay_longer_than_the_backend_can_do_is_refused() {
    let b = rig();
    let (bus, counters) = spidev(&b, 4096);
    let dev = bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let e = dev.sync(&mut [Transfer::write(&[1, 2]).word_delay_ns(256_000)]).unwrap_err();
    let SpiError::Invalid(InvalidMessage::DelayTooLong { index: 0, what: "word delay", ns: 256_000, max_ns }) = e
    else {
        panic!("{e:?}")
    };
    says(&e, &["word delay of 256000 ns", &format!("{max_ns} ns at most")]);
    assert_eq!(counters.ioctls(), 0);
    nothing_on_the_bus(&b);
}

// ---- regmap ---------------------------------------------------------------

/// The bench's register file (CS 1: 0x03 read, 0x02 write, 8-bit registers)
/// as a map of registers 0..=0x3f with a stride of 2, where 0x10 is read-only.
fn regmap(b: &Bench) -> Regmap {
    let dev = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    let mut cfg = RegmapConfig::new(StdFormat::new(16, 8).with_flags(0x0300, 0x0200), 0x3f);
    cfg.cache = CacheType::None;
    cfg.reg_stride = 2;
    cfg.writeable = RegSet::predicate(|r| r != 0x10);
    Regmap::new(cfg, SpiBus::new(dev)).unwrap()
}

/// The regmap row: `f` fails with `want`, saying `needles`, and the map
/// sent no message.
#[track_caller]
fn regmap_refuses(f: impl FnOnce(&Regmap) -> Result<(), RegmapError>, want: RegmapError, needles: &[&str]) {
    let b = rig();
    let map = regmap(&b);
    let before = (map.bus_messages(), b.regfile.peek(0x10), b.regfile.peek(0x12));
    let e = f(&map).unwrap_err();
    assert_eq!(e, want);
    says(&e, needles);
    assert_eq!((map.bus_messages(), b.regfile.peek(0x10), b.regfile.peek(0x12)), before, "the map sent a message");
    assert!(b.block.trace_take().events.is_empty(), "bad input put events on the wire");
}

#[test]
fn regmap_a_register_beyond_the_last_is_out_of_range() {
    regmap_refuses(
        |m| m.write(0x40, 1),
        RegmapError::OutOfRange { reg: 0x40, max: 0x3f },
        &["0x40", "the last register is 0x3f"],
    );
    regmap_refuses(|m| m.read(0x40).map(drop), RegmapError::OutOfRange { reg: 0x40, max: 0x3f }, &["0x40"]);
}

#[test]
fn regmap_a_register_off_the_stride_is_misaligned() {
    regmap_refuses(
        |m| m.write(0x11, 1),
        RegmapError::Misaligned { reg: 0x11, stride: 2 },
        &["0x11", "multiple of the register stride 2"],
    );
}

#[test]
fn regmap_a_write_to_a_read_only_register_is_not_writeable() {
    regmap_refuses(|m| m.write(0x10, 1), RegmapError::NotWriteable { reg: 0x10 }, &["0x10", "not writeable"]);
}

#[test]
fn regmap_a_value_wider_than_the_register_is_value_too_wide() {
    regmap_refuses(
        |m| m.write(0x12, 0x1ff),
        RegmapError::ValueTooWide { reg: 0x12, value: 0x1ff, bits: 8 },
        &["0x1ff", "0x12", "8 bits"],
    );
}

// ---- GPIO -----------------------------------------------------------------

/// The GPIO row: on an 8-line lab chip whose line 2 is an input, `f` fails
/// with `want` saying `needles`, and no line changed (level, setup, owner).
#[track_caller]
fn gpio_refuses(f: impl FnOnce(&wirespeed::gpio::Chip) -> Result<(), GpioError>, want: GpioError, needles: &[&str]) {
    let lab = Lab::new(LabConfig::default());
    let hw = lab.gpio_chip(GpioChipConfig { lines: 8, ..GpioChipConfig::default() });
    let chip = wirespeed::backend::lab::gpio::open(&hw).unwrap();
    let state = |chip: &wirespeed::gpio::Chip| -> Vec<String> {
        (0..8)
            .map(|o| {
                format!("{:?} {:?} {:?}", hw.value(o), hw.setup(o), chip.line_info(o).map(|i| (i.used, i.consumer)))
            })
            .collect()
    };
    let before = state(&chip);
    let e = f(&chip).unwrap_err();
    assert_eq!(e, want);
    says(&e, needles);
    assert_eq!(state(&chip), before, "bad input changed a line");
}

#[test]
fn gpio_a_line_offset_out_of_range_is_refused() {
    gpio_refuses(
        |c| c.request_lines(&RequestConfig::new("t").line(8, LineSettings::output(true))).map(drop),
        GpioError::OffsetOutOfRange { offset: 8, lines: 8 },
        &["offset 8", "8 lines (0..8)"],
    );
}

#[test]
fn gpio_setting_an_input_is_wrong_direction() {
    gpio_refuses(
        |c| {
            let r = c.request_lines(&RequestConfig::new("t").line(2, LineSettings::input()))?;
            let e = r.set_value(2, true);
            drop(r);
            e
        },
        GpioError::WrongDirection { offset: 2, needs: "an output" },
        &["line 2", "must be an output"],
    );
}

#[test]
fn gpio_conflicting_flags_are_invalid_config() {
    gpio_refuses(
        |c| c.request_lines(&RequestConfig::new("t").line(3, LineSettings::output(true).edge(Edge::Rising))).map(drop),
        GpioError::InvalidConfig {
            what: "edge detection",
            value: "Rising on an output".into(),
            allowed: "inputs only",
        },
        &["edge detection", "inputs only"],
    );
    gpio_refuses(
        |c| c.request_lines(&RequestConfig::new("t").line(3, LineSettings::input().drive(Drive::OpenDrain))).map(drop),
        GpioError::InvalidConfig { what: "drive", value: "OpenDrain on an input".into(), allowed: "outputs only" },
        &["drive", "outputs only"],
    );
    gpio_refuses(
        |c| {
            let cfg = RequestConfig::new("t").line(3, LineSettings::input()).line(3, LineSettings::input());
            c.request_lines(&cfg).map(drop)
        },
        GpioError::InvalidConfig { what: "line list", value: "offset 3 twice".into(), allowed: "each offset once" },
        &["offset 3 twice", "each offset once"],
    );
}

#[test]
fn gpio_a_debounce_too_long_is_invalid_config() {
    let long = Duration::from_micros(u64::from(u32::MAX) + 1);
    gpio_refuses(
        |c| c.request_lines(&RequestConfig::new("t").line(3, LineSettings::input().debounce(long))).map(drop),
        GpioError::InvalidConfig { what: "debounce", value: format!("{long:?}"), allowed: "0 to 4294967295 µs" },
        &["debounce", "0 to 4294967295 µs"],
    );
}

// ---- DMA ------------------------------------------------------------------

#[test]
fn dma_a_buffer_of_zero_bytes_or_above_the_maximum_is_refused() {
    let e = DmaBuffer::new(0).unwrap_err();
    assert_eq!(e, DmaError::ZeroLength);
    says(&e, &["length 0", "at least 1 byte"]);
    let e = DmaBuffer::new(DmaBuffer::MAX_LEN + 1).unwrap_err();
    assert_eq!(e, DmaError::BufferTooLarge { len: DmaBuffer::MAX_LEN + 1, max: DmaBuffer::MAX_LEN });
    says(&e, &[&(DmaBuffer::MAX_LEN + 1).to_string(), &format!("1..={}", DmaBuffer::MAX_LEN)]);
}

#[test]
fn dma_a_mapping_of_zero_bytes_or_beyond_the_buffer_is_refused_and_maps_nothing() {
    let lab = Lab::new(LabConfig::default());
    let iommu = lab.iommu(IommuConfig::default()).unwrap();
    let domain =
        DmaDomain::new(Some(Arc::new(LabIommu::new(iommu.clone()))), DomainConfig::with_mode(IommuMode::Strict))
            .unwrap();
    let mut buf = DmaBuffer::new(4096).unwrap();
    for range in [0..0, 0..4097, 4096..4097] {
        let e = domain.map_range(&mut buf, range.clone(), DmaDirection::ToDevice).map(drop).unwrap_err();
        assert_eq!(e, DmaError::RangeOutOfBounds { start: range.start, end: range.end, len: 4096 });
        says(&e, &[&format!("{}..{}", range.start, range.end), "start < end <= 4096"]);
    }
    assert_eq!((domain.iova_outstanding(), iommu.mapped_pages()), (0, 0), "nothing is mapped");
}

//! A driver written only against the embedded-hal 1.0 traits runs unmodified
//! on wirespeed and the lab.

mod common;

use common::{alloc_count, bench};
use embedded_hal::spi::{Operation, SpiBus, SpiDevice};
use wirespeed::spi::{ChipSelect, DeviceConfig, InvalidMessage, Policy, SpiError};
use wirespeed_lab::trace::cs_windows;

/// A generic driver for a register chip with the lab register file's protocol
/// (READ 0x03 / WRITE 0x02, address, data), as a driver crate would write it.
struct RegChip<S> {
    spi: S,
}

impl<S: SpiDevice> RegChip<S> {
    fn write(&mut self, addr: u8, data: &[u8]) -> Result<(), S::Error> {
        self.spi.transaction(&mut [Operation::Write(&[0x02, addr]), Operation::Write(data)])
    }

    /// Reads after a pause between command and data, as slow chips require.
    fn read_slow(&mut self, addr: u8, out: &mut [u8], pause_ns: u32) -> Result<(), S::Error> {
        self.spi.transaction(&mut [Operation::Write(&[0x03, addr]), Operation::DelayNs(pause_ns), Operation::Read(out)])
    }

    fn exchange(&mut self, addr: u8, data: &mut [u8]) -> Result<(), S::Error> {
        let mut cmd = [0x03, addr, 0, 0];
        self.spi.transaction(&mut [Operation::TransferInPlace(&mut cmd[..2]), Operation::Transfer(data, &[0; 1])])
    }
}

#[test]
fn generic_driver_runs_on_the_lab_with_delays_to_the_nanosecond() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    let mut chip = RegChip { spi: dev };
    chip.write(0x20, &[1, 2, 3, 4]).unwrap();
    assert_eq!(b.regfile.peek(0x23), 4);

    b.block.trace_start(1 << 12);
    let mut out = [0u8; 4];
    chip.read_slow(0x20, &mut out, 2_500).unwrap();
    assert_eq!(out, [1, 2, 3, 4]);
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 1, "one transaction is one CS window");
    assert_eq!(w[0].mosi[..2], [0x03, 0x20]);
    // The pause between the two transfers: the whole window spans the wire
    // time of 6 bytes (2.4 µs) plus at least the 2.5 µs delay.
    let span = w[0].last_clock.unwrap().ns_since(w[0].first_clock.unwrap());
    assert!(span >= 2_400 + 2_500, "DelayNs not honoured: window of {span} ns");

    // Transfer with unequal buffers: read 3 bytes while writing 1 (the rest is zeros).
    let mut data = [0u8; 3];
    chip.exchange(0x21, &mut data).unwrap();
    assert_eq!(data, [2, 3, 4]);
}

#[test]
fn spi_bus_without_chip_select_and_no_allocation_per_transaction() {
    let b = bench(Policy::fast());
    let cfg = DeviceConfig { cs: ChipSelect::None, ..DeviceConfig::new(0, 20_000_000) };
    let mut bus = b.bus.device(cfg).unwrap();
    let mut rx = [0u8; 4];
    SpiBus::transfer(&mut bus, &mut rx, &[9, 8, 7, 6]).unwrap();
    // No CS on the native line: the loopback is not selected, so MISO idles high.
    assert_eq!(rx, [0xFF; 4]);
    SpiBus::flush(&mut bus).unwrap();

    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut buf = [0u8; 9];
    for _ in 0..10 {
        dev.transaction(&mut [Operation::Write(&[1, 2]), Operation::DelayNs(100), Operation::Read(&mut buf)]).unwrap();
    }
    let before = alloc_count::get();
    for _ in 0..500 {
        dev.transaction(&mut [Operation::Write(&[1, 2]), Operation::DelayNs(100), Operation::Read(&mut buf)]).unwrap();
    }
    assert_eq!(alloc_count::get() - before, 0, "an embedded-hal transaction allocated");
}

#[test]
fn bus_calls_with_empty_buffers_send_nothing_whatever_the_word() {
    let b = bench(Policy::fast());
    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut wide = dev.u16_words();
    b.block.trace_start(1 << 10);
    SpiBus::<u8>::read(&mut dev, &mut []).unwrap();
    SpiBus::<u8>::transfer(&mut dev, &mut [], &[]).unwrap();
    SpiBus::<u16>::read(&mut wide, &mut []).unwrap();
    SpiBus::<u16>::write(&mut wide, &[]).unwrap();
    SpiBus::<u16>::transfer(&mut wide, &mut [], &[]).unwrap();
    SpiBus::<u16>::transfer_in_place(&mut wide, &mut []).unwrap();
    assert!(b.block.trace_take().events.is_empty(), "an empty bus call selected the device");
    assert_eq!(b.bus.stats().messages, 0);
    SpiBus::<u16>::write(&mut wide, &[0x1234]).unwrap();
    assert_eq!(b.bus.stats().messages, 1, "a call with data is one message");
}

#[test]
fn empty_operations_send_nothing_and_keep_the_delays_around_them() {
    let b = bench(Policy::fast());
    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    // Zero-length buffers are allowed by the traits, on either side or both.
    SpiBus::transfer(&mut dev, &mut [], &[]).unwrap();
    let mut rx = [0u8; 2];
    dev.transaction(&mut [Operation::Transfer(&mut [], &[]), Operation::Transfer(&mut rx, &[5, 6])]).unwrap();
    assert_eq!(rx, [5, 6]);

    // A delay before an empty last operation still runs, with CS active.
    b.block.trace_start(1 << 10);
    dev.transaction(&mut [Operation::Write(&[1, 2]), Operation::DelayNs(300_000), Operation::Read(&mut [])]).unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 1);
    let held = w[0].deasserted_at.unwrap().ns_since(w[0].last_clock.unwrap());
    assert!(held >= 300_000, "the trailing DelayNs was dropped: CS released {held} ns after the last clock");
}

#[test]
fn a_transaction_of_delays_only_is_a_chip_select_pulse_as_long_as_they_are() {
    let b = bench(Policy::fast());
    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    b.block.trace_start(1 << 10);
    // A wake-up pulse: CS low for 200 µs, no clocks.
    dev.transaction(&mut [Operation::DelayNs(150_000), Operation::Write(&[]), Operation::DelayNs(50_000)]).unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 1, "one CS window per transaction, even with no data");
    assert_eq!((w[0].line, w[0].words), (0, 0));
    let width = w[0].deasserted_at.unwrap().ns_since(w[0].asserted_at);
    assert!(width >= 200_000, "CS pulse of {width} ns for 200 µs of DelayNs");
}

#[test]
fn errors_name_the_operation_as_the_caller_wrote_the_list() {
    let b = bench(Policy::fast());
    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000).bits_per_word(16)).unwrap();
    // Operations 0 and 1 make no step; operation 2 is 3 bytes of 16-bit words.
    let r = dev.transaction(&mut [Operation::DelayNs(10), Operation::Write(&[]), Operation::Write(&[1, 2, 3])]);
    assert_eq!(r, Err(SpiError::Invalid(InvalidMessage::PartialWord { index: 2, len: 3, word_bytes: 2 })));
    assert_eq!(b.loopback.selects(), 0, "nothing is sent for an invalid transaction");
}

#[test]
fn a_list_longer_than_the_inline_plan_runs_every_operation_in_one_window() {
    let b = bench(Policy::fast());
    let mut dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let sent: Vec<[u8; 2]> = (0..12u8).map(|i| [i, 0x80 | i]).collect();
    let mut got = [[0u8; 2]; 12];
    let mut ops: Vec<Operation<'_, u8>> = Vec::new();
    for (rx, tx) in got.iter_mut().zip(&sent) {
        ops.push(Operation::Transfer(rx, tx));
        ops.push(Operation::DelayNs(500));
    }
    b.block.trace_start(1 << 10);
    dev.transaction(&mut ops).unwrap();
    drop(ops);
    let w = cs_windows(&b.block.trace_take());
    assert_eq!((w.len(), w[0].words), (1, 24), "one CS window with every word");
    assert_eq!(got.to_vec(), sent, "the loopback returns what each operation sent");
}

/// A generic driver for a chip with 16-bit frames, as a driver crate would
/// write it against `SpiDevice<u16>`: a command word, then data words.
struct WordChip<S> {
    spi: S,
}

impl<S: SpiDevice<u16>> WordChip<S> {
    fn command_then_exchange(&mut self, command: u16, data: &mut [u16]) -> Result<(), S::Error> {
        self.spi.transaction(&mut [Operation::Write(&[command]), Operation::TransferInPlace(data)])
    }
}

/// The words a trace saw shifted: (bits, MOSI value).
fn words_of(trace: &wirespeed_lab::trace::Trace) -> Vec<(u8, u32)> {
    trace
        .events
        .iter()
        .filter_map(|e| match e {
            wirespeed_lab::trace::TraceEvent::Word { bits, mosi, .. } => Some((*bits, *mosi)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_u16_driver_shifts_16_bit_words_in_one_window_with_no_allocation() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut chip = WordChip { spi: dev.u16_words() };
    b.block.trace_start(1 << 10);
    let mut data = [0xBEEF, 0x0102, 0xFFFF];
    chip.command_then_exchange(0xA55A, &mut data).unwrap();
    assert_eq!(data, [0xBEEF, 0x0102, 0xFFFF], "the loopback echoes whole words");
    let trace = b.block.trace_take();
    assert_eq!(
        words_of(&trace),
        [(16, 0xA55A), (16, 0xBEEF), (16, 0x0102), (16, 0xFFFF)],
        "16-bit words, MSB first as values"
    );
    assert_eq!(cs_windows(&trace).len(), 1, "one CS window for the transaction");
    b.block.trace_stop();

    // u32 words and the bus calls; a read shorter than the write pads nothing, as the trait says.
    let mut wide = dev.u32_words();
    let mut rx = [0u32; 1];
    SpiBus::transfer(&mut wide, &mut rx, &[0x1234_5678, 0x9ABC_DEF0]).unwrap();
    assert_eq!(rx, [0x1234_5678]);

    let mut buf = [0u16; 4];
    for _ in 0..10 {
        chip.command_then_exchange(1, &mut buf).unwrap();
    }
    let before = alloc_count::get();
    for _ in 0..500 {
        chip.command_then_exchange(1, &mut buf).unwrap();
    }
    assert_eq!(alloc_count::get() - before, 0, "a u16 transaction allocated");
}

#[test]
fn wide_words_take_the_device_s_bits_when_they_fit_and_their_own_width_otherwise() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig { bits_per_word: 32, ..DeviceConfig::new(0, 20_000_000) }).unwrap();
    b.block.trace_start(1 << 10);
    SpiBus::write(&mut dev.u16_words(), &[0x0F0F]).unwrap();
    SpiBus::write(&mut dev.u32_words(), &[0x0F0F_0F0F]).unwrap();
    assert_eq!(
        words_of(&b.block.trace_take()),
        [(16, 0x0F0F), (32, 0x0F0F_0F0F)],
        "on a 32-bit device: u16 words at 16 bits, u32 at its 32"
    );
}

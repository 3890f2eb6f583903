//! The SPI core's sync path on the lab: data, chip select and timing seen on the wires.

mod common;

use common::{bench, irq_policy, poll_policy};
use wirespeed::spi::{DeviceConfig, InvalidMessage, OwnedTransfer, Policy, SpiError, Transfer};
use wirespeed_lab::trace::{cs_high_gaps_ns, cs_windows};

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn every_size_round_trips_through_loopback_in_both_completion_modes() {
    for (name, policy) in [("poll", poll_policy()), ("irq", irq_policy())] {
        let b = bench(policy);
        let dev = b.bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
        for n in 1..=4096usize {
            let tx = pattern(n, n as u8);
            let mut rx = vec![0u8; n];
            dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap_or_else(|e| panic!("{name} {n}: {e}"));
            assert_eq!(rx, tx, "{name}: {n} bytes");
        }
    }
}

#[test]
fn irq_completion_wakes_on_the_block_interrupt() {
    let b = bench(irq_policy());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let before = b.block.irq().raise_count();
    let mut rx = [0u8; 9];
    dev.sync(&mut [Transfer::duplex(&[7; 9], &mut rx)]).unwrap();
    assert!(b.block.irq().raise_count() > before, "an IRQ-mode transfer must be completed by the interrupt");
    let b = bench(poll_policy());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    dev.sync(&mut [Transfer::duplex(&[7; 9], &mut rx)]).unwrap();
    assert_eq!(b.block.irq().raise_count(), 0, "a polled transfer raises no interrupt");
}

#[test]
fn wire_time_follows_clock_and_word_size_overrides() {
    let b = bench(poll_policy());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    b.block.trace_start(1 << 16);
    let tx = [0x5Au8; 64];
    dev.sync(&mut [Transfer::write(&tx)]).unwrap();
    dev.sync(&mut [Transfer::write(&tx).speed_hz(10_000_000)]).unwrap();
    dev.sync(&mut [Transfer::write(&tx).bits_per_word(16)]).unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 3);
    let span = |i: usize| w[i].last_clock.unwrap().ns_since(w[i].first_clock.unwrap());
    // 512 bits at 20 MHz = 25.6 µs; at 10 MHz twice that; 16-bit words: same bits, half the words.
    assert!((25_600..40_000).contains(&span(0)), "20 MHz: {} ns", span(0));
    assert!((51_200..70_000).contains(&span(1)), "10 MHz: {} ns", span(1));
    assert!((25_600..40_000).contains(&span(2)), "16-bit: {} ns", span(2));
    assert_eq!((w[0].words, w[2].words), (64, 32));
    assert_eq!(w[0].bits, w[2].bits);
}

#[test]
fn cs_change_inside_and_at_the_end_of_a_message() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(0, 0, 2_000)).unwrap();
    b.block.trace_start(1 << 16);
    // Inside: CS toggles between the two transfers, inactive for at least 2 µs.
    dev.sync(&mut [Transfer::write(&[1, 2]).cs_change(None), Transfer::write(&[3])]).unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!((w[0].mosi.clone(), w[1].mosi.clone()), (vec![1, 2], vec![3]));
    assert!(cs_high_gaps_ns(&w)[0] >= 2_000);
    // At the end: CS stays active after the message; the next message continues in the same window.
    b.block.trace_start(1 << 16);
    dev.sync(&mut [Transfer::write(&[4]).cs_change(None)]).unwrap();
    dev.sync(&mut [Transfer::write(&[5])]).unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].mosi, vec![4, 5]);
    assert!(w[0].deasserted_at.is_some());
}

#[test]
fn fast_cs_change_gap_is_the_longer_of_its_delay_and_the_inactive_time() {
    // The gap is waited at the next selection, after the next transfer's
    // FIFO is loaded: CS must still stay high for the whole gap.
    let b = bench(Policy::fast());
    for (inactive, delay) in [(1_000u32, 6_000u32), (6_000, 1_000)] {
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(0, 0, inactive)).unwrap();
        b.block.trace_start(1 << 16);
        dev.sync(&mut [
            Transfer::write(&[1]).cs_change(Some(delay)),
            Transfer::write(&[2, 3]).cs_change(Some(delay)),
            Transfer::write(&[4]),
        ])
        .unwrap();
        let w = cs_windows(&b.block.trace_take());
        assert_eq!(w.len(), 3, "{w:?}");
        let want = u64::from(inactive.max(delay));
        for g in cs_high_gaps_ns(&w) {
            assert!(g >= want, "inactive {inactive} ns, cs_change delay {delay} ns: CS high for {g} ns");
        }
    }
}

#[test]
fn classic_cs_change_defaults_to_ten_microseconds() {
    let b = bench(Policy::classic());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    b.block.trace_start(1 << 16);
    dev.sync(&mut [Transfer::write(&[1]).cs_change(None), Transfer::write(&[2])]).unwrap();
    let gaps = cs_high_gaps_ns(&cs_windows(&b.block.trace_take()));
    assert!(gaps[0] >= 10_000, "kernel default cs_change delay is 10 µs, saw {} ns", gaps[0]);
}

#[test]
fn a_cs_change_delay_of_zero_waits_nothing_under_the_kernel_presets() {
    // Linux's "fast mode": cs_change_delay = { 0, SPI_DELAY_UNIT_NSECS }
    // returns at once; only a zeroed (µs) one waits the 10 µs default.
    for policy in [Policy::classic(), Policy::linux69()] {
        let b = bench(policy.clone());
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        // The shortest of a few gaps each: one stalled by the host says nothing.
        let mut gaps = [u64::MAX; 2];
        for _ in 0..5 {
            for (g, delay) in gaps.iter_mut().zip([Some(0), None]) {
                b.block.trace_start(1 << 16);
                dev.sync(&mut [Transfer::write(&[1]).cs_change(delay), Transfer::write(&[2])]).unwrap();
                *g = (*g).min(cs_high_gaps_ns(&cs_windows(&b.block.trace_take()))[0]);
            }
        }
        assert!(gaps[1] >= 10_000, "{policy:?}: no delay given, CS high {} ns; the kernel waits 10 µs", gaps[1]);
        // The 10 µs default not waited: shorter by most of it.
        assert!(gaps[0] + 5_000 < gaps[1], "{policy:?}: a zero delay kept CS high {} ns against {}", gaps[0], gaps[1]);
    }
}

#[test]
fn classic_cs_change_inside_a_message_waits_the_inactive_time_then_the_change_delay() {
    // The kernel's spi_set_cs(false) waits cs_inactive, then the transfer's
    // cs_change delay follows: 30 µs + 5 µs before CS rises again.
    let b = bench(Policy::classic());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(0, 0, 30_000)).unwrap();
    b.block.trace_start(1 << 16);
    dev.sync(&mut [Transfer::write(&[1]).cs_change(Some(5_000)), Transfer::write(&[2])]).unwrap();
    let gaps = cs_high_gaps_ns(&cs_windows(&b.block.trace_take()));
    assert!(gaps[0] >= 35_000, "classic CS-high gap {} ns, the kernel waits 35 µs", gaps[0]);
}

#[test]
fn setup_time_is_a_deadline_not_a_rounded_sleep() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(50, 50, 50)).unwrap();
    b.block.trace_start(1 << 16);
    for _ in 0..200 {
        dev.sync(&mut [Transfer::write(&[0; 9])]).unwrap();
    }
    let w = cs_windows(&b.block.trace_take());
    let mut c2c: Vec<u64> = w.iter().filter_map(|w| w.cs_to_clock_ns()).collect();
    c2c.sort_unstable();
    assert!(c2c[0] >= 50, "setup time violated: {} ns", c2c[0]);
    // Generous bound: the median must stay far below the 1 µs a rounded-up udelay costs.
    assert!(c2c[c2c.len() / 2] < 1_000, "median CS→clock {} ns", c2c[c2c.len() / 2]);
    let holds: Vec<u64> = w.iter().filter_map(|w| w.clock_to_cs_ns()).collect();
    assert!(holds.iter().all(|&h| h >= 50), "hold time violated");
    assert!(cs_high_gaps_ns(&w).iter().all(|&g| g >= 50), "inactive time violated");
}

#[test]
fn register_file_reads_back_what_was_written() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    dev.write(&[0x02, 0x10, 0xDE, 0xAD]).unwrap();
    assert_eq!((b.regfile.peek(0x10), b.regfile.peek(0x11)), (0xDE, 0xAD));
    let mut v = [0u8; 2];
    dev.write_then_read(&[0x03, 0x10], &mut v).unwrap();
    assert_eq!(v, [0xDE, 0xAD]);
}

#[test]
fn invalid_messages_are_rejected_and_send_nothing() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    b.block.trace_start(1 << 10);
    let mut rx3 = [0u8; 3];
    let mut rx2 = [0u8; 2];
    let cases: Vec<(Vec<Transfer<'_>>, InvalidMessage)> = vec![
        (vec![], InvalidMessage::Empty),
        (
            vec![Transfer::write(&[1]), Transfer::write(&[1]).speed_hz(40_000_000)],
            InvalidMessage::SpeedTooHigh { index: Some(1), requested_hz: 40_000_000, max_hz: 20_000_000 },
        ),
        (vec![Transfer::duplex(&[1, 2], &mut rx3)], InvalidMessage::LengthMismatch { index: 0, tx: 2, rx: 3 }),
        (
            vec![Transfer::read(&mut rx2).bits_per_word(12)],
            InvalidMessage::UnsupportedBitsPerWord { index: Some(0), bits: 12, supported_mask: 0x8000_8080 },
        ),
        (
            vec![Transfer::write(&[1, 2, 3]).bits_per_word(16)],
            InvalidMessage::PartialWord { index: 0, len: 3, word_bytes: 2 },
        ),
        (vec![Transfer::write(&[])], InvalidMessage::EmptyTransfer { index: 0 }),
    ];
    for (mut msg, want) in cases {
        let err = dev.sync(&mut msg).expect_err(&format!("{want:?}"));
        assert_eq!(err, SpiError::Invalid(want.clone()));
        assert!(!err.to_string().is_empty());
    }
    // A prepared read too large to allocate is rejected too, not a panic.
    let huge = dev.prepare(vec![OwnedTransfer::write(vec![1]), OwnedTransfer::read(usize::MAX)]).unwrap_err();
    assert_eq!(huge, InvalidMessage::BufferTooLarge { index: 1, len: usize::MAX });
    assert!(huge.to_string().contains("could not be allocated"), "{huge}");
    assert!(b.block.trace_take().events.is_empty(), "a rejected message must put nothing on the wire");
    assert_eq!(b.loopback.words(), 0);
    // A transfer's speed of 0 means "the device's speed"; a device of 0 Hz is rejected.
    assert!(matches!(b.bus.device(DeviceConfig::new(0, 0)), Err(InvalidMessage::ZeroSpeed { index: None })));
    assert!(matches!(
        b.bus.device(DeviceConfig::new(9, 1_000_000)),
        Err(InvalidMessage::NoSuchChipSelect { cs: 9, available: 4 })
    ));
}

#[test]
fn a_held_cs_released_by_another_device_still_keeps_its_inactive_time() {
    let b = bench(Policy::fast());
    let a = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(0, 0, 20_000)).unwrap();
    let other = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    b.block.trace_start(1 << 12);
    a.sync(&mut [Transfer::write(&[1]).cs_change(None)]).unwrap(); // CS 0 stays active
    other.write(&[0x02, 0x00, 0x55]).unwrap(); // releases CS 0 first
    a.write(&[2]).unwrap();
    let w: Vec<_> = cs_windows(&b.block.trace_take()).into_iter().filter(|w| w.line == 0).collect();
    assert_eq!(w.len(), 2, "{w:?}");
    let gap = w[1].asserted_at.ns_since(w[0].deasserted_at.unwrap());
    assert!(gap >= 20_000, "CS 0 inactive for {gap} ns after its release by another device; 20 µs required");
}

#[test]
fn a_transfer_longer_than_one_controller_burst_is_sent_whole_under_one_chip_select() {
    use wirespeed_lab::{devices::Loopback, LabConfig};
    // The WSPI block shifts at most 2^24 − 1 words per burst (XFERLEN is 24 bits).
    let lb = Loopback::new();
    let config = LabConfig { instant_wire: true, ..LabConfig::default() };
    let (_lab, bus) = common::lab_bus(config, Policy::fast(), lb.clone(), |d| d);
    let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
    let n = (1 << 24) + 5;
    let tx = pattern(n, 7);
    let mut rx = vec![0u8; n];
    dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
    assert!(rx == tx, "data across the burst boundary came back wrong");
    assert_eq!((lb.words(), lb.selects()), (n as u64, 1));
}

/// The lab's controller driver, offering only interrupt completion; counts
/// the transfers it was told to poll.
struct IrqOnly(
    wirespeed::backend::lab::LabSpi,
    wirespeed::spi::ControllerCaps,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
);

impl wirespeed::spi::Controller for IrqOnly {
    fn caps(&self) -> &wirespeed::spi::ControllerCaps {
        &self.1
    }
    fn configure(&mut self, mode: wirespeed::spi::Mode, speed_hz: u32, bits: u8) {
        self.0.configure(mode, speed_hz, bits)
    }
    fn set_cs(&mut self, cs: u8, active: bool) {
        self.0.set_cs(cs, active)
    }
    fn preload(&mut self, data: &wirespeed::spi::Data<'_>, bits: u8) -> usize {
        self.0.preload(data, bits)
    }
    fn discard_preload(&mut self) {
        self.0.discard_preload()
    }
    fn transfer(
        &mut self,
        data: &mut wirespeed::spi::Data<'_>,
        bits: u8,
        preloaded: usize,
        completion: wirespeed::spi::Completion,
        timeout_ns: u64,
        in_flight: &mut wirespeed::spi::InFlight<'_>,
    ) -> Result<wirespeed::spi::TransferTiming, wirespeed::spi::ControllerFault> {
        if completion == wirespeed::spi::Completion::Poll {
            self.2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.0.transfer(data, bits, preloaded, completion, timeout_ns, in_flight)
    }
    fn set_power(&mut self, on: bool) {
        self.0.set_power(on)
    }
}

#[test]
fn a_controller_that_cannot_poll_is_never_told_to_poll() {
    let polled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = polled.clone();
    let (_lab, bus) = common::lab_bus(
        wirespeed_lab::LabConfig::default(),
        poll_policy(),
        wirespeed_lab::devices::Loopback::new(),
        |c| {
            let caps =
                wirespeed::spi::ControllerCaps { can_poll: false, ..wirespeed::spi::Controller::caps(&c).clone() };
            IrqOnly(c, caps, counter)
        },
    );
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut rx = [0u8; 4];
    dev.sync(&mut [Transfer::duplex(&[1, 2, 3, 4], &mut rx)]).unwrap();
    assert_eq!(rx, [1, 2, 3, 4]);
    // A pause between words sends one word per burst.
    dev.sync(&mut [Transfer::duplex(&[5, 6, 7, 8], &mut rx).word_delay_ns(1_000)]).unwrap();
    assert_eq!(rx, [5, 6, 7, 8]);
    assert_eq!(polled.load(std::sync::atomic::Ordering::Relaxed), 0, "transfers told to poll a controller that cannot");
}

#[test]
fn a_block_found_powered_down_is_ready_before_the_first_message() {
    use wirespeed::backend::lab::LabSpi;
    use wirespeed::spi::Bus;
    use wirespeed_lab::spi::{regs, SpiControllerConfig};
    use wirespeed_lab::{devices::Loopback, Lab, LabConfig};
    // A block left powered down (by an earlier bus's idle teardown, say) and
    // slow to power up: the driver taking it over must wait for READY.
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 50_000_000, ..Default::default() });
    block.attach(0, Loopback::new());
    block.write(regs::PWR, 0);
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut rx = [0u8; 3];
    dev.sync(&mut [Transfer::duplex(&[1, 2, 3], &mut rx)]).unwrap();
    assert_eq!(rx, [1, 2, 3]);
}

#[test]
fn a_chip_select_the_cs_register_cannot_address_is_refused() {
    use wirespeed::backend::lab::LabSpi;
    use wirespeed::spi::Bus;
    use wirespeed_lab::spi::{regs, SpiControllerConfig};
    use wirespeed_lab::{devices::Loopback, Lab, LabConfig};
    // The block's CS register has 4 line bits: a block configured with more
    // lines can still only select 16 of them.
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(SpiControllerConfig { num_cs: 20, ..Default::default() });
    let (on_1, on_17) = (Loopback::new(), Loopback::new());
    block.attach(1, on_1.clone());
    block.attach(17, on_17.clone());
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    let lines = regs::CS_LINE_MASK as u8 + 1;
    assert!(matches!(
        bus.device(DeviceConfig::new(17, 1_000_000)),
        Err(InvalidMessage::NoSuchChipSelect { cs: 17, available }) if available == lines
    ));
    bus.device(DeviceConfig::new(1, 1_000_000)).unwrap().write(&[1]).unwrap();
    assert_eq!((on_1.words(), on_17.words()), (1, 0));
}

#[test]
fn the_block_runs_the_clock_the_core_plans_for_a_speed_it_cannot_divide_exactly() {
    use wirespeed_lab::spi::regs;
    let b = bench(poll_policy());
    // 200 MHz / 7 = 28.57 MHz is the fastest SCLK not above 30 MHz.
    let dev = b.bus.device(DeviceConfig::new(0, 30_000_000)).unwrap();
    assert_eq!(b.bus.caps().actual_speed_hz(30_000_000), 28_571_428);
    b.block.trace_start(1 << 12);
    dev.sync(&mut [Transfer::write(&[0x5A; 64])]).unwrap();
    assert_eq!(b.block.read(regs::CLKDIV), 7, "divider for 30 MHz");
    let w = cs_windows(&b.block.trace_take());
    let span = w[0].last_clock.unwrap().ns_since(w[0].first_clock.unwrap());
    // 512 bits at 28.57 MHz = 17.92 µs; at 25 MHz (divider 8) it would be 20.48 µs.
    assert!((17_920..20_000).contains(&span), "64 bytes took {span} ns");
}

#[test]
fn the_slowest_speed_allowed_is_not_exceeded_by_the_slowest_clock() {
    let b = bench(Policy::fast());
    let caps = b.bus.caps();
    let wirespeed::spi::ClockModel::Divider { base_hz, .. } = caps.clock else { panic!("a divider") };
    let min = caps.min_speed_hz;
    b.bus.device(DeviceConfig::new(0, min)).unwrap();
    // SCLK = base / divider must not exceed the speed asked for.
    let div = u64::from(caps.divider(min));
    assert!(base_hz <= u64::from(min) * div, "{min} Hz asked, {base_hz} / {div} Hz run");
}

#[test]
fn word_sizes_wider_than_the_fifo_are_refused_not_left_to_time_out() {
    use common::within;
    use std::time::Duration;
    use wirespeed::backend::lab::LabSpi;
    use wirespeed::spi::Bus;
    use wirespeed_lab::spi::SpiControllerConfig;
    use wirespeed_lab::{devices::Loopback, Lab, LabConfig};
    // A transfer of words wider than the FIFO used to spin until its 200 ms
    // timeout: this must end well before the limit.
    within(Duration::from_secs(10), "a transfer of words wider than the FIFO hung", || {
        let board = |fifo_bytes: u32, policy: Policy| {
            let lab = Lab::new(LabConfig::default());
            let block = lab.spi_controller(SpiControllerConfig { fifo_bytes, ..Default::default() });
            let loopback = Loopback::new();
            block.attach(0, loopback.clone());
            (lab, Bus::new(LabSpi::new(block), policy), loopback)
        };
        let (b8, b16, b32) = (1u32 << 7, 1u32 << 15, 1u32 << 31);
        for (fifo_bytes, mask) in [(1, b8), (2, b8 | b16), (3, b8 | b16), (4, b8 | b16 | b32), (64, b8 | b16 | b32)] {
            let (_lab, bus, _) = board(fifo_bytes, poll_policy());
            assert_eq!(bus.caps().bits_per_word_mask, mask, "word sizes of a {fifo_bytes}-byte FIFO");
        }
        for policy in [poll_policy(), irq_policy()] {
            let (_lab, bus, loopback) = board(1, policy);
            let refused = |index| InvalidMessage::UnsupportedBitsPerWord { index, bits: 16, supported_mask: b8 };
            assert_eq!(bus.device(DeviceConfig::new(0, 20_000_000).bits_per_word(16)).err(), Some(refused(None)));
            let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
            let r = dev.sync(&mut [Transfer::write(&[1, 2]).bits_per_word(16)]);
            assert_eq!(r, Err(SpiError::Invalid(refused(Some(0)))));
            assert_eq!(loopback.words(), 0, "nothing reached the wire");
            // Bytes still go through, one at a time.
            let tx = pattern(9, 3);
            let mut rx = [0u8; 9];
            dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
            assert_eq!(rx[..], tx[..]);
        }
    });
}

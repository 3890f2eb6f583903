//! Target `spi_message`: message and transfer validation (the plan built
//! from a slice of [`Transfer`]s, and [`PreparedMessage`](wirespeed::spi::PreparedMessage)s
//! built from [`OwnedTransfer`]s) on a device of a controller with any
//! capabilities.
//!
//! Every field of every transfer is drawn (data kind and length, clock,
//! word size, lines, `cs_change`, delays — the delays short, as they are
//! waited for real). A message is refused with a typed error or run; the
//! driver never sees a word size, clock, chip select or length its
//! capabilities forbid; a message that ran echoed every duplex transfer
//! (the controller is a loopback), zero-filled every read and left every
//! in-place buffer as it was.

use crate::device_config::config;
use crate::fake_controller::{caps, FakeController, Log};
use arbitrary::{Result, Unstructured};
use std::sync::{Arc, Mutex};
use wirespeed::spi::{Bus, OwnedTransfer, Policy, SpiDevice, Transfer};

/// The data of one transfer.
#[derive(Debug)]
enum Kind {
    Write(Vec<u8>),
    Read(usize),
    Duplex(Vec<u8>),
    InPlace(Vec<u8>),
}

/// One transfer's knobs.
#[derive(Debug)]
struct Knobs {
    speed_hz: u32,
    bits_per_word: u8,
    delay_after_ns: u32,
    cs_change: Option<Option<u32>>,
    word_delay_ns: u32,
    nbits: (u8, u8),
}

fn bytes(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let n = u.int_in_range(0usize..=300)?;
    let fill: u8 = u.arbitrary()?;
    Ok((0..n).map(|i| fill.wrapping_add(i as u8)).collect())
}

fn knobs(u: &mut Unstructured<'_>) -> Result<Knobs> {
    Ok(Knobs {
        speed_hz: crate::support::pick(u, &[0, 0, 0, 1, 1_000_000, 50_000_000, u32::MAX])?,
        bits_per_word: crate::support::pick(u, &[0, 0, 0, 8, 16, 32, 1, 12, 33])?,
        delay_after_ns: u.int_in_range(0u32..=500)?,
        cs_change: if u.ratio(1u8, 4)? {
            Some(u.arbitrary::<Option<u16>>()?.map(|d| u32::from(d % 500)))
        } else {
            None
        },
        word_delay_ns: *u.choose(&[0, 0, 0, 10, 100])?,
        nbits: (*u.choose(&[0, 1, 2, 4, 3, 8])?, *u.choose(&[0, 1, 2, 4, 3, 8])?),
    })
}

fn kind(u: &mut Unstructured<'_>) -> Result<Kind> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => Kind::Write(bytes(u)?),
        1 => Kind::Read(u.int_in_range(0usize..=300)?),
        2 => Kind::Duplex(bytes(u)?),
        _ => Kind::InPlace(bytes(u)?),
    })
}

macro_rules! apply_knobs {
    ($t:expr, $k:expr) => {{
        let mut t = $t.speed_hz($k.speed_hz).bits_per_word($k.bits_per_word).delay_after_ns($k.delay_after_ns);
        t = t.word_delay_ns($k.word_delay_ns).nbits($k.nbits.0, $k.nbits.1);
        if let Some(d) = $k.cs_change {
            t = t.cs_change(d);
        }
        t
    }};
}

fn check_log(log: &Arc<Mutex<Log>>, what: &str) {
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    assert!(log.violations.is_empty(), "{what}: {:?}", log.violations);
}

/// Runs `msg` with `sync` and checks the loopback's results.
fn run_sync(dev: &SpiDevice, msg: &[(Kind, Knobs)], log: &Arc<Mutex<Log>>) {
    let mut rx: Vec<Vec<u8>> = msg
        .iter()
        .map(|(k, _)| match k {
            Kind::Write(_) => Vec::new(),
            Kind::Read(n) => vec![0xEE; *n],
            Kind::Duplex(tx) => vec![!tx.first().copied().unwrap_or(0); tx.len()],
            Kind::InPlace(b) => b.clone(),
        })
        .collect();
    let mut transfers: Vec<Transfer<'_>> = msg
        .iter()
        .zip(rx.iter_mut())
        .map(|((k, knobs), rx)| {
            let t = match k {
                Kind::Write(tx) => Transfer::write(tx),
                Kind::Read(_) => Transfer::read(rx),
                Kind::Duplex(tx) => Transfer::duplex(tx, rx),
                Kind::InPlace(_) => Transfer::in_place(rx),
            };
            apply_knobs!(t, knobs)
        })
        .collect();
    let result = dev.sync(&mut transfers);
    drop(transfers);
    check_log(log, "sync");
    if result.is_ok() {
        for ((k, _), rx) in msg.iter().zip(&rx) {
            match k {
                Kind::Write(_) => {}
                Kind::Read(_) => assert!(rx.iter().all(|&b| b == 0), "a read returns what was sent: zeros"),
                Kind::Duplex(tx) | Kind::InPlace(tx) => assert_eq!(rx, tx, "loopback echo"),
            }
        }
    }
}

/// The same message prepared, then run twice.
fn run_prepared(dev: &SpiDevice, msg: &[(Kind, Knobs)], log: &Arc<Mutex<Log>>) {
    let owned: Vec<OwnedTransfer> = msg
        .iter()
        .map(|(k, knobs)| {
            let t = match k {
                Kind::Write(tx) | Kind::InPlace(tx) => OwnedTransfer::write(tx.clone()),
                Kind::Read(n) => OwnedTransfer::read(*n),
                Kind::Duplex(tx) => OwnedTransfer::duplex(tx.clone()),
            };
            apply_knobs!(t, knobs)
        })
        .collect();
    let Ok(mut prepared) = dev.prepare(owned) else { return };
    for _ in 0..2 {
        let result = dev.run(&mut prepared);
        check_log(log, "prepared");
        if result.is_ok() {
            for (i, (k, _)) in msg.iter().enumerate() {
                if let Kind::Duplex(tx) = k {
                    assert_eq!(prepared.rx(i).expect("a duplex transfer has RX"), &tx[..], "loopback echo");
                }
            }
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(caps), Ok(cfg)) = (caps(&mut u), config(&mut u)) else { return };
    let (controller, log) = FakeController::new(caps);
    let bus = Bus::new(controller, Policy::fast());
    let Ok(dev) = bus.device(cfg) else { return };
    let mut msg = Vec::new();
    while msg.len() < 8 && !u.is_empty() {
        match (kind(&mut u), knobs(&mut u)) {
            (Ok(k), Ok(n)) => msg.push((k, n)),
            _ => break,
        }
    }
    run_sync(&dev, &msg, &log);
    run_prepared(&dev, &msg, &log);
}

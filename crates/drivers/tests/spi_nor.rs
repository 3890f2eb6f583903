//! The SPI NOR driver on the lab's flash model: probe of every part in the
//! lab's table, program/read/verify, erase block choice, WIP polling,
//! protection, the failed-probe lifecycle and SST AAI programming.

use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, DeviceConfig, Policy};
use wirespeed_drivers::spi_nor::{Error, Op, ProgramKind, SpiNor};
use wirespeed_lab::devices::spi_nor::{self as model, ChipSpec, SST25VF016B, W25Q128JV, W25Q256JV};
use wirespeed_lab::devices::{SpiNor as NorModel, SpiNorOptions};
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::trace::{cs_windows, CsWindow};
use wirespeed_lab::{Lab, LabConfig};

/// Chip times in the tests: 1/1000 of the datasheet's.
const SCALE: f64 = 0.001;

struct Rig {
    _lab: Lab,
    block: SpiController,
    dev: wirespeed::spi::SpiDevice,
}

fn rig(chip: Option<NorModel>) -> Rig {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    if let Some(c) = chip {
        block.attach(0, c);
    }
    let bus = Bus::new(LabSpi::new(block.clone()), Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
    Rig { _lab: lab, block, dev }
}

fn nor(spec: &'static ChipSpec, scale: f64) -> NorModel {
    NorModel::with_options(spec, SpiNorOptions { time_scale: scale, random_times_seed: None })
}

/// A probed driver whose waits are scaled like the model's times.
fn flash(spec: &'static ChipSpec) -> (Rig, NorModel, SpiNor) {
    let chip = nor(spec, SCALE);
    let r = rig(Some(chip.clone()));
    let mut f = SpiNor::probe(r.dev.clone()).unwrap();
    f.set_time_scale(SCALE);
    (r, chip, f)
}

fn windows_with(r: &Rig, f: impl FnOnce()) -> Vec<CsWindow> {
    r.block.trace_start(1 << 20);
    f();
    cs_windows(&r.block.trace_take())
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn probe_matches_every_lab_chip() {
    for spec in model::CHIPS {
        let (_r, _chip, f) = flash(spec);
        let g = f.geometry();
        assert_eq!(f.name(), spec.name);
        assert_eq!(f.jedec_id(), spec.jedec_id);
        assert_eq!(g.size, spec.size, "{}", spec.name);
        assert_eq!(g.page_size, spec.page_size, "{}", spec.name);
        let got: Vec<(u32, u8)> = g.erase.iter().map(|e| (e.size, e.opcode)).collect();
        let want: Vec<(u32, u8)> = spec.erase.iter().map(|e| (e.size, e.opcode)).collect();
        assert_eq!(got, want, "{}", spec.name);
        assert_eq!(g.sfdp_revision.is_some(), spec.sfdp, "{}", spec.name);
        assert_eq!(g.address_bytes, if spec.size > 16 << 20 { 4 } else { 3 }, "{}", spec.name);
        let kind = if spec.page_size == 1 { ProgramKind::ByteAndAai } else { ProgramKind::Page };
        assert_eq!(g.program, kind, "{}", spec.name);
        // Typical times never below the chip's (SFDP rounds up), so one poll suffices.
        assert!(g.page_program.typ_ns >= spec.page_program.typ_ns, "{}", spec.name);
    }
}

#[test]
fn program_read_verify_across_a_page_boundary() {
    for spec in [&W25Q128JV, &W25Q256JV, &model::MX25L12835F, &model::GD25Q64C] {
        let (_r, chip, mut f) = flash(spec);
        let base = if spec.size > 16 << 20 { 0x0100_0000 } else { 0 };
        let addr = base + 0x1F0;
        let data = pattern(300, 7);
        f.program(addr, &data).unwrap();
        assert_eq!(chip.peek(addr, data.len()), data, "{}", spec.name);
        let mut back = vec![0u8; data.len()];
        f.read(addr, &mut back).unwrap();
        assert_eq!(back, data, "{}", spec.name);
        assert_eq!(f.verify(addr, &data).unwrap(), None);
        assert_eq!(f.stats().program_commands, 3, "{}: pages 0x1F0.., 0x200.., 0x300..", spec.name);
        chip.flip_on_read(addr + 123, 0x10);
        assert_eq!(f.verify(addr, &data).unwrap(), Some(123));
    }
}

#[test]
fn a_large_read_goes_in_64k_pieces() {
    let (r, chip, mut f) = flash(&W25Q128JV);
    let data = pattern(150_000, 3);
    chip.poke(0x10, &data);
    let mut back = vec![0u8; data.len()];
    let w = windows_with(&r, || f.read(0x10, &mut back).unwrap());
    assert_eq!(back, data);
    assert_eq!(w.len(), 3);
    assert!(w.iter().all(|w| w.mosi[0] == 0x03));
    assert_eq!(w[0].mosi.len(), 4 + 65536);
    assert_eq!(&w[1].mosi[1..4], &[0x01, 0x00, 0x10]);
}

#[test]
fn erase_uses_the_largest_block_that_fits() {
    let (r, chip, mut f) = flash(&W25Q128JV);
    chip.poke(0x6000, &vec![0u8; 0x2C000]);
    let w = windows_with(&r, || f.erase(0x7000, 0x2A000).unwrap());
    let ops: Vec<(u8, u32)> = w
        .iter()
        .filter(|w| matches!(w.mosi[0], 0x20 | 0x52 | 0xD8))
        .map(|w| (w.mosi[0], u32::from_be_bytes([0, w.mosi[1], w.mosi[2], w.mosi[3]])))
        .collect();
    assert_eq!(ops, [(0x20, 0x7000), (0x52, 0x8000), (0xD8, 0x10000), (0xD8, 0x20000), (0x20, 0x30000)]);
    assert_eq!(f.stats().erase_commands, 5);
    assert!(chip.peek(0x7000, 0x2A000).iter().all(|&b| b == 0xFF));
    assert!(chip.peek(0x6000, 0x1000).iter().all(|&b| b == 0));
    assert!(chip.peek(0x31000, 0x1000).iter().all(|&b| b == 0));
    assert!(matches!(f.erase(0x800, 0x1000), Err(Error::Unaligned { granularity: 4096, .. })));
}

#[test]
fn chip_erase_on_sst() {
    let (_r, chip, mut f) = flash(&SST25VF016B);
    f.unprotect().unwrap();
    chip.poke(0x1000, &[0; 16]);
    f.chip_erase().unwrap();
    assert!(chip.peek(0x1000, 16).iter().all(|&b| b == 0xFF));
}

#[test]
fn polls_per_page_stay_small_with_typical_times() {
    // Real (unscaled) typical times: W25Q128JV page program 0.4 ms.
    let chip = nor(&W25Q128JV, 1.0);
    let r = rig(Some(chip.clone()));
    let mut f = SpiNor::probe(r.dev.clone()).unwrap();
    let data = pattern(8 * 256, 1);
    f.program(0x4000, &data).unwrap();
    let s = f.stats();
    assert_eq!(s.program_commands, 8);
    assert!(s.status_polls <= 3 * s.program_commands, "{s:?}");
    assert_eq!(chip.peek(0x4000, data.len()), data);
}

#[test]
fn stuck_wip_times_out_with_context() {
    let (_r, chip, mut f) = flash(&W25Q128JV);
    f.set_time_scale(0.0);
    chip.set_stuck_wip(true);
    let e = f.program(0x300, &[1, 2, 3]).unwrap_err();
    assert_eq!(
        e,
        Error::ProgramFailed { addr: 0x300, source: Box::new(Error::Timeout { op: Op::Program, addr: 0x300 }) }
    );
}

#[test]
fn protection_is_reported_and_cleared() {
    let (r, chip, mut f) = flash(&W25Q128JV);
    // BP = 1: the top 256 KiB.
    chip.force_status(1 << 2, 0);
    let p = f.protection().unwrap();
    assert!(p.any() && p.layout_known);
    assert_eq!(p.range, (W25Q128JV.size - 256 * 1024, W25Q128JV.size));
    let top = W25Q128JV.size - 4096;
    let w = windows_with(&r, || assert_eq!(f.program(top, &[0]), Err(Error::Protected { addr: top })));
    assert!(w.iter().all(|w| w.mosi[0] == 0x05), "only a status read is sent");
    assert_eq!(f.erase(0, W25Q128JV.size), Err(Error::Protected { addr: W25Q128JV.size - 256 * 1024 }));
    assert!(matches!(f.chip_erase(), Err(Error::Protected { .. })));
    f.program(0, &[0x5A]).unwrap(); // outside the range
    f.unprotect().unwrap();
    assert!(!f.protection().unwrap().any());
    f.program(top, &[0xA5]).unwrap();
    assert_eq!(chip.peek(top, 1), [0xA5]);
}

#[test]
fn refused_unprotect_is_reported() {
    let (_r, chip, mut f) = flash(&W25Q128JV);
    chip.force_status(0x80 | (1 << 2), 0); // SRP + BP0
    chip.set_wp_low(true);
    assert!(matches!(f.unprotect(), Err(Error::StatusWriteRefused { wrote: 0, .. })));
}

#[test]
fn probe_without_chip_sends_only_rdid() {
    let r = rig(None);
    let w = windows_with(&r, || {
        assert_eq!(SpiNor::probe(r.dev.clone()).unwrap_err(), Error::NoChip { id: [0xFF; 3] });
    });
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].mosi, [0x9F, 0, 0, 0]);
}

#[test]
fn sst_programs_with_aai_after_unprotect() {
    let (r, chip, mut f) = flash(&SST25VF016B);
    assert_eq!(f.geometry().sfdp_revision, None);
    let p = f.protection().unwrap();
    assert_eq!(p.range, (0, SST25VF016B.size), "BP bits set at power-up");
    assert!(matches!(f.program(0x100, &[1]), Err(Error::Protected { addr: 0x100 })));
    f.unprotect().unwrap();
    // Odd start and odd end: byte, 4 AAI words, byte.
    let data = pattern(10, 9);
    let w = windows_with(&r, || f.program(0x201, &data).unwrap());
    assert_eq!(chip.peek(0x201, 10), data);
    assert_eq!(f.verify(0x201, &data).unwrap(), None);
    let cmds: Vec<u8> = w.iter().map(|w| w.mosi[0]).filter(|&op| op != 0x05).collect();
    assert_eq!(cmds, [0x06, 0x02, 0x06, 0xAD, 0xAD, 0xAD, 0xAD, 0x04, 0x06, 0x02]);
    let first_aai = w.iter().find(|w| w.mosi[0] == 0xAD).unwrap();
    assert_eq!(first_aai.mosi, [0xAD, 0x00, 0x02, 0x02, data[1], data[2]]);
    assert_eq!(chip.status().0 & model::SR_AAI, 0);
}

/// W25Q128JV's ID with half its size in the SFDP.
static HALF_SIZE: ChipSpec = ChipSpec { size: 8 << 20, ..W25Q128JV };
/// An ID the driver's table lacks, with SFDP.
static SFDP_ONLY: ChipSpec = ChipSpec { name: "unknown", jedec_id: [0x12, 0x34, 0x56], ..W25Q128JV };
/// An ID the driver's table lacks, without SFDP.
static NOTHING_KNOWN: ChipSpec = ChipSpec { name: "unknown", jedec_id: [0x12, 0x34, 0x56], sfdp: false, ..W25Q128JV };

#[test]
fn table_and_sfdp_mismatch_is_reported() {
    let r = rig(Some(nor(&HALF_SIZE, SCALE)));
    assert_eq!(
        SpiNor::probe(r.dev.clone()).unwrap_err(),
        Error::Mismatch { chip: "W25Q128JV", field: "size", table: 16 << 20, sfdp: 8 << 20 }
    );
}

#[test]
fn sfdp_alone_is_enough() {
    let chip = nor(&SFDP_ONLY, SCALE);
    let r = rig(Some(chip.clone()));
    let mut f = SpiNor::probe(r.dev.clone()).unwrap();
    f.set_time_scale(SCALE);
    assert_eq!(f.name(), "SFDP flash");
    assert_eq!((f.geometry().size, f.geometry().page_size), (16 << 20, 256));
    f.program(0xFE, &[1, 2, 3, 4]).unwrap();
    assert_eq!(chip.peek(0xFE, 4), [1, 2, 3, 4]);
    chip.force_status(1 << 2, 0);
    let p = f.protection().unwrap();
    assert!(!p.layout_known && p.range == (0, 16 << 20));
}

#[test]
fn unknown_id_without_sfdp_is_refused() {
    let r = rig(Some(nor(&NOTHING_KNOWN, SCALE)));
    assert_eq!(SpiNor::probe(r.dev.clone()).unwrap_err(), Error::UnknownChip { id: [0x12, 0x34, 0x56] });
}

#[test]
fn reads_shrink_to_the_backends_message_limit() {
    use wirespeed::backend::lab::LabSpidevIo;
    use wirespeed::linux::spidev::{Limits, Spidev};
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    let chip = nor(&W25Q128JV, SCALE);
    block.attach(0, chip.clone());
    let limits = Limits::with_bufsiz(Limits::DEFAULT_BUFSIZ);
    let node = LabSpidevIo::new(Bus::new(LabSpi::new(block.clone()), Policy::fast()), 0, 50_000_000, limits);
    let bus = Bus::with_message_backend(Spidev::with_io(node, "lab spidev0.0", limits).unwrap(), Policy::fast());
    let mut f = SpiNor::probe(bus.device(DeviceConfig::new(0, 50_000_000)).unwrap()).unwrap();
    let data = pattern(20_000, 5);
    chip.poke(0x100, &data);
    let mut back = vec![0u8; data.len()];
    f.read(0x100, &mut back).unwrap();
    assert_eq!(back, data);
    let pieces = data.len().div_ceil(Limits::DEFAULT_BUFSIZ - 4) as u64;
    assert_eq!(f.stats().read_messages, pieces);
}

//! The model driven through the lab's SPI controller, as a driver would.

use super::*;
use crate::spi::regs::*;
use crate::spi::{SpiController, SpiControllerConfig};
use crate::{Lab, LabConfig};

const FIFO: usize = 4096;

struct Bench {
    _lab: Lab,
    spi: SpiController,
    nor: SpiNor,
}

impl Bench {
    fn new(nor: SpiNor) -> Bench {
        let lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
        let spi = lab.spi_controller(SpiControllerConfig {
            power_up_ns: 0,
            fifo_bytes: FIFO as u32,
            ..SpiControllerConfig::default()
        });
        spi.attach(0, nor.clone());
        Bench { _lab: lab, spi, nor }
    }
    fn chip(spec: &'static ChipSpec, time_scale: f64) -> Bench {
        Bench::new(SpiNor::with_options(spec, SpiNorOptions { time_scale, random_times_seed: None }))
    }
    /// One chip-select assertion carrying `tx`; returns MISO.
    fn xfer(&self, tx: &[u8]) -> Vec<u8> {
        self.spi.write(CS, CS_ASSERT);
        let mut rx = Vec::with_capacity(tx.len());
        for chunk in tx.chunks(FIFO) {
            self.spi.write(XFERLEN, chunk.len() as u32);
            let words: Vec<u32> = chunk.iter().map(|&b| u32::from(b)).collect();
            self.spi.write_fifo(&words);
            self.spi.write(START, START_GO);
            while self.spi.read(STATUS) & STATUS_DONE == 0 {}
            rx.extend((0..chunk.len()).map(|_| self.spi.read(RXDATA) as u8));
        }
        self.spi.write(CS, 0);
        assert_eq!(self.spi.read(STATUS) & STATUS_ERR, 0);
        rx
    }
    fn rdsr(&self) -> u8 {
        self.xfer(&[0x05, 0])[1]
    }
    fn wren(&self) {
        self.xfer(&[0x06]);
    }
    /// Polls RDSR over the bus until WIP clears (at most 5 s).
    fn wait_ready(&self) {
        let limit = now().add_ns(5_000_000_000);
        while self.rdsr() & SR_WIP != 0 {
            assert!(now() < limit, "WIP never cleared");
        }
    }
    fn read(&self, addr: u32, len: usize) -> Vec<u8> {
        let mut tx = vec![0x03, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8];
        tx.resize(4 + len, 0);
        self.xfer(&tx)[4..].to_vec()
    }
    fn program(&self, addr: u32, data: &[u8]) {
        let mut tx = vec![0x02, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8];
        tx.extend_from_slice(data);
        self.xfer(&tx);
    }
    fn erase(&self, opcode: u8, addr: u32) {
        self.xfer(&[opcode, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8]);
    }
    fn sfdp(&self, addr: u32, len: usize) -> Vec<u8> {
        let mut tx = vec![0x5A, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8, 0];
        tx.resize(5 + len, 0);
        self.xfer(&tx)[5..].to_vec()
    }
}

/// What a host learns from SFDP (a small JESD216 BFPT parser).
#[derive(Debug, PartialEq, Eq)]
struct Geometry {
    size: u64,
    page_size: u32,
    erase: Vec<(u32, u8)>,
    four_byte: bool,
    b7_e9: bool,
    soft_reset_66_99: bool,
    deep_power_down_b9_ab: bool,
}

fn parse_sfdp(b: &Bench) -> Option<Geometry> {
    let head = b.sfdp(0, 16);
    if &head[0..4] != b"SFDP" {
        return None;
    }
    assert_eq!((head[5], head[4]), (1, 6), "JESD216B");
    let (id, len) = (u16::from(head[15]) << 8 | u16::from(head[8]), usize::from(head[11]));
    assert_eq!(id, 0xFF00, "first parameter table is the BFPT");
    let ptp = u32::from_le_bytes([head[12], head[13], head[14], 0]);
    let raw = b.sfdp(ptp, 4 * len);
    let d: Vec<u32> = raw.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let size = if d[1] & 0x8000_0000 == 0 { (u64::from(d[1]) + 1) / 8 } else { (1u64 << (d[1] & 0x7FFF_FFFF)) / 8 };
    let mut erase = Vec::new();
    for i in 0..4 {
        let f = d[7 + i / 2] >> (16 * (i % 2));
        if f & 0xFF != 0 {
            erase.push((1u32 << (f & 0xFF), (f >> 8) as u8));
        }
    }
    if d[0] & 3 == 1 {
        assert!(erase.contains(&(4096, (d[0] >> 8) as u8)), "DWORD 1's 4K opcode is an erase type");
    }
    Some(Geometry {
        size,
        page_size: 1 << ((d[10] >> 4) & 0xF),
        erase,
        four_byte: (d[0] >> 17) & 3 != 0,
        b7_e9: d[15] & (1 << 24) != 0 && d[15] & (1 << 14) != 0,
        soft_reset_66_99: d[15] & (1 << 12) != 0,
        deep_power_down_b9_ab: d[13] >> 31 == 0 && (d[13] >> 23) & 0xFF == 0xB9 && (d[13] >> 15) & 0xFF == 0xAB,
    })
}

#[test]
fn spi_nor_chip_table_is_consistent_and_sfdp_parses_back_to_each_row() {
    for (i, a) in CHIPS.iter().enumerate() {
        for b in &CHIPS[i + 1..] {
            assert_ne!(a.jedec_id, b.jedec_id, "{} / {}", a.name, b.name);
        }
        assert!(a.size.is_power_of_two() && a.page_size.is_power_of_two(), "{}", a.name);
        assert_eq!(ChipSpec::by_jedec_id(a.jedec_id).map(|c| c.name), Some(a.name));
        assert_eq!(ChipSpec::by_name(a.name).map(|c| c.jedec_id), Some(a.jedec_id));
        for e in a.erase {
            assert!(e.size.is_power_of_two() && e.time.typ_ns <= e.time.max_ns, "{}", a.name);
        }
        let spec = ChipSpec::by_name(a.name).expect("listed");
        let b = Bench::chip(spec, 1.0);
        assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], a.jedec_id, "{}", a.name);
        match parse_sfdp(&b) {
            None => {
                assert!(!a.sfdp, "{} has SFDP", a.name);
                assert!(b.sfdp(0, 64).iter().all(|&x| x == 0xFF), "{} predates SFDP", a.name);
            }
            Some(g) => {
                let want = Geometry {
                    size: a.size.into(),
                    page_size: a.page_size,
                    erase: a.erase.iter().map(|e| (e.size, e.opcode)).collect(),
                    four_byte: a.four_byte_mode || a.four_byte_opcodes,
                    b7_e9: a.four_byte_mode,
                    soft_reset_66_99: a.reset,
                    deep_power_down_b9_ab: a.deep_power_down,
                };
                assert_eq!(g, want, "{}", a.name);
            }
        }
    }
}

#[test]
fn spi_nor_random_commands_match_a_byte_array_reference() {
    // GD25Q64C at 1/100000 of its datasheet times, random times drawn.
    let window = 256 * 1024u32;
    let nor = SpiNor::with_options(&GD25Q64C, SpiNorOptions { time_scale: 1e-5, random_times_seed: Some(7) });
    let b = Bench::new(nor);
    let mut reference = vec![0xFFu8; GD25Q64C.size as usize];
    let mut rng = Rng::new(0x5EED);
    for step in 0..600 {
        let addr = rng.range(0, u64::from(window) - 1) as u32;
        let enabled = rng.range(0, 9) != 0;
        if enabled {
            b.wren();
        }
        match rng.range(0, 99) {
            0..=44 => {
                let len = rng.range(1, 300) as usize;
                let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                b.program(addr, &data);
                if enabled {
                    let base = addr & !255;
                    let first = (addr & 255) as usize;
                    let kept = &data[len.saturating_sub(256)..];
                    let skip = len - kept.len();
                    for (k, &d) in kept.iter().enumerate() {
                        reference[(base as usize) + (first + skip + k) % 256] &= d;
                    }
                }
            }
            45..=69 => {
                let (op, size) = match rng.range(0, 2) {
                    0 => (0x20, 4096u32),
                    1 => (0x52, 32768),
                    _ => (0xD8, 65536),
                };
                b.erase(op, addr);
                if enabled {
                    let s = (addr & !(size - 1)) as usize;
                    reference[s..s + size as usize].fill(0xFF);
                }
            }
            70 => {
                b.xfer(&[0xC7]);
                if enabled {
                    reference.fill(0xFF);
                }
            }
            _ => {
                let len = rng.range(1, 600) as usize;
                let got = b.read(addr, len);
                assert_eq!(got, reference[addr as usize..addr as usize + len], "step {step}: read at {addr:#x}");
                b.xfer(&[0x04]);
            }
        }
        b.wait_ready();
        assert_eq!(b.rdsr() & (SR_WIP | SR_WEL), 0, "step {step}: WEL cleared after every write");
    }
    assert!(b.nor.peek(0, window as usize) == reference[..window as usize], "final array");
}

#[test]
fn spi_nor_wip_lasts_until_the_due_time_and_commands_during_it_are_ignored() {
    let b = Bench::chip(&W25Q128JV, 1.0); // tSE 45 ms: a wide window for the checks below
    b.nor.poke(0x1000, &[0x00; 16]);
    b.wren();
    b.erase(0x20, 0x1000);
    let (start, due) = b.nor.last_op_window().expect("erasing");
    assert_eq!(due.ns_since(start), W25Q128JV.erase[0].time.typ_ns);
    assert_eq!(b.rdsr(), SR_WIP | SR_WEL, "WEL stays set while the erase runs");
    // Ignored while busy: RDID, READ, a program (WEL is still set), WRDI.
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], [0xFF; 3]);
    assert_eq!(b.read(0x1000, 2), [0xFF, 0xFF], "not driven");
    b.program(0x1000, &[0x12, 0x34]);
    b.xfer(&[0x04]);
    assert_eq!(b.nor.last_op_window(), Some((start, due)), "the program did not start");
    let mut saw_wip = false;
    loop {
        let before = now();
        let s = b.rdsr();
        let after = now();
        if s & SR_WIP != 0 {
            assert!(before < due, "WIP read after the due time");
            assert_eq!(s & SR_WEL, SR_WEL, "WRDI was ignored");
            saw_wip = true;
        } else {
            assert!(after >= due, "WIP cleared before the due time");
            break;
        }
    }
    assert!(saw_wip);
    assert_eq!(b.rdsr(), 0, "WEL cleared at the end");
    assert_eq!(b.read(0x1000, 16), [0xFF; 16], "erased, not programmed");
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], W25Q128JV.jedec_id);
    // Stuck WIP: nothing completes while set.
    b.nor.set_stuck_wip(true);
    assert_eq!(b.rdsr() & SR_WIP, SR_WIP);
    b.wren();
    assert_eq!(b.rdsr() & SR_WEL, 0, "WREN ignored while WIP");
    b.nor.set_stuck_wip(false);
    assert_eq!(b.rdsr(), 0);
}

#[test]
fn spi_nor_operation_times_are_drawn_between_typical_and_maximum() {
    let nor = SpiNor::with_options(&W25Q128JV, SpiNorOptions { time_scale: 1e-3, random_times_seed: Some(3) });
    let b = Bench::new(nor);
    let t = W25Q128JV.page_program;
    let mut distinct = std::collections::HashSet::new();
    for page in 0..20u32 {
        b.wren();
        b.program(page * 256, &[0]);
        let (s, d) = b.nor.last_op_window().expect("programmed");
        let ns = d.ns_since(s);
        assert!((t.typ_ns / 1000..=t.max_ns / 1000).contains(&ns), "{ns}");
        distinct.insert(ns);
        b.wait_ready();
    }
    assert!(distinct.len() > 10);
}

#[test]
fn spi_nor_block_protect_bits_really_protect() {
    let b = Bench::chip(&W25Q128JV, 1e-3);
    let top = W25Q128JV.size - 256 * 1024; // BP=1: top 1/64
    b.wren();
    b.xfer(&[0x01, 0x04]);
    b.wait_ready();
    assert_eq!(b.rdsr(), 0x04);
    for (what, f) in [
        ("program", &|b: &Bench| b.program(top, &[0])),
        ("sector erase", &|b: &Bench| b.erase(0x20, top)),
        ("block erase", &|b: &Bench| b.erase(0xD8, top - 65536)), // just below: not protected
        ("chip erase", &|b: &Bench| {
            b.xfer(&[0xC7]);
        }),
    ] as [(&str, &dyn Fn(&Bench)); 4]
    {
        b.nor.poke(top, &[0x5A]);
        let before = b.nor.last_op_window();
        b.wren();
        f(&b);
        let s = b.rdsr();
        if what == "block erase" {
            assert_ne!(b.nor.last_op_window(), before, "an erase outside the protected range runs");
            b.wait_ready();
            continue;
        }
        assert_eq!(s, 0x04, "{what} refused: no WIP, WEL cleared");
        assert_eq!(b.read(top, 1), [0x5A], "{what}");
    }
    b.wren();
    b.program(top - 1, &[0x00]);
    b.wait_ready();
    assert_eq!(b.read(top - 1, 1), [0x00], "just below the protected range");
    // TB=1 moves the range to the bottom.
    b.wren();
    b.xfer(&[0x01, 0x24]);
    b.wait_ready();
    b.wren();
    b.program(0, &[0]);
    assert_eq!(b.rdsr(), 0x24);
    b.wren();
    b.program(top, &[0x0F]);
    b.wait_ready();
    assert_eq!(b.read(top, 1), [0x0A]);
    // WP# low with SRP set: the status register is locked.
    b.wren();
    b.xfer(&[0x01, 0x80 | 0x24]);
    b.wait_ready();
    b.nor.set_wp_low(true);
    b.wren();
    b.xfer(&[0x01, 0x00]);
    assert_eq!(b.rdsr(), 0xA4, "WRSR refused");
    b.nor.set_wp_low(false);
    b.wren();
    b.xfer(&[0x01, 0x00]);
    b.wait_ready();
    assert_eq!(b.rdsr(), 0x00);
}

#[test]
fn spi_nor_sst_powers_up_protected_and_programs_by_byte_and_aai() {
    let b = Bench::chip(&SST25VF016B, 1e-2);
    assert_eq!(b.rdsr(), 0x1C, "BP0..BP2 set at power-up");
    b.wren();
    b.program(0, &[0x00]);
    assert_eq!(b.rdsr(), 0x1C, "all protected");
    b.xfer(&[0x50]);
    b.xfer(&[0x01, 0x00]);
    assert_eq!(b.rdsr(), 0x00, "EWSR then WRSR: immediate");
    b.wren();
    b.program(0x10, &[0x12, 0x34]);
    b.wait_ready();
    assert_eq!(b.read(0x10, 2), [0x12, 0xFF], "byte program: the first data byte only");
    b.wren();
    b.xfer(&[0xAD, 0, 0x01, 0x00, 0xA1, 0xA2]);
    assert_eq!(b.rdsr() & (SR_AAI | SR_WEL), SR_AAI | SR_WEL);
    b.wait_ready();
    b.xfer(&[0xAD, 0xB1, 0xB2]);
    b.wait_ready();
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], [0xFF; 3], "only AD, WRDI, RDSR in AAI mode");
    b.xfer(&[0x04]);
    assert_eq!(b.rdsr(), 0);
    assert_eq!(b.read(0x100, 5), [0xA1, 0xA2, 0xB1, 0xB2, 0xFF]);
}

#[test]
fn spi_nor_power_cut_leaves_the_documented_partial_state() {
    let b = Bench::chip(&W25Q128JV, 1.0);
    b.wren();
    b.program(0, &[0u8; 256]);
    let (s, d) = b.nor.last_op_window().expect("programming");
    b.nor.power_cut(s.add_ns(d.ns_since(s) / 2));
    assert_eq!(b.rdsr(), 0, "powered up again");
    let got = b.read(0, 256);
    assert!(got[..128].iter().all(|&x| x == 0) && got[128..].iter().all(|&x| x == 0xFF), "{got:?}");
    for (quarter, want_ff, want_00) in [(1u64, 0usize, 2048usize), (3, 2048, 2048)] {
        b.nor.poke(0x1000, &[0x5A; 4096]);
        b.wren();
        b.erase(0x20, 0x1000);
        let (s, d) = b.nor.busy_window().expect("erasing (45 ms)");
        b.nor.power_cut(s.add_ns(d.ns_since(s) * quarter / 4));
        let got = b.nor.peek(0x1000, 4096);
        let ff = got.iter().take_while(|&&x| x == 0xFF).count();
        let zeros = got[ff..].iter().take_while(|&&x| x == 0).count();
        assert_eq!((ff, zeros), (want_ff, want_00), "cut at {quarter}/4");
        assert!(got[ff + zeros..].iter().all(|&x| x == 0x5A));
    }
}

#[test]
fn spi_nor_four_byte_part_reset_and_deep_power_down() {
    let b = Bench::chip(&W25Q256JV, 1e-3);
    let hi = 0x0100_0200u32;
    let a = hi.to_be_bytes();
    b.wren();
    b.xfer(&[0x12, a[0], a[1], a[2], a[3], 0xC3]);
    b.wait_ready();
    assert_eq!(b.xfer(&[0x13, a[0], a[1], a[2], a[3], 0])[5], 0xC3);
    assert_eq!(b.xfer(&[0x0C, a[0], a[1], a[2], a[3], 0, 0])[6], 0xC3);
    assert_eq!(b.read(hi & 0xFF_FFFF, 1), [0xFF], "3-byte mode reaches the low 16 MiB");
    b.xfer(&[0xB7]);
    assert_eq!(b.xfer(&[0x03, a[0], a[1], a[2], a[3], 0])[5], 0xC3);
    b.xfer(&[0xE9]);
    assert_eq!(b.xfer(&[0x0B, a[1], a[2], a[3], 0, 0])[5], 0xFF);
    // 66 then 99 resets the volatile state.
    b.wren();
    b.xfer(&[0xB7]);
    b.xfer(&[0x66]);
    b.xfer(&[0x99]);
    assert_eq!(b.rdsr(), 0);
    assert_eq!(b.xfer(&[0x03, a[1], a[2], a[3], 0])[4], 0xFF, "back in 3-byte mode");
    // Deep power-down: only AB answered; AB returns the legacy ID.
    b.xfer(&[0xB9]);
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], [0xFF; 3]);
    assert_eq!(b.xfer(&[0x05, 0])[1], 0xFF);
    assert_eq!(b.xfer(&[0xAB, 0, 0, 0, 0])[4], 0x18);
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], W25Q256JV.jedec_id);
}

#[test]
fn spi_nor_read_bit_flips_change_what_is_read_not_the_array() {
    let b = Bench::chip(&GD25Q64C, 1.0);
    b.nor.flip_on_read(0x20, 0x01);
    assert_eq!(b.read(0x1F, 3), [0xFF, 0xFE, 0xFF]);
    assert_eq!(b.nor.peek(0x20, 1), [0xFF]);
    b.nor.flip_on_read(0x20, 0);
    b.nor.set_flip_probability(1.0, 9);
    assert!(b.read(0, 64).iter().all(|&x| x.count_ones() == 7));
}

#[test]
fn spi_nor_image_file_round_trip() {
    let path = std::env::temp_dir().join(format!("wirespeed-spi-nor-{}.bin", std::process::id()));
    let _ = std::fs::remove_file(&path);
    {
        let b = Bench::new(SpiNor::with_image(&SST25VF016B, &path).expect("created"));
        assert_eq!(std::fs::metadata(&path).expect("exists").len(), u64::from(SST25VF016B.size));
        b.xfer(&[0x50]);
        b.xfer(&[0x01, 0x00]);
        b.wren();
        b.program(0x1234, &[0x42]);
        b.wait_ready();
        b.nor.flush().expect("flushed");
    }
    let raw = std::fs::read(&path).expect("readable");
    assert_eq!(raw[0x1234], 0x42, "written through");
    assert!(raw.iter().enumerate().all(|(i, &x)| i == 0x1234 || x == 0xFF));
    let b = Bench::new(SpiNor::with_image(&SST25VF016B, &path).expect("reopened"));
    assert_eq!(b.read(0x1233, 3), [0xFF, 0x42, 0xFF]);
    match SpiNor::with_image(&W25Q128JV, &path) {
        Err(ImageError::Size { expected, found, .. }) => {
            assert_eq!((expected, found), (u64::from(W25Q128JV.size), u64::from(SST25VF016B.size)))
        }
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn spi_nor_status_register_2_where_the_part_has_it() {
    let b = Bench::chip(&W25Q128JV, 1e-3);
    b.wren();
    b.xfer(&[0x01, 0x00, 0x02]); // QE
    b.wait_ready();
    assert_eq!(b.xfer(&[0x35, 0])[1], 0x02);
    let mx = Bench::chip(&MX25L12835F, 1e-3);
    assert_eq!(mx.xfer(&[0x35, 0])[1], 0xFF, "no RDSR2 on the MX25L12835F");
    mx.wren();
    mx.xfer(&[0x01, 0x00, 0x02]);
    assert_eq!(mx.rdsr(), SR_WEL, "a second status byte makes the write invalid there");
}

#[test]
fn spi_nor_reset_during_an_erase_ends_it_and_the_chip_answers_again() {
    let b = Bench::chip(&W25Q128JV, 1.0); // tSE 45 ms
    b.wren();
    b.erase(0x20, 0);
    assert_eq!(b.rdsr() & SR_WIP, SR_WIP);
    b.xfer(&[0x66]);
    b.xfer(&[0x99]);
    assert_eq!(b.rdsr(), 0, "WIP and WEL cleared by the reset");
    assert_eq!(b.xfer(&[0x9F, 0, 0, 0])[1..], W25Q128JV.jedec_id);
}

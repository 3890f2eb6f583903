//! The chip's state and its bus face: opcodes decoded byte by byte, read
//! data driven as it is clocked, program/erase/status writes started when CS
//! rises, and their completion computed from timestamps when looked at.

use super::backing::Backing;
use super::chips::{ChipSpec, OpTime, ProgramKind};
use super::timing::{Rng, Timer};
use std::collections::HashMap;
use wirespeed_time::Instant;

/// Status register 1: write (program/erase/status write) in progress.
pub const SR_WIP: u8 = 0x01;
/// Status register 1: write enable latch.
pub const SR_WEL: u8 = 0x02;
/// Status register 1 (SST parts): auto-address-increment programming active.
pub const SR_AAI: u8 = 0x40;
/// Status register 1: SRP / SRWD / BPL, the bit that with WP# low locks the status register.
pub const SR_LOCK: u8 = 0x80;

/// An operation in the array's progress.
#[derive(Clone, Debug)]
enum Op {
    /// Bytes to program, in programming order.
    Program(Vec<(u32, u8)>),
    Erase {
        start: u32,
        len: u32,
    },
    WriteStatus {
        sr1: u8,
        sr2: u8,
    },
}

#[derive(Clone, Debug)]
struct Busy {
    op: Op,
    start: Instant,
    due: Instant,
}

/// One chip-select assertion.
#[derive(Debug, Default)]
struct Xfer {
    active: bool,
    ignored: bool,
    opcode: Option<u8>,
    count: usize,
    /// Bytes after the opcode (the first 8).
    bytes: Vec<u8>,
    /// Page program data by page offset.
    page: Vec<Option<u8>>,
}

pub(super) struct Core {
    pub(super) spec: &'static ChipSpec,
    pub(super) mem: Backing,
    sr1: u8,
    sr2: u8,
    addr4: bool,
    deep_pd: bool,
    reset_armed: bool,
    ewsr_armed: bool,
    aai_addr: Option<u32>,
    busy: Option<Busy>,
    /// Due instant of the last completed operation: a bus access stamped
    /// earlier (the controller hands words over after they shifted) still
    /// sees WIP.
    quiet_from: Instant,
    last_window: Option<(Instant, Instant)>,
    xfer: Xfer,
    timer: Timer,
    sfdp: Vec<u8>,
    pub(super) stuck_wip: bool,
    pub(super) wp_low: bool,
    pub(super) flip_probability: f64,
    pub(super) flip_rng: Rng,
    pub(super) flips: HashMap<u32, u8>,
}

impl Core {
    pub(super) fn new(spec: &'static ChipSpec, mem: Backing, timer: Timer) -> Core {
        Core {
            spec,
            mem,
            sr1: spec.sr1_default,
            sr2: 0,
            addr4: false,
            deep_pd: false,
            reset_armed: false,
            ewsr_armed: false,
            aai_addr: None,
            busy: None,
            quiet_from: Instant::ZERO,
            last_window: None,
            xfer: Xfer::default(),
            timer,
            sfdp: super::sfdp::table(spec),
            stuck_wip: false,
            wp_low: false,
            flip_probability: 0.0,
            flip_rng: Rng::new(0),
            flips: HashMap::new(),
        }
    }

    /// Completes the operation in progress if it is due at `at`.
    pub(super) fn settle(&mut self, at: Instant) {
        if self.stuck_wip {
            return;
        }
        if self.busy.as_ref().is_some_and(|b| at >= b.due) {
            let b = self.busy.take().expect("checked");
            self.quiet_from = b.due;
            self.apply(&b.op, None);
        }
    }

    pub(super) fn status(&mut self, at: Instant) -> (u8, u8) {
        self.settle(at);
        let wip = if self.busy.is_some() || self.stuck_wip || at < self.quiet_from { SR_WIP } else { 0 };
        (self.sr1 | wip, self.sr2)
    }

    /// Backdoor: sets the status registers (WIP excepted: it shows the array's state).
    pub(super) fn force_status(&mut self, sr1: u8, sr2: u8) {
        self.sr1 = sr1 & !SR_WIP;
        self.sr2 = sr2;
        self.aai_addr = self.aai_addr.filter(|_| sr1 & SR_AAI != 0);
    }

    pub(super) fn busy_window(&self) -> Option<(Instant, Instant)> {
        self.busy.as_ref().map(|b| (b.start, b.due))
    }

    pub(super) fn last_window(&self) -> Option<(Instant, Instant)> {
        self.last_window
    }

    /// Applies `op` fully (`None`) or as cut at `fraction` of its time.
    fn apply(&mut self, op: &Op, fraction: Option<f64>) {
        match op {
            Op::Program(list) => {
                let k = fraction.map_or(list.len(), |f| (f * list.len() as f64) as usize).min(list.len());
                for &(a, b) in &list[..k] {
                    self.mem.data[a as usize] &= b;
                }
                if let (Some(lo), Some(hi)) = (list[..k].iter().map(|p| p.0).min(), list[..k].iter().map(|p| p.0).max())
                {
                    self.mem.write_through(lo as usize, hi as usize + 1);
                }
            }
            &Op::Erase { start, len } => {
                let (s, e) = (start as usize, (start + len) as usize);
                match fraction {
                    None => self.mem.data[s..e].fill(0xFF),
                    // Pre-program to 0x00 over the first half of the time,
                    // then erase to 0xFF over the second, in address order.
                    Some(f) if f < 0.5 => {
                        let m = ((2.0 * f) * f64::from(len)) as usize;
                        self.mem.data[s..s + m].fill(0x00);
                    }
                    Some(f) => {
                        let m = (((2.0 * f) - 1.0) * f64::from(len)) as usize;
                        self.mem.data[s..s + m].fill(0xFF);
                        self.mem.data[s + m..e].fill(0x00);
                    }
                }
                self.mem.write_through(s, e);
            }
            &Op::WriteStatus { sr1, sr2 } => {
                if fraction.is_none() {
                    self.sr1 = sr1;
                    self.sr2 = sr2;
                }
            }
        }
        if self.sr1 & SR_AAI == 0 {
            self.sr1 &= !SR_WEL;
        }
    }

    /// Ends the operation in progress at `at`, leaving its partial effect.
    fn cut(&mut self, at: Instant) {
        self.settle(at);
        self.quiet_from = Instant::ZERO;
        if let Some(b) = self.busy.take() {
            let total = b.due.ns_since(b.start).max(1) as f64;
            let f = (at.ns_since(b.start) as f64 / total).clamp(0.0, 1.0);
            self.apply(&b.op, Some(f));
        }
    }

    /// The volatile state as after power-up.
    fn power_up(&mut self) {
        self.sr1 &= self.spec.sr1_writable & !SR_AAI & !SR_WEL;
        self.addr4 = false;
        self.deep_pd = false;
        self.reset_armed = false;
        self.ewsr_armed = false;
        self.aai_addr = None;
        self.xfer = Xfer::default();
    }

    /// Backdoor: power lost at `at` and restored.
    pub(super) fn power_cut(&mut self, at: Instant) {
        self.cut(at);
        self.stuck_wip = false;
        self.power_up();
    }

    fn start(&mut self, op: Op, time: OpTime, at: Instant) {
        let ns = self.timer.draw(time);
        if ns == 0 {
            self.apply(&op, None);
        } else {
            self.busy = Some(Busy { op, start: at, due: at.add_ns(ns) });
            self.last_window = Some((at, at.add_ns(ns)));
        }
    }

    fn addr_len(&self, opcode: u8) -> usize {
        let four_b = self.spec.four_byte_opcodes
            && (matches!(opcode, 0x13 | 0x0C | 0x12) || self.spec.erase.iter().any(|e| e.opcode_4b == Some(opcode)));
        if four_b || self.addr4 {
            4
        } else {
            3
        }
    }

    fn addr(&self, n: usize) -> u32 {
        let a = self.xfer.bytes[..n].iter().fold(0u32, |a, &b| (a << 8) | u32::from(b));
        a & (self.spec.size - 1)
    }

    fn known(&self, op: u8) -> bool {
        let s = self.spec;
        match op {
            0x9F | 0x05 | 0x06 | 0x04 | 0x03 | 0x02 | 0x01 | 0xC7 | 0x60 => true,
            0x35 => s.rdsr2,
            0x0B => s.fast_read,
            0x13 | 0x12 => s.four_byte_opcodes,
            0x0C => s.four_byte_opcodes && s.fast_read,
            0x5A => true, // a part without SFDP answers 0xFF
            0xB7 | 0xE9 => s.four_byte_mode,
            0x66 | 0x99 => s.reset,
            0xB9 | 0xAB => s.deep_power_down,
            0x50 => s.ewsr,
            0xAD => s.program == ProgramKind::ByteAndAai,
            _ => s.erase.iter().any(|e| e.opcode == op || (s.four_byte_opcodes && e.opcode_4b == Some(op))),
        }
    }

    fn accepts(&mut self, op: u8, at: Instant) -> bool {
        if !self.known(op) {
            return false;
        }
        if self.deep_pd {
            return op == 0xAB;
        }
        let (sr1, _) = self.status(at);
        if sr1 & SR_WIP != 0 {
            return matches!(op, 0x05 | 0x35 | 0x66 | 0x99);
        }
        if self.aai_addr.is_some() {
            return matches!(op, 0xAD | 0x04 | 0x05);
        }
        true
    }

    fn read_byte(&mut self, a: u32) -> u8 {
        let a = a & (self.spec.size - 1);
        let mut b = self.mem.data[a as usize];
        if let Some(m) = self.flips.get(&a) {
            b ^= m;
        }
        if self.flip_probability > 0.0 && self.flip_rng.chance(self.flip_probability) {
            b ^= 1 << (self.flip_rng.next_u64() % 8);
        }
        b
    }

    pub(super) fn chip_select(&mut self, asserted: bool, at: Instant) {
        if asserted {
            self.xfer = Xfer { active: true, ..Xfer::default() };
        } else {
            if self.xfer.active && !self.xfer.ignored {
                self.execute(at);
            }
            self.xfer = Xfer::default();
        }
    }

    pub(super) fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32 {
        if bits != 8 {
            self.xfer.ignored = true;
        }
        if !self.xfer.active || self.xfer.ignored {
            return 0xFF;
        }
        let b = mosi as u8;
        let i = self.xfer.count;
        self.xfer.count += 1;
        if i == 0 {
            if self.accepts(b, at) {
                self.xfer.opcode = Some(b);
            } else {
                self.xfer.ignored = true;
            }
            return 0xFF;
        }
        let op = self.xfer.opcode.unwrap_or(0);
        if self.xfer.bytes.len() < 8 {
            self.xfer.bytes.push(b);
        }
        let out = match op {
            0x9F => self.spec.jedec_id.get(i - 1).copied().unwrap_or(0xFF),
            0x05 => self.status(at).0,
            0x35 => self.status(at).1,
            0x03 | 0x13 | 0x0B | 0x0C => {
                let n = self.addr_len(op);
                let dummy = usize::from(matches!(op, 0x0B | 0x0C));
                if i > n + dummy {
                    let a = self.addr(n).wrapping_add((i - n - dummy - 1) as u32);
                    self.read_byte(a)
                } else {
                    0xFF
                }
            }
            0x5A if i > 4 => {
                let a = self.xfer.bytes[..3].iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
                self.sfdp.get(a + (i - 5)).copied().unwrap_or(0xFF)
            }
            0xAB if i >= 4 => self.spec.release_id.unwrap_or(0xFF),
            0x02 | 0x12 if self.spec.program == ProgramKind::Page => {
                let n = self.addr_len(op);
                if i > n {
                    let ps = self.spec.page_size as usize;
                    if self.xfer.page.is_empty() {
                        self.xfer.page = vec![None; ps];
                    }
                    let off = (self.addr(n) as usize + (i - n - 1)) % ps;
                    self.xfer.page[off] = Some(b);
                }
                0xFF
            }
            _ => 0xFF,
        };
        u32::from(out)
    }

    /// Refuses a write command: no WIP, WEL cleared.
    fn refuse(&mut self) {
        self.sr1 &= !SR_WEL;
    }

    fn overlaps_protected(&self, start: u32, len: u32) -> bool {
        let (ps, pe) = self.spec.protected_range(self.sr1);
        start < pe && ps < start + len
    }

    fn execute(&mut self, at: Instant) {
        let Some(op) = self.xfer.opcode else { return };
        let n = self.xfer.count;
        let reset_armed = std::mem::take(&mut self.reset_armed);
        let ewsr_armed = std::mem::take(&mut self.ewsr_armed);
        let wel = self.sr1 & SR_WEL != 0;
        let spec = self.spec;
        match op {
            0x06 if n == 1 => self.sr1 |= SR_WEL,
            0x04 if n == 1 => {
                self.sr1 &= !(SR_WEL | SR_AAI);
                self.aai_addr = None;
            }
            0x50 if n == 1 => self.ewsr_armed = true,
            0x01 => self.write_status(n, wel || ewsr_armed, at),
            0x02 | 0x12 => {
                let a = self.addr_len(op);
                if n <= 1 + a {
                    return;
                }
                if !wel {
                    return;
                }
                let addr = self.addr(a);
                let list: Vec<(u32, u8)> = match spec.program {
                    ProgramKind::Page => {
                        let ps = spec.page_size;
                        let base = addr & !(ps - 1);
                        let first = addr - base;
                        (0..ps)
                            .map(|k| (first + k) % ps)
                            .filter_map(|o| self.xfer.page[o as usize].map(|b| (base + o, b)))
                            .collect()
                    }
                    ProgramKind::ByteAndAai => vec![(addr, self.xfer.bytes[a])],
                };
                self.program(list, at);
            }
            0xAD => {
                if !wel {
                    return;
                }
                let a = self.addr_len(op);
                let (addr, data) = match self.aai_addr {
                    None if n == 1 + a + 2 => (self.addr(a) & !1, [self.xfer.bytes[a], self.xfer.bytes[a + 1]]),
                    Some(addr) if n == 3 => (addr, [self.xfer.bytes[0], self.xfer.bytes[1]]),
                    _ => return,
                };
                if self.overlaps_protected(addr, 2) {
                    self.sr1 &= !(SR_WEL | SR_AAI);
                    self.aai_addr = None;
                    return;
                }
                self.sr1 |= SR_AAI;
                self.aai_addr = Some((addr + 2) & (spec.size - 1));
                self.start(Op::Program(vec![(addr, data[0]), (addr + 1, data[1])]), spec.page_program, at);
            }
            0xC7 | 0x60 if n == 1 => {
                if !wel {
                    return;
                }
                if spec.protected_range(self.sr1).1 != 0 {
                    return self.refuse();
                }
                self.start(Op::Erase { start: 0, len: spec.size }, spec.chip_erase, at);
            }
            0xB7 if n == 1 => self.addr4 = true,
            0xE9 if n == 1 => self.addr4 = false,
            0x66 if n == 1 => self.reset_armed = true,
            0x99 if n == 1 && reset_armed => {
                self.cut(at);
                self.power_up();
            }
            0xB9 if n == 1 => self.deep_pd = true,
            0xAB => self.deep_pd = false,
            _ => {
                let four_b = spec.four_byte_opcodes;
                let Some(e) = spec.erase.iter().find(|e| e.opcode == op || (four_b && e.opcode_4b == Some(op))) else {
                    return;
                };
                let a = self.addr_len(op);
                if n != 1 + a || !wel {
                    return;
                }
                let start = self.addr(a) & !(e.size - 1);
                if self.overlaps_protected(start, e.size) {
                    return self.refuse();
                }
                self.start(Op::Erase { start, len: e.size }, e.time, at);
            }
        }
    }

    fn program(&mut self, list: Vec<(u32, u8)>, at: Instant) {
        if list.iter().any(|&(a, _)| self.overlaps_protected(a, 1)) {
            return self.refuse();
        }
        self.start(Op::Program(list), self.spec.page_program, at);
    }

    fn write_status(&mut self, n: usize, enabled: bool, at: Instant) {
        let spec = self.spec;
        let two = spec.sr2_writable != 0 && n == 3;
        if !(n == 2 || two) || !enabled {
            return;
        }
        if self.wp_low && self.sr1 & SR_LOCK != 0 {
            return self.refuse();
        }
        let b = &self.xfer.bytes;
        let sr1 = (self.sr1 & !spec.sr1_writable & !SR_WEL) | (b[0] & spec.sr1_writable);
        let sr2 = if two { (self.sr2 & !spec.sr2_writable) | (b[1] & spec.sr2_writable) } else { self.sr2 };
        self.start(Op::WriteStatus { sr1, sr2 }, spec.write_status, at);
    }
}

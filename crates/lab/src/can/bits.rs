//! The bitstream of a frame on the wire, bit-accurate: stuffing, CRCs and
//! the split between the nominal (arbitration) and data bit rates.
//!
//! Classic frames: SOF through the CRC-15 sequence are stuffed dynamically
//! (a complementary bit after five equal bits, stuff bits counting in the
//! next run); the CRC covers the unstuffed SOF..data bits.
//!
//! CAN FD frames (ISO 11898-1:2015): SOF through the data field are stuffed
//! dynamically and the CRC-17 (≤ 16 data bytes) or CRC-21 covers those bits
//! *including* the dynamic stuff bits and the stuff count; the stuff count
//! (number of dynamic stuff bits mod 8, Gray-coded, plus an even parity bit)
//! and the CRC are stuffed with fixed stuff bits: one before the first bit
//! of the stuff count and one after every fourth bit, each the complement of
//! the bit before it. A dynamic stuff bit that would fall right after the last
//! bit of the data field is not sent: the first fixed stuff bit takes its
//! place. With BRS the data phase runs from the bit after BRS (ESI) to the
//! last CRC bit; BRS and the CRC delimiter, where the rate switches at the
//! sample point, are counted at the nominal rate.
//!
//! After the CRC: CRC delimiter, ACK slot (dominant, as when acknowledged),
//! ACK delimiter and 7 EOF bits. The 3-bit intermission is not part of the
//! frame ([`INTERMISSION_BITS`]).

use super::frame::{CanId, Frame};
use std::fmt;

/// Bits of intermission between a frame's EOF and the next SOF.
pub const INTERMISSION_BITS: u32 = 3;
/// Bits of an error frame: error flag (6) and error delimiter (8).
pub const ERROR_FRAME_BITS: u32 = 14;
/// Bits an error-passive transmitter waits after intermission ("suspend transmission").
pub const SUSPEND_BITS: u32 = 8;

/// The two bit rates of a CAN FD bus (a classic bus uses `nominal` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BitRates {
    /// Arbitration-phase bit rate in bit/s.
    pub nominal: u32,
    /// Data-phase bit rate in bit/s (used by FD frames with BRS).
    pub data: u32,
}

impl BitRates {
    /// Both rates, in bit/s.
    pub const fn new(nominal: u32, data: u32) -> BitRates {
        BitRates { nominal, data }
    }

    /// Duration of `n` nominal bits in ns (rounded to the nearest ns).
    pub fn nominal_ns(&self, n: u64) -> u64 {
        bits_ns(n, self.nominal)
    }
}

fn bits_ns(n: u64, rate: u32) -> u64 {
    if rate == 0 {
        return 0;
    }
    ((u128::from(n) * 1_000_000_000 + u128::from(rate) / 2) / u128::from(rate)) as u64
}

const CRC15_POLY: u32 = 0x4599;
const CRC17_POLY: u32 = 0x1_685B;
const CRC21_POLY: u32 = 0x10_2899;

/// Shifts one bit into a CRC register of `width` bits (MSB-first, no reflection).
pub fn crc_step(crc: u32, bit: bool, width: u32, poly: u32) -> u32 {
    let top = (crc >> (width - 1)) & 1 != 0;
    let mask = (1u32 << width) - 1;
    let mut c = (crc << 1) & mask;
    if top ^ bit {
        c ^= poly;
    }
    c
}

/// CRC-15/CAN over whole bytes, MSB first, from 0 (for checking against the catalogue).
pub fn crc15_bytes(data: &[u8]) -> u32 {
    crc_bytes(data, 15, CRC15_POLY, 0)
}
/// CRC-17/CAN-FD over whole bytes from `init`.
pub fn crc17_bytes(data: &[u8], init: u32) -> u32 {
    crc_bytes(data, 17, CRC17_POLY, init)
}
/// CRC-21/CAN-FD over whole bytes from `init`.
pub fn crc21_bytes(data: &[u8], init: u32) -> u32 {
    crc_bytes(data, 21, CRC21_POLY, init)
}

fn crc_bytes(data: &[u8], width: u32, poly: u32, init: u32) -> u32 {
    let mut c = init;
    for &b in data {
        for i in (0..8).rev() {
            c = crc_step(c, (b >> i) & 1 != 0, width, poly);
        }
    }
    c
}

const MAX_BITS: usize = 1024;

/// A frame's bitstream from SOF to the end of EOF, as it appears on the bus
/// when acknowledged (recessive = `true`).
#[derive(Clone)]
pub struct FrameBits {
    words: [u64; MAX_BITS / 64],
    len: u16,
    data_start: u16,
    data_end: u16,
    arbitration_end: u16,
    ack_slot: u16,
    stuff_bits: u16,
    fixed_stuff_bits: u16,
    crc: u32,
}

impl fmt::Debug for FrameBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameBits")
            .field("len", &self.len)
            .field("nominal_bits", &self.nominal_bits())
            .field("data_bits", &self.data_bits())
            .field("stuff_bits", &self.stuff_bits)
            .field("fixed_stuff_bits", &self.fixed_stuff_bits)
            .field("crc", &format_args!("{:#x}", self.crc))
            .finish()
    }
}

struct Encoder {
    fb: FrameBits,
    last: bool,
    run: u8,
    fd: bool,
    crc15: u32,
    crc17: u32,
    crc21: u32,
}

impl Encoder {
    fn raw(&mut self, bit: bool) {
        let i = usize::from(self.fb.len);
        if bit {
            self.fb.words[i / 64] |= 1 << (i % 64);
        }
        if i > 0 && bit == self.last {
            self.run += 1;
        } else {
            self.run = 1;
        }
        self.last = bit;
        self.fb.len += 1;
    }

    fn fd_crc(&mut self, bit: bool) {
        self.crc17 = crc_step(self.crc17, bit, 17, CRC17_POLY);
        self.crc21 = crc_step(self.crc21, bit, 21, CRC21_POLY);
    }

    /// A bit in the dynamically stuffed region; `crc` says whether it is covered by the CRC.
    fn push(&mut self, bit: bool, crc: bool) {
        if self.run >= 5 {
            let s = !self.last;
            self.raw(s);
            self.fb.stuff_bits += 1;
            if self.fd {
                self.fd_crc(s);
            }
        }
        if crc {
            if self.fd {
                self.fd_crc(bit);
            } else {
                self.crc15 = crc_step(self.crc15, bit, 15, CRC15_POLY);
            }
        }
        self.raw(bit);
    }

    fn push_field(&mut self, value: u32, bits: u32) {
        for i in (0..bits).rev() {
            self.push((value >> i) & 1 != 0, true);
        }
    }
}

impl FrameBits {
    /// Encodes `frame` as the bus carries it.
    pub fn encode(frame: &Frame) -> FrameBits {
        let fb = FrameBits {
            words: [0; MAX_BITS / 64],
            len: 0,
            data_start: 0,
            data_end: 0,
            arbitration_end: 0,
            ack_slot: 0,
            stuff_bits: 0,
            fixed_stuff_bits: 0,
            crc: 0,
        };
        let fd = frame.is_fd();
        let mut e = Encoder { fb, last: true, run: 0, fd, crc15: 0, crc17: 1 << 16, crc21: 1 << 20 };
        e.push(false, true); // SOF
        let rtr_rrs = !fd && frame.is_remote();
        match frame.id() {
            CanId::Standard(id) => {
                e.push_field(u32::from(id), 11);
                e.push(rtr_rrs, true);
                e.fb.arbitration_end = e.fb.len;
                e.push(false, true); // IDE
            }
            CanId::Extended(id) => {
                e.push_field(id >> 18, 11);
                e.push(true, true); // SRR
                e.push(true, true); // IDE
                e.push_field(id & 0x3_FFFF, 18);
                e.push(rtr_rrs, true);
                e.fb.arbitration_end = e.fb.len;
                if !fd {
                    e.push(false, true); // r1
                }
            }
        }
        if fd {
            e.push(true, true); // FDF
            e.push(false, true); // res
            e.push(frame.brs(), true);
            e.fb.data_start = e.fb.len;
            e.push(frame.esi(), true);
        } else {
            e.push(false, true); // r0
        }
        e.push_field(u32::from(frame.dlc()), 4);
        for &b in frame.data() {
            e.push_field(u32::from(b), 8);
        }
        if fd {
            let sc = u32::from(e.fb.stuff_bits % 8);
            let gray = sc ^ (sc >> 1);
            let parity = (gray.count_ones() & 1) != 0;
            let use21 = frame.len() > 16;
            let sc_bits = (gray << 1) | u32::from(parity);
            for i in (0..4).rev() {
                e.fd_crc((sc_bits >> i) & 1 != 0);
            }
            let (crc, width) = if use21 { (e.crc21, 21) } else { (e.crc17, 17) };
            e.fb.crc = crc;
            let field = (u64::from(sc_bits) << width) | u64::from(crc);
            let n = 4 + width;
            for k in 0..n {
                if k % 4 == 0 {
                    let s = !e.last;
                    e.raw(s);
                    e.fb.fixed_stuff_bits += 1;
                }
                e.raw((field >> (n - 1 - k)) & 1 != 0);
            }
            if !frame.brs() {
                e.fb.data_start = e.fb.len;
            }
            e.fb.data_end = e.fb.len;
        } else {
            let crc = e.crc15;
            e.fb.crc = crc;
            for i in (0..15).rev() {
                e.push((crc >> i) & 1 != 0, false);
            }
            if e.run >= 5 {
                let s = !e.last;
                e.raw(s);
                e.fb.stuff_bits += 1;
            }
            e.fb.data_start = e.fb.len;
            e.fb.data_end = e.fb.len;
        }
        e.raw(true); // CRC delimiter
        e.fb.ack_slot = e.fb.len;
        e.raw(false); // ACK slot
        e.raw(true); // ACK delimiter
        for _ in 0..7 {
            e.raw(true); // EOF
        }
        e.fb
    }

    /// Number of bits from SOF to the end of EOF.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    /// Always false: a frame has at least SOF..EOF.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bit `i` (true = recessive).
    pub fn bit(&self, i: usize) -> bool {
        i < self.len() && (self.words[i / 64] >> (i % 64)) & 1 != 0
    }
    /// The bits as a string of '0' and '1' (for tests and logs).
    pub fn to_bit_string(&self) -> String {
        (0..self.len()).map(|i| if self.bit(i) { '1' } else { '0' }).collect()
    }
    /// Bits sent at the nominal rate.
    pub fn nominal_bits(&self) -> u32 {
        u32::from(self.len - (self.data_end - self.data_start))
    }
    /// Bits sent at the data rate (0 unless FD with BRS).
    pub fn data_bits(&self) -> u32 {
        u32::from(self.data_end - self.data_start)
    }
    /// Dynamic stuff bits.
    pub fn stuff_bits(&self) -> u32 {
        u32::from(self.stuff_bits)
    }
    /// Fixed stuff bits (FD CRC field).
    pub fn fixed_stuff_bits(&self) -> u32 {
        u32::from(self.fixed_stuff_bits)
    }
    /// The CRC sequence sent (15, 17 or 21 bits).
    pub fn crc(&self) -> u32 {
        self.crc
    }
    /// Index of the ACK slot bit.
    pub fn ack_slot(&self) -> usize {
        usize::from(self.ack_slot)
    }
    /// Index of the first bit after the arbitration field (RTR/RRS included).
    pub fn arbitration_end(&self) -> usize {
        usize::from(self.arbitration_end)
    }

    /// Time from the start of SOF to the end of bit `i` (`i = len-1`: end of EOF), in ns.
    pub fn bit_end_ns(&self, i: usize, rates: BitRates) -> u64 {
        let n = (i + 1).min(self.len()) as u64;
        let ds = u64::from(self.data_start);
        let de = u64::from(self.data_end);
        let data = n.clamp(ds, de) - ds;
        bits_ns(n - data, rates.nominal) + bits_ns(data, rates.data)
    }

    /// Time from the start of SOF to the end of EOF, in ns.
    pub fn duration_ns(&self, rates: BitRates) -> u64 {
        self.bit_end_ns(self.len() - 1, rates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crcs_match_the_catalogue_check_values() {
        // CRC RevEng catalogue: CRC-15/CAN check 0x059e, CRC-17/CAN-FD 0x04f03, CRC-21/CAN-FD 0x0ed841
        // (all over "123456789", init 0, no reflection, no xorout).
        assert_eq!(crc15_bytes(b"123456789"), 0x059E);
        assert_eq!(crc17_bytes(b"123456789", 0), 0x04F03);
        assert_eq!(crc21_bytes(b"123456789", 0), 0x0E_D841);
    }

    fn std_frame(id: u16, data: &[u8]) -> Frame {
        Frame::new_classic(CanId::Standard(id), data).unwrap()
    }

    /// Removes stuff bits from the classic stuffed region and checks the rule held.
    fn destuff(bits: &str, region: usize) -> (String, usize) {
        let b: Vec<char> = bits.chars().collect();
        let mut out = String::new();
        let (mut run, mut last, mut i, mut stuffed) = (0, ' ', 0, 0);
        while i < b.len() && out.len() < region {
            let c = b[i];
            run = if c == last { run + 1 } else { 1 };
            last = c;
            out.push(c);
            i += 1;
            if run == 5 && i < b.len() {
                assert_ne!(b[i], last, "missing stuff bit at {i}");
                last = b[i];
                run = 1;
                stuffed += 1;
                i += 1;
            }
        }
        (out, stuffed)
    }

    #[test]
    fn classic_stream_destuffs_to_the_fields() {
        let f = std_frame(0x077, &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        let fb = FrameBits::encode(&f);
        let s = fb.to_bit_string();
        // SOF, ID 0x077, RTR, IDE, r0, DLC 8, 64 data bits, 15 CRC bits.
        let (plain, stuffed) = destuff(&s, 1 + 11 + 3 + 4 + 64 + 15);
        assert_eq!(stuffed, fb.stuff_bits() as usize);
        let mut expect = String::from("0");
        expect += &format!("{:011b}", 0x077);
        expect += "000";
        expect += "1000";
        expect += &"0".repeat(32);
        expect += &"1".repeat(32);
        assert_eq!(&plain[..expect.len()], expect);
        let crc = u32::from_str_radix(&plain[expect.len()..], 2).unwrap();
        assert_eq!(crc, fb.crc());
        assert!(s.ends_with("1011111111"), "CRC delim, ACK, ACK delim, EOF");
    }
}

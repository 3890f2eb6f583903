//! Conformance: the Linux driver's start-up sequence (mcp251xfd-core.c,
//! `mcp251xfd_chip_start` and the functions it calls), written as a table
//! of register operations and played step by step through the model's SPI
//! face, from a chip left in Sleep and from one left in Low-Power Mode,
//! with every silicon behaviour on. Each step says what the host reads and
//! what mode the model is in after it.

use super::regs::*;
use super::testkit::*;
use super::*;

const CLKODIV_10: u32 = 3 << 5;
/// The kernel's poll periods (MCP251XFD_OSC_STAB_SLEEP_US, MCP251XFD_POLL_SLEEP_US)
/// and time-outs.
const OSC_POLL_NS: u64 = 3_000_000;
const OSC_TIMEOUT_NS: u64 = 10 * OSC_POLL_NS;
const MODE_POLL_NS: u64 = 10_000;
const MODE_TIMEOUT_NS: u64 = 1_000_000_000;

/// One register operation of the sequence.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// WRITE of a 32-bit register.
    Write(u16, u32),
    /// regmap_update_bits: READ, then WRITE of (old & !mask) | val.
    Update(u16, u32, u32),
    /// READ, expecting `(value & mask) == want`.
    Expect(u16, u32, u32),
    /// READ every `period` ns until `(value & mask) == want`, for at most `timeout` ns.
    Poll { addr: u16, mask: u32, want: u32, period: u64, timeout: u64 },
    /// The RESET instruction.
    Reset,
    /// WRITE of zeros over the whole message RAM (one access).
    ZeroRam,
}

struct Step {
    what: &'static str,
    op: Op,
    /// The operation mode after the step.
    mode: Mode,
}

const fn step(what: &'static str, op: Op, mode: Mode) -> Step {
    Step { what, op, mode }
}

fn con_reqop(m: u8) -> u32 {
    u32::from(m) << CON_REQOP_SHIFT
}

/// `mcp251xfd_chip_start` + `mcp251xfd_chip_interrupts_enable` for 1 / 2
/// Mbit/s CAN FD at 40 MHz: the TEF and the TXQ 8 deep, FIFO 1 receiving
/// 8 deep, 64-byte payloads (FIFOs 2..31 keep their one reset object).
fn kernel_start() -> Vec<Step> {
    use Mode::*;
    use Op::*;
    let osc_ready = |what| {
        step(
            what,
            Poll {
                addr: OSC,
                mask: OSC_OSCRDY | OSC_PLLRDY,
                want: OSC_OSCRDY,
                period: OSC_POLL_NS,
                timeout: OSC_TIMEOUT_NS,
            },
            Config,
        )
    };
    let mode = |what, m: u8, after| {
        step(
            what,
            Poll {
                addr: C1CON,
                mask: 7 << CON_OPMOD_SHIFT,
                want: u32::from(m) << CON_OPMOD_SHIFT,
                period: MODE_POLL_NS,
                timeout: MODE_TIMEOUT_NS,
            },
            after,
        )
    };
    let con = CON_STEF
        | CON_ESIGM
        | CON_RTXAT
        | CON_TXQEN
        | (1 << 9) // WFT = T11FILTER
        | CON_WAKFIL
        | CON_PXEDIS
        | CON_ISOCRCEN;
    let int_en = INT_CERRIF
        | INT_SERRIF
        | INT_RXOVIF
        | INT_TXATIF
        | INT_SPICRCIF
        | INT_ECCIF
        | INT_TEFIF
        | INT_MODIF
        | INT_RXIF
        | INT_IVMIF;
    vec![
        // mcp251xfd_chip_wake / clock_enable: "writing to the Oscillator
        // register will wake it in both cases".
        step("wake: write OSC", Write(OSC, CLKODIV_10), Sleep),
        osc_ready("wait for OSCRDY"),
        // mcp251xfd_chip_softreset_do
        step("request configuration mode", Update(C1CON, 7 << CON_REQOP_SHIFT, con_reqop(MODE_CONFIG)), Config),
        mode("wait for configuration mode", MODE_CONFIG, Config),
        step("RESET", Reset, Config),
        // mcp251xfd_chip_softreset_check: OSC exactly at its reset value.
        step(
            "wait for OSC reset defaults",
            Poll { addr: OSC, mask: !0, want: OSC_RESET_READY, period: OSC_POLL_NS, timeout: OSC_TIMEOUT_NS },
            Config,
        ),
        step("in configuration mode after reset", Expect(C1CON, !0, C1CON_RESET), Config),
        // mcp251xfd_register_chip_detect / chip_clock_init
        step("LPMEN detect: write", Write(OSC, OSC_LPMEN | CLKODIV_10), Config),
        step("LPMEN detect: reads back (MCP2518FD)", Expect(OSC, OSC_LPMEN, OSC_LPMEN), Config),
        step("no PLL at 40 MHz, no SCLKDIV", Expect(OSC, OSC_PLLEN | OSC_SCLKDIV | OSC_OSCRDY, OSC_OSCRDY), Config),
        // mcp251xfd_chip_ecc_init (+ the enables of interrupts_enable)
        step("ECCCON: ECCEN, SECIE, DEDIE", Write(ECCCON, ECCCON_ECCEN | ECCCON_SECIE | ECCCON_DEDIE), Config),
        step("zero the message RAM", ZeroRam, Config),
        step("RAM reads clean", Expect(0xBFC, !0, 0), Config),
        step("no ECC error", Expect(ECCSTAT, ECCSTAT_SECIF | ECCSTAT_DEDIF, 0), Config),
        // mcp251xfd_chip_rx_int_enable
        step("IOCON: INT1 = RX interrupt", Write(IOCON, IOCON_PM0 | IOCON_TRIS1 | IOCON_TRIS0), Config),
        step("IOCON reads back", Expect(IOCON, 0x0300_00C3, IOCON_PM0 | IOCON_TRIS1 | IOCON_TRIS0), Config),
        // mcp251xfd_set_bittiming
        step("C1CON", Write(C1CON, con | con_reqop(MODE_CONFIG)), Config),
        step("C1CON reads back", Expect(C1CON, !(7 << CON_OPMOD_SHIFT), con | con_reqop(MODE_CONFIG)), Config),
        step("NBTCFG: 1 Mbit/s", Write(C1NBTCFG, (29 << 16) | (8 << 8) | 8), Config),
        step("DBTCFG: 2 Mbit/s", Write(C1DBTCFG, (14 << 16) | (3 << 8) | 3), Config),
        step("TDC: auto, TDCO 15", Write(C1TDC, (2 << 16) | (15 << 8)), Config),
        step("NBTCFG reads back", Expect(C1NBTCFG, !0, (29 << 16) | (8 << 8) | 8), Config),
        step("TDC reads back", Expect(C1TDC, !0, (2 << 16) | (15 << 8)), Config),
        // mcp251xfd_chip_timestamp_init
        step("TSCON: TBCEN, prescaler 1", Write(C1TSCON, TSCON_TBCEN), Config),
        // mcp251xfd_chip_fifo_init
        step(
            "TEFCON: 8 deep, timestamps",
            Write(C1TEFCON, (7 << 24) | TEFCON_TEFTSEN | TEFCON_TEFOVIE | TEFCON_TEFNEIE),
            Config,
        ),
        step(
            "TXQCON: 8 × 64 bytes, unlimited attempts",
            Write(C1TXQCON, (7 << 29) | (7 << 24) | (3 << FIFOCON_TXAT_SHIFT) | FIFOCON_TXATIE),
            Config,
        ),
        step(
            "FIFO 1: RX 8 × 64 bytes, timestamps",
            Write(c1fifocon(1), (7 << 29) | (7 << 24) | FIFOCON_RXTSEN | FIFOCON_RXOVIE | FIFOCON_TFNRFNIE),
            Config,
        ),
        step("filter 0 → FIFO 1", Update(c1fltcon(0), 0xFF, u32::from(FLTCON_FLTEN | 1)), Config),
        step("TEF at 0x400", Expect(C1TEFUA, !0, 0), Config),
        step("TXQ after the TEF: 8 × 12", Expect(C1TXQUA, !0, 96), Config),
        step("FIFO 1 after the TXQ: + 8 × 72", Expect(c1fifoua(1), !0, 96 + 576), Config),
        // mcp251xfd_chip_interrupts_enable (the kernel writes CRC, then C1INT)
        step("C1INT enables", Write(C1INT, int_en << 16), Config),
        step("CRC: FERRIE, CRCERRIE", Write(CRC, CRC_FERRIE | CRC_CRCERRIE), Config),
        // mcp251xfd_chip_set_normal_mode
        step("request normal mode", Update(C1CON, 7 << CON_REQOP_SHIFT, con_reqop(MODE_NORMAL_FD)), Config),
        mode("wait for normal mode", MODE_NORMAL_FD, NormalFd),
        step("MODIF pending", Expect(C1INT, INT_MODIF | INT_ECCIF | INT_CERRIF, INT_MODIF), NormalFd),
        step("error active", Expect(C1TREC, !0, 0), NormalFd),
        step("ICOD: mode change", Expect(C1VEC, 0x7F, 0x47), NormalFd),
    ]
}

/// Plays `steps` on `t`, checking each.
fn play(t: &mut T, steps: &[Step]) {
    for (i, s) in steps.iter().enumerate() {
        let ctx = format!("step {i} ({}), {:?}", s.what, s.op);
        match s.op {
            Op::Write(a, v) => t.write(a, v),
            Op::Update(a, mask, v) => {
                let old = t.read(a);
                t.write(a, (old & !mask) | v);
            }
            Op::Expect(a, mask, want) => {
                let got = t.read(a);
                assert_eq!(got & mask, want, "{ctx}: read {got:#010x}");
            }
            Op::Poll { addr, mask, want, period, timeout } => {
                let start = t.t;
                loop {
                    let got = t.read(addr);
                    if got & mask == want {
                        break;
                    }
                    assert!(t.t.ns_since(start) < timeout, "{ctx}: timed out, last read {got:#010x}");
                    t.later(period);
                }
            }
            Op::Reset => {
                t.xfer(&[0x00, 0x00]);
            }
            Op::ZeroRam => {
                let mut b = vec![0x20 | (RAM_START >> 8) as u8, RAM_START as u8];
                b.extend(std::iter::repeat_n(0, RAM_SIZE));
                t.xfer(&b);
            }
        }
        assert_eq!(t.dev.mode(t.t), s.mode, "{ctx}: mode");
    }
}

/// A chip that ran, with some configuration, then was put to sleep by
/// `mcp251xfd_chip_stop` (interrupts off, REQOP = Sleep), LPMEN as given.
fn stopped(lpmen: bool) -> T {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000); // far ahead of real time: only the table moves the clock
    t.write(C1NBTCFG, 0x0001_1E07);
    t.write(OSC, if lpmen { OSC_LPMEN } else { 0 } | CLKODIV_10);
    t.write(C1INT, 0);
    t.request_mode(MODE_SLEEP);
    t.later(10_000);
    assert_eq!(t.dev.mode(t.t), Mode::Sleep);
    // The backdoor: in Low-Power Mode an SPI access would wake it.
    assert_eq!(t.dev.peek(OSC, t.t) & (OSC_OSCDIS | OSC_OSCRDY), OSC_OSCDIS);
    t
}

fn check_end(t: &T) {
    let hits = t.dev.errata_hits();
    assert_eq!((hits.ecc_sec, hits.ecc_ded), (0, 0), "the zeroed RAM reads clean");
    assert_eq!(hits.reset_ignored, 0, "the chip was woken before its RESET");
    assert_eq!(hits.spi_clock, 0);
    assert!(!t.dev.int_pin().is_high(), "MODIF with MODIE: INT low");
    assert!(!t.dev.ram_overflow());
}

#[test]
fn the_kernel_start_sequence_from_a_chip_left_in_sleep() {
    let mut t = stopped(false);
    let steps = kernel_start();
    play(&mut t, &steps);
    check_end(&t);
}

#[test]
fn the_kernel_start_sequence_from_a_chip_left_in_low_power_mode() {
    let mut t = stopped(true);
    let mut steps = kernel_start();
    // Chip select wakes it with a power-on reset: the OSC write is lost and
    // the device is in configuration mode at once (its oscillator starting).
    steps[0].mode = Mode::Config;
    play(&mut t, &steps);
    check_end(&t);
}

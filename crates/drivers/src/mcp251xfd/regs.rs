//! The MCP251xFD's address map, SPI instructions and register bits the
//! driver uses (datasheet DS20006027, family reference manual DS20005678).

#![allow(missing_docs)]

pub const INSTR_RESET: u8 = 0x0;
pub const INSTR_WRITE: u8 = 0x2;
pub const INSTR_READ: u8 = 0x3;
pub const INSTR_WRITE_CRC: u8 = 0xA;
pub const INSTR_READ_CRC: u8 = 0xB;
/// WRITE_SAFE: command, one data byte (one word in RAM), CRC-16 over both;
/// the device writes only if the CRC matches.
pub const INSTR_WRITE_SAFE: u8 = 0xC;

pub const C1CON: u16 = 0x000;
pub const C1NBTCFG: u16 = 0x004;
pub const C1DBTCFG: u16 = 0x008;
pub const C1TDC: u16 = 0x00C;
pub const C1TBC: u16 = 0x010;
pub const C1TSCON: u16 = 0x014;
pub const C1INT: u16 = 0x01C;
pub const C1RXIF: u16 = 0x020;
pub const C1TREC: u16 = 0x034;
pub const C1BDIAG1: u16 = 0x03C;
pub const C1TEFCON: u16 = 0x040;
pub const C1TEFSTA: u16 = 0x044;
pub const C1TEFUA: u16 = 0x048;
pub const C1TXQCON: u16 = 0x050;
pub const C1TXQSTA: u16 = 0x054;
pub const C1TXQUA: u16 = 0x058;
/// The FIFO the driver receives into.
pub const RX_FIFO: u16 = 1;
/// The FIFO the driver transmits from. A TX FIFO, not the TXQ: the TXQ
/// sends by ID, and frames with equal IDs leave in slot order, which after
/// the ring wraps is not the order they were queued in.
pub const TX_FIFO: u16 = 2;
pub const fn c1fifocon(m: u16) -> u16 {
    0x050 + 0xC * m
}
pub const fn c1fifosta(m: u16) -> u16 {
    0x054 + 0xC * m
}
pub const fn c1fifoua(m: u16) -> u16 {
    0x058 + 0xC * m
}
pub const fn c1fltcon(n: u16) -> u16 {
    0x1D0 + 4 * n
}
pub const fn c1fltobj(n: u16) -> u16 {
    0x1F0 + 8 * n
}
pub const fn c1mask(n: u16) -> u16 {
    0x1F4 + 8 * n
}

pub const RAM_START: u16 = 0x400;
pub const RAM_SIZE: u16 = 2048;

pub const OSC: u16 = 0xE00;
pub const IOCON: u16 = 0xE04;
pub const CRC: u16 = 0xE08;
pub const ECCCON: u16 = 0xE0C;
pub const ECCSTAT: u16 = 0xE10;
pub const DEVID: u16 = 0xE14;

// C1CON
pub const CON_ISOCRCEN: u32 = 1 << 5;
pub const CON_PXEDIS: u32 = 1 << 6;
pub const CON_BRSDIS: u32 = 1 << 12;
pub const CON_RTXAT: u32 = 1 << 16;
pub const CON_STEF: u32 = 1 << 19;
pub const CON_TXQEN: u32 = 1 << 20;
pub const CON_OPMOD_SHIFT: u32 = 21;
pub const CON_REQOP_SHIFT: u32 = 24;
pub const CON_REQOP_MASK: u32 = 7 << CON_REQOP_SHIFT;

pub const MODE_NORMAL_FD: u8 = 0;
pub const MODE_SLEEP: u8 = 1;
pub const MODE_LISTEN_ONLY: u8 = 3;
pub const MODE_CONFIG: u8 = 4;
pub const MODE_EXTERNAL_LOOPBACK: u8 = 5;
pub const MODE_NORMAL_CAN20: u8 = 6;
pub const MODE_RESTRICTED: u8 = 7;

pub const TSCON_TBCEN: u32 = 1 << 16;

// C1INT flags; enables are the same bits << 16.
pub const INT_TXIF: u32 = 1 << 0;
pub const INT_RXIF: u32 = 1 << 1;
pub const INT_TBCIF: u32 = 1 << 2;
pub const INT_MODIF: u32 = 1 << 3;
pub const INT_TEFIF: u32 = 1 << 4;
pub const INT_ECCIF: u32 = 1 << 8;
pub const INT_SPICRCIF: u32 = 1 << 9;
pub const INT_TXATIF: u32 = 1 << 10;
pub const INT_RXOVIF: u32 = 1 << 11;
pub const INT_SERRIF: u32 = 1 << 12;
pub const INT_CERRIF: u32 = 1 << 13;
pub const INT_WAKIF: u32 = 1 << 14;
pub const INT_IVMIF: u32 = 1 << 15;
/// Flags cleared by writing 0.
pub const INT_CLEARABLE: u32 = INT_TBCIF | INT_MODIF | INT_SERRIF | INT_CERRIF | INT_WAKIF | INT_IVMIF;

// C1TREC
pub const TREC_EWARN: u32 = 1 << 16;
pub const TREC_RXWARN: u32 = 1 << 17;
pub const TREC_TXWARN: u32 = 1 << 18;
pub const TREC_RXBP: u32 = 1 << 19;
pub const TREC_TXBP: u32 = 1 << 20;
pub const TREC_TXBO: u32 = 1 << 21;

// C1BDIAG1 (bits 15:0: error-free message counter)
pub const BDIAG1_NBIT0ERR: u32 = 1 << 16;
pub const BDIAG1_NBIT1ERR: u32 = 1 << 17;
pub const BDIAG1_NACKERR: u32 = 1 << 18;
pub const BDIAG1_NFORMERR: u32 = 1 << 19;
pub const BDIAG1_NSTUFERR: u32 = 1 << 20;
pub const BDIAG1_NCRCERR: u32 = 1 << 21;
pub const BDIAG1_TXBOERR: u32 = 1 << 23;
pub const BDIAG1_DBIT0ERR: u32 = 1 << 24;
pub const BDIAG1_DBIT1ERR: u32 = 1 << 25;
pub const BDIAG1_DFORMERR: u32 = 1 << 27;
pub const BDIAG1_DSTUFERR: u32 = 1 << 28;
pub const BDIAG1_DCRCERR: u32 = 1 << 29;
pub const BDIAG1_ESI: u32 = 1 << 30;
pub const BDIAG1_DLCMM: u32 = 1 << 31;

// TEFCON
pub const TEFCON_TEFNEIE: u32 = 1 << 0;
pub const TEFCON_TEFOVIE: u32 = 1 << 3;
pub const TEFCON_TEFTSEN: u32 = 1 << 5;
pub const TEFCON_UINC: u32 = 1 << 8;
pub const TEFSTA_TEFNEIF: u32 = 1 << 0;
pub const TEFSTA_TEFOVIF: u32 = 1 << 3;

// FIFOCON / TXQCON
pub const FIFOCON_TFNRFNIE: u32 = 1 << 0;
pub const FIFOCON_RXOVIE: u32 = 1 << 3;
pub const FIFOCON_RXTSEN: u32 = 1 << 5;
pub const FIFOCON_TXEN: u32 = 1 << 7;
pub const FIFOCON_UINC: u32 = 1 << 8;
pub const FIFOCON_TXREQ: u32 = 1 << 9;
pub const FIFOCON_FRESET: u32 = 1 << 10;
pub const FIFOCON_TXPRI_SHIFT: u32 = 16;
pub const FIFOCON_TXAT_SHIFT: u32 = 21;
pub const FIFOCON_FSIZE_SHIFT: u32 = 24;
pub const FIFOCON_PLSIZE_SHIFT: u32 = 29;

// FIFOSTA
pub const FIFOSTA_TFNRFNIF: u32 = 1 << 0;
pub const FIFOSTA_TFHRFHIF: u32 = 1 << 1;
pub const FIFOSTA_TFERFFIF: u32 = 1 << 2;
pub const FIFOSTA_RXOVIF: u32 = 1 << 3;
pub const FIFOSTA_FIFOCI_SHIFT: u32 = 8;
pub const FIFOSTA_FIFOCI_MASK: u32 = 0x1F;

// Filters
pub const FLTCON_FLTEN: u8 = 1 << 7;
pub const FLTOBJ_EXIDE: u32 = 1 << 30;
pub const MASK_MIDE: u32 = 1 << 30;

// Message objects
pub const OBJ_ID_SID_MASK: u32 = 0x7FF;
pub const OBJ_ID_EID_SHIFT: u32 = 11;
pub const OBJ_FLAGS_DLC_MASK: u32 = 0xF;
pub const OBJ_FLAGS_IDE: u32 = 1 << 4;
pub const OBJ_FLAGS_RTR: u32 = 1 << 5;
pub const OBJ_FLAGS_BRS: u32 = 1 << 6;
pub const OBJ_FLAGS_FDF: u32 = 1 << 7;
pub const OBJ_FLAGS_ESI: u32 = 1 << 8;
pub const OBJ_FLAGS_SEQ_SHIFT: u32 = 9;
pub const OBJ_FLAGS_FILHIT_SHIFT: u32 = 11;

// OSC
pub const OSC_PLLEN: u32 = 1 << 0;
pub const OSC_OSCDIS: u32 = 1 << 2;
/// Low-power mode enable (MCP2518FD only: reads 0 on the MCP2517FD).
pub const OSC_LPMEN: u32 = 1 << 3;
pub const OSC_CLKODIV_SHIFT: u32 = 5;
/// CLKO divided by 10 (the reset value of CLKODIV).
pub const OSC_CLKODIV_10: u32 = 3 << OSC_CLKODIV_SHIFT;
pub const OSC_PLLRDY: u32 = 1 << 8;
pub const OSC_OSCRDY: u32 = 1 << 10;

// IOCON
pub const IOCON_PM0: u32 = 1 << 24;
pub const IOCON_PM1: u32 = 1 << 25;
pub const IOCON_INTOD: u32 = 1 << 30;

// CRC
pub const CRC_CRCERRIF: u32 = 1 << 16;
pub const CRC_FERRIF: u32 = 1 << 17;
pub const CRC_CRCERRIE: u32 = 1 << 24;
pub const CRC_FERRIE: u32 = 1 << 25;

// ECC
pub const ECCCON_ECCEN: u32 = 1 << 0;
pub const ECCCON_SECIE: u32 = 1 << 1;
pub const ECCCON_DEDIE: u32 = 1 << 2;
pub const ECCSTAT_SECIF: u32 = 1 << 1;
pub const ECCSTAT_DEDIF: u32 = 1 << 2;
pub const ECCSTAT_ERRADDR_SHIFT: u32 = 16;

/// DEVID bits 7:4: 1 for an MCP2518FD.
pub const DEVID_ID_MCP2518FD: u32 = 1;
/// DEVID bits 7:4 of an MCP2517FD.
pub const DEVID_ID_MCP2517FD: u32 = 0;

/// Payload bytes per PLSIZE value.
pub const PLSIZE_BYTES: [usize; 8] = [8, 12, 16, 20, 24, 32, 48, 64];

/// The two command bytes: 4-bit instruction, 12-bit address, MSB first.
pub const fn cmd(instr: u8, addr: u16) -> [u8; 2] {
    [(instr << 4) | ((addr >> 8) as u8 & 0xF), addr as u8]
}

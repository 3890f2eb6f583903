//! The silicon's deviations from the ideal programming model, each one a
//! switch the backdoor can turn off ([`Errata`]), and the counters of how
//! often each changed what the host saw ([`ErrataHits`]).
//!
//! Sources: the MCP2518FD errata sheet DS80000789, the datasheet
//! DS20006027 and the Linux driver `drivers/net/can/spi/mcp251xfd`, whose
//! workarounds document what the silicon does. What each switch models is
//! described on its field; the module docs of `mcp2518fd` summarise them.

/// Silicon behaviours (errata sheet DS80000789 / datasheet DS20006027), each on by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errata {
    /// A READ_CRC whose data includes byte 0 of C1TBC sends that byte with
    /// bit 7 flipped when its true value & 0xF8 is 0x00 or 0x80, with a CRC
    /// computed over the true byte (kernel mcp251xfd-regmap.c).
    pub tbc_read_crc: bool,
    /// FIFOSTA.FIFOCI reads one too far shortly after the FIFO's head (RX)
    /// or tail (TX) moved (DS80000789 item 6; kernel mcp251xfd-rx.c/-tef.c).
    pub fifoci: bool,
    /// No CERRIF on the way back from error warning/passive to error
    /// active (kernel mcp251xfd-core.c); only C1TREC tells.
    pub no_cerrif_to_active: bool,
    /// An SCLK above 0.85 × SYSCLK / 2 corrupts every data byte by a
    /// one-bit slip (datasheet SPI timing; kernel max_speed_hz).
    pub spi_clock_limit: bool,
    /// RAM powers up pseudo-random; with ECCCON.ECCEN a word never written
    /// since power-up reads as a double-bit error (kernel zeroes the RAM).
    pub ecc: bool,
    /// Sleep / Low-Power Mode stop the oscillator; RESET is ignored while
    /// it is stopped; waking from LPM is a power-on reset.
    pub sleep: bool,
    /// Injected TX MAB underflows / RX MAB overflows change the mode to
    /// Restricted Operation / Listen Only (kernel handle_serrif).
    pub mab_errors: bool,
}

impl Errata {
    /// Every behaviour on: the silicon.
    pub const ALL: Errata = Errata {
        tbc_read_crc: true,
        fifoci: true,
        no_cerrif_to_active: true,
        spi_clock_limit: true,
        ecc: true,
        sleep: true,
        mab_errors: true,
    };
    /// Every behaviour off: the ideal device.
    pub const NONE: Errata = Errata {
        tbc_read_crc: false,
        fifoci: false,
        no_cerrif_to_active: false,
        spi_clock_limit: false,
        ecc: false,
        sleep: false,
        mab_errors: false,
    };

    /// Names of those on, in field order: "tbc_read_crc", "fifoci",
    /// "no_cerrif_to_active", "spi_clock_limit", "ecc", "sleep", "mab_errors".
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.tbc_read_crc, "tbc_read_crc"),
            (self.fifoci, "fifoci"),
            (self.no_cerrif_to_active, "no_cerrif_to_active"),
            (self.spi_clock_limit, "spi_clock_limit"),
            (self.ecc, "ecc"),
            (self.sleep, "sleep"),
            (self.mab_errors, "mab_errors"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

impl Default for Errata {
    fn default() -> Self {
        Errata::ALL
    }
}

/// How many times each behaviour changed what the host saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrataHits {
    /// READ_CRC data bytes of C1TBC sent with bit 7 flipped.
    pub tbc_read_crc: u64,
    /// FIFOSTA reads whose FIFOCI was one too far.
    pub fifoci: u64,
    /// Returns to error-active that raised no CERRIF.
    pub cerrif_suppressed: u64,
    /// SPI accesses corrupted by an SCLK above the limit.
    pub spi_clock: u64,
    /// Single-bit ECC errors detected (and corrected) on RAM reads.
    pub ecc_sec: u64,
    /// Double-bit ECC errors detected on RAM reads.
    pub ecc_ded: u64,
    /// RESET instructions ignored in Sleep / Low-Power Mode.
    pub reset_ignored: u64,
    /// MAB errors that changed the mode (and lost or held back a frame).
    pub mab: u64,
}

impl ErrataHits {
    /// Each counter with its field's name, in field order.
    pub fn counts(&self) -> [(&'static str, u64); 8] {
        // Destructured whole: a counter added to the struct must be added here.
        let ErrataHits { tbc_read_crc, fifoci, cerrif_suppressed, spi_clock, ecc_sec, ecc_ded, reset_ignored, mab } =
            *self;
        [
            ("tbc_read_crc", tbc_read_crc),
            ("fifoci", fifoci),
            ("cerrif_suppressed", cerrif_suppressed),
            ("spi_clock", spi_clock),
            ("ecc_sec", ecc_sec),
            ("ecc_ded", ecc_ded),
            ("reset_ignored", reset_ignored),
            ("mab", mab),
        ]
    }

    /// Both counts added, counter by counter.
    pub fn plus(self, o: ErrataHits) -> ErrataHits {
        ErrataHits {
            tbc_read_crc: self.tbc_read_crc + o.tbc_read_crc,
            fifoci: self.fifoci + o.fifoci,
            cerrif_suppressed: self.cerrif_suppressed + o.cerrif_suppressed,
            spi_clock: self.spi_clock + o.spi_clock,
            ecc_sec: self.ecc_sec + o.ecc_sec,
            ecc_ded: self.ecc_ded + o.ecc_ded,
            reset_ignored: self.reset_ignored + o.reset_ignored,
            mab: self.mab + o.mab,
        }
    }
}

/// A RAM fault to inject: one or two flipped bits in a stored word, which
/// keeps its old ECC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EccFault {
    /// One bit flipped: ECC corrects it (SECIF).
    Single,
    /// Two bits flipped: ECC detects it (DEDIF).
    Double,
}

/// A message-assembly-buffer system error (C1INT.SERRIF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MabError {
    /// The TX MAB ran dry mid-frame: the frame is aborted and stays queued.
    TxUnderflow,
    /// The RX MAB overflowed: the next received frame is lost.
    RxOverflow,
}

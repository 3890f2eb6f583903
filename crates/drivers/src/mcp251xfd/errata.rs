//! [`Workarounds`]: one switch per silicon erratum (or chip behaviour) the
//! driver works around, so that each can be measured or tested alone. The
//! module documentation of [`mcp251xfd`](super) has the table: erratum,
//! the Linux driver's equivalent, switch and counter.

/// Which errata workarounds run. [`Default`] is [`Workarounds::ALL`]; a
/// test or a benchmark turns one off to see what it protects against.
/// Each one counts in [`Stats`](super::Stats) when it fires, and
/// [`Stats::errata_recovered`](super::Stats::errata_recovered) is their sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workarounds {
    /// Init wakes the chip (OSC with OSCDIS clear) and requests
    /// configuration mode before the RESET instruction, which a sleeping
    /// chip ignores. Counter: [`Stats::sleep_wakes`](super::Stats::sleep_wakes).
    pub wake_before_reset: bool,
    /// Init enables the message-RAM ECC (ECCCON = ECCEN | SECIE | DEDIE)
    /// and zeroes the whole RAM, so that no read of never-written RAM raises
    /// a double-bit error; ECCIF is handled. Counter:
    /// [`Stats::ecc_corrected`](super::Stats::ecc_corrected).
    pub ecc_init: bool,
    /// A READ_CRC of C1TBC whose CRC fails while byte 0 & 0xF8 is 0x00 or
    /// 0x80 is checked again with bit 7 of byte 0 flipped; a match is the
    /// value. Counter: [`Stats::tbc_crc_fixed`](super::Stats::tbc_crc_fixed).
    pub tbc_crc: bool,
    /// RX objects past the last valid one by timestamp (FIFOCI read one
    /// too large) are stale: not delivered, not acknowledged. Counter:
    /// [`Stats::rx_stale`](super::Stats::rx_stale).
    pub rx_index: bool,
    /// TEF objects whose SEQ is not the oldest frame in flight (the TX
    /// FIFO's FIFOCI read one too large) are stale: not counted as
    /// completions, not acknowledged. Counter: [`Stats::tef_stale`](super::Stats::tef_stale).
    pub tef_seq: bool,
    /// While not error active, every service pass reads C1TREC (the chip
    /// raises no CERRIF on warning → active). Counter:
    /// [`Stats::trec_active_polled`](super::Stats::trec_active_polled).
    pub trec_poll: bool,
    /// IVMIF is decoded from C1BDIAG1 into [`BusErrorCounters`](super::BusErrorCounters)
    /// and BDIAG1 is cleared. Counter: [`Stats::ivmif_decoded`](super::Stats::ivmif_decoded).
    pub ivmif_bdiag: bool,
    /// With [`Config::crc`](super::Config::crc), one-byte writes use
    /// WRITE_SAFE (the chip writes only a byte whose CRC matches) and a
    /// rejected write is recovered (missing UINC / TXREQ re-issued).
    /// Counter: [`Stats::write_safe_recovered`](super::Stats::write_safe_recovered).
    pub write_safe: bool,
    /// SERRIF + MODIF (TX MAB underflow / RX MAB overflow dropped the chip
    /// to Restricted or Listen-Only mode): the configured mode is requested
    /// again so the aborted frame goes out. Counter:
    /// [`Stats::mab_errors`](super::Stats::mab_errors).
    pub mab_recovery: bool,
    /// Every transfer is clocked at most 0.85 × SYSCLK / 2, whatever the
    /// SPI device is configured for. Counter:
    /// [`Stats::spi_clock_clamped`](super::Stats::spi_clock_clamped).
    pub spi_clock: bool,
}

impl Workarounds {
    /// Every workaround on (the default).
    pub const ALL: Workarounds = Workarounds {
        wake_before_reset: true,
        ecc_init: true,
        tbc_crc: true,
        rx_index: true,
        tef_seq: true,
        trec_poll: true,
        ivmif_bdiag: true,
        write_safe: true,
        mab_recovery: true,
        spi_clock: true,
    };

    /// Every workaround off: the driver trusts the silicon.
    pub const NONE: Workarounds = Workarounds {
        wake_before_reset: false,
        ecc_init: false,
        tbc_crc: false,
        rx_index: false,
        tef_seq: false,
        trec_poll: false,
        ivmif_bdiag: false,
        write_safe: false,
        mab_recovery: false,
        spi_clock: false,
    };
}

impl Default for Workarounds {
    fn default() -> Self {
        Workarounds::ALL
    }
}

/// The chip variant, told apart by OSC.LPMEN (the MCP2517FD has no low-power
/// mode, the bit reads 0), as the Linux driver does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// MCP2517FD (no OSC.LPMEN).
    Mcp2517fd,
    /// MCP2518FD (OSC.LPMEN writable).
    Mcp2518fd,
}

/// The largest SPI clock for a SYSCLK of `sysclk_hz`: 85 % of SYSCLK / 2
/// (the datasheet's limit is SYSCLK / 2; the Linux driver keeps 15 % off).
pub fn spi_clock_limit(sysclk_hz: u32) -> u32 {
    (u64::from(sysclk_hz) * 85 / 200) as u32
}

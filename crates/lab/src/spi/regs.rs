//! Register map of the lab SPI controller ("WSPI"), the block's datasheet.
//!
//! All registers are 32 bits wide at the offsets below. Reading a write-only
//! register returns 0; writing a read-only one is ignored.
//!
//! Programming model, as for a typical SoC SPI master (e.g. i.MX ECSPI):
//! 1. Power: `PWR.ON` = 1, then wait for `STATUS.READY` (power-up takes time).
//! 2. Configure `CTRL` (mode, bits per word) and `CLKDIV` (SCLK = `BASECLK` / `CLKDIV`).
//! 3. Write `XFERLEN` words and push TX words into `TXDATA` (the FIFO may be
//!    filled before the burst starts). Select a chip with `CS`.
//! 4. Write `START`. The shifter clocks each TX word out as soon as it is in
//!    the FIFO and the RX FIFO has room; if the TX FIFO runs dry, SCLK pauses.
//! 5. Pop RX words from `RXDATA` as `STATUS.RXLVL` shows them; `STATUS.DONE`
//!    (and `IRQSTAT.DONE`) rise when the last word of the burst has shifted.
//!
//! # DMA
//! The block's DMA engine moves a burst's words between memory and the
//! shifter with no CPU work. Its addresses are device addresses: IOVAs when an
//! IOMMU is attached ([`SpiController::attach_iommu`](super::SpiController::attach_iommu))
//! and not in passthrough, host addresses otherwise.
//! 1. Load a descriptor with [`SpiController::load_dma_descriptor`](super::SpiController::load_dma_descriptor)
//!    (unsafe: it points the engine at memory). It writes `DMATX_*`/`DMARX_*`
//!    and sets `DMACTRL.TXEN`/`RXEN`. Writes to those address registers
//!    through [`SpiController::write`](super::SpiController::write) are
//!    ignored, and a write to `DMACTRL` can only clear its bits: no plain
//!    register write can point the engine at memory.
//! 2. Write `XFERLEN`, `CTRL`, `CLKDIV`, `CS` as for any burst, then `START`.
//!    With `TXEN` or `RXEN` set, the burst is a DMA burst and takes the
//!    descriptor (`DMACTRL` reads 0 from then on: one descriptor, one burst).
//!    The FIFOs are not used (they keep what they hold): word k is read from
//!    TX memory (zeros without `TXEN`) and its RX word written to RX memory
//!    (discarded without `RXEN`). With no CPU refilling, words shift back to
//!    back: word k starts at the burst's start + k × the word time, plus the
//!    IOTLB walks the engine met so far. A word takes 1 byte of memory up to
//!    8 bits, 2 bytes (native endian) up to 16, else 4; both addresses must
//!    be multiples of that size, and neither range may pass the end of the
//!    address space, or `START` is refused (`ERR`).
//! 3. The engine translates each page once per direction, as the burst
//!    reaches it. A fault stops the burst before the first word of that page:
//!    the words before it completed, `BUSY` clears, `ERR` and `DMAFAULT` are
//!    set, `DMAFAULT_LO/HI` hold the faulting device address, `IRQ_ERR`
//!    rises; `DONE` does not. A stale IOTLB hit (see [`crate::iommu`]) lets the
//!    burst go on, reading zeros and dropping writes for that page.
//! 4. `DONE`/`IRQ_DONE` rise as for a FIFO burst. `RESET` aborts the burst
//!    (words shifted before it reached memory), clears `ERR`, `DMAFAULT` and `DMACTRL`.
//!
//! Memory is read and written as the model works out the burst, which it
//! does when software reads the block or an interrupt check runs; the
//! memory must stay valid until software has seen the burst end (a `STATUS`
//! or `IRQSTAT` read showing `BUSY` clear, or the interrupt), or has written `RESET`.

/// Control: `EN` bit 0, `CPHA` bit 1, `CPOL` bit 2, bits per word − 1 in bits 8..=12.
pub const CTRL: u32 = 0x00;
/// SCLK divider: SCLK = BASECLK / CLKDIV. Values below 2 act as 2.
pub const CLKDIV: u32 = 0x04;
/// Native chip select: line index in bits 0..=3, `CS_ASSERT` (bit 8) drives it active.
/// Asserting a line the block does not have is refused (`ERR`; the register keeps its value).
pub const CS: u32 = 0x08;
/// Length of the next burst, in words (1..=0xFF_FFFF).
pub const XFERLEN: u32 = 0x0C;
/// Write `START_GO` to start a burst of `XFERLEN` words.
pub const START: u32 = 0x10;
/// Status (read only): `BUSY`, `DONE`, `READY`, `ERR` and the FIFO levels.
pub const STATUS: u32 = 0x14;
/// TX FIFO push (write only). A push into a full FIFO is dropped and sets `ERR`.
pub const TXDATA: u32 = 0x18;
/// RX FIFO pop (read only). Popping an empty FIFO returns 0 and sets `ERR`.
pub const RXDATA: u32 = 0x1C;
/// Interrupt enable: `IRQ_DONE`, `IRQ_RXTH`, `IRQ_ERR`.
pub const IRQEN: u32 = 0x20;
/// Interrupt status: `IRQ_DONE` is sticky (write 1 to clear); `IRQ_RXTH` is a
/// level (RX level ≥ `RXTHR`); `IRQ_ERR` is a level (`STATUS.ERR`).
pub const IRQSTAT: u32 = 0x24;
/// RX FIFO threshold for `IRQ_RXTH`, in words.
pub const RXTHR: u32 = 0x28;
/// Power: bit 0 `PWR_ON`. After power-up, `STATUS.READY` rises after the
/// block's power-up time; until then `START` is refused (`ERR`).
pub const PWR: u32 = 0x2C;
/// Identification (read only): [`ID_VALUE`].
pub const ID: u32 = 0x30;
/// FIFO depth in bytes (read only).
pub const FIFOSIZE: u32 = 0x34;
/// Input clock in Hz (read only).
pub const BASECLK: u32 = 0x38;
/// Writing 1 clears `ERR` and empties both FIFOs, aborting a burst.
pub const RESET: u32 = 0x3C;
/// DMA control: `DMACTRL_TXEN`, `DMACTRL_RXEN`. Set only by a descriptor
/// ([`SpiController::load_dma_descriptor`](super::SpiController::load_dma_descriptor));
/// a register write can only clear bits (`0` turns DMA off). Cleared by a
/// `START` that takes the descriptor, and by `RESET`.
pub const DMACTRL: u32 = 0x40;
/// DMA TX address, low 32 bits (read only: loaded by a descriptor).
pub const DMATX_LO: u32 = 0x44;
/// DMA TX address, high 32 bits (read only: loaded by a descriptor).
pub const DMATX_HI: u32 = 0x48;
/// DMA RX address, low 32 bits (read only: loaded by a descriptor).
pub const DMARX_LO: u32 = 0x4C;
/// DMA RX address, high 32 bits (read only: loaded by a descriptor).
pub const DMARX_HI: u32 = 0x50;
/// Device address of the last DMA fault, low 32 bits (read only).
pub const DMAFAULT_LO: u32 = 0x54;
/// Device address of the last DMA fault, high 32 bits (read only).
pub const DMAFAULT_HI: u32 = 0x58;

/// `ID` value: "WSPI".
pub const ID_VALUE: u32 = 0x5753_5049;

/// `CTRL` bits.
pub const CTRL_EN: u32 = 1 << 0;
/// `CTRL`: clock phase.
pub const CTRL_CPHA: u32 = 1 << 1;
/// `CTRL`: clock polarity.
pub const CTRL_CPOL: u32 = 1 << 2;
/// `CTRL`: shift of the bits-per-word − 1 field (5 bits).
pub const CTRL_BPW_SHIFT: u32 = 8;
/// `CTRL`: mask of the bits-per-word − 1 field (after shifting).
pub const CTRL_BPW_MASK: u32 = 0x1F;

/// `CS`: mask of the line index.
pub const CS_LINE_MASK: u32 = 0xF;
/// `CS`: drive the selected line active.
pub const CS_ASSERT: u32 = 1 << 8;

/// `START` value that starts a burst.
pub const START_GO: u32 = 1;

/// `STATUS`: a burst is shifting.
pub const STATUS_BUSY: u32 = 1 << 0;
/// `STATUS`: the last burst completed (cleared by `START`).
pub const STATUS_DONE: u32 = 1 << 1;
/// `STATUS`: powered and ready.
pub const STATUS_READY: u32 = 1 << 2;
/// `STATUS`: a FIFO over/underflow, a refused `START`, a refused `CS` or a
/// DMA fault happened (cleared by `RESET`).
pub const STATUS_ERR: u32 = 1 << 3;
/// `STATUS`: a DMA burst stopped on a fault (cleared by `RESET`).
pub const STATUS_DMAFAULT: u32 = 1 << 4;
/// `STATUS`: shift of the TX level (8 bits, in words; saturates at 255).
pub const STATUS_TXLVL_SHIFT: u32 = 8;
/// `STATUS`: shift of the RX level (8 bits, in words; saturates at 255).
pub const STATUS_RXLVL_SHIFT: u32 = 16;

/// `IRQEN`/`IRQSTAT`: burst done.
pub const IRQ_DONE: u32 = 1 << 0;
/// `IRQEN`/`IRQSTAT`: RX level reached `RXTHR`.
pub const IRQ_RXTH: u32 = 1 << 1;
/// `IRQEN`/`IRQSTAT`: `STATUS.ERR` is set (a level; `RESET` clears it).
pub const IRQ_ERR: u32 = 1 << 2;

/// `DMACTRL`: TX words are read from memory.
pub const DMACTRL_TXEN: u32 = 1 << 0;
/// `DMACTRL`: RX words are written to memory.
pub const DMACTRL_RXEN: u32 = 1 << 1;

/// `PWR`: power on.
pub const PWR_ON: u32 = 1 << 0;

/// TX level from a `STATUS` value.
pub const fn tx_level(status: u32) -> u32 {
    (status >> STATUS_TXLVL_SHIFT) & 0xFF
}

/// RX level from a `STATUS` value.
pub const fn rx_level(status: u32) -> u32 {
    (status >> STATUS_RXLVL_SHIFT) & 0xFF
}

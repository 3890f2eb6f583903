//! [`Transfer`]: one segment of a message, with the kernel's `spi_transfer` knobs.

/// SPI clock mode (CPOL, CPHA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// CPOL 0, CPHA 0.
    #[default]
    Mode0,
    /// CPOL 0, CPHA 1.
    Mode1,
    /// CPOL 1, CPHA 0.
    Mode2,
    /// CPOL 1, CPHA 1.
    Mode3,
}

impl Mode {
    /// (CPOL, CPHA).
    pub fn bits(self) -> (bool, bool) {
        match self {
            Mode::Mode0 => (false, false),
            Mode::Mode1 => (false, true),
            Mode::Mode2 => (true, false),
            Mode::Mode3 => (true, true),
        }
    }
}

/// The per-transfer knobs' builder methods, shared by [`Transfer`] and
/// [`OwnedTransfer`](super::OwnedTransfer), which have the same option fields.
macro_rules! transfer_options_builder {
    () => {
        /// Overrides the clock.
        #[must_use]
        pub fn speed_hz(mut self, hz: u32) -> Self {
            self.speed_hz = hz;
            self
        }
        /// Overrides bits per word.
        #[must_use]
        pub fn bits_per_word(mut self, bits: u8) -> Self {
            self.bits_per_word = bits;
            self
        }
        /// Waits after the transfer.
        #[must_use]
        pub fn delay_after_ns(mut self, ns: u32) -> Self {
            self.delay_after_ns = ns;
            self
        }
        /// Sets `cs_change` and its delay (see [`Transfer::cs_change`](crate::spi::Transfer)
        /// and [`Transfer::cs_change_delay_ns`](crate::spi::Transfer): `None`
        /// leaves the delay to the policy, `Some(0)` asks for none).
        #[must_use]
        pub fn cs_change(mut self, delay_ns: Option<u32>) -> Self {
            self.cs_change = true;
            self.cs_change_delay_ns = delay_ns;
            self
        }
        /// Pauses between words.
        #[must_use]
        pub fn word_delay_ns(mut self, ns: u32) -> Self {
            self.word_delay_ns = ns;
            self
        }
        /// Shifts TX and RX on this many data lines (1, 2 or 4; 0 = 1); more
        /// than one needs the device's dual/quad [`ModeFlags`](crate::spi::ModeFlags).
        #[must_use]
        pub fn nbits(mut self, tx: u8, rx: u8) -> Self {
            self.tx_nbits = tx;
            self.rx_nbits = rx;
            self
        }
    };
}
pub(crate) use transfer_options_builder;

/// The data of a transfer.
#[derive(Debug)]
pub enum Data<'a> {
    /// Send these bytes, ignore what comes back.
    Write(&'a [u8]),
    /// Send zeros, keep what comes back.
    Read(&'a mut [u8]),
    /// Send `tx`, receive into `rx` (equal lengths).
    Duplex(&'a [u8], &'a mut [u8]),
    /// Send the buffer's bytes and replace them with what comes back.
    InPlace(&'a mut [u8]),
}

impl Data<'_> {
    /// Length in bytes (the TX length for a mismatched duplex; validation catches that).
    pub fn len(&self) -> usize {
        match self {
            Data::Write(b) => b.len(),
            Data::Read(b) | Data::InPlace(b) => b.len(),
            Data::Duplex(t, _) => t.len(),
        }
    }
    /// Whether no bytes move.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes sent (`None` for a read, which sends zeros).
    pub fn tx(&self) -> Option<&[u8]> {
        match self {
            Data::Write(b) | Data::Duplex(b, _) => Some(b),
            Data::InPlace(b) => Some(b),
            Data::Read(_) => None,
        }
    }
    /// Where the bytes received go (`None` for a write, which drops them).
    pub fn rx_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Data::Read(b) | Data::InPlace(b) | Data::Duplex(_, b) => Some(b),
            Data::Write(_) => None,
        }
    }
}

/// One transfer of a message: a buffer and how to clock it.
///
/// ```
/// use wirespeed::spi::Transfer;
/// let cmd = [0x03, 0x10];
/// let mut reply = [0u8; 4];
/// let msg = [Transfer::write(&cmd), Transfer::read(&mut reply).speed_hz(10_000_000)];
/// assert_eq!(msg.len(), 2);
/// ```
#[derive(Debug)]
pub struct Transfer<'a> {
    /// The bytes that move.
    pub data: Data<'a>,
    /// Clock for this transfer; 0 = the device's speed.
    pub speed_hz: u32,
    /// Bits per word for this transfer; 0 = the device's setting.
    pub bits_per_word: u8,
    /// Wait after this transfer, before CS changes or the next transfer starts (ns).
    pub delay_after_ns: u32,
    /// Kernel `cs_change`: inside a message, deassert CS after this transfer
    /// and assert it again before the next; on the last transfer, leave CS
    /// asserted after the message.
    pub cs_change: bool,
    /// How long CS stays inactive for a `cs_change` inside a message (ns).
    /// `None`: no delay given — the device's `cs_inactive_ns` under `fast`;
    /// the kernel presets wait the kernel's default of 10 µs, as Linux does
    /// for a zeroed `cs_change_delay` (unit µs, value 0: what spidev
    /// passes). `Some(0)`: no delay beyond `cs_inactive_ns` under every
    /// policy, as Linux for `cs_change_delay = { 0, SPI_DELAY_UNIT_NSECS }`
    /// (its "fast mode", which the mcp251xfd driver asks for).
    pub cs_change_delay_ns: Option<u32>,
    /// Pause between words (ns); 0 = back to back.
    pub word_delay_ns: u32,
    /// Data lines for TX: 0 or 1 single, 2 dual, 4 quad.
    pub tx_nbits: u8,
    /// Data lines for RX: 0 or 1 single, 2 dual, 4 quad.
    pub rx_nbits: u8,
}

impl<'a> Transfer<'a> {
    fn new(data: Data<'a>) -> Transfer<'a> {
        Transfer {
            data,
            speed_hz: 0,
            bits_per_word: 0,
            delay_after_ns: 0,
            cs_change: false,
            cs_change_delay_ns: None,
            word_delay_ns: 0,
            tx_nbits: 0,
            rx_nbits: 0,
        }
    }
    /// A write-only transfer.
    pub fn write(tx: &'a [u8]) -> Transfer<'a> {
        Transfer::new(Data::Write(tx))
    }
    /// A read-only transfer (zeros are sent).
    pub fn read(rx: &'a mut [u8]) -> Transfer<'a> {
        Transfer::new(Data::Read(rx))
    }
    /// A full-duplex transfer.
    pub fn duplex(tx: &'a [u8], rx: &'a mut [u8]) -> Transfer<'a> {
        Transfer::new(Data::Duplex(tx, rx))
    }
    /// A full-duplex transfer in one buffer.
    pub fn in_place(buf: &'a mut [u8]) -> Transfer<'a> {
        Transfer::new(Data::InPlace(buf))
    }
    transfer_options_builder!();
}

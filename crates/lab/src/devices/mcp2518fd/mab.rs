//! Message-assembly-buffer system errors ([`Errata::mab_errors`]), injected
//! from the backdoor ([`Mcp2518fd::inject_mab_error`]).
//!
//! Errata sheet (MCP2517FD DS80000792 item 1, which the kernel applies to
//! both chips; kernel mcp251xfd-core.c `mcp251xfd_handle_serrif` and
//! `mcp251xfd_handle_modif`): "during a TX MAB underflow, the controller
//! will transition to Restricted Operation Mode or Listen Only Mode
//! (depending on SERR2LOM) ... After the application requests Normal mode,
//! the controller will automatically attempt to retransmit the message".
//! The kernel also sees IVMIF with it (the aborted frame is a bus error),
//! and RXOVIF on the FIFO an RX MAB overflow was receiving into.
//!
//! - **TX underflow**: the next message the device would start (the lab's
//!   bus settles a frame's fate when arbitration starts, so a frame
//!   already on the wire is not cut short) is aborted and stays queued: no
//!   completion, no TEF entry. SERRIF and IVMIF are set and the controller
//!   changes to Restricted Operation (C1CON.SERR2LOM = 0) or Listen Only
//!   (SERR2LOM = 1), setting MODIF: it sends nothing until the host
//!   requests a normal mode again, then the message goes out.
//! - **RX overflow**: the next frame received is lost (not stored; RXOVIF
//!   on the FIFO a filter routed it to), SERRIF and IVMIF are set, with the
//!   same mode change.
//!
//! With the switch off the injection only sets SERRIF.
//!
//! [`Errata::mab_errors`]: super::Errata::mab_errors
//! [`Mcp2518fd::inject_mab_error`]: super::Mcp2518fd::inject_mab_error

use super::core::Core;
use super::errata::MabError;
use super::regs::*;
use super::Mode;
use crate::can::Frame;
use wirespeed_time::Instant;

impl Core {
    pub(super) fn inject_mab_error(&mut self, kind: MabError, _at: Instant) {
        if !self.errata.mab_errors {
            self.int_flags |= INT_SERRIF;
            return;
        }
        match kind {
            MabError::TxUnderflow => self.mab_tx = true,
            MabError::RxOverflow => self.mab_rx = true,
        }
    }

    /// The system error happened at `at`: flags and the mode change.
    fn mab_error(&mut self, at: Instant) {
        self.hits.mab += 1;
        self.int_flags |= INT_SERRIF | INT_IVMIF;
        let to = if self.con & CON_SERR2LOM != 0 { Mode::ListenOnly } else { Mode::Restricted };
        self.drop_mode_requests();
        self.enter_mode(to, at);
    }

    /// The device is about to start a message at `at`: an armed TX MAB
    /// underflow aborts it. Returns whether it did.
    pub(super) fn mab_tx_aborts(&mut self, at: Instant) -> bool {
        if !self.mab_tx || !self.errata.mab_errors {
            return false;
        }
        self.mab_tx = false;
        self.mab_error(at);
        true
    }

    /// A frame is being received at `at`: an armed RX MAB overflow loses
    /// it. Returns whether it did.
    pub(super) fn mab_rx_loses(&mut self, frame: &Frame, at: Instant) -> bool {
        if !self.mab_rx || !self.errata.mab_errors {
            return false;
        }
        self.mab_rx = false;
        if let Some((_, m)) = self.filter_match(frame) {
            if m != 0 && !self.fifos[m].is_tx() {
                self.fifos[m].sta |= FIFOSTA_RXOVIF;
                self.stats.rx_overflows += 1;
            }
        }
        self.mab_error(at);
        true
    }
}

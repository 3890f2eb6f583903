//! How a `wirespeed` command fails: [`CliError::Usage`] for bad input (an
//! invalid value, an unknown chip, a range beyond the chip, a node that is
//! not there: exit code 2, as clap's own parse errors) or
//! [`CliError::Runtime`] for what went wrong while running (a device I/O
//! error, a failed verify: exit code 1).

use crate::flash_error::FlashError;
use crate::list_cmd::ListError;
use crate::spi_cmd::SpiCmdError;
use std::fmt;
use wirespeed::spi::{BackendError, SpiError};
use wirespeed_bench::shim::ShimError;

/// Why a command failed, and so its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The input was wrong: the message says what and what is allowed. Exit code 2.
    Usage(String),
    /// The command failed while running. Exit code 1.
    Runtime(String),
}

impl CliError {
    /// Exit code for bad input: the same as clap's for a parse error.
    pub const USAGE_EXIT: u8 = 2;
    /// Exit code for a failure while running.
    pub const RUNTIME_EXIT: u8 = 1;

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => Self::USAGE_EXIT,
            CliError::Runtime(_) => Self::RUNTIME_EXIT,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// A plain message is a runtime failure (the commands' errors before
/// [`CliError`] existed); bad input says so with [`CliError::Usage`].
impl From<String> for CliError {
    fn from(m: String) -> CliError {
        CliError::Runtime(m)
    }
}

impl From<SpiCmdError> for CliError {
    fn from(e: SpiCmdError) -> CliError {
        let usage = match &e {
            SpiCmdError::Segment(_)
            | SpiCmdError::CsChangeWithoutSlash { .. }
            | SpiCmdError::NoNode(_)
            | SpiCmdError::Device { .. } => true,
            SpiCmdError::Open(_) => false,
            // The message is built from the arguments: a message or mode the
            // device refuses is bad input; anything else failed on the wire.
            SpiCmdError::Transfer { error, .. } => matches!(
                error,
                SpiError::Invalid(_)
                    | SpiError::Backend(
                        BackendError::Refused { .. } | BackendError::ModeRefused { .. } | BackendError::TooLarge { .. }
                    )
            ),
        };
        if usage {
            CliError::Usage(e.to_string())
        } else {
            CliError::Runtime(e.to_string())
        }
    }
}

impl From<FlashError> for CliError {
    fn from(e: FlashError) -> CliError {
        let usage = matches!(
            e,
            FlashError::NoTarget
                | FlashError::UnknownChip { .. }
                | FlashError::NoNode(_)
                | FlashError::NoFile { .. }
                | FlashError::SizeMismatch { .. }
                | FlashError::OutOfRange { .. }
                | FlashError::Unaligned { .. }
                | FlashError::NothingToErase
        );
        if usage {
            CliError::Usage(e.to_string())
        } else {
            CliError::Runtime(e.to_string())
        }
    }
}

impl From<ShimError> for CliError {
    fn from(e: ShimError) -> CliError {
        match e {
            ShimError::Options(_) => CliError::Usage(e.to_string()),
            _ => CliError::Runtime(e.to_string()),
        }
    }
}

impl From<ListError> for CliError {
    fn from(e: ListError) -> CliError {
        match e {
            ListError::Root { .. } => CliError::Usage(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi_segments::SegmentError;
    use wirespeed::spi::InvalidMessage;

    #[test]
    fn bad_input_exits_2_and_failures_while_running_exit_1() {
        assert_eq!(CliError::from(SpiCmdError::Segment(SegmentError::NoTransfers)).exit_code(), 2);
        let refused = SpiCmdError::Transfer { dev: "d".into(), error: SpiError::Invalid(InvalidMessage::Empty) };
        assert_eq!(CliError::from(refused).exit_code(), 2);
        let timeout = SpiCmdError::Transfer { dev: "d".into(), error: SpiError::BusGone };
        assert_eq!(CliError::from(timeout).exit_code(), 1);
        assert_eq!(CliError::from(FlashError::NothingToErase).exit_code(), 2);
        let mismatch = FlashError::Mismatch { addr: 0, chip: 0, file: 1 };
        assert_eq!(CliError::from(mismatch).exit_code(), 1);
        assert_eq!(CliError::from("device gone".to_owned()), CliError::Runtime("device gone".into()));
    }
}

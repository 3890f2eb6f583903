//! The same 9-byte `SPI_IOC_MESSAGE(1)` as the clients, called in this
//! process on the node the shim would serve (the same board file, built by
//! [`Board::load`]) through [`NodeFile::ioctl`]: what the lab's spidev costs
//! without the shim's hooks, descriptor table and C library around it.

use super::error::ShimError;
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use wirespeed::linux::spidev::uapi::{self, spi_ioc_message, SpiIocTransfer};
use wirespeed_labhost::{Board, Errno, FdInstaller, NodeFile};

const LEN: usize = 9;
const WR_MODE: u64 = uapi::SPI_IOC_WR_MODE as u64;
const WR_MAX_SPEED_HZ: u64 = uapi::SPI_IOC_WR_MAX_SPEED_HZ as u64;

/// spidev creates no descriptors.
struct NoFds;

impl FdInstaller for NoFds {
    fn install(&self, _: Arc<dyn NodeFile>, _: bool) -> Result<i32, Errno> {
        Err(libc::EINVAL)
    }
}

/// An open file of `dev` on the board of `board_file`, mode 0 at `speed_hz`.
pub struct Session {
    // The board owns the lab: it must outlive the file.
    file: Arc<dyn NodeFile>,
    _board: Board,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Session(..)")
    }
}

fn ioctl<T>(file: &Arc<dyn NodeFile>, request: u64, arg: &mut T) -> Result<i32, Errno> {
    // SAFETY: `arg` is a live, writable T of the size the request names.
    unsafe { file.ioctl(request, (arg as *mut T).cast::<c_void>(), &NoFds) }
}

fn errno(what: &str, e: Errno) -> ShimError {
    ShimError::InProcess(format!("{what}: {}", std::io::Error::from_raw_os_error(e)))
}

impl Session {
    /// Loads the board and opens `dev` as the clients do.
    pub fn open(board_file: &Path, dev: &str, speed_hz: u32) -> Result<Session, ShimError> {
        let board = Board::load(board_file).map_err(|e| ShimError::InProcess(e.to_string()))?;
        let node = board
            .nodes()
            .iter()
            .find(|(p, _)| p == dev)
            .map(|(_, n)| Arc::clone(n))
            .ok_or_else(|| ShimError::InProcess(format!("the board serves no {dev}")))?;
        let file = node.open(libc::O_RDWR).map_err(|e| errno(dev, e))?;
        let mut mode = 0u8;
        ioctl(&file, WR_MODE, &mut mode).map_err(|e| errno("SPI_IOC_WR_MODE", e))?;
        let mut hz = speed_hz;
        ioctl(&file, WR_MAX_SPEED_HZ, &mut hz).map_err(|e| errno("SPI_IOC_WR_MAX_SPEED_HZ", e))?;
        Ok(Session { file, _board: board })
    }

    /// `warmup` untimed messages, then `rounds` rounds of `count`: ns per
    /// ioctl of each round; every message's echo is checked as the C client does.
    pub fn rounds(&self, rounds: usize, count: usize, warmup: usize, speed_hz: u32) -> Result<Vec<f64>, ShimError> {
        let mut tx: [u8; LEN] = [0x9f, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut rx = [0u8; LEN];
        let request = spi_ioc_message(1) as u64;
        let one = |tx: &mut [u8; LEN], rx: &mut [u8; LEN], first: u8| -> Result<bool, ShimError> {
            tx[0] = first;
            let mut x = [SpiIocTransfer {
                tx_buf: tx.as_ptr() as u64,
                rx_buf: rx.as_mut_ptr() as u64,
                len: LEN as u32,
                speed_hz,
                bits_per_word: 8,
                ..SpiIocTransfer::default()
            }];
            match ioctl(&self.file, request, &mut x) {
                Ok(n) if n == LEN as i32 => Ok(rx[0] == first),
                Ok(n) => Err(ShimError::InProcess(format!("SPI_IOC_MESSAGE(1) returned {n}, not {LEN}"))),
                Err(e) => Err(errno("SPI_IOC_MESSAGE(1)", e)),
            }
        };
        for i in 0..warmup {
            one(&mut tx, &mut rx, i as u8)?;
        }
        let mut out = Vec::with_capacity(rounds);
        for r in 0..rounds {
            let mut ok = true;
            let t0 = Instant::now();
            for i in 0..count {
                ok &= one(&mut tx, &mut rx, (i + r) as u8)?;
            }
            let ns = t0.elapsed().as_nanos() as f64 / count.max(1) as f64;
            if !ok || rx != tx {
                return Err(ShimError::InProcess(format!("the loopback did not echo what was sent (round {r})")));
            }
            out.push(ns);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shim::scratch::Scratch;

    #[test]
    fn rounds_on_the_benchmark_board_echo_and_take_time() {
        let dir = Scratch::new("shim-inprocess-test").unwrap();
        let board = dir.join("lab.toml");
        std::fs::write(&board, crate::shim::BOARD).unwrap();
        let s = Session::open(&board, crate::shim::DEVICE, 1_000_000).unwrap();
        let r = s.rounds(3, 50, 10, 1_000_000).unwrap();
        assert_eq!(r.len(), 3);
        assert!(r.iter().all(|&ns| ns > 0.0), "{r:?}");
        assert!(matches!(Session::open(&board, "/dev/spidev9.9", 1), Err(ShimError::InProcess(_))));
    }
}

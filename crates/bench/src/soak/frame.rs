//! The bytes a soak message carries, and the check of what came back.
//!
//! A frame is `[device, worker, seq (u32 LE), payload…, checksum (u32 LE)]`:
//! the payload is a pseudo-random function of (device, worker, seq), the
//! checksum is FNV-1a over everything before it. Loopback devices echo
//! MOSI into MISO, so a message's RX must equal its TX byte for byte and
//! carry a valid checksum; anything else is a corrupted message (or a read
//! of a device the fault injector made stuck, see [`super::faults`]).

/// Bytes before the payload: device, worker, sequence number.
pub const HEADER_BYTES: usize = 6;
/// Bytes of the trailing checksum.
pub const CHECKSUM_BYTES: usize = 4;
/// The shortest frame: header, one payload byte, checksum.
pub const MIN_FRAME_BYTES: usize = HEADER_BYTES + 1 + CHECKSUM_BYTES;
/// The longest frame (one lab FIFO).
pub const MAX_FRAME_BYTES: usize = 64;

/// FNV-1a, 32 bits.
pub fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// Writes the frame of (`device`, `worker`, `seq`) into all of `frame`
/// (whose length is between [`MIN_FRAME_BYTES`] and [`MAX_FRAME_BYTES`];
/// a shorter buffer is left as it is).
pub fn fill(frame: &mut [u8], device: u8, worker: u8, seq: u32) {
    let n = frame.len();
    if n < MIN_FRAME_BYTES {
        return;
    }
    frame[0] = device;
    frame[1] = worker;
    frame[2..HEADER_BYTES].copy_from_slice(&seq.to_le_bytes());
    let mut x = u64::from(seq) << 16 ^ u64::from(device) << 8 ^ u64::from(worker) ^ 0x9E37_79B9_7F4A_7C15;
    for b in &mut frame[HEADER_BYTES..n - CHECKSUM_BYTES] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    let sum = checksum(&frame[..n - CHECKSUM_BYTES]);
    frame[n - CHECKSUM_BYTES..].copy_from_slice(&sum.to_le_bytes());
}

/// Whether `rx` is the intact echo of `tx`: equal bytes and a valid checksum.
pub fn intact_echo(tx: &[u8], rx: &[u8]) -> bool {
    let n = rx.len();
    if n != tx.len() || n < MIN_FRAME_BYTES || rx != tx {
        return false;
    }
    let sum = checksum(&rx[..n - CHECKSUM_BYTES]);
    rx[n - CHECKSUM_BYTES..] == sum.to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequence number a frame carries, if it is long enough to carry one.
    fn seq_of(frame: &[u8]) -> Option<u32> {
        let b = frame.get(2..HEADER_BYTES)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[test]
    fn an_echo_is_intact_and_any_flipped_bit_is_not() {
        let mut tx = [0u8; 24];
        fill(&mut tx, 3, 5, 0xDEAD_BEEF);
        assert_eq!(seq_of(&tx), Some(0xDEAD_BEEF));
        assert!(intact_echo(&tx, &tx));
        for i in 0..tx.len() {
            let mut rx = tx;
            rx[i] ^= 0x10;
            assert!(!intact_echo(&tx, &rx), "a flip at byte {i} passed");
        }
        assert!(!intact_echo(&tx, &[0xFF; 24]), "a stuck-high MISO is not an echo");
        assert!(!intact_echo(&tx[..23], &tx[..23]), "a truncated frame fails its checksum");
    }

    #[test]
    fn frames_of_different_messages_differ() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        fill(&mut a, 0, 0, 1);
        fill(&mut b, 0, 0, 2);
        assert_ne!(a[HEADER_BYTES..], b[HEADER_BYTES..]);
    }
}

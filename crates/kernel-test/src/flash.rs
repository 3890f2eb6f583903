//! What `scripts/kernel-test` puts into the flash image and what the guest
//! writes to it. The script's image writer and checker (Python, in the
//! script) use the same formulas: change both together.

/// Address of the pattern the host writes and the guest reads back.
pub const READ_ADDR: u32 = 0x1000;
/// Length of that pattern.
pub const READ_LEN: usize = 256;
/// The 4 KiB sector the guest erases and programs (the host fills it with 0x3c).
pub const SECTOR: u32 = 0x1_0000;
/// Size of a sector erase (command 0x20).
pub const SECTOR_LEN: usize = 4096;
/// Bytes the guest programs at [`SECTOR`].
pub const PROGRAM_LEN: usize = 256;
/// SST25VF016B's JEDEC ID.
pub const JEDEC_ID: [u8; 3] = [0xbf, 0x25, 0x41];

/// Byte `i` of the host's pattern at [`READ_ADDR`].
pub fn read_pattern(i: usize) -> u8 {
    (i * 7 + 0x5a) as u8
}

/// Byte `i` of what the guest programs at [`SECTOR`].
pub fn program_pattern(i: usize) -> u8 {
    (i * 13 + 0x21) as u8
}

/// A command byte followed by a 24-bit address.
pub fn cmd_addr(cmd: u8, addr: u32) -> [u8; 4] {
    [cmd, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8]
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

//! Target `lab_regfile`: the register-file model against a shadow of its
//! protocol (command byte, address byte, data bytes with a wrapping
//! address; any word that is not 8 bits makes it ignore the access). Every
//! MISO byte must match the shadow, and the backdoor view at the end too.

use crate::support::{step, Step, Wire};
use arbitrary::Unstructured;
use wirespeed_lab::devices::{RegFile, REGFILE_READ, REGFILE_WRITE};
use wirespeed_lab::spi::SpiDeviceModel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Command,
    Address { write: bool },
    Data { write: bool, addr: usize },
    Ignore,
}

/// What the device must do, written from its protocol.
struct Shadow {
    regs: Vec<u8>,
    phase: Phase,
}

impl Shadow {
    fn exchange(&mut self, mosi: u32, bits: u8) -> u32 {
        if bits != 8 {
            self.phase = Phase::Ignore;
            return 0;
        }
        let byte = mosi as u8;
        match self.phase {
            Phase::Idle | Phase::Ignore => 0,
            Phase::Command => {
                self.phase = match byte {
                    REGFILE_READ => Phase::Address { write: false },
                    REGFILE_WRITE => Phase::Address { write: true },
                    _ => Phase::Ignore,
                };
                0
            }
            Phase::Address { write } => {
                self.phase = Phase::Data { write, addr: usize::from(byte) % self.regs.len() };
                0
            }
            Phase::Data { write, addr } => {
                self.phase = Phase::Data { write, addr: (addr + 1) % self.regs.len() };
                if write {
                    self.regs[addr] = byte;
                    0
                } else {
                    u32::from(self.regs[addr])
                }
            }
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(size) = u.int_in_range(0usize..=300) else { return };
    let mut dev = RegFile::new(size);
    let mut shadow = Shadow { regs: vec![0; size.clamp(1, 256)], phase: Phase::Idle };
    let mut wire = Wire::new();
    // Mostly bytes, some other sizes.
    let bits = [8, 8, 8, 8, 8, 8, 1, 7, 9, 16, 32];
    while let Ok(s) = step(&mut u, &bits) {
        match s {
            Step::Cs(on) if on != wire.selected => shadow.phase = if on { Phase::Command } else { Phase::Idle },
            _ => {}
        }
        if let (Step::Word { mosi, bits }, Some(miso)) = (s, wire.apply(&mut dev, s)) {
            let expected = shadow.exchange(mosi & crate::support::mask(bits), bits);
            assert_eq!(miso, expected, "MISO of word {mosi:#x} ({bits} bits)");
        }
    }
    // Read the whole file back through the bus face.
    let n = shadow.regs.len();
    let mut tx = vec![REGFILE_READ, 0];
    tx.resize(2 + n, 0);
    let rx = wire.access(&mut dev as &mut dyn SpiDeviceModel, &tx);
    assert_eq!(&rx[2..], &shadow.regs[..], "register file contents");
}

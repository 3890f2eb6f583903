//! Target `lab_spi_controller`: the lab's WSPI block through its register
//! interface, as a controller driver (or a program poking it) reaches it:
//! any block configuration (refused with a typed error or built), then any
//! sequence of register reads and writes with any values — control word
//! and word size, clock divider, chip select (including lines the block
//! lacks), transfer length, start, FIFO pushes and pops, interrupt enables
//! and acknowledges, RX threshold, power, reset, unknown offsets — with a
//! loopback and a register file attached.
//!
//! The DMA registers are read but never written: a DMA descriptor holds
//! host addresses the engine dereferences (the lab's physical address
//! space is the process's), so arbitrary ones would fault by design.
//!
//! Properties: nothing panics; the identification registers read their
//! values; the TX FIFO level never exceeds the FIFO's depth in words.

use crate::support::lab;
use arbitrary::{Result, Unstructured};
use wirespeed_lab::devices::{Loopback, RegFile};
use wirespeed_lab::spi::{regs, SpiControllerConfig};

const REGS: [u32; 16] = [
    regs::CTRL,
    regs::CLKDIV,
    regs::CS,
    regs::XFERLEN,
    regs::START,
    regs::STATUS,
    regs::TXDATA,
    regs::RXDATA,
    regs::IRQEN,
    regs::IRQSTAT,
    regs::RXTHR,
    regs::PWR,
    regs::ID,
    regs::FIFOSIZE,
    regs::BASECLK,
    regs::RESET,
];

fn is_dma(reg: u32) -> bool {
    (regs::DMACTRL..=regs::DMAFAULT_HI).contains(&reg)
}

fn config(u: &mut Unstructured<'_>) -> Result<SpiControllerConfig> {
    Ok(SpiControllerConfig {
        name: "fuzz",
        fifo_bytes: crate::support::pick(u, &[1, 2, 4, 8, 64, 4096, 0, 1 << 16, (1 << 16) + 1])?,
        num_cs: u.int_in_range(0u8..=6)?,
        base_clock_hz: crate::support::pick(u, &[200_000_000, 1, 2, u64::from(u32::MAX), 0, 1 << 40])?,
        power_up_ns: u.int_in_range(0u64..=2_000)?,
    })
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(cfg) = config(&mut u) else { return };
    let block = match lab().try_spi_controller(cfg.clone()) {
        Ok(block) => block,
        Err(e) => {
            assert!(cfg.validate().is_err(), "refused a valid configuration: {e}");
            return;
        }
    };
    if cfg.num_cs > 0 {
        block.attach(0, Loopback::new());
    }
    if cfg.num_cs > 1 {
        block.attach(1, RegFile::new(16));
    }
    while !u.is_empty() {
        let Ok(write) = u.arbitrary::<bool>() else { break };
        let reg = if u.ratio(1u8, 16).unwrap_or(false) {
            u.arbitrary::<u32>().unwrap_or(0) & 0xFC
        } else {
            *u.choose(&REGS).unwrap_or(&regs::STATUS)
        };
        if write && !is_dma(reg) {
            let v = crate::support::pick(&mut u, &[0, 1, 3, 0x100, 0x101, 0x107, 0x0705, 0x1F01, 7, 64, u32::MAX])
                .unwrap_or(0);
            block.write(reg, v);
        } else {
            let v = block.read(reg);
            match reg {
                regs::ID => assert_eq!(v, regs::ID_VALUE),
                regs::FIFOSIZE => assert_eq!(v, cfg.fifo_bytes),
                regs::BASECLK => assert_eq!(u64::from(v), cfg.base_clock_hz),
                regs::STATUS => assert!(regs::tx_level(v) <= cfg.fifo_bytes, "TX level {v:#x} of {}", cfg.fifo_bytes),
                _ => {}
            }
        }
    }
    // Leave the block idle for the next input's block on the same lab.
    block.write(regs::RESET, 1);
    block.write(regs::PWR, 0);
}

//! The lab SPI controller telling its devices their SCLK
//! ([`SpiDeviceModel::sclk_hz`]) and the model acting on it: the SPI
//! clock limit ([`Errata::spi_clock_limit`]) seen through a real block.

use super::regs::*;
use super::*;
use crate::spi::regs::{CLKDIV, CS, CS_ASSERT, CTRL, CTRL_BPW_SHIFT, CTRL_EN, RXDATA, START, START_GO, STATUS};
use crate::spi::regs::{STATUS_DONE, TXDATA, XFERLEN};
use crate::spi::{SpiController, SpiControllerConfig};
use crate::{Lab, LabConfig};
use std::time::Duration;

/// Records what the controller tells it.
struct Listener(Arc<Mutex<Vec<u64>>>);

impl SpiDeviceModel for Listener {
    fn chip_select(&mut self, _asserted: bool, _at: Instant) {}
    fn exchange(&mut self, _mosi: u32, _bits: u8, _at: Instant) -> u32 {
        0
    }
    fn sclk_hz(&mut self, hz: u64) {
        self.0.lock().unwrap().push(hz);
    }
}

fn block(lab: &Lab) -> SpiController {
    let b = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, ..SpiControllerConfig::default() });
    b.write(CTRL, CTRL_EN | (7 << CTRL_BPW_SHIFT));
    b
}

/// Shifts `bytes` (8-bit words) in one burst; returns MISO.
fn burst(b: &SpiController, bytes: &[u8]) -> Vec<u8> {
    b.write(XFERLEN, bytes.len() as u32);
    for &x in bytes {
        b.write(TXDATA, u32::from(x));
    }
    b.write(START, START_GO);
    let limit = now().add_ns(5_000_000_000);
    while b.read(STATUS) & STATUS_DONE == 0 {
        assert!(now() < limit, "burst never ended");
        std::thread::sleep(Duration::from_micros(20));
    }
    bytes.iter().map(|_| b.read(RXDATA) as u8).collect()
}

#[test]
fn the_controller_tells_a_device_its_sclk_when_it_changes_at_a_burst_start() {
    let lab = Lab::new(LabConfig::default());
    let b = block(&lab);
    let native = Arc::new(Mutex::new(Vec::new()));
    let external = Arc::new(Mutex::new(Vec::new()));
    b.attach(1, Listener(native.clone()));
    let cs = b.attach_external_cs(Listener(external.clone()));
    let base = b.config().base_clock_hz;
    b.write(CS, CS_ASSERT | 1);
    b.write(CLKDIV, 4);
    burst(&b, &[1, 2]);
    burst(&b, &[3]);
    assert_eq!(*native.lock().unwrap(), vec![base / 4], "told once: the clock did not change");
    b.write(CLKDIV, 8);
    burst(&b, &[4]);
    assert_eq!(*native.lock().unwrap(), vec![base / 4, base / 8]);
    assert!(external.lock().unwrap().is_empty(), "not selected, not told");
    // The external device is told when a burst starts while it is selected.
    b.write(CS, 0);
    cs.drive(false, now());
    burst(&b, &[5]);
    burst(&b, &[6]);
    assert_eq!(*external.lock().unwrap(), vec![base / 8]);
    assert_eq!(native.lock().unwrap().len(), 2);
}

#[test]
fn an_mcp2518fd_behind_a_block_clocked_too_fast_answers_garbage() {
    let lab = Lab::new(LabConfig::default());
    let b = block(&lab);
    let dev = Mcp2518fd::new(&lab, Mcp2518fdConfig { osc_startup_ns: 0, ..Mcp2518fdConfig::default() });
    b.attach(0, dev.clone());
    let base = b.config().base_clock_hz;
    let read_devid = |b: &SpiController| {
        b.write(CS, CS_ASSERT);
        let r = burst(b, &[0x30 | (DEVID >> 8) as u8, DEVID as u8, 0, 0, 0, 0]);
        b.write(CS, 0);
        u32::from_le_bytes([r[2], r[3], r[4], r[5]])
    };
    // 40 MHz SYSCLK: at most 17 MHz.
    let fast = 2;
    let slow = u32::try_from(base.div_ceil(17_000_000)).unwrap();
    b.write(CLKDIV, fast);
    assert_ne!(read_devid(&b), DEVID_MCP2518FD);
    assert_eq!(dev.errata_hits().spi_clock, 1);
    b.write(CLKDIV, slow);
    assert_eq!(read_devid(&b), DEVID_MCP2518FD);
    dev.set_errata(Errata { spi_clock_limit: false, ..Errata::ALL });
    b.write(CLKDIV, fast);
    assert_eq!(read_devid(&b), DEVID_MCP2518FD);
}

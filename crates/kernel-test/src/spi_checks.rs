//! SPI checks against the SST25VF016B that QEMU's sabrelite board puts on
//! ECSPI1 (QEMU's m25p80 model, backed by the host's image file), all through
//! wirespeed's SPI API on the Linux spidev backend: `Spidev` →
//! `Bus::with_message_backend` → `SpiDevice` (`sync`, `prepare` + `run`,
//! `submit` + `wait`).
//!
//! Flash commands used (SST25VF016B data sheet; QEMU's m25p80 accepts the same):
//! 9f RDID, 03 READ, 05 RDSR, 06 WREN, 04 WRDI, 01 WRSR, 20 4 KiB sector
//! erase, ad AAI word program (the part's 02 programs one byte only; QEMU's
//! model also takes a multi-byte 02, the real chip would not).

use crate::flash::*;
use serde_json::{json, Map, Value};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Instant;
use wirespeed::linux::spidev::{Spidev, SpidevCounters};
use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy, PreparedMessage, SpiDevice, Transfer};

/// The flash's spidev node (ECSPI1 = spi0 in this kernel, chip select 0).
pub const NODE: &str = "/dev/spidev0.0";
/// SPI clock.
pub const HZ: u32 = 1_000_000;

fn err<E: Display>(what: &'static str) -> impl FnOnce(E) -> String {
    move |e| format!("{what}: {e}")
}

/// Runs every SPI check and adds its keys to `out`; failures are listed in `errors`.
pub fn run(out: &mut Map<String, Value>, errors: &mut Vec<String>) {
    for k in ["multi_transfer_read_ok", "cs_change_drops_cs", "sector_roundtrip_ok", "prepared_same", "async_same"] {
        out.insert(k.into(), json!(false));
    }
    out.insert("rdid".into(), json!(""));
    out.insert("ioctls_per_message".into(), json!(0));
    let sp = match Spidev::open(NODE) {
        Ok(sp) => sp,
        Err(e) => {
            errors.push(format!("spi: Spidev::open({NODE}): {e}"));
            return;
        }
    };
    let counters = sp.counters();
    let t = Instant::now();
    let bus = Bus::with_message_backend(sp, Policy::fast());
    out.insert("bus_start_ms".into(), json!(t.elapsed().as_millis() as u64));
    let dev = match bus.device(DeviceConfig::new(0, HZ)) {
        Ok(d) => d,
        Err(e) => {
            errors.push(format!("spi: bus.device: {e}"));
            return;
        }
    };
    let t = Instant::now();
    if let Err(e) = checks(&dev, &counters, out) {
        errors.push(format!("spi: {e}"));
    }
    out.insert("spi_checks_ms".into(), json!(t.elapsed().as_millis() as u64));
    out.insert(
        "spidev_counters".into(),
        json!({"ioctls": counters.ioctls(), "messages": counters.messages(), "mode_writes": counters.mode_writes()}),
    );
}

fn checks(dev: &SpiDevice, counters: &Arc<SpidevCounters>, out: &mut Map<String, Value>) -> Result<(), String> {
    // RDID: command and read in one CS window, one message.
    let mut id = [0u8; 3];
    let (i0, m0) = (counters.ioctls(), counters.messages());
    dev.sync(&mut [Transfer::write(&[0x9f]), Transfer::read(&mut id)]).map_err(err("RDID"))?;
    out.insert("rdid".into(), json!(hex(&id)));
    out.insert("ioctls_per_message".into(), json!(counters.ioctls() - i0));
    out.insert("messages_counted".into(), json!(counters.messages() - m0));

    // The same with cs_change after the command: the flash sees CS drop and
    // the read, in a new CS window with no command, gets no ID.
    let mut id2 = [0u8; 3];
    let i0 = counters.ioctls();
    dev.sync(&mut [Transfer::write(&[0x9f]).cs_change(None), Transfer::read(&mut id2)])
        .map_err(err("RDID with cs_change"))?;
    out.insert("rdid_with_cs_change".into(), json!(hex(&id2)));
    out.insert("ioctls_cs_change_message".into(), json!(counters.ioctls() - i0));
    out.insert("cs_change_drops_cs".into(), json!(id == JEDEC_ID && id2 != JEDEC_ID));

    // READ 03 + address, then 256 bytes, in one CS window: the host's pattern.
    let want: Vec<u8> = (0..READ_LEN).map(read_pattern).collect();
    let mut buf = vec![0u8; READ_LEN];
    dev.sync(&mut [Transfer::write(&cmd_addr(0x03, READ_ADDR)), Transfer::read(&mut buf)]).map_err(err("READ"))?;
    out.insert("multi_transfer_read_ok".into(), json!(buf == want));

    // The same read prepared once, run; then pointed at erased flash and run
    // again (its RX really is rewritten); then back, and submitted to the pump.
    let mut read = dev
        .prepare(vec![OwnedTransfer::write(cmd_addr(0x03, READ_ADDR).to_vec()), OwnedTransfer::read(READ_LEN)])
        .map_err(err("prepare READ"))?;
    let i0 = counters.ioctls();
    dev.run(&mut read).map_err(err("run prepared READ"))?;
    let prepared_ioctls = counters.ioctls() - i0;
    out.insert("prepared_same".into(), json!(read.rx(1) == Some(&buf[..]) && prepared_ioctls == 1));
    set_addr(&mut read, 0x2000)?;
    dev.run(&mut read).map_err(err("run prepared READ at 0x2000"))?;
    let retarget_ff = read.rx(1).is_some_and(|r| r.iter().all(|&b| b == 0xff));
    set_addr(&mut read, READ_ADDR)?;
    let i0 = counters.ioctls();
    let (read, result) = dev.submit(read).wait();
    result.map_err(err("submitted READ"))?;
    let async_ioctls = counters.ioctls() - i0;
    out.insert("async_same".into(), json!(retarget_ff && read.rx(1) == Some(&buf[..]) && async_ioctls == 1));
    out.insert(
        "prepared".into(),
        json!({"run_ioctls": prepared_ioctls, "retarget_reads_erased": retarget_ff, "submit_ioctls": async_ioctls}),
    );

    sector_roundtrip(dev, out)?;
    latency(dev, out)?;
    Ok(())
}

/// Points a prepared READ's command at `addr`.
fn set_addr(msg: &mut PreparedMessage, addr: u32) -> Result<(), String> {
    let tx = msg.tx_mut(0).ok_or("prepared READ has no command transfer")?;
    tx.copy_from_slice(&cmd_addr(0x03, addr));
    Ok(())
}

/// A flash with a prepared RDSR for polling.
struct Flash<'d> {
    dev: &'d SpiDevice,
    rdsr: PreparedMessage,
}

impl Flash<'_> {
    fn cmd(&self, bytes: &[u8]) -> Result<(), String> {
        self.dev.sync(&mut [Transfer::write(bytes)]).map_err(|e| format!("command {:02x}: {e}", bytes[0]))
    }
    fn status(&mut self) -> Result<u8, String> {
        self.dev.run(&mut self.rdsr).map_err(err("RDSR"))?;
        Ok(self.rdsr.rx(1).map_or(0xff, |r| r[0]))
    }
    /// Polls RDSR until WIP (bit 0) clears; returns the polls it took.
    fn wait_idle(&mut self) -> Result<u32, String> {
        for n in 1..=100_000 {
            if self.status()? & 1 == 0 {
                return Ok(n);
            }
        }
        Err("WIP still set after 100000 RDSR polls".into())
    }
    fn read(&self, addr: u32, len: usize) -> Result<Vec<u8>, String> {
        let mut v = vec![0u8; len];
        self.dev.sync(&mut [Transfer::write(&cmd_addr(0x03, addr)), Transfer::read(&mut v)]).map_err(err("READ"))?;
        Ok(v)
    }
    /// Whether `len` bytes from `addr` read as erased (0xff), in reads that fit spidev's buffer.
    fn erased(&self, addr: u32, len: usize) -> Result<bool, String> {
        let mut ok = true;
        for off in (0..len).step_by(2048) {
            ok &= self.read(addr + off as u32, (len - off).min(2048))?.iter().all(|&b| b == 0xff);
        }
        Ok(ok)
    }
}

/// Unprotect, erase the sector, AAI-program it, read it back.
fn sector_roundtrip(dev: &SpiDevice, out: &mut Map<String, Value>) -> Result<(), String> {
    let rdsr =
        dev.prepare(vec![OwnedTransfer::write(vec![0x05]), OwnedTransfer::read(1)]).map_err(err("prepare RDSR"))?;
    let mut f = Flash { dev, rdsr };
    // The real chip powers up with its block-protection bits set: WREN, WRSR 00.
    let sr_power_up = f.status()?;
    f.cmd(&[0x06])?;
    f.cmd(&[0x01, 0x00])?;
    f.wait_idle()?;
    let sr = f.status()?;
    if sr & 0x3c != 0 {
        return Err(format!("block protection still set after WRSR 00: SR={sr:#04x}"));
    }
    f.cmd(&[0x06])?;
    f.cmd(&cmd_addr(0x20, SECTOR))?;
    let erase_polls = f.wait_idle()?;
    let erased = f.erased(SECTOR, SECTOR_LEN)?;

    // AAI word program: WREN, ad + address + 2 bytes, then ad + 2 bytes per
    // word (polling WIP after each), WRDI to leave AAI mode.
    let data: Vec<u8> = (0..PROGRAM_LEN).map(program_pattern).collect();
    f.cmd(&[0x06])?;
    let mut program_polls = 0;
    for (i, w) in data.chunks(2).enumerate() {
        if i == 0 {
            let a = cmd_addr(0xad, SECTOR);
            f.cmd(&[a[0], a[1], a[2], a[3], w[0], w[1]])?;
        } else {
            f.cmd(&[0xad, w[0], w[1]])?;
        }
        program_polls += f.wait_idle()?;
    }
    f.cmd(&[0x04])?;
    let sr_after = f.status()?;
    let back = f.read(SECTOR, PROGRAM_LEN)?;
    let rest_erased = f.erased(SECTOR + PROGRAM_LEN as u32, SECTOR_LEN - PROGRAM_LEN)?;
    out.insert(
        "sector".into(),
        json!({"addr": SECTOR, "sr_power_up": sr_power_up, "erase_polls": erase_polls, "erased_ff": erased,
               "program": "aai-word-ad", "program_polls": program_polls, "sr_after_wrdi": sr_after,
               "readback_equal": back == data, "rest_ff": rest_erased}),
    );
    // WIP, WEL and AAI all clear after WRDI.
    out.insert("sector_roundtrip_ok".into(), json!(erased && back == data && rest_erased && sr_after & 0x43 == 0));
    Ok(())
}

/// Median wall time of a 2-transfer RDSR under emulation: sync, prepared.
fn latency(dev: &SpiDevice, out: &mut Map<String, Value>) -> Result<(), String> {
    const N: usize = 200;
    let mut sr = [0u8; 1];
    let mut sync_ns = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        dev.sync(&mut [Transfer::write(&[0x05]), Transfer::read(&mut sr)]).map_err(err("RDSR"))?;
        sync_ns.push(t.elapsed().as_nanos() as u64);
    }
    let mut rdsr =
        dev.prepare(vec![OwnedTransfer::write(vec![0x05]), OwnedTransfer::read(1)]).map_err(err("prepare"))?;
    let mut run_ns = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        dev.run(&mut rdsr).map_err(err("run RDSR"))?;
        run_ns.push(t.elapsed().as_nanos() as u64);
    }
    let median_us = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1000.0
    };
    out.insert("rdsr_us_median".into(), json!({"sync": median_us(&mut sync_ns), "prepared": median_us(&mut run_ns)}));
    Ok(())
}

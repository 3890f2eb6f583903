//! A GPIO chip select on the real kernel: the spidev backend with
//! `SPI_NO_CS`, a gpio-mxc line (gpiochip2 line 31, free on this board)
//! driven around each ioctl. QEMU wires the flash to ECSPI1's native select,
//! not to this line, so what the flash answers says nothing here; what is
//! checked is the kernel's side: the controller takes `SPI_NO_CS` (read back
//! from the node), a message runs, a `cs_change` inside it becomes two ioctls
//! (the kernel cannot toggle a line it does not own), and the line is
//! inactive afterwards. Runs last: it leaves the node in `SPI_NO_CS`.

use crate::spi_checks::{HZ, NODE};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use wirespeed::gpio::{CsPolarity, GpioCs};
use wirespeed::linux::gpio_cdev;
use wirespeed::linux::spidev::Spidev;
use wirespeed::spi::{Bus, DeviceConfig, ModeFlags, Policy, Transfer};

/// The free line used as chip select.
const CHIP: &str = "/dev/gpiochip2";
const LINE: u32 = 31;

/// Runs the check; adds `gpio_cs` (details) and `gpio_cs_ok`.
pub fn run(out: &mut Map<String, Value>, errors: &mut Vec<String>) {
    let r = check();
    let ok = r.as_ref().is_ok_and(|v| v["ok"] == json!(true));
    match r {
        Ok(v) => {
            out.insert("gpio_cs".into(), v);
        }
        Err(e) => errors.push(format!("gpio chip select: {e}")),
    }
    out.insert("gpio_cs_ok".into(), json!(ok));
}

fn check() -> Result<Value, String> {
    let chip = gpio_cdev::open(CHIP).map_err(|e| e.to_string())?;
    let cs = Arc::new(GpioCs::request(&chip, LINE, "wirespeed-cs", CsPolarity::ActiveLow).map_err(|e| e.to_string())?);
    let sp = Spidev::open(NODE).map_err(|e| e.to_string())?;
    let counters = sp.counters();
    let bus = Bus::with_message_backend(sp, Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, HZ).gpio_cs(cs.clone())).map_err(|e| e.to_string())?;
    let mut id = [0u8; 3];
    let first = dev.sync(&mut [Transfer::write(&[0x9f]), Transfer::read(&mut id)]);
    let i0 = counters.ioctls();
    let second = dev.sync(&mut [Transfer::write(&[0x9f]).cs_change(None), Transfer::read(&mut id)]);
    let ioctls_cs_change = counters.ioctls() - i0;
    let inactive_after = !cs.is_active().map_err(|e| e.to_string())?;
    drop(dev);
    drop(bus);
    // The node's mode as the kernel now has it.
    let mode = Spidev::open(NODE).map_err(|e| e.to_string())?.mode32().unwrap_or(0);
    let no_cs = ModeFlags::from_bits_truncate(mode).contains(ModeFlags::NO_CS);
    let ok = first.is_ok() && second.is_ok() && ioctls_cs_change == 2 && inactive_after && no_cs;
    Ok(json!({
        "ok": ok,
        "line": format!("{CHIP}:{LINE}"),
        "message": first.err().map_or("ok".into(), |e| e.to_string()),
        "cs_change_message": second.err().map_or("ok".into(), |e| e.to_string()),
        "ioctls_cs_change_message": ioctls_cs_change,
        "line_inactive_after": inactive_after,
        "node_mode": format!("{mode:#x}"),
        "mode_writes": counters.mode_writes(),
    }))
}

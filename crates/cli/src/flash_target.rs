//! `wirespeed flash`'s target: `--lab CHIP[:IMAGE]` or `--dev /dev/spidevB.C`,
//! opened and probed; what the probe found.

use crate::flash_error::{driver, FlashError};
use crate::flash_ops::human;
use serde_json::{json, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use wirespeed::backend::lab::LabSpi;
use wirespeed::linux::spidev::{Spidev, SpidevError};
use wirespeed::spi::{Bus, DeviceConfig, Policy};
use wirespeed_drivers::spi_nor::SpiNor;
use wirespeed_lab::devices::spi_nor::{ChipSpec, CHIPS};
use wirespeed_lab::devices::SpiNor as NorModel;
use wirespeed_lab::{Lab, LabConfig};

/// What `--lab`/`--dev` named.
#[derive(Debug)]
pub enum Target {
    /// A lab chip, optionally backed by an image file.
    Lab { spec: &'static ChipSpec, image: Option<PathBuf>, hz: u32 },
    /// A spidev node.
    Dev { path: PathBuf, hz: u32 },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Lab { spec, image: Some(p), .. } => write!(f, "lab {}:{}", spec.name, p.display()),
            Target::Lab { spec, image: None, .. } => write!(f, "lab {}", spec.name),
            Target::Dev { path, .. } => write!(f, "{}", path.display()),
        }
    }
}

/// The target from the options.
pub fn target_of(lab: Option<&str>, dev: Option<&Path>, hz: Option<u32>) -> Result<Target, FlashError> {
    match (lab, dev) {
        (Some(l), _) => {
            let (name, image) = match l.split_once(':') {
                Some((n, i)) => (n, Some(PathBuf::from(i))),
                None => (l, None),
            };
            let spec = ChipSpec::by_name(name).ok_or_else(|| FlashError::UnknownChip {
                name: name.to_owned(),
                known: CHIPS.iter().map(|c| c.name).collect(),
            })?;
            Ok(Target::Lab { spec, image, hz: hz.unwrap_or(50_000_000) })
        }
        (None, Some(d)) => Ok(Target::Dev { path: d.to_owned(), hz: hz.unwrap_or(10_000_000) }),
        (None, None) => Err(FlashError::NoTarget),
    }
}

/// Opens `target` and probes the chip on it.
pub fn open_probe(target: &Target) -> Result<(SpiNor, Option<Lab>), FlashError> {
    let (bus, lab, hz) = match target {
        Target::Lab { spec, image, hz } => {
            let chip = match image {
                Some(p) => NorModel::with_image(spec, p).map_err(|e| FlashError::Open(e.to_string()))?,
                None => NorModel::new(spec),
            };
            let lab = Lab::try_new(LabConfig::default()).map_err(|e| FlashError::Open(e.to_string()))?;
            let block = lab.spi_controller(Default::default());
            block.attach(0, chip);
            let bus = Bus::try_new(LabSpi::new(block), Policy::fast()).map_err(|e| FlashError::Open(e.to_string()))?;
            (bus, Some(lab), *hz)
        }
        Target::Dev { path, hz } => {
            let sp = Spidev::open(path).map_err(|e| {
                let text = format!("{e} (--lab w25q128jv tries the command on an emulated chip)");
                match e {
                    SpidevError::NotFound { .. } | SpidevError::NotSpidev { .. } => FlashError::NoNode(text),
                    _ => FlashError::Open(text),
                }
            })?;
            let bus = Bus::try_with_message_backend(sp, Policy::fast()).map_err(|e| FlashError::Open(e.to_string()))?;
            (bus, None, *hz)
        }
    };
    let dev = bus
        .device(DeviceConfig::new(0, hz))
        .map_err(|e| FlashError::Open(format!("{target}: the device settings are refused: {e}")))?;
    let nor = SpiNor::probe(dev).map_err(|error| FlashError::Probe { target: target.to_string(), error })?;
    Ok((nor, lab))
}

/// The probe's findings as JSON.
pub fn probe_info(nor: &mut SpiNor) -> Result<Value, FlashError> {
    let p = nor.protection().map_err(driver("status read"))?;
    let g = nor.geometry();
    let id = nor.jedec_id();
    Ok(json!({
        "chip": nor.name(),
        "jedec_id": format!("{:02x}{:02x}{:02x}", id[0], id[1], id[2]),
        "size_bytes": g.size,
        "erase_sizes": g.erase.iter().map(|e| e.size).collect::<Vec<_>>(),
        "page_size": g.page_size,
        "address_bytes": g.address_bytes,
        "sfdp_revision": g.sfdp_revision.map(|(a, b)| format!("{a}.{b}")),
        "protection": {
            "sr1": p.sr1,
            "bp": p.bp,
            "protected": p.any(),
            "range": [p.range.0, p.range.1],
        },
    }))
}

/// The probe's findings as text.
pub fn probe_text(nor: &SpiNor, p: &Value) -> String {
    let g = nor.geometry();
    let sizes: Vec<String> = g.erase.iter().map(|e| human(f64::from(e.size))).collect();
    let prot = &p["protection"];
    let protection = if prot["protected"].as_bool() == Some(true) {
        format!(
            "{:#x}..{:#x} protected (BP = {}, status register 1 = {:#04x}); write/erase --unprotect clears it",
            prot["range"][0].as_u64().unwrap_or(0),
            prot["range"][1].as_u64().unwrap_or(0),
            prot["bp"],
            prot["sr1"].as_u64().unwrap_or(0)
        )
    } else {
        format!("none (status register 1 = {:#04x})", prot["sr1"].as_u64().unwrap_or(0))
    };
    format!(
        "chip:          {}\njedec id:      {}\nsize:          {} ({} bytes)\nerase sizes:   {}\npage size:     {} \
         bytes\naddress bytes: {}\nsfdp:          {}\nprotection:    {}\n",
        nor.name(),
        p["jedec_id"].as_str().unwrap_or(""),
        human(f64::from(g.size)),
        g.size,
        sizes.join(", "),
        g.page_size,
        g.address_bytes,
        g.sfdp_revision.map_or("none".to_owned(), |(a, b)| format!("revision {a}.{b}")),
        protection
    )
}

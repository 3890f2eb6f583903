//! Where the `spi` scenario sends its messages: the lab's SPI block driven
//! by the stack's controller driver (the default), a Linux spidev node
//! (`--dev /dev/spidevB.C`), or `lab-spidev`, the spidev backend on an
//! emulated spidev node of a lab block (the spidev path with no kernel SPI;
//! what CI runs). Each rig opens the target afresh, with its own bus.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use wirespeed::backend::lab::{LabIommu, LabSpi, LabSpidevIo};
use wirespeed::dma::{DmaDomain, DomainConfig, IommuHw, IommuMode};
use wirespeed::linux::spidev::{Limits, Spidev, SpidevCounters};
use wirespeed::spi::{Bus, Policy};
use wirespeed_lab::devices::Loopback;
use wirespeed_lab::iommu::IommuConfig;
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::{Lab, LabConfig};

/// The emulated node's default clock (its device tree's `spi-max-frequency`).
const NODE_DEFAULT_HZ: u32 = 50_000_000;

/// The name `--dev` takes for the emulated spidev node.
pub const LAB_SPIDEV: &str = "lab-spidev";

/// Where the messages go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A lab block with a loopback on CS 0, driven by the stack itself; its
    /// DMA engine (for transfers longer than the FIFO) behind the lab IOMMU
    /// in this mode (`--iommu`; strict by default, as Linux's default domain).
    Lab(IommuMode),
    /// The spidev backend on an emulated node of a lab block with a loopback.
    LabSpidev,
    /// A Linux spidev node.
    Node(PathBuf),
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Target, String> {
        match s {
            "" => Err(format!("an empty device: give /dev/spidevB.C, or {LAB_SPIDEV} for an emulated node")),
            "lab" => Ok(Target::Lab(DEFAULT_IOMMU)),
            LAB_SPIDEV => Ok(Target::LabSpidev),
            path => Ok(Target::Node(PathBuf::from(path))),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Lab(_) => write!(f, "lab"),
            Target::LabSpidev => write!(f, "{LAB_SPIDEV}"),
            Target::Node(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Default for Target {
    fn default() -> Target {
        Target::Lab(DEFAULT_IOMMU)
    }
}

/// The lab block's IOMMU mode unless `--iommu` says otherwise.
pub const DEFAULT_IOMMU: IommuMode = IommuMode::Strict;

/// `--iommu`'s names of the IOMMU modes.
pub const IOMMU_MODES: [(&str, IommuMode); 4] = [
    ("none", IommuMode::None),
    ("identity", IommuMode::Identity),
    ("strict", IommuMode::Strict),
    ("lazy", IommuMode::Lazy),
];

/// An IOMMU mode by its `--iommu` name.
pub fn parse_iommu(s: &str) -> Result<IommuMode, String> {
    IOMMU_MODES
        .iter()
        .find(|(n, _)| *n == s)
        .map(|&(_, m)| m)
        .ok_or_else(|| format!("IOMMU mode {s:?}: allowed none, identity, strict (the default) or lazy"))
}

/// The `--iommu` name of a mode.
pub fn iommu_name(mode: IommuMode) -> &'static str {
    IOMMU_MODES.iter().find(|(_, m)| *m == mode).map_or("?", |(n, _)| n)
}

/// A lab block's driver with its DMA engine behind a lab IOMMU in `mode`.
fn lab_driver(lab: &Lab, block: &SpiController, mode: IommuMode) -> Result<LabSpi, String> {
    if mode == IommuMode::None {
        return Ok(LabSpi::new(block.clone()));
    }
    let iommu = lab.iommu(IommuConfig::default()).map_err(|e| e.to_string())?;
    block.attach_iommu(&iommu);
    let hw: Arc<dyn IommuHw> = Arc::new(LabIommu::new(iommu));
    let domain = DmaDomain::new(Some(hw), DomainConfig::with_mode(mode)).map_err(|e| e.to_string())?;
    Ok(LabSpi::with_dma(block.clone(), Arc::new(domain)))
}

impl Target {
    /// Whether a bus trace (and an instant wire) can be had: only on the lab's own block.
    pub fn is_lab_block(&self) -> bool {
        matches!(self, Target::Lab(_))
    }
}

/// An opened target: the bus the scenario runs `policy` on, and what keeps it alive.
#[derive(Debug)]
pub struct Opened {
    pub bus: Bus,
    /// The lab block, where the messages end on one (for bus traces).
    pub block: Option<SpiController>,
    pub lab: Option<Lab>,
    /// The spidev backend's counters (ioctls, messages), where the bus runs on one.
    pub counters: Option<Arc<SpidevCounters>>,
}

/// Opens `target` for a bus run with `policy`; `instant_wire` only on the lab.
pub fn open(target: &Target, policy: Policy, instant_wire: bool) -> Result<Opened, String> {
    let lab_block = |instant_wire| -> Result<(Lab, SpiController), String> {
        let lab = Lab::try_new(LabConfig { instant_wire, ..LabConfig::default() }).map_err(|e| e.to_string())?;
        let block = lab.spi_controller(Default::default());
        block.attach(0, Loopback::new());
        Ok((lab, block))
    };
    match target {
        Target::Lab(iommu) => {
            let (lab, block) = lab_block(instant_wire)?;
            let bus = Bus::try_new(lab_driver(&lab, &block, *iommu)?, policy).map_err(|e| e.to_string())?;
            Ok(Opened { bus, block: Some(block), lab: Some(lab), counters: None })
        }
        Target::LabSpidev => {
            let (lab, block) = lab_block(false)?;
            // The emulated kernel runs the lab block as fast as it can, whatever the policy above.
            let kernel = Bus::try_new(LabSpi::new(block.clone()), Policy::fast()).map_err(|e| e.to_string())?;
            let limits = Limits::with_bufsiz(Limits::DEFAULT_BUFSIZ);
            let node = LabSpidevIo::new(kernel, 0, NODE_DEFAULT_HZ, limits);
            let sp = Spidev::with_io(node, LAB_SPIDEV, limits).map_err(|e| e.to_string())?;
            let counters = Some(sp.counters());
            let bus = Bus::try_with_message_backend(sp, policy).map_err(|e| e.to_string())?;
            Ok(Opened { bus, block: Some(block), lab: Some(lab), counters })
        }
        Target::Node(path) => {
            let sp = Spidev::open(path).map_err(|e| e.to_string())?;
            let counters = Some(sp.counters());
            let bus = Bus::try_with_message_backend(sp, policy).map_err(|e| e.to_string())?;
            Ok(Opened { bus, block: None, lab: None, counters })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_names_the_lab_the_emulated_node_or_a_path() {
        assert_eq!("lab".parse::<Target>(), Ok(Target::Lab(IommuMode::Strict)));
        assert_eq!(parse_iommu("lazy"), Ok(IommuMode::Lazy));
        assert!(parse_iommu("loose").unwrap_err().contains("strict"));
        assert_eq!(LAB_SPIDEV.parse::<Target>(), Ok(Target::LabSpidev));
        assert_eq!("/dev/spidev0.1".parse::<Target>(), Ok(Target::Node("/dev/spidev0.1".into())));
        assert!("".parse::<Target>().unwrap_err().contains("/dev/spidevB.C"));
        let missing = open(&"/dev/spidev-none.0".parse().unwrap(), Policy::fast(), false).unwrap_err();
        assert!(missing.contains("wirespeed list"), "{missing}");
    }
}

//! [`Board`]: the lab a board file describes (see [`crate::config`]),
//! built, with its served nodes and sysfs files, and what must live as long
//! as they do (the lab, its blocks, device models, toggling lines).
//!
//! [`Board::finish`], at the program's exit, writes the SPI bus traces
//! asked for with [`BoardOptions::trace`] and syncs the flash images.

use crate::config::{self, GpioParts, SpiParts};
use crate::node::Node;
use crate::sysfs::Sysfs;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wirespeed_lab::gpio::GpioChip;
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::trace::vcd::write_vcd;
use wirespeed_lab::{Lab, LabConfig};

pub use crate::config::{BoardError, LabDevice};

/// How to build a board beyond what its file says.
#[derive(Clone, Debug, Default)]
pub struct BoardOptions {
    /// Record every SPI block's bus trace from the start and write it as VCD
    /// to this file at [`Board::finish`]: the first `[[spi]]` to this path,
    /// each later one (a trace does not say which block it came from) to a
    /// sibling named for its bus (`trace.vcd` → `trace.spi1.vcd`).
    pub trace: Option<PathBuf>,
}

/// A built board.
#[derive(Debug)]
pub struct Board {
    nodes: Vec<(String, Arc<dyn Node>)>,
    sysfs: Sysfs,
    spi: Vec<SpiParts>,
    gpio: Vec<GpioParts>,
    trace: Option<PathBuf>,
    lab: Lab,
}

impl Board {
    /// Reads, checks and builds the board file at `path`; images are
    /// relative to the working directory.
    pub fn load(path: &Path) -> Result<Board, BoardError> {
        Board::load_with(path, BoardOptions::default())
    }

    /// [`Board::load`] with `options`.
    pub fn load_with(path: &Path, options: BoardOptions) -> Result<Board, BoardError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| BoardError {
            file: name.clone(),
            line: None,
            message: format!("cannot read the board file: {e}"),
        })?;
        Board::from_str_with(&text, &name, Path::new(""), &options)
    }

    /// Checks and builds the board file `text`, named `name` in errors;
    /// relative image paths are taken from `base_dir`.
    pub fn from_str(text: &str, name: &str, base_dir: &Path) -> Result<Board, BoardError> {
        Board::from_str_with(text, name, base_dir, &BoardOptions::default())
    }

    /// [`Board::from_str`] with `options`.
    pub fn from_str_with(text: &str, name: &str, base_dir: &Path, options: &BoardOptions) -> Result<Board, BoardError> {
        let spec = config::parse(text, name)?;
        let src = config::Source { name, text };
        let lab = Lab::try_new(LabConfig { instant_wire: spec.instant_wire, ..LabConfig::default() })
            .map_err(|e| BoardError { file: name.to_owned(), line: None, message: e.to_string() })?;
        let mut nodes = Vec::new();
        let mut minor = 0;
        let trace = options.trace.is_some();
        let spi = spec
            .spi
            .iter()
            .map(|s| config::build_spi(&lab, s, &src, base_dir, trace, &mut minor, &mut nodes))
            .collect::<Result<Vec<_>, _>>()?;
        let gpio = spec
            .gpio
            .iter()
            .map(|g| config::build_gpio(&lab, g, &src, &spi, &mut nodes))
            .collect::<Result<Vec<_>, _>>()?;
        let bufsiz = spi.first().map_or(config::limits::DEFAULT_BUFSIZ, |s| s.bufsiz);
        let sysfs = Sysfs::for_nodes(&nodes, bufsiz);
        Ok(Board { nodes, sysfs, spi, gpio, trace: options.trace.clone(), lab })
    }

    /// The served nodes: (`/dev/…` path, node).
    pub fn nodes(&self) -> &[(String, Arc<dyn Node>)] {
        &self.nodes
    }

    /// The sysfs files describing the nodes.
    pub fn sysfs(&self) -> &Sysfs {
        &self.sysfs
    }

    /// The lab every block is on.
    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// The device model on chip select `cs` of bus `bus` (its backdoor).
    pub fn device(&self, bus: u32, cs: u8) -> Option<&LabDevice> {
        let parts = self.spi.iter().find(|s| s.bus_no == bus)?;
        parts.devices.iter().find(|(c, _)| *c == cs).map(|(_, d)| d)
    }

    /// The lab GPIO chip served as `/dev/gpiochip{index}`.
    pub fn gpio_chip(&self, index: u32) -> Option<&GpioChip> {
        self.gpio.iter().find(|g| g.index == index).map(|g| &g.chip)
    }

    /// At the program's exit: writes the traces if asked for, syncs flash
    /// images. Every step is tried; the first error is returned.
    pub fn finish(&self) -> io::Result<()> {
        let mut result = Ok(());
        if let Some(path) = &self.trace {
            for (i, parts) in self.spi.iter().enumerate() {
                let file = if i == 0 { path.clone() } else { sibling(path, parts.bus_no) };
                result = result.and(write_trace(&parts.block, &file));
            }
        }
        for parts in &self.spi {
            for (_, device) in &parts.devices {
                if let LabDevice::SpiNor(nor) = device {
                    let flushed =
                        nor.flush().map_err(|e| in_context(e, &format!("flash image of {}", nor.spec().name)));
                    result = result.and(flushed);
                }
            }
        }
        result
    }
}

/// `trace.vcd` → `trace.spi<bus>.vcd` (`trace` → `trace.spi<bus>`).
fn sibling(path: &Path, bus: u32) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.spi{bus}.{}", ext.to_string_lossy()),
        None => format!("{stem}.spi{bus}"),
    };
    path.with_file_name(name)
}

fn write_trace(block: &SpiController, path: &Path) -> io::Result<()> {
    let trace = block.trace_take();
    let write = || {
        let mut out = BufWriter::new(File::create(path)?);
        write_vcd(&trace, &mut out)?;
        out.flush()
    };
    write().map_err(|e| in_context(e, &format!("trace {}", path.display())))
}

/// `e`, its message prefixed with `what`.
fn in_context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

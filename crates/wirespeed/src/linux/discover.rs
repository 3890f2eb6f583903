//! Discovery: which SPI and GPIO devices this Linux system offers to userspace.
//!
//! [`discover`] looks under a root directory (`/` on a live system; a copy of
//! another system's tree, or a fake one in tests) and reports:
//!
//! - every spidev node ([`SpidevNode`]): `/dev/spidevB.C` is bus `B`, chip
//!   select `C`; with what sysfs says of its SPI device
//!   (`/sys/class/spidev/spidevB.C/device/`: `modalias`, the bound `driver`,
//!   the device-tree `compatible` and `spi-max-frequency`) and of the bus's
//!   controller (`/sys/class/spi_master/spiB/device`);
//! - every SPI device **not** bound to spidev ([`SpiDeviceInfo`], from
//!   `/sys/bus/spi/devices/`): usually a chip a kernel driver has taken, which
//!   [`SpiDeviceInfo::rebind_to_spidev`] says how to hand to spidev;
//! - every GPIO character device ([`GpioChipEntry`], `/dev/gpiochipN`),
//!   opened with [`gpio_cdev::open`] to read its name, label and lines;
//! - spidev's message size limit, `/sys/module/spidev/parameters/bufsiz`.
//!
//! Discovery never fails as a whole and never panics on what it finds: an
//! attribute that is absent is `Ok(None)`, one that exists but cannot be read
//! or is not what the kernel writes there is an `Err(`[`DiscoverError`]`)`
//! kept in the listing, and a directory that cannot be listed is recorded in
//! [`Discovery::errors`].
//!
//! ```no_run
//! let found = wirespeed::linux::discover::discover("/");
//! for node in &found.spidev {
//!     println!("{} (bus {}, chip select {})", node.path.display(), node.bus, node.cs);
//! }
//! if found.spidev.is_empty() {
//!     println!("no spidev nodes: enable SPI in the device tree (dtparam=spi=on on a Raspberry Pi)");
//! }
//! ```

use crate::gpio::{ChipInfo, GpioError};
use crate::linux::gpio_cdev;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// spidev's `bufsiz` when the module parameter is not set: the most TX
/// bytes, and the most RX bytes, one `SPI_IOC_MESSAGE` may carry (each
/// buffer counted rounded up; see [`spidev::Limits`](super::spidev::Limits)).
pub const DEFAULT_SPIDEV_BUFSIZ: u32 = super::spidev::Limits::DEFAULT_BUFSIZ as u32;

/// Something that exists but could not be read, opened or understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoverError {
    /// An I/O call on `path` failed (anything but "not found", which means absent).
    Io {
        /// What was attempted: `read`, `list`, `open`.
        op: &'static str,
        /// The file, directory or node.
        path: PathBuf,
        /// The error's kind (`PermissionDenied`, …).
        kind: io::ErrorKind,
        /// The OS's text.
        message: String,
    },
    /// A file's content is not what the kernel writes there.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What it holds (lossy UTF-8, at most 64 bytes shown).
        content: String,
        /// What was expected.
        expected: &'static str,
    },
}

impl DiscoverError {
    fn io(op: &'static str, path: &Path, e: &io::Error) -> DiscoverError {
        DiscoverError::Io { op, path: path.to_owned(), kind: e.kind(), message: e.to_string() }
    }

    fn malformed(path: &Path, content: &[u8], expected: &'static str) -> DiscoverError {
        let shown = String::from_utf8_lossy(&content[..content.len().min(64)]).into_owned();
        DiscoverError::Malformed { path: path.to_owned(), content: shown, expected }
    }

    /// The OS refused access (not root, not in the device's group).
    pub fn is_permission_denied(&self) -> bool {
        matches!(self, DiscoverError::Io { kind: io::ErrorKind::PermissionDenied, .. })
    }
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::Io { op, path, message, .. } => write!(f, "cannot {op} {}: {message}", path.display()),
            DiscoverError::Malformed { path, content, expected } => {
                write!(f, "{} holds {content:?}, expected {expected}", path.display())
            }
        }
    }
}

impl std::error::Error for DiscoverError {}

/// A sysfs attribute: `Ok(Some(_))` present, `Ok(None)` absent, `Err` unreadable.
pub type Attr<T> = Result<Option<T>, DiscoverError>;

/// Everything [`discover`] found.
#[derive(Debug)]
pub struct Discovery {
    /// The root looked under.
    pub root: PathBuf,
    /// spidev nodes, by bus then chip select.
    pub spidev: Vec<SpidevNode>,
    /// SPI devices not bound to spidev (bound to another driver, or to none), by bus then chip select.
    pub spi_devices: Vec<SpiDeviceInfo>,
    /// GPIO character devices, by number.
    pub gpio_chips: Vec<GpioChipEntry>,
    /// spidev's `bufsiz` module parameter; absent when the spidev driver is
    /// not loaded (not built in, module not loaded).
    pub spidev_bufsiz: Attr<u32>,
    /// Whether the kernel has SPI at all (`/sys/bus/spi` exists; a PC or a
    /// virtual machine usually has none).
    pub spi_in_kernel: bool,
    /// Directories that exist but could not be listed.
    pub errors: Vec<DiscoverError>,
}

impl Discovery {
    /// The largest spidev message in bytes: `bufsiz` when known, else spidev's default.
    pub fn spidev_message_limit(&self) -> u32 {
        match self.spidev_bufsiz {
            Ok(Some(n)) => n,
            _ => DEFAULT_SPIDEV_BUFSIZ,
        }
    }
}

/// What is at a device node's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeState {
    /// A character device that opens for reading and writing.
    Ready,
    /// Nothing: sysfs knows the device, but no `/dev` entry was created
    /// (no devtmpfs or udev, or a rule that removed it).
    Missing,
    /// Something that is not a character device, typically a regular file
    /// left by a write to a node that did not exist then.
    NotADevice,
    /// A character device that did not open (permission, busy, …).
    Unusable(DiscoverError),
}

/// One spidev node: `/dev/spidevB.C`.
#[derive(Clone, Debug)]
pub struct SpidevNode {
    /// `spidevB.C`.
    pub name: String,
    /// Bus number `B` (the controller `spiB`).
    pub bus: u32,
    /// Chip select `C` on that bus.
    pub cs: u32,
    /// The node's path (under the root).
    pub path: PathBuf,
    /// What is at `path`.
    pub node: NodeState,
    /// The SPI device behind it (`/sys/class/spidev/spidevB.C/device`), if sysfs shows it.
    pub device: Option<SpiDeviceInfo>,
}

/// An SPI device as sysfs shows it (`/sys/bus/spi/devices/<name>`).
#[derive(Clone, Debug)]
pub struct SpiDeviceInfo {
    /// Device name: `spiB.C` for device-tree and board devices (ACPI ones are named `spi-<id>`).
    pub name: String,
    /// Bus number, when the name is `spiB.C`.
    pub bus: Option<u32>,
    /// Chip select, when the name is `spiB.C`.
    pub cs: Option<u32>,
    /// `modalias` (`spi:dh2228fv`): what drivers are matched against.
    pub modalias: Attr<String>,
    /// The bound driver's name (`spidev`, `mcp251xfd`); `Ok(None)` when none is bound.
    pub driver: Attr<String>,
    /// `driver_override`, when set: the only driver this device will bind to.
    pub driver_override: Attr<String>,
    /// The device-tree node's `compatible` strings; `Ok(None)` without a device-tree node.
    pub compatible: Attr<Vec<String>>,
    /// The device-tree node's `spi-max-frequency` in Hz.
    pub max_frequency_hz: Attr<u32>,
    /// The bus's controller, when `/sys/class/spi_master/spiB` exists.
    pub controller: Option<ControllerInfo>,
}

impl SpiDeviceInfo {
    /// Every error among the attributes.
    pub fn errors(&self) -> Vec<&DiscoverError> {
        let mut v = Vec::new();
        v.extend(self.modalias.as_ref().err());
        v.extend(self.driver.as_ref().err());
        v.extend(self.driver_override.as_ref().err());
        v.extend(self.compatible.as_ref().err());
        v.extend(self.max_frequency_hz.as_ref().err());
        if let Some(c) = &self.controller {
            v.extend(c.device.as_ref().err());
            v.extend(c.driver.as_ref().err());
        }
        v
    }

    /// Whether spidev is the bound driver.
    pub fn bound_to_spidev(&self) -> bool {
        matches!(&self.driver, Ok(Some(d)) if d == "spidev")
    }

    /// Shell commands (run as root) that hand this device to spidev: set
    /// `driver_override`, unbind the current driver if any, bind spidev.
    /// The override lasts until reboot (or `echo > …/driver_override`);
    /// the node then appears as `/dev/spidevB.C`.
    pub fn rebind_to_spidev(&self) -> Vec<String> {
        let n = &self.name;
        let mut v =
            vec!["modprobe spidev".to_owned(), format!("echo spidev > /sys/bus/spi/devices/{n}/driver_override")];
        if let Ok(Some(d)) = &self.driver {
            v.push(format!("echo {n} > /sys/bus/spi/drivers/{d}/unbind"));
        }
        v.push(format!("echo {n} > /sys/bus/spi/drivers/spidev/bind"));
        v
    }
}

/// An SPI controller (`/sys/class/spi_master/spiB`).
#[derive(Clone, Debug)]
pub struct ControllerInfo {
    /// `spiB`.
    pub name: String,
    /// The controller's device (`fe204000.spi`).
    pub device: Attr<String>,
    /// Its driver (`spi-bcm2835`).
    pub driver: Attr<String>,
}

/// One GPIO character device: `/dev/gpiochipN`.
#[derive(Debug)]
pub struct GpioChipEntry {
    /// The node's path (under the root).
    pub path: PathBuf,
    /// `N`.
    pub number: u32,
    /// What the chip says of itself, or why it could not be opened.
    pub info: Result<ChipInfo, GpioError>,
}

/// Looks under `root` (`/` on a live system) for spidev nodes, other SPI
/// devices, GPIO chips and spidev's `bufsiz`. See the [module docs](self).
pub fn discover(root: impl AsRef<Path>) -> Discovery {
    let root = root.as_ref();
    let mut errors = Vec::new();
    let dev = root.join("dev");
    let sys = root.join("sys");
    let dev_names = list_dir(&dev, &mut errors);

    // spidev: /dev entries and sysfs class entries, so that a node sysfs
    // knows but /dev lacks is shown too.
    let mut spidev_names: Vec<String> = dev_names.iter().filter(|n| parse_spidev(n).is_some()).cloned().collect();
    for n in list_dir(&sys.join("class/spidev"), &mut errors) {
        if parse_spidev(&n).is_some() && !spidev_names.contains(&n) {
            spidev_names.push(n);
        }
    }
    let mut spidev: Vec<SpidevNode> = spidev_names
        .into_iter()
        .filter_map(|name| {
            let (bus, cs) = parse_spidev(&name)?;
            let path = dev.join(&name);
            let node = node_state(&path);
            let sysdev = sys.join("class/spidev").join(&name).join("device");
            let device = exists(&sysdev).then(|| {
                let dev_name = link_name(&sysdev).ok().flatten().unwrap_or_else(|| format!("spi{bus}.{cs}"));
                spi_device(&sys, &sysdev, dev_name)
            });
            Some(SpidevNode { name, bus, cs, path, node, device })
        })
        .collect();
    spidev.sort_by_key(|n| (n.bus, n.cs));

    let spi_dir = sys.join("bus/spi/devices");
    let mut spi_devices: Vec<SpiDeviceInfo> = list_dir(&spi_dir, &mut errors)
        .into_iter()
        .map(|name| spi_device(&sys, &spi_dir.join(&name), name))
        .filter(|d| !d.bound_to_spidev())
        .collect();
    spi_devices.sort_by(|a, b| (a.bus, a.cs, &a.name).cmp(&(b.bus, b.cs, &b.name)));

    let mut gpio_chips: Vec<GpioChipEntry> = dev_names
        .iter()
        .filter_map(|n| {
            let number = n.strip_prefix("gpiochip").and_then(parse_decimal)?;
            let path = dev.join(n);
            let info = gpio_cdev::open(&path).and_then(|chip| chip.info());
            Some(GpioChipEntry { path, number, info })
        })
        .collect();
    gpio_chips.sort_by_key(|c| c.number);

    let bufsiz_path = sys.join(super::spidev::BUFSIZ_SYSFS);
    let spidev_bufsiz = read_text(&bufsiz_path).and_then(|t| match t {
        None => Ok(None),
        Some(s) => s.parse::<u32>().map(Some).map_err(|_| {
            DiscoverError::malformed(&bufsiz_path, s.as_bytes(), "a decimal byte count (spidev's default is 4096)")
        }),
    });

    let spi_in_kernel = exists(&sys.join("bus/spi"));
    Discovery { root: root.to_owned(), spidev, spi_devices, gpio_chips, spidev_bufsiz, spi_in_kernel, errors }
}

/// Reads an SPI device's attributes from its sysfs directory `dir`.
fn spi_device(sys: &Path, dir: &Path, name: String) -> SpiDeviceInfo {
    let (bus, cs) = match parse_spi_name(&name) {
        Some((b, c)) => (Some(b), Some(c)),
        None => (None, None),
    };
    let of_node = dir.join("of_node");
    SpiDeviceInfo {
        bus,
        cs,
        modalias: read_text(&dir.join("modalias")),
        driver: link_name(&dir.join("driver")),
        driver_override: read_text(&dir.join("driver_override")).map(|o| o.filter(|s| !s.is_empty())),
        compatible: read_bytes(&of_node.join("compatible")).map(|b| {
            b.map(|b| {
                b.split(|&c| c == 0)
                    .filter(|s| !s.is_empty())
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            })
        }),
        max_frequency_hz: read_be_u32(&of_node.join("spi-max-frequency")),
        controller: bus.and_then(|b| controller(sys, b)),
        name,
    }
}

fn controller(sys: &Path, bus: u32) -> Option<ControllerInfo> {
    let name = format!("spi{bus}");
    let dir = sys.join("class/spi_master").join(&name);
    if !exists(&dir) {
        return None;
    }
    let device = dir.join("device");
    Some(ControllerInfo { device: link_name(&device), driver: link_name(&device.join("driver")), name })
}

/// `spidevB.C` → (B, C).
fn parse_spidev(name: &str) -> Option<(u32, u32)> {
    parse_bus_cs(name.strip_prefix("spidev")?)
}

/// `spiB.C` → (B, C).
fn parse_spi_name(name: &str) -> Option<(u32, u32)> {
    parse_bus_cs(name.strip_prefix("spi")?)
}

fn parse_bus_cs(s: &str) -> Option<(u32, u32)> {
    let (b, c) = s.split_once('.')?;
    Some((parse_decimal(b)?, parse_decimal(c)?))
}

/// Plain decimal digits only (no sign, no `+`).
fn parse_decimal(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

fn node_state(path: &Path) -> NodeState {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => NodeState::Missing,
        Err(e) => NodeState::Unusable(DiscoverError::io("stat", path, &e)),
        Ok(m) if !m.file_type().is_char_device() => NodeState::NotADevice,
        Ok(_) => match std::fs::OpenOptions::new().read(true).write(true).open(path) {
            Ok(_) => NodeState::Ready,
            Err(e) => NodeState::Unusable(DiscoverError::io("open", path, &e)),
        },
    }
}

/// The names in a directory, sorted; nothing when it does not exist.
fn list_dir(dir: &Path, errors: &mut Vec<DiscoverError>) -> Vec<String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            errors.push(DiscoverError::io("list", dir, &e));
            return Vec::new();
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => names.push(e.file_name().to_string_lossy().into_owned()),
            Err(e) => {
                errors.push(DiscoverError::io("list", dir, &e));
                break;
            }
        }
    }
    names.sort();
    names
}

fn read_bytes(path: &Path) -> Attr<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DiscoverError::io("read", path, &e)),
    }
}

/// A text attribute without its trailing newline (and NULs).
fn read_text(path: &Path) -> Attr<String> {
    read_bytes(path)
        .map(|b| b.map(|b| String::from_utf8_lossy(&b).trim_end_matches(['\n', '\0']).trim_end().to_owned()))
}

/// A device-tree cell: 4 bytes, big-endian.
fn read_be_u32(path: &Path) -> Attr<u32> {
    match read_bytes(path)? {
        None => Ok(None),
        Some(b) => match <[u8; 4]>::try_from(b.as_slice()) {
            Ok(cell) => Ok(Some(u32::from_be_bytes(cell))),
            Err(_) => Err(DiscoverError::malformed(path, &b, "one 4-byte big-endian cell")),
        },
    }
}

/// The last component of a symlink's target (`driver` → `spidev`).
fn link_name(path: &Path) -> Attr<String> {
    match std::fs::read_link(path) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DiscoverError::io("read link", path, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fake root (real files and relative symlinks, as sysfs has), removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new() -> Tree {
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "wirespeed-discover-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Tree(p)
        }
        fn file(&self, rel: &str, content: &[u8]) -> &Tree {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
            self
        }
        fn dir(&self, rel: &str) -> &Tree {
            fs::create_dir_all(self.0.join(rel)).unwrap();
            self
        }
        /// `from` → `to`, both relative to the root, as a relative link.
        fn link(&self, from: &str, to: &str) -> &Tree {
            let p = self.0.join(from);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            let up = from.split('/').count() - 1;
            let target = format!("{}{to}", "../".repeat(up));
            std::os::unix::fs::symlink(target, p).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const CTRL0: &str = "sys/devices/platform/soc/fe204000.spi";
    const CTRL1: &str = "sys/devices/platform/soc/fe215080.spi";

    /// A Raspberry Pi-like tree: spi0 with spidev0.0 (device tree, all
    /// attributes) and spidev0.1 (bound by driver_override, no of_node);
    /// spi1 with an MCP2518FD taken by mcp251xfd and a device bound to nothing.
    fn pi_tree(bufsiz: Option<&[u8]>) -> Tree {
        let t = Tree::new();
        t.dir("sys/bus/spi/drivers/spidev")
            .dir("sys/bus/spi/drivers/mcp251xfd")
            .dir("sys/bus/platform/drivers/spi-bcm2835")
            .dir("sys/bus/platform/drivers/spi-bcm2835aux")
            .file("sys/firmware/devicetree/base/soc/spi@7e204000/spidev@0/compatible", b"rohm,dh2228fv\0")
            .file("sys/firmware/devicetree/base/soc/spi@7e204000/spidev@0/spi-max-frequency", &[0x00, 0x7a, 0x12, 0x00])
            .file(
                "sys/firmware/devicetree/base/soc/spi@7e215080/can@0/compatible",
                b"microchip,mcp2518fd\0microchip,mcp251xfd\0",
            )
            .file("sys/firmware/devicetree/base/soc/spi@7e215080/can@0/spi-max-frequency", &[0x01, 0x31, 0x2d, 0x00]);
        for (ctrl, bus, drv) in [(CTRL0, 0, "spi-bcm2835"), (CTRL1, 1, "spi-bcm2835aux")] {
            t.link(&format!("{ctrl}/driver"), &format!("sys/bus/platform/drivers/{drv}"))
                .link(&format!("{ctrl}/spi_master/spi{bus}/device"), ctrl)
                .link(&format!("sys/class/spi_master/spi{bus}"), &format!("{ctrl}/spi_master/spi{bus}"));
        }
        let d00 = format!("{CTRL0}/spi_master/spi0/spi0.0");
        let d01 = format!("{CTRL0}/spi_master/spi0/spi0.1");
        let d10 = format!("{CTRL1}/spi_master/spi1/spi1.0");
        let d11 = format!("{CTRL1}/spi_master/spi1/spi1.1");
        t.file(&format!("{d00}/modalias"), b"spi:dh2228fv\n")
            .file(&format!("{d00}/driver_override"), b"\n")
            .link(&format!("{d00}/driver"), "sys/bus/spi/drivers/spidev")
            .link(&format!("{d00}/of_node"), "sys/firmware/devicetree/base/soc/spi@7e204000/spidev@0")
            .link(&format!("{d00}/spidev/spidev0.0/device"), &d00)
            .link("sys/class/spidev/spidev0.0", &format!("{d00}/spidev/spidev0.0"))
            .file("dev/spidev0.0", b"")
            .file(&format!("{d01}/modalias"), b"spi:mcp3008\n")
            .file(&format!("{d01}/driver_override"), b"spidev\n")
            .link(&format!("{d01}/driver"), "sys/bus/spi/drivers/spidev")
            .link(&format!("{d01}/spidev/spidev0.1/device"), &d01)
            .link("sys/class/spidev/spidev0.1", &format!("{d01}/spidev/spidev0.1"))
            .file("dev/spidev0.1", b"")
            .file(&format!("{d10}/modalias"), b"spi:mcp2518fd\n")
            .file(&format!("{d10}/driver_override"), b"\n")
            .link(&format!("{d10}/driver"), "sys/bus/spi/drivers/mcp251xfd")
            .link(&format!("{d10}/of_node"), "sys/firmware/devicetree/base/soc/spi@7e215080/can@0")
            .file(&format!("{d11}/modalias"), b"spi:mcp3008\n");
        for d in [&d00, &d01, &d10, &d11] {
            let name = d.rsplit('/').next().unwrap();
            t.link(&format!("sys/bus/spi/devices/{name}"), d);
        }
        t.file("dev/gpiochip0", b"").file("dev/gpiochip10", b"").file("dev/gpiochip2", b"").file("dev/gpiochipx", b"");
        t.dir("sys/module/spidev");
        if let Some(b) = bufsiz {
            t.file("sys/module/spidev/parameters/bufsiz", b);
        }
        t
    }

    #[test]
    fn discover_a_spidev_node_with_every_attribute() {
        let t = pi_tree(Some(b"4096\n"));
        let d = discover(&t.0);
        assert_eq!(d.spidev.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["spidev0.0", "spidev0.1"]);
        let n = &d.spidev[0];
        assert_eq!((n.bus, n.cs, n.path.clone()), (0, 0, t.0.join("dev/spidev0.0")));
        assert_eq!(n.node, NodeState::NotADevice, "a plain file is not a device node");
        let dev = n.device.as_ref().expect("sysfs device");
        assert_eq!(dev.name, "spi0.0");
        assert_eq!((dev.bus, dev.cs), (Some(0), Some(0)));
        assert_eq!(dev.modalias, Ok(Some("spi:dh2228fv".into())));
        assert_eq!(dev.driver, Ok(Some("spidev".into())));
        assert_eq!(dev.driver_override, Ok(None), "an empty override is none");
        assert_eq!(dev.compatible, Ok(Some(vec!["rohm,dh2228fv".into()])));
        assert_eq!(dev.max_frequency_hz, Ok(Some(8_000_000)));
        let c = dev.controller.as_ref().expect("controller");
        assert_eq!(
            (c.name.as_str(), &c.device, &c.driver),
            ("spi0", &Ok(Some("fe204000.spi".into())), &Ok(Some("spi-bcm2835".into())))
        );
        assert!(dev.errors().is_empty() && d.errors.is_empty(), "{:?} {:?}", dev.errors(), d.errors);
        assert_eq!(d.spidev_bufsiz, Ok(Some(4096)));
        assert!(d.spi_in_kernel);
    }

    #[test]
    fn discover_a_spidev_node_without_of_node() {
        let d = discover(&pi_tree(None).0);
        let dev = d.spidev[1].device.as_ref().unwrap();
        assert_eq!(dev.name, "spi0.1");
        assert_eq!((dev.compatible.clone(), dev.max_frequency_hz.clone()), (Ok(None), Ok(None)));
        assert_eq!(dev.driver_override, Ok(Some("spidev".into())));
        assert_eq!(dev.modalias, Ok(Some("spi:mcp3008".into())));
        assert!(dev.errors().is_empty());
    }

    #[test]
    fn discover_devices_not_bound_to_spidev_with_the_commands_to_rebind_them() {
        let d = discover(&pi_tree(None).0);
        let names: Vec<_> = d.spi_devices.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["spi1.0", "spi1.1"], "spidev-bound devices are listed as spidev nodes only");
        let can = &d.spi_devices[0];
        assert_eq!(can.driver, Ok(Some("mcp251xfd".into())));
        assert_eq!(can.compatible, Ok(Some(vec!["microchip,mcp2518fd".into(), "microchip,mcp251xfd".into()])));
        assert_eq!(can.max_frequency_hz, Ok(Some(20_000_000)));
        assert_eq!(can.controller.as_ref().unwrap().driver, Ok(Some("spi-bcm2835aux".into())));
        assert_eq!(
            can.rebind_to_spidev(),
            [
                "modprobe spidev",
                "echo spidev > /sys/bus/spi/devices/spi1.0/driver_override",
                "echo spi1.0 > /sys/bus/spi/drivers/mcp251xfd/unbind",
                "echo spi1.0 > /sys/bus/spi/drivers/spidev/bind",
            ]
        );
        let free = &d.spi_devices[1];
        assert_eq!((free.driver.clone(), free.driver_override.clone()), (Ok(None), Ok(None)));
        assert!(!free.rebind_to_spidev().iter().any(|c| c.contains("unbind")));
    }

    #[test]
    fn bufsiz_present_absent_or_malformed() {
        assert_eq!(discover(&pi_tree(Some(b"65536\n")).0).spidev_bufsiz, Ok(Some(65536)));
        let absent = discover(&pi_tree(None).0);
        assert_eq!(absent.spidev_bufsiz, Ok(None));
        assert_eq!(absent.spidev_message_limit(), DEFAULT_SPIDEV_BUFSIZ);
        let bad = discover(&pi_tree(Some(b"lots\n")).0).spidev_bufsiz.unwrap_err();
        assert!(matches!(&bad, DiscoverError::Malformed { content, .. } if content == "lots"), "{bad}");
        assert!(bad.to_string().contains("bufsiz") && bad.to_string().contains("decimal"), "{bad}");
    }

    #[test]
    fn unreadable_or_malformed_attributes_are_reported_not_fatal() {
        let t = pi_tree(None);
        // A directory where a file should be fails to read (root reads any file, so no chmod).
        t.dir("sys/module/spidev/parameters/bufsiz");
        let d00 = format!("{CTRL0}/spi_master/spi0/spi0.0");
        fs::remove_file(t.0.join(&d00).join("modalias")).unwrap();
        t.dir(&format!("{d00}/modalias"));
        t.file("sys/firmware/devicetree/base/soc/spi@7e204000/spidev@0/spi-max-frequency", &[1, 2, 3]);
        let d = discover(&t.0);
        assert!(matches!(d.spidev_bufsiz, Err(DiscoverError::Io { op: "read", .. })), "{:?}", d.spidev_bufsiz);
        let dev = d.spidev[0].device.as_ref().unwrap();
        let errs: Vec<String> = dev.errors().iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("cannot read ") && errs[0].contains("modalias"), "{errs:?}");
        assert!(errs[1].contains("spi-max-frequency") && errs[1].contains("4-byte"), "{errs:?}");
        assert_eq!(dev.driver, Ok(Some("spidev".into())), "the other attributes are still read");
    }

    #[test]
    fn gpio_chips_in_number_order_with_why_each_did_not_open() {
        let d = discover(&pi_tree(None).0);
        let numbers: Vec<u32> = d.gpio_chips.iter().map(|c| c.number).collect();
        assert_eq!(numbers, [0, 2, 10], "gpiochipx is not a chip");
        for c in &d.gpio_chips {
            // A plain file is no GPIO chip: the typed error says so.
            assert_eq!(c.info, Err(GpioError::NotFound { path: c.path.display().to_string() }));
        }
    }

    #[test]
    fn nodes_only_sysfs_knows_and_device_nodes_that_open() {
        let t = pi_tree(None);
        fs::remove_file(t.0.join("dev/spidev0.1")).unwrap();
        // A character device that opens (a symlink to /dev/null stands in for one).
        std::os::unix::fs::symlink("/dev/null", t.0.join("dev/spidev3.0")).unwrap();
        let d = discover(&t.0);
        let states: Vec<_> = d.spidev.iter().map(|n| (n.name.as_str(), n.node.clone())).collect();
        assert_eq!(
            states,
            [("spidev0.0", NodeState::NotADevice), ("spidev0.1", NodeState::Missing), ("spidev3.0", NodeState::Ready)]
        );
        assert!(d.spidev[2].device.is_none(), "no sysfs for spidev3.0");
    }

    #[test]
    fn an_empty_root_has_nothing_and_no_errors() {
        let t = Tree::new();
        let d = discover(&t.0);
        assert!(d.spidev.is_empty() && d.spi_devices.is_empty() && d.gpio_chips.is_empty());
        assert_eq!(d.spidev_bufsiz, Ok(None));
        assert!(d.errors.is_empty() && !d.spi_in_kernel);
        let missing = discover(t.0.join("nonexistent"));
        assert!(missing.errors.is_empty() && missing.spidev.is_empty());
    }

    #[test]
    fn names_parse_only_as_the_kernel_writes_them() {
        assert_eq!(parse_spidev("spidev12.3"), Some((12, 3)));
        for bad in ["spidev0", "spidev0.", "spidev.0", "spidev+1.0", "spidev0.0.0", "spidevx.0", "spidev1.-1"] {
            assert_eq!(parse_spidev(bad), None, "{bad}");
        }
        assert_eq!(parse_spi_name("spi1.0"), Some((1, 0)));
        assert_eq!(parse_spi_name("spi-PRP0001:00"), None);
    }
}

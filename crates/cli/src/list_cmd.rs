//! `wirespeed list [--json]`: what there is to talk to — spidev nodes, SPI
//! devices held by other drivers, GPIO chips (all found by
//! [`wirespeed::linux::discover`]) and the emulated lab.

use clap::Args;
use serde_json::{json, Value};
use std::fmt::{self, Write as _};
use std::path::PathBuf;
use wirespeed::linux::discover::{
    discover, Attr, ControllerInfo, DiscoverError, Discovery, NodeState, SpiDeviceInfo, DEFAULT_SPIDEV_BUFSIZ,
};

/// `wirespeed list` options.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON object (keys: spidev, spi_devices, gpio_chips, lab,
    /// spidev_bufsiz, spi_in_kernel, errors, root) instead of a listing.
    #[arg(long)]
    json: bool,
    /// Look under this directory instead of `/` (it holds `dev/` and `sys/`):
    /// e.g. a copy of another board's `/sys`, or a test tree.
    #[arg(long, default_value = "/", value_name = "DIR")]
    root: PathBuf,
}

/// Why `wirespeed list` could not list.
#[derive(Debug)]
pub enum ListError {
    /// `--root` is not a directory.
    Root {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        error: String,
    },
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::Root { path, error } => {
                write!(
                    f,
                    "--root {}: {error} (give the directory that holds dev/ and sys/; / on this system)",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for ListError {}

/// One part of the emulated lab and the commands that use it.
#[derive(Debug)]
pub struct LabPart {
    /// Short name.
    pub name: &'static str,
    /// What it models, in one line.
    pub what: &'static str,
    /// The `wirespeed` commands that run on it.
    pub commands: &'static [&'static str],
}

/// What the emulated lab (`crates/lab`) offers; every bench builds its own
/// lab from these parts.
pub const LAB: &[LabPart] = &[
    LabPart {
        name: "spi-controller",
        what: "WSPI SoC SPI block: 64-byte FIFOs, 4 chip selects, DONE IRQ; N bits take N/f s",
        commands: &["bench spi", "bench regmap", "bench canecho", "demo", "lab trace"],
    },
    LabPart {
        name: "gpio-chip",
        what: "GPIO chip (32 lines): bias, open drain, edge events with debounce, hot removal",
        commands: &["bench gpio", "bench canecho", "demo"],
    },
    LabPart {
        name: "mcp2518fd",
        what: "MCP2518FD CAN FD controller on SPI: registers, CRC commands, message RAM, INT",
        commands: &["bench canecho", "demo"],
    },
    LabPart {
        name: "loopback",
        what: "SPI loopback device: MISO = MOSI (also behind an emulated spidev node: --dev lab-spidev)",
        commands: &["bench spi", "bench gpio", "lab trace", "spi --dev lab-spidev"],
    },
    LabPart {
        name: "can-bus",
        what: "CAN / CAN FD bus, bit-accurate timing; cangen-like generator, recorder",
        commands: &["bench canecho", "demo"],
    },
    LabPart {
        name: "regfile",
        what: "SPI register file, 256 registers (0x03 read / 0x02 write, address, data)",
        commands: &["bench regmap"],
    },
];

/// Runs `wirespeed list`.
pub fn run(args: ListArgs) -> Result<(), ListError> {
    match std::fs::metadata(&args.root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(ListError::Root { path: args.root, error: "not a directory".into() }),
        Err(e) => return Err(ListError::Root { path: args.root, error: e.to_string() }),
    }
    let found = discover(&args.root);
    if args.json {
        println!("{}", to_json(&found));
    } else {
        print!("{}", table(&found));
    }
    Ok(())
}

fn attr_json<T: Clone + Into<Value>>(a: &Attr<T>) -> Value {
    match a {
        Ok(Some(v)) => v.clone().into(),
        _ => Value::Null,
    }
}

fn errors_json<'a>(errs: impl IntoIterator<Item = &'a DiscoverError>) -> Value {
    errs.into_iter().map(|e| Value::from(e.to_string())).collect()
}

fn controller_json(c: &Option<ControllerInfo>) -> Value {
    match c {
        None => Value::Null,
        Some(c) => json!({ "name": c.name, "device": attr_json(&c.device), "driver": attr_json(&c.driver) }),
    }
}

/// The attributes every SPI device has, as JSON object members.
fn device_json(d: &SpiDeviceInfo) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("device".into(), d.name.clone().into());
    m.insert("modalias".into(), attr_json(&d.modalias));
    m.insert("driver".into(), attr_json(&d.driver));
    m.insert("driver_override".into(), attr_json(&d.driver_override));
    m.insert("compatible".into(), attr_json(&d.compatible));
    m.insert("spi_max_frequency_hz".into(), attr_json(&d.max_frequency_hz));
    m.insert("controller".into(), controller_json(&d.controller));
    m.insert("errors".into(), errors_json(d.errors()));
    m
}

fn node_str(n: &NodeState) -> &'static str {
    match n {
        NodeState::Ready => "ready",
        NodeState::Missing => "missing",
        NodeState::NotADevice => "not a device",
        NodeState::Unusable(_) => "unusable",
    }
}

/// The one JSON object of `list --json`.
pub fn to_json(d: &Discovery) -> Value {
    let spidev: Vec<Value> = d
        .spidev
        .iter()
        .map(|n| {
            let mut m = serde_json::Map::new();
            m.insert("path".into(), n.path.display().to_string().into());
            m.insert("bus".into(), n.bus.into());
            m.insert("cs".into(), n.cs.into());
            m.insert("node".into(), node_str(&n.node).into());
            let node_error = match &n.node {
                NodeState::Unusable(e) => e.to_string().into(),
                _ => Value::Null,
            };
            m.insert("node_error".into(), node_error);
            match &n.device {
                Some(dev) => m.extend(device_json(dev)),
                None => {
                    for key in [
                        "device",
                        "modalias",
                        "driver",
                        "driver_override",
                        "compatible",
                        "spi_max_frequency_hz",
                        "controller",
                    ] {
                        m.insert(key.into(), Value::Null);
                    }
                    m.insert("errors".into(), json!([]));
                }
            }
            Value::Object(m)
        })
        .collect();
    let spi_devices: Vec<Value> = d
        .spi_devices
        .iter()
        .map(|dev| {
            let mut m = device_json(dev);
            m.insert("name".into(), dev.name.clone().into());
            m.remove("device");
            m.insert("bus".into(), dev.bus.into());
            m.insert("cs".into(), dev.cs.into());
            m.insert("rebind_to_spidev".into(), dev.rebind_to_spidev().into());
            Value::Object(m)
        })
        .collect();
    let gpio_chips: Vec<Value> = d
        .gpio_chips
        .iter()
        .map(|c| match &c.info {
            Ok(i) => json!({
                "path": c.path.display().to_string(), "name": i.name, "label": i.label, "lines": i.lines, "error": null,
            }),
            Err(e) => json!({
                "path": c.path.display().to_string(), "name": null, "label": null, "lines": null, "error": e.to_string(),
            }),
        })
        .collect();
    let lab: Vec<Value> = LAB
        .iter()
        .map(|p| {
            let cmds: Vec<String> = p.commands.iter().map(|c| format!("wirespeed {c}")).collect();
            json!({ "name": p.name, "what": p.what, "commands": cmds })
        })
        .collect();
    let mut errors: Vec<&DiscoverError> = d.errors.iter().collect();
    errors.extend(d.spidev_bufsiz.as_ref().err());
    json!({
        "root": d.root.display().to_string(),
        "spidev": spidev,
        "spi_devices": spi_devices,
        "gpio_chips": gpio_chips,
        "lab": lab,
        "spidev_bufsiz": attr_json(&d.spidev_bufsiz),
        "spi_in_kernel": d.spi_in_kernel,
        "errors": errors_json(errors),
    })
}

/// `Some(text)` of an attribute, `None` when absent; an error is shown as
/// `?` here (its text is listed below the entry).
fn shown<T: fmt::Display>(a: &Attr<T>) -> Option<String> {
    match a {
        Ok(Some(v)) => Some(v.to_string()),
        Ok(None) => None,
        Err(_) => Some("?".into()),
    }
}

/// The lines describing one SPI device: `head` then driver and modalias on
/// the first line, then device tree, controller and errors, indented.
fn device_lines(out: &mut String, head: &str, d: &SpiDeviceInfo) {
    let driver = match &d.driver {
        Ok(None) => "no driver".to_owned(),
        a => format!("driver {}", shown(a).unwrap_or_default()),
    };
    let mut line = format!("{head}: {driver}");
    if let Some(m) = shown(&d.modalias) {
        let _ = write!(line, ", modalias {m}");
    }
    if let Some(o) = shown(&d.driver_override) {
        let _ = write!(line, ", driver_override {o}");
    }
    let _ = writeln!(out, "{line}");
    let compatible = shown(&d.compatible.clone().map(|c| c.map(|c| c.join(" "))));
    match (compatible, shown(&d.max_frequency_hz)) {
        (None, None) => {
            let _ = writeln!(out, "      no device-tree node");
        }
        (c, f) => {
            let _ = writeln!(
                out,
                "      device tree: compatible {}; spi-max-frequency {}",
                c.as_deref().unwrap_or("-"),
                f.map_or("-".into(), |f| format!("{f} Hz"))
            );
        }
    }
    if let Some(c) = &d.controller {
        let dev = shown(&c.device).unwrap_or_else(|| "-".into());
        let drv = shown(&c.driver).unwrap_or_else(|| "none".into());
        let _ = writeln!(out, "      controller {}: {dev}, driver {drv}", c.name);
    }
    for e in d.errors() {
        let _ = writeln!(out, "      ! {e}");
    }
}

/// The listing `wirespeed list` prints.
pub fn table(d: &Discovery) -> String {
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(o, "spidev nodes (/dev/spidevB.C = SPI bus B, chip select C)");
    if d.spidev.is_empty() {
        let why = if d.spi_in_kernel {
            "none: no /dev/spidev* here."
        } else {
            "none: no /dev/spidev*, and this kernel has no SPI bus at all (no /sys/bus/spi; a PC or VM has none)."
        };
        let other = if d.spi_devices.is_empty() { "" } else { ", or hand one a driver holds to spidev (below)" };
        let _ = writeln!(
            o,
            "  {why}\n  \
             The kernel makes /dev/spidevB.C for each SPI device bound to the spidev driver: declare one in the\n  \
             device tree or an overlay (Raspberry Pi: dtparam=spi=on in config.txt, then reboot){other}.\n  \
             README: \"On real hardware\"."
        );
    }
    for n in &d.spidev {
        let state = match &n.node {
            NodeState::Ready => "opens read-write".to_owned(),
            NodeState::Missing => "no /dev node (sysfs lists it: is devtmpfs or udev running?)".to_owned(),
            NodeState::NotADevice => {
                "not a device node (a file written where no node was? remove it and reboot)".to_owned()
            }
            NodeState::Unusable(e) if e.is_permission_denied() => {
                format!("{e} (join its group: sudo usermod -aG spi $USER, log in again)")
            }
            NodeState::Unusable(e) => e.to_string(),
        };
        let _ = writeln!(o, "  {}  bus {}, chip select {}: {state}", n.path.display(), n.bus, n.cs);
        match &n.device {
            Some(dev) => device_lines(o, &format!("      {}", dev.name), dev),
            None => {
                let _ = writeln!(o, "      (no sysfs entry: /sys/class/spidev/{} is absent)", n.name);
            }
        }
    }
    match &d.spidev_bufsiz {
        Ok(Some(b)) => {
            let _ = writeln!(o, "  spidev bufsiz: {b} bytes per message (spidev.bufsiz=N on the kernel command line)");
        }
        Ok(None) => {
            let _ = writeln!(
                o,
                "  spidev driver not loaded (no /sys/module/spidev); its bufsiz (bytes per message) defaults to {DEFAULT_SPIDEV_BUFSIZ}"
            );
        }
        Err(e) => {
            let _ = writeln!(o, "  spidev bufsiz: ! {e}");
        }
    }

    let _ = writeln!(o, "\nSPI devices not bound to spidev");
    if d.spi_devices.is_empty() {
        let _ = writeln!(o, "  none");
    }
    for dev in &d.spi_devices {
        let head = match (dev.bus, dev.cs) {
            (Some(b), Some(c)) => format!("  {} (bus {b}, chip select {c})", dev.name),
            _ => format!("  {}", dev.name),
        };
        device_lines(o, &head, dev);
        let _ = writeln!(o, "      to reach it through spidev instead (as root; lasts until reboot):");
        for c in dev.rebind_to_spidev() {
            let _ = writeln!(o, "        {c}");
        }
    }

    let _ = writeln!(o, "\nGPIO chips (/dev/gpiochipN)");
    if d.gpio_chips.is_empty() {
        let _ = writeln!(
            o,
            "  none: no /dev/gpiochip* here (no GPIO controller driver in this kernel, or no CONFIG_GPIO_CDEV)."
        );
    }
    for c in &d.gpio_chips {
        match &c.info {
            Ok(i) => {
                let _ = writeln!(o, "  {}  {} [{}], {} lines", c.path.display(), i.name, i.label, i.lines);
            }
            Err(e @ wirespeed::gpio::GpioError::PermissionDenied { .. }) => {
                let _ = writeln!(
                    o,
                    "  {}  {e} (join its group: sudo usermod -aG gpio $USER, log in again)",
                    c.path.display()
                );
            }
            Err(e) => {
                let _ = writeln!(o, "  {}  {e}", c.path.display());
            }
        }
    }

    for e in &d.errors {
        let _ = writeln!(o, "! {e}");
    }

    let _ = writeln!(o, "\nThe lab (emulated hardware, always here; reached through the library and these commands)");
    let width = LAB.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in LAB {
        let _ = writeln!(o, "  {:width$}  {}  [{}]", p.name, p.what, p.commands.join(", "));
    }
    let _ = writeln!(o, "  (commands: wirespeed <command>, e.g. wirespeed demo)");
    out
}

//! The sysfs files programs read before they trust a node, served as
//! constants (the shim hands a program a memfd with the contents):
//!
//! - `/sys/bus/gpio/devices/gpiochipN/dev`: `254:N` — libgpiod 1.6 opens a
//!   chip only when this file exists and names the node's device number;
//! - `/sys/dev/char/254:N/subsystem` → `/sys/bus/gpio` — libgpiod 2.x
//!   resolves this link with `realpath` and wants that answer;
//! - `/sys/module/spidev/parameters/bufsiz` — flashrom and py-spidev size
//!   their transfers from it;
//! - the directories on the way (`/sys/bus/gpio`, `…/devices`,
//!   `…/gpiochipN`, `/sys/dev/char/254:N`) for `stat` and `access`.
//!
//! Nothing else of `/sys` is served: a program that walks more of it sees
//! the host's (this one has no SPI or GPIO there).

use crate::node::{CharDev, Node};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Virtual sysfs files for a set of served nodes.
#[derive(Debug, Default)]
pub struct Sysfs {
    files: BTreeMap<String, Vec<u8>>,
    links: BTreeMap<String, String>,
    dirs: BTreeSet<String>,
}

impl Sysfs {
    /// The files that describe `nodes` (path, node) and spidev's `bufsiz`.
    pub fn for_nodes(nodes: &[(String, Arc<dyn Node>)], bufsiz: usize) -> Sysfs {
        let mut s = Sysfs::default();
        let mut spidev = false;
        for (path, node) in nodes {
            let dev = node.char_dev();
            let Some(name) = path.strip_prefix("/dev/") else { continue };
            if dev.major == CharDev::GPIO_MAJOR {
                let dir = format!("/sys/bus/gpio/devices/{name}");
                s.files.insert(format!("{dir}/dev"), format!("{}\n", dev.sysfs()).into_bytes());
                s.dirs.insert(dir);
                let char_dir = format!("/sys/dev/char/{}", dev.sysfs());
                s.links.insert(format!("{char_dir}/subsystem"), "/sys/bus/gpio".into());
                s.files.insert(format!("{char_dir}/dev"), format!("{}\n", dev.sysfs()).into_bytes());
                s.dirs.insert(char_dir);
                s.dirs.extend(["/sys/bus/gpio".into(), "/sys/bus/gpio/devices".into()]);
            } else if dev.major == CharDev::SPIDEV_MAJOR {
                spidev = true;
            }
        }
        if spidev {
            s.files.insert("/sys/module/spidev/parameters/bufsiz".into(), format!("{bufsiz}\n").into_bytes());
            s.dirs.extend(["/sys/module/spidev".into(), "/sys/module/spidev/parameters".into()]);
        }
        s
    }

    /// The contents of the file at `path`, if served.
    pub fn file(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    /// Where the link at `path` resolves to, if served.
    pub fn link(&self, path: &str) -> Option<&str> {
        self.links.get(path).map(String::as_str)
    }

    /// Whether `path` is a served directory.
    pub fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path.trim_end_matches('/'))
    }

    /// Every served path (files, links, directories), for listings.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().chain(self.links.keys()).chain(self.dirs.iter()).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Errno, NodeFile};

    #[derive(Debug)]
    struct Fake(CharDev);
    impl Node for Fake {
        fn char_dev(&self) -> CharDev {
            self.0
        }
        fn open(&self, _: i32) -> Result<Arc<dyn NodeFile>, Errno> {
            Err(libc::ENODEV)
        }
    }

    #[test]
    fn a_gpio_chip_gets_the_files_both_libgpiod_versions_check() {
        let nodes: Vec<(String, Arc<dyn Node>)> = vec![
            ("/dev/gpiochip3".into(), Arc::new(Fake(CharDev { major: 254, minor: 3 }))),
            ("/dev/spidev0.0".into(), Arc::new(Fake(CharDev { major: 153, minor: 0 }))),
        ];
        let s = Sysfs::for_nodes(&nodes, 8192);
        assert_eq!(s.file("/sys/bus/gpio/devices/gpiochip3/dev"), Some(&b"254:3\n"[..]));
        assert_eq!(s.link("/sys/dev/char/254:3/subsystem"), Some("/sys/bus/gpio"));
        assert_eq!(s.file("/sys/module/spidev/parameters/bufsiz"), Some(&b"8192\n"[..]));
        assert!(s.is_dir("/sys/bus/gpio/devices/gpiochip3/") && s.is_dir("/sys/bus/gpio"));
        assert_eq!(s.file("/sys/bus/gpio/devices/gpiochip0/dev"), None);
    }
}

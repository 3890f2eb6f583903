//! Device nodes served from the wirespeed lab, for programs that expect a
//! Linux kernel: the kernel's side of `/dev/spidevB.C` (spidev's ioctls,
//! `read` and `write`) and `/dev/gpiochipN` (the GPIO character device, uAPI
//! v1 and v2), the sysfs files programs check before they trust a node, all
//! built from a TOML board file ([`config`], [`Board`]).
//!
//! This crate knows nothing of how a program reaches it: the `LD_PRELOAD`
//! shim (`crates/shim`) turns a program's `open`, `ioctl`, `read` … into
//! calls on a [`Node`] and its [`NodeFile`]s.

pub mod board;
pub mod config;
pub mod gpio;
pub mod node;
pub mod ready;
pub mod spidev;
pub mod sysfs;
pub mod user_mem;

pub use board::{Board, BoardError};
pub use node::{CharDev, Errno, FdInstaller, Node, NodeFile};

//! The program's descriptors that are the lab's: descriptor number →
//! the open file behind it. Each such descriptor is a real one (a duplicate
//! of the file's eventfd), so the kernel keeps numbers unique and `poll`
//! works; this table only says which numbers to serve.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use wirespeed_labhost::{CharDev, NodeFile};

/// One descriptor of the lab's.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub file: Arc<dyn NodeFile>,
    /// The node's device number (a `/dev` node), `None` for a descriptor an
    /// ioctl created (a GPIO line request: an anonymous inode, as in Linux).
    pub dev: Option<CharDev>,
    /// For messages.
    pub path: Arc<str>,
    /// `O_NONBLOCK` of the open file description (shared by duplicates).
    pub nonblocking: Arc<AtomicBool>,
}

// Entries are shared, so that a lookup on the hot path (every ioctl, read
// and write of a lab descriptor) costs one reference count, not one per field.
static TABLE: RwLock<BTreeMap<i32, Arc<Entry>>> = RwLock::new(BTreeMap::new());
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// The entry of `fd`, if it is the lab's.
pub(crate) fn get(fd: i32) -> Option<Arc<Entry>> {
    if COUNT.load(Ordering::Acquire) == 0 {
        return None;
    }
    TABLE.read().unwrap_or_else(|e| e.into_inner()).get(&fd).cloned()
}

/// Makes `fd` the lab's.
pub(crate) fn insert(fd: i32, entry: Arc<Entry>) {
    let mut t = TABLE.write().unwrap_or_else(|e| e.into_inner());
    t.insert(fd, entry);
    COUNT.store(t.len(), Ordering::Release);
}

/// Forgets `fd` (closed); its entry, if it was the lab's.
pub(crate) fn remove(fd: i32) -> Option<Arc<Entry>> {
    if COUNT.load(Ordering::Acquire) == 0 {
        return None;
    }
    let mut t = TABLE.write().unwrap_or_else(|e| e.into_inner());
    let e = t.remove(&fd);
    COUNT.store(t.len(), Ordering::Release);
    e
}

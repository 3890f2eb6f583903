//! [`Regmap`]: register access with a cache over a [`RegmapBus`].

use super::bus::{Batch, RegmapBus};
use super::cache::{new_cache, Cache};
use super::config::{CacheType, RegmapConfig};
use super::error::{BusError, ConfigError, RegmapError};
use super::format::{Format, Op};
use super::props::{Props, PRECIOUS, READABLE, VOLATILE, WRITEABLE};
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const CACHE_ONLY: u8 = 1;
const BYPASS: u8 = 2;

/// What [`Regmap::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncReport {
    /// Registers written to the device.
    pub written: usize,
    /// Dirty registers skipped because they hold their default.
    pub skipped_at_default: usize,
    /// Bus messages used.
    pub messages: usize,
}

/// Scratch space and the bus, under the I/O lock.
struct Io {
    bus: Box<dyn RegmapBus>,
    buf: Vec<u8>,
    ends: Vec<usize>,
    /// Pairs laid out up to each window (end index into the pairs).
    runs: Vec<usize>,
    pairs: Vec<(u32, u32)>,
    vals: Vec<u32>,
    messages: u64,
}

/// A register map: typed register access to one device over a bus, with a
/// cache.
///
/// All methods take `&self`: share a map between threads with an `Arc`.
/// Device access is serialized by one I/O lock; reads of cached registers
/// from a [flat](CacheType::Flat) cache take no lock at all.
///
/// Semantics follow the kernel's regmap: volatile registers are never
/// cached; a cached register is read from the cache even if it is not
/// readable (write-only shadow registers work with [`update_bits`](Regmap::update_bits));
/// in cache-only mode writes go to the cache and are marked dirty; with
/// cache bypass the device is accessed directly and the cache is neither
/// used nor updated.
pub struct Regmap {
    fmt: Arc<dyn Format>,
    props: Props,
    defaults: Vec<(u32, u32)>,
    cache: Box<dyn Cache>,
    mode: AtomicU8,
    io: Mutex<Io>,
    stride: u32,
    stride_shift: Option<u32>,
    max: u32,
    val_bytes: usize,
    val_mask: u32,
}

impl fmt::Debug for Regmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Regmap")
            .field("format", &self.fmt.name())
            .field("max_register", &self.max)
            .field("stride", &self.stride)
            .field("cache", &self.cache.kind())
            .finish()
    }
}

impl Regmap {
    /// A register map over `bus`. The cache starts with the defaults.
    pub fn new(config: RegmapConfig, bus: impl RegmapBus + 'static) -> Result<Regmap, ConfigError> {
        let fmt = config.format.clone();
        fmt.validate()?;
        // Checked here too: a format of the public trait may skip validate.
        let val_bits = fmt.val_bits();
        if !matches!(val_bits, 8 | 16 | 32) {
            return Err(ConfigError::BadWidth { what: "val_bits", bits: val_bits });
        }
        if config.reg_stride == 0 {
            return Err(ConfigError::ZeroStride);
        }
        let format_max = fmt.max_address();
        if config.max_register > format_max {
            return Err(ConfigError::MaxRegisterTooLarge { max: config.max_register, format_max });
        }
        let val_mask = if val_bits == 32 { u32::MAX } else { (1u32 << val_bits) - 1 };
        let mut defaults = config.defaults.clone();
        for &(reg, val) in &defaults {
            let why = if reg > config.max_register {
                Some("above max_register")
            } else if reg % config.reg_stride != 0 {
                Some("not a multiple of the register stride")
            } else if val & !val_mask != 0 {
                Some("value wider than the register")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(ConfigError::BadDefault { reg, why });
            }
        }
        // Sorted, the last default given for a register wins.
        defaults.reverse();
        defaults.sort_by_key(|&(r, _)| r);
        defaults.dedup_by_key(|&mut (r, _)| r);

        // As u64: a full 32-bit map at stride 1 has 2^32 slots.
        let slots = u64::from(config.max_register / config.reg_stride) + 1;
        let cache = new_cache(config.cache, slots)?;
        let props = Props::compile(&config, slots);
        for &(reg, val) in &defaults {
            let idx = reg / config.reg_stride;
            if props.flags(idx) & VOLATILE == 0 {
                cache.set(idx, val, false);
            }
        }
        let stride = config.reg_stride;
        Ok(Regmap {
            val_bytes: fmt.val_bytes(),
            fmt,
            props,
            defaults,
            cache,
            mode: AtomicU8::new(0),
            io: Mutex::new(Io {
                bus: Box::new(bus),
                buf: Vec::new(),
                ends: Vec::new(),
                runs: Vec::new(),
                pairs: Vec::new(),
                vals: Vec::new(),
                messages: 0,
            }),
            stride,
            stride_shift: stride.is_power_of_two().then(|| stride.trailing_zeros()),
            max: config.max_register,
            val_mask,
        })
    }

    // ----- properties -------------------------------------------------------

    /// The last register address.
    pub fn max_register(&self) -> u32 {
        self.max
    }
    /// The register stride.
    pub fn stride(&self) -> u32 {
        self.stride
    }
    /// The wire format.
    pub fn format(&self) -> &dyn Format {
        &*self.fmt
    }
    /// The cache kind.
    pub fn cache_type(&self) -> CacheType {
        self.cache.kind()
    }
    /// The configured default of `reg`.
    pub fn default_of(&self, reg: u32) -> Option<u32> {
        self.defaults.binary_search_by_key(&reg, |&(r, _)| r).ok().map(|i| self.defaults[i].1)
    }
    /// Bus messages issued so far.
    pub fn bus_messages(&self) -> u64 {
        self.lock_io().messages
    }

    // ----- modes ------------------------------------------------------------

    /// Cache-only mode: writes go to the cache (marked dirty), reads that
    /// need the device fail with [`RegmapError::CacheOnly`].
    pub fn set_cache_only(&self, on: bool) {
        let _io = self.lock_io();
        self.set_mode(CACHE_ONLY, on);
    }
    /// Whether cache-only mode is on.
    pub fn is_cache_only(&self) -> bool {
        self.mode.load(Ordering::Relaxed) & CACHE_ONLY != 0
    }
    /// Cache bypass: every access goes to the device and the cache is
    /// neither read nor updated.
    pub fn set_cache_bypass(&self, on: bool) {
        let _io = self.lock_io();
        self.set_mode(BYPASS, on);
    }
    /// Whether cache bypass is on.
    pub fn is_cache_bypass(&self) -> bool {
        self.mode.load(Ordering::Relaxed) & BYPASS != 0
    }

    fn set_mode(&self, bit: u8, on: bool) {
        if on {
            self.mode.fetch_or(bit, Ordering::SeqCst);
        } else {
            self.mode.fetch_and(!bit, Ordering::SeqCst);
        }
    }

    // ----- single registers -------------------------------------------------

    /// Reads a register: from the cache when it holds it, else from the device.
    #[inline]
    pub fn read(&self, reg: u32) -> Result<u32, RegmapError> {
        let idx = self.slot(reg)?;
        let mode = self.mode.load(Ordering::Relaxed);
        let flags = self.props.flags(idx);
        if self.cacheable(flags, mode) {
            if let Some(v) = self.cache.get(idx) {
                return Ok(v);
            }
        }
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        self.read_locked(&mut io, idx, reg, mode)
    }

    /// Writes a register (to the cache only, in cache-only mode).
    pub fn write(&self, reg: u32, val: u32) -> Result<(), RegmapError> {
        let idx = self.slot(reg)?;
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        self.write_locked(&mut io, idx, reg, val, mode)
    }

    /// Read-modify-write of the bits in `mask`; no write when the value does
    /// not change. Returns whether it changed.
    pub fn update_bits(&self, reg: u32, mask: u32, val: u32) -> Result<bool, RegmapError> {
        let idx = self.slot(reg)?;
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        let old = self.read_locked(&mut io, idx, reg, mode)?;
        let new = (old & !mask) | (val & mask);
        if new == old {
            return Ok(false);
        }
        self.write_locked(&mut io, idx, reg, new, mode)?;
        Ok(true)
    }

    // ----- ranges -----------------------------------------------------------

    /// Reads `out.len()` adjacent registers from `reg`: from the cache when
    /// it holds them all, else from the device in as few commands as the
    /// format allows (dirty cached values win over the device's). On an
    /// error, as with `std::io::Read::read_exact`, `out` may have been
    /// partly written (values found in the cache, or read by commands that
    /// succeeded before the bus failed); the cache is left as it was.
    pub fn bulk_read(&self, reg: u32, out: &mut [u32]) -> Result<(), RegmapError> {
        let idx0 = self.range(reg, out.len())?;
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        self.bulk_read_locked(&mut io, reg, idx0, out, mode)
    }

    /// Writes adjacent registers from `reg` in one message.
    pub fn bulk_write(&self, reg: u32, vals: &[u32]) -> Result<(), RegmapError> {
        self.range(reg, vals.len())?;
        let mut io = self.lock_io();
        let mut pairs = std::mem::take(&mut io.pairs);
        pairs.clear();
        pairs.extend(vals.iter().enumerate().map(|(i, &v)| (reg + i as u32 * self.stride, v)));
        let r = self.write_pairs(&mut io, &pairs);
        io.pairs = pairs;
        r
    }

    /// Reads adjacent registers as wire-format bytes (`val_bytes` each, in
    /// the format's value byte order).
    pub fn raw_read(&self, reg: u32, bytes: &mut [u8]) -> Result<(), RegmapError> {
        let count = self.raw_count(reg, bytes.len())?;
        let idx0 = self.range(reg, count)?;
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        let mut vals = std::mem::take(&mut io.vals);
        vals.clear();
        vals.resize(count, 0);
        let r = self.bulk_read_locked(&mut io, reg, idx0, &mut vals, mode);
        if r.is_ok() {
            for (chunk, &v) in bytes.chunks_exact_mut(self.val_bytes).zip(&vals) {
                self.fmt.encode_val(v, chunk);
            }
        }
        io.vals = vals;
        r
    }

    /// Writes adjacent registers from wire-format bytes in one message.
    pub fn raw_write(&self, reg: u32, bytes: &[u8]) -> Result<(), RegmapError> {
        let count = self.raw_count(reg, bytes.len())?;
        self.range(reg, count)?;
        let mut io = self.lock_io();
        let mut pairs = std::mem::take(&mut io.pairs);
        pairs.clear();
        pairs.extend(
            bytes
                .chunks_exact(self.val_bytes)
                .enumerate()
                .map(|(i, b)| (reg + i as u32 * self.stride, self.fmt.decode_val(b))),
        );
        let r = self.write_pairs(&mut io, &pairs);
        io.pairs = pairs;
        r
    }

    /// Writes a sequence of `(register, value)` in order, coalesced into as
    /// few commands as the device allows (adjacent registers share one
    /// auto-incrementing command) and issued as **one** bus message.
    /// Everything is checked before anything is written.
    pub fn multi_write(&self, writes: &[(u32, u32)]) -> Result<(), RegmapError> {
        for &(reg, _) in writes {
            self.slot(reg)?;
        }
        let mut io = self.lock_io();
        self.write_pairs(&mut io, writes)
    }

    // ----- cache maintenance ------------------------------------------------

    /// Marks every cached register dirty (the device was reset to its
    /// defaults): the next [`sync`](Regmap::sync) restores those that differ.
    pub fn mark_dirty(&self) {
        let _io = self.lock_io();
        self.cache.mark_all_dirty();
    }

    /// Writes dirty cached registers whose value differs from their default
    /// (dirty ones at their default, and read-only ones that
    /// [`mark_dirty`](Regmap::mark_dirty) marked, are only marked clean), coalescing
    /// adjacent ones, submitted asynchronously where the bus allows, then
    /// waits for completion. Registers stay dirty if the bus fails.
    pub fn sync(&self) -> Result<SyncReport, RegmapError> {
        let mut io = self.lock_io();
        let mut pairs = std::mem::take(&mut io.pairs);
        pairs.clear();
        self.cache.collect_dirty(&mut pairs);
        let r = self.sync_pairs(&mut io, &mut pairs);
        io.pairs = pairs;
        r
    }

    fn sync_pairs(&self, io: &mut Io, pairs: &mut Vec<(u32, u32)>) -> Result<SyncReport, RegmapError> {
        let mut report = SyncReport::default();
        if pairs.is_empty() {
            return Ok(report);
        }
        if self.is_cache_only() {
            return Err(RegmapError::CacheOnly { reg: pairs[0].0 * self.stride });
        }
        pairs.retain(|&(idx, val)| {
            let reg = idx * self.stride;
            let at_default = self.default_of(reg) == Some(val);
            let needed = !at_default && self.props.flags(idx) & WRITEABLE != 0;
            if !needed {
                self.cache.clear_dirty(idx);
                report.skipped_at_default += usize::from(at_default);
            }
            needed
        });
        for p in pairs.iter_mut() {
            p.0 *= self.stride;
        }
        let first = pairs.first().map_or(0, |p| p.0);
        // On failure everything stays dirty: the cache holds what the device should.
        report.messages =
            self.write_windows(io, pairs, true).map_err(|(_, error)| RegmapError::Bus { reg: first, error })?;
        for &(reg, _) in pairs.iter() {
            self.cache.clear_dirty(reg / self.stride);
        }
        report.written = pairs.len();
        Ok(report)
    }

    /// Forgets the cached values of `first..=last` (the next reads go to the
    /// device). Dirty values in the region are discarded. A region whose
    /// `first` lies above its `last` is [`RegmapError::BadRegion`].
    pub fn drop_region(&self, first: u32, last: u32) -> Result<(), RegmapError> {
        let a = self.slot(first)?;
        let b = self.slot(last)?;
        if a > b {
            return Err(RegmapError::BadRegion { first, last });
        }
        let _io = self.lock_io();
        self.cache.drop_range(a, b);
        Ok(())
    }

    /// Every readable, non-precious register with its value (volatile ones
    /// fresh from the device, others from the cache where it holds them).
    /// Precious registers are never read. In cache-only mode, registers the
    /// cache does not hold are left out.
    pub fn dump(&self) -> Result<Vec<(u32, u32)>, RegmapError> {
        let mut io = self.lock_io();
        let mode = self.mode.load(Ordering::Relaxed);
        let mut out = Vec::new();
        for idx in 0..=self.max / self.stride {
            let flags = self.props.flags(idx);
            if flags & READABLE == 0 || flags & PRECIOUS != 0 {
                continue;
            }
            let reg = idx * self.stride;
            match self.read_locked(&mut io, idx, reg, mode) {
                Ok(v) => out.push((reg, v)),
                Err(RegmapError::CacheOnly { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    // ----- internals --------------------------------------------------------

    fn lock_io(&self) -> MutexGuard<'_, Io> {
        self.io.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Range and alignment check; the register's cache slot.
    #[inline]
    fn slot(&self, reg: u32) -> Result<u32, RegmapError> {
        if reg > self.max {
            return Err(RegmapError::OutOfRange { reg, max: self.max });
        }
        match self.stride_shift {
            Some(s) if reg & (self.stride - 1) == 0 => Ok(reg >> s),
            None if reg.is_multiple_of(self.stride) => Ok(reg / self.stride),
            _ => Err(RegmapError::Misaligned { reg, stride: self.stride }),
        }
    }

    /// Checks `count` adjacent registers from `reg`; the first slot.
    fn range(&self, reg: u32, count: usize) -> Result<u32, RegmapError> {
        if count == 0 {
            return Err(RegmapError::BadLength { reg, len: 0, multiple_of: 1 });
        }
        let idx0 = self.slot(reg)?;
        let last = u64::from(reg) + (count as u64 - 1) * u64::from(self.stride);
        if last > u64::from(self.max) {
            return Err(RegmapError::OutOfRange { reg: last.min(u64::from(u32::MAX)) as u32, max: self.max });
        }
        Ok(idx0)
    }

    fn raw_count(&self, reg: u32, len: usize) -> Result<usize, RegmapError> {
        if len == 0 || !len.is_multiple_of(self.val_bytes) {
            return Err(RegmapError::BadLength { reg, len, multiple_of: self.val_bytes });
        }
        Ok(len / self.val_bytes)
    }

    #[inline]
    fn cacheable(&self, flags: u8, mode: u8) -> bool {
        flags & VOLATILE == 0 && mode & BYPASS == 0
    }

    fn read_locked(&self, io: &mut Io, idx: u32, reg: u32, mode: u8) -> Result<u32, RegmapError> {
        let flags = self.props.flags(idx);
        let cacheable = self.cacheable(flags, mode);
        if cacheable {
            if let Some(v) = self.cache.get(idx) {
                return Ok(v);
            }
        }
        if flags & READABLE == 0 {
            return Err(RegmapError::NotReadable { reg });
        }
        if mode & CACHE_ONLY != 0 {
            return Err(RegmapError::CacheOnly { reg });
        }
        let mut v = [0u32];
        self.bus_read(io, reg, &mut v)?;
        if cacheable {
            self.cache.set(idx, v[0], false);
        }
        Ok(v[0])
    }

    fn check_write(&self, idx: u32, reg: u32, val: u32) -> Result<bool, RegmapError> {
        let flags = self.props.flags(idx);
        if flags & WRITEABLE == 0 {
            return Err(RegmapError::NotWriteable { reg });
        }
        if val & !self.val_mask != 0 {
            return Err(RegmapError::ValueTooWide { reg, value: val, bits: self.fmt.val_bits() });
        }
        Ok(self.cacheable(flags, self.mode.load(Ordering::Relaxed)))
    }

    fn write_locked(&self, io: &mut Io, idx: u32, reg: u32, val: u32, mode: u8) -> Result<(), RegmapError> {
        let cacheable = self.check_write(idx, reg, val)?;
        let keep = cacheable && self.cache.stores();
        if mode & CACHE_ONLY != 0 {
            if !keep {
                return Err(RegmapError::CacheOnly { reg });
            }
            self.cache.set(idx, val, true);
            return Ok(());
        }
        let mut data = [0u8; 4];
        let data = &mut data[..self.val_bytes];
        self.fmt.encode_val(val, data);
        let header = self.fmt.header(Op::Write, reg, data.len());
        let trailer = self.fmt.trailer(header.as_slice(), data);
        io.messages += 1;
        io.bus
            .write(&[header.as_slice(), data, trailer.as_slice()])
            .map_err(|error| RegmapError::Bus { reg, error })?;
        if keep {
            self.cache.set(idx, val, false);
        }
        Ok(())
    }

    /// Registers per command at `reg`: as many as the format allows and, if
    /// the bus limits its messages to `limit` bytes (its
    /// [`max_message_bytes`](RegmapBus::max_message_bytes), asked once per
    /// operation), as fit in one message with the command's header and
    /// trailer (at least one: a register that cannot fit gets the bus's `TooLong`).
    fn burst_regs(&self, limit: Option<usize>, op: Op, reg: u32) -> usize {
        if !self.fmt.auto_increment() {
            return 1;
        }
        let mut bytes = self.fmt.max_data_bytes(reg);
        if let Some(limit) = limit {
            let overhead = self.fmt.header(op, reg, self.val_bytes).as_slice().len() + self.fmt.trailer_len();
            bytes = bytes.min(limit.saturating_sub(overhead));
        }
        (bytes / self.val_bytes).max(1)
    }

    /// Reads `out.len()` adjacent registers from the device, one message per
    /// command, checking each command's trailer.
    fn bus_read(&self, io: &mut Io, reg: u32, out: &mut [u32]) -> Result<(), RegmapError> {
        let vb = self.val_bytes;
        let tl = self.fmt.trailer_len();
        let limit = io.bus.max_message_bytes();
        let mut done = 0;
        while done < out.len() {
            let r = reg + done as u32 * self.stride;
            let n = self.burst_regs(limit, Op::Read, r).min(out.len() - done);
            let header = self.fmt.header(Op::Read, r, n * vb);
            io.buf.clear();
            io.buf.resize(n * vb + tl, 0);
            io.messages += 1;
            io.bus
                .write_then_read(&[header.as_slice()], &mut io.buf)
                .map_err(|error| RegmapError::Bus { reg: r, error })?;
            let (data, trailer) = io.buf.split_at(n * vb);
            self.fmt.check_read(r, header.as_slice(), data, trailer)?;
            for (o, b) in out[done..done + n].iter_mut().zip(data.chunks_exact(vb)) {
                *o = self.fmt.decode_val(b);
            }
            done += n;
        }
        Ok(())
    }

    fn bulk_read_locked(&self, io: &mut Io, reg: u32, idx0: u32, out: &mut [u32], mode: u8) -> Result<(), RegmapError> {
        let slots = idx0..idx0 + out.len() as u32;
        // All from the cache?
        let mut from_cache = true;
        for (o, idx) in out.iter_mut().zip(slots.clone()) {
            match self.cacheable(self.props.flags(idx), mode).then(|| self.cache.get(idx)).flatten() {
                Some(v) => *o = v,
                None => {
                    from_cache = false;
                    break;
                }
            }
        }
        if from_cache {
            return Ok(());
        }
        for idx in slots.clone() {
            let r = idx * self.stride;
            if self.props.flags(idx) & READABLE == 0 {
                return Err(RegmapError::NotReadable { reg: r });
            }
            if mode & CACHE_ONLY != 0 {
                return Err(RegmapError::CacheOnly { reg: r });
            }
        }
        self.bus_read(io, reg, out)?;
        for (o, idx) in out.iter_mut().zip(slots) {
            if self.cacheable(self.props.flags(idx), mode) {
                if self.cache.is_dirty(idx) {
                    if let Some(v) = self.cache.get(idx) {
                        *o = v;
                    }
                } else {
                    self.cache.set(idx, *o, false);
                }
            }
        }
        Ok(())
    }

    /// Checks and writes `(reg, val)` pairs: to the cache in cache-only mode,
    /// else in one bus message, then updates the cache.
    fn write_pairs(&self, io: &mut Io, pairs: &[(u32, u32)]) -> Result<(), RegmapError> {
        if pairs.is_empty() {
            return Ok(());
        }
        let mode = self.mode.load(Ordering::Relaxed);
        for &(reg, val) in pairs {
            let idx = self.slot(reg)?;
            let keep = self.check_write(idx, reg, val)? && self.cache.stores();
            if mode & CACHE_ONLY != 0 && !keep {
                return Err(RegmapError::CacheOnly { reg });
            }
        }
        if mode & CACHE_ONLY != 0 {
            for &(reg, val) in pairs {
                self.cache.set(reg / self.stride, val, true);
            }
            return Ok(());
        }
        let sent = self.write_windows(io, pairs, false);
        // After a failure, the windows of the messages before it were applied:
        // their registers are cached as written, as on success.
        let applied = match sent {
            Ok(_) => pairs.len(),
            Err((0, _)) => 0,
            Err((windows, _)) => io.runs[windows - 1],
        };
        for &(reg, val) in &pairs[..applied] {
            let idx = reg / self.stride;
            if self.cacheable(self.props.flags(idx), mode) {
                self.cache.set(idx, val, false);
            }
        }
        sent.map(|_| ()).map_err(|(_, error)| RegmapError::Bus { reg: pairs[0].0, error })
    }

    /// Writes `pairs` as [`build_windows`](Regmap::build_windows) lays them
    /// out and [`send_windows`](Regmap::send_windows) sends them, asking the
    /// bus for its message limit once.
    fn write_windows(&self, io: &mut Io, pairs: &[(u32, u32)], submit: bool) -> Result<usize, (usize, BusError)> {
        let limit = io.bus.max_message_bytes();
        self.build_windows(io, pairs, limit);
        self.send_windows(io, limit, submit)
    }

    /// Lays out write commands for `pairs` (in order; runs of adjacent
    /// registers share one command, each fitting a message of `limit` bytes)
    /// in `io.buf`, window ends in `io.ends`, the pairs laid out up to each
    /// window in `io.runs`.
    fn build_windows(&self, io: &mut Io, pairs: &[(u32, u32)], limit: Option<usize>) {
        let vb = self.val_bytes;
        let (buf, ends, runs) = (&mut io.buf, &mut io.ends, &mut io.runs);
        buf.clear();
        ends.clear();
        runs.clear();
        let mut i = 0;
        while i < pairs.len() {
            let start = pairs[i].0;
            let max_n = self.burst_regs(limit, Op::Write, start);
            let mut n = 1;
            while i + n < pairs.len()
                && n < max_n
                && u64::from(pairs[i + n].0) == u64::from(start) + n as u64 * u64::from(self.stride)
            {
                n += 1;
            }
            let header = self.fmt.header(Op::Write, start, n * vb);
            let w0 = buf.len();
            buf.extend_from_slice(header.as_slice());
            let d0 = buf.len();
            buf.resize(d0 + n * vb, 0);
            for (chunk, &(_, v)) in buf[d0..].chunks_exact_mut(vb).zip(&pairs[i..i + n]) {
                self.fmt.encode_val(v, chunk);
            }
            let trailer = self.fmt.trailer(&buf[w0..d0], &buf[d0..]);
            buf.extend_from_slice(trailer.as_slice());
            ends.push(buf.len());
            i += n;
            runs.push(i);
        }
    }

    /// Sends the windows in `io` as few messages as the bus's size limit,
    /// `limit`, allows (asynchronously if `submit`, then waits, also when a
    /// submit is refused). Returns messages used; on failure, with the error,
    /// the windows of the messages written before it (0 if `submit`: those
    /// may or may not have been applied).
    fn send_windows(&self, io: &mut Io, limit: Option<usize>, submit: bool) -> Result<usize, (usize, BusError)> {
        let Io { bus, buf, ends, messages, .. } = io;
        let limit = limit.unwrap_or(usize::MAX);
        let mut sent = 0;
        let (mut first, mut start) = (0, 0);
        while first < ends.len() {
            let mut last = first;
            while last + 1 < ends.len() && ends[last + 1] - start <= limit {
                last += 1;
            }
            let part = &ends[first..=last];
            *messages += 1;
            sent += 1;
            // Even one window goes as a batch: a bus may keep a prepared
            // message per batch shape (the SPI adapter does).
            if submit {
                if let Err(e) = bus.submit_batch(Batch::part(buf, start, part)) {
                    // Wait for what was submitted before, so that its outcome is
                    // not left for a later call to report; the first error wins.
                    return Err((0, bus.complete().err().unwrap_or(e)));
                }
            } else {
                bus.write_batch(Batch::part(buf, start, part)).map_err(|e| (first, e))?;
            }
            start = ends[last];
            first = last + 1;
        }
        if submit {
            bus.complete().map_err(|e| (0, e))?;
        }
        Ok(sent)
    }
}

//! [`CpuLatencyRequest`]: a bound on how long an idle CPU may take to wake
//! up (the kernel's PM QoS request, `/dev/cpu_dma_latency`).
//!
//! While a request lives, the kernel keeps every CPU out of idle states
//! whose exit latency exceeds the bound. With a bound of 0 an idle CPU polls
//! instead of halting. On a board that saves the exit of a deep C-state
//! (tens of µs on some machines); on a virtual machine it saves far more:
//! a halted vCPU is handed back to the hypervisor, and the thread it must
//! wake (a lab interrupt, a driver's IRQ thread) runs only when the host
//! gives the vCPU back — counted as "steal" in `/proc/stat`.
//!
//! Nothing takes a request unless asked:
//! [`realtime::setup`](crate::realtime::setup) takes one for the process's
//! life; a program can hold one around a piece of work, as cyclictest does
//! for its measurement (wirespeed's lab benchmarks do the same).
//!
//! ```no_run
//! use wirespeed_time::CpuLatencyRequest;
//!
//! match CpuLatencyRequest::hold(0) {
//!     Ok(_awake) => { /* idle CPUs poll until `_awake` is dropped */ }
//!     Err(e) => eprintln!("idle CPUs may sleep: {e}"),
//! }
//! ```

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

use crate::realtime::explain;

/// The kernel's interface for the request.
const DEVICE: &str = "/dev/cpu_dma_latency";

/// A held PM QoS CPU-latency request; dropping it withdraws the request.
pub struct CpuLatencyRequest {
    file: File,
    max_us: u32,
}

impl fmt::Debug for CpuLatencyRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuLatencyRequest").field("max_us", &self.max_us).finish()
    }
}

impl CpuLatencyRequest {
    /// Asks that no CPU take longer than `max_us` µs to leave idle, until the
    /// returned request is dropped. Fails (changing nothing) where the kernel
    /// does not offer the interface or the process may not write it (it is
    /// usually root's); the error says which, and what usually fixes it.
    pub fn hold(max_us: u32) -> io::Result<CpuLatencyRequest> {
        let value = i32::try_from(max_us).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{max_us} µs: the bound must be at most {} µs", i32::MAX),
            )
        })?;
        let in_context = |e: io::Error| io::Error::new(e.kind(), format!("{DEVICE}: {}", explain(&e)));
        let mut file = OpenOptions::new().read(true).write(true).open(DEVICE).map_err(in_context)?;
        // The interface takes a binary 32-bit value in microseconds.
        file.write_all(&value.to_ne_bytes()).map_err(in_context)?;
        Ok(CpuLatencyRequest { file, max_us })
    }

    /// The bound this request asks for, in µs.
    pub fn max_us(&self) -> u32 {
        self.max_us
    }

    /// The bound the kernel enforces now: the smallest over every request
    /// held on the system, this one included.
    pub fn effective_us(&self) -> io::Result<u32> {
        Ok(u32::try_from(read_bound(&self.file)?).unwrap_or(0))
    }
}

/// The bound in force, as the device reports it (a binary 32-bit value).
/// It sits at offset 0; a plain read would advance the file's position and
/// find the end on the second call.
fn read_bound(device: &File) -> io::Result<i32> {
    let mut b = [0u8; 4];
    device.read_exact_at(&mut b, 0)?;
    Ok(i32::from_ne_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable_value() -> Option<i32> {
        read_bound(&File::open(DEVICE).ok()?).ok()
    }

    #[test]
    fn a_held_request_bounds_the_latency_until_dropped() {
        let before = readable_value();
        match CpuLatencyRequest::hold(0) {
            Ok(r) => {
                assert_eq!(r.max_us(), 0);
                assert_eq!(r.effective_us().unwrap(), 0);
                assert_eq!(r.effective_us().unwrap(), 0, "a second read sees the value too");
                assert_eq!(readable_value(), Some(0));
                drop(r);
                // Withdrawn: the system's bound is what it was before (the
                // default when no other program holds a request).
                assert_eq!(readable_value(), before);
            }
            // Without the device or the right to write it: a clear error.
            Err(e) => {
                let s = e.to_string();
                assert!(s.contains("cpu_dma_latency") || e.kind() == io::ErrorKind::NotFound, "{s}");
            }
        }
    }

    #[test]
    fn an_impossible_bound_is_refused_before_anything_is_opened() {
        let e = CpuLatencyRequest::hold(u32::MAX).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("at most"), "{e}");
    }
}

//! Target `shim_gpio`: the GPIO character device the shim serves
//! (`wirespeed_labhost::gpio`, uAPI v2 and v1): every chip ioctl (chip
//! info, line info and watches, v2 line requests, v1 handle and event
//! requests) and every ioctl of the files they create (get/set values,
//! set config), `read` of every file, and closing files, in any order, on
//! a chip of any size. The ioctl argument is any bytes (a zeroed struct
//! with byte edits, or raw bytes), so offsets, counts, flags, attributes,
//! debounce periods and buffer sizes are all drawn.
//!
//! Properties: every call returns a value or an errno, never panics; a
//! descriptor is installed only by a request ioctl that succeeds; a v2
//! request granted covers 1..=64 distinct lines of the chip; values set
//! on a request of plain outputs read back.

use crate::support::lab;
use arbitrary::{Result, Unstructured};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use wirespeed::linux::gpio_cdev::uapi::*;
use wirespeed_lab::gpio::GpioChipConfig;
use wirespeed_labhost::gpio::GpioChipNode;
use wirespeed_labhost::{Errno, FdInstaller, Node, NodeFile};

/// Keeps the files request ioctls install.
#[derive(Default)]
struct Fds {
    files: Mutex<Vec<Arc<dyn NodeFile>>>,
}

impl FdInstaller for Fds {
    fn install(&self, file: Arc<dyn NodeFile>, _cloexec: bool) -> std::result::Result<i32, Errno> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.push(file);
        Ok(99 + files.len() as i32)
    }
}

/// An ioctl argument: large and aligned enough for any GPIO uAPI struct.
#[repr(C, align(8))]
struct Arg([u8; 1024]);

const CHIP_REQUESTS: [u32; 9] = [
    GPIO_GET_CHIPINFO_IOCTL,
    GPIO_V2_GET_LINEINFO_IOCTL,
    GPIO_V2_GET_LINEINFO_WATCH_IOCTL,
    GPIO_GET_LINEINFO_IOCTL,
    GPIO_GET_LINEINFO_WATCH_IOCTL,
    GPIO_GET_LINEINFO_UNWATCH_IOCTL,
    GPIO_V2_GET_LINE_IOCTL,
    GPIO_GET_LINEHANDLE_IOCTL,
    GPIO_GET_LINEEVENT_IOCTL,
];
const LINE_REQUESTS: [u32; 6] = [
    GPIO_V2_LINE_GET_VALUES_IOCTL,
    GPIO_V2_LINE_SET_VALUES_IOCTL,
    GPIO_V2_LINE_SET_CONFIG_IOCTL,
    GPIOHANDLE_GET_LINE_VALUES_IOCTL,
    GPIOHANDLE_SET_LINE_VALUES_IOCTL,
    GPIOHANDLE_SET_CONFIG_IOCTL,
];

fn arg(u: &mut Unstructured<'_>) -> Result<Box<Arg>> {
    let mut a = Box::new(Arg([0; 1024]));
    if u.ratio(1u8, 8)? {
        u.fill_buffer(&mut a.0)?;
    } else {
        for _ in 0..u.int_in_range(0usize..=12)? {
            let pos = usize::from(u.arbitrary::<u16>()?) % a.0.len();
            a.0[pos] = u.arbitrary()?;
        }
    }
    Ok(a)
}

fn call(f: &Arc<dyn NodeFile>, request: u32, a: &mut Arg, fds: &Fds) -> std::result::Result<i32, Errno> {
    // SAFETY: `a` is 1024 writable bytes, more than any GPIO uAPI struct.
    unsafe { f.ioctl(u64::from(request), a.0.as_mut_ptr().cast::<c_void>(), fds) }
}

/// A v2 request's struct in `a` (as the node read it and wrote it back).
fn v2_request(a: &Arg) -> gpio_v2_line_request {
    // SAFETY: the buffer is larger than the struct, which is plain data.
    unsafe { std::ptr::read_unaligned(a.0.as_ptr().cast::<gpio_v2_line_request>()) }
}

fn check_v2(req: &gpio_v2_line_request, lines: u32, fd: i32, fds: &Fds) {
    let n = req.num_lines as usize;
    assert!((1..=GPIO_V2_LINES_MAX).contains(&n), "granted {n} lines");
    let offsets = &req.offsets[..n];
    assert!(offsets.iter().all(|&o| o < lines), "offsets {offsets:?} of {lines} lines");
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), n, "distinct offsets {offsets:?}");
    let flags = req.config.flags;
    let plain_output = flags == GPIO_V2_LINE_FLAG_OUTPUT && req.config.num_attrs == 0;
    if plain_output {
        let file = fds.files.lock().unwrap_or_else(|e| e.into_inner())[(fd - 100) as usize].clone();
        let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let bits = 0xA5A5_5A5A_F00F_0FF0u64 & mask;
        let mut lv = gpio_v2_line_values { bits, mask };
        // SAFETY: `lv` is the struct the request names.
        let set = unsafe {
            file.ioctl(u64::from(GPIO_V2_LINE_SET_VALUES_IOCTL), (&mut lv as *mut gpio_v2_line_values).cast(), fds)
        };
        assert_eq!(set, Ok(0), "set values of plain outputs");
        let mut back = gpio_v2_line_values { bits: 0, mask };
        // SAFETY: as above.
        let get = unsafe {
            file.ioctl(u64::from(GPIO_V2_LINE_GET_VALUES_IOCTL), (&mut back as *mut gpio_v2_line_values).cast(), fds)
        };
        assert_eq!(get, Ok(0), "get values");
        assert_eq!(back.bits & mask, bits, "outputs read back");
    }
}

fn step(u: &mut Unstructured<'_>, chip: &Arc<dyn NodeFile>, fds: &Fds, lines: u32) -> Result<()> {
    let open = fds.files.lock().unwrap_or_else(|e| e.into_inner()).len();
    match u.int_in_range(0u8..=9)? {
        0..=4 => {
            let request = if u.ratio(1u8, 32)? { u.arbitrary()? } else { *u.choose(&CHIP_REQUESTS)? };
            let mut a = arg(u)?;
            let result = call(chip, request, &mut a, fds);
            let now_open = fds.files.lock().unwrap_or_else(|e| e.into_inner()).len();
            let creates =
                matches!(request, GPIO_V2_GET_LINE_IOCTL | GPIO_GET_LINEHANDLE_IOCTL | GPIO_GET_LINEEVENT_IOCTL);
            assert_eq!(
                now_open - open,
                usize::from(creates && result.is_ok()),
                "descriptors installed by {request:#x}"
            );
            if request == GPIO_V2_GET_LINE_IOCTL && result.is_ok() {
                let req = v2_request(&a);
                check_v2(&req, lines, req.fd, fds);
            }
        }
        5..=7 if open > 0 => {
            let file = fds.files.lock().unwrap_or_else(|e| e.into_inner())[u.choose_index(open)?].clone();
            let request = if u.ratio(1u8, 32)? { u.arbitrary()? } else { *u.choose(&LINE_REQUESTS)? };
            let mut a = arg(u)?;
            let _ = call(&file, request, &mut a, fds);
        }
        8 => {
            let n = u.int_in_range(0usize..=512)?;
            let mut buf = vec![0u8; n];
            let files = fds.files.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let file = if open > 0 && u.arbitrary()? { &files[u.choose_index(open)?] } else { chip };
            if let Ok(got) = file.read(&mut buf, true) {
                assert!(got <= n, "read {got} of {n}");
            }
            let _ = file.write(&buf);
        }
        _ if open > 0 => {
            // Close: the files stay in the table as released slots would not; replace by the chip.
            let i = u.choose_index(open)?;
            fds.files.lock().unwrap_or_else(|e| e.into_inner())[i] = chip.clone();
        }
        _ => {}
    }
    Ok(())
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(lines) = u.int_in_range(1u32..=80) else { return };
    let chip = lab().gpio_chip(GpioChipConfig { name: "gpiochip0".into(), label: "fuzz".into(), lines });
    let names = (0..lines).map(|i| (i % 3 == 0).then(|| format!("L{i}"))).collect();
    let node = GpioChipNode::new(chip, 0, names);
    let file = node.open(libc::O_RDWR).expect("open");
    let fds = Fds::default();
    while !u.is_empty() && step(&mut u, &file, &fds, lines).is_ok() {}
}

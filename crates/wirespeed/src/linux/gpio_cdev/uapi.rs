//! The GPIO character device uAPI (`include/uapi/linux/gpio.h`), v2 and the
//! deprecated v1 that libgpiod 1.x still speaks: the structs as `#[repr(C)]`
//! and the ioctl numbers computed as the kernel's `_IOR`/`_IOWR` macros do.
//! Tests pin every size and field offset to the header's values.
#![allow(non_camel_case_types, missing_docs, missing_debug_implementations)]

/// Size of name and label arrays.
pub const GPIO_MAX_NAME_SIZE: usize = 32;
/// Most lines in one request.
pub const GPIO_V2_LINES_MAX: usize = 64;
/// Most configuration attributes in one line config.
pub const GPIO_V2_LINE_NUM_ATTRS_MAX: usize = 10;

pub const GPIO_V2_LINE_FLAG_USED: u64 = 1 << 0;
pub const GPIO_V2_LINE_FLAG_ACTIVE_LOW: u64 = 1 << 1;
pub const GPIO_V2_LINE_FLAG_INPUT: u64 = 1 << 2;
pub const GPIO_V2_LINE_FLAG_OUTPUT: u64 = 1 << 3;
pub const GPIO_V2_LINE_FLAG_EDGE_RISING: u64 = 1 << 4;
pub const GPIO_V2_LINE_FLAG_EDGE_FALLING: u64 = 1 << 5;
pub const GPIO_V2_LINE_FLAG_OPEN_DRAIN: u64 = 1 << 6;
pub const GPIO_V2_LINE_FLAG_OPEN_SOURCE: u64 = 1 << 7;
pub const GPIO_V2_LINE_FLAG_BIAS_PULL_UP: u64 = 1 << 8;
pub const GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN: u64 = 1 << 9;
pub const GPIO_V2_LINE_FLAG_BIAS_DISABLED: u64 = 1 << 10;
pub const GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME: u64 = 1 << 11;
pub const GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE: u64 = 1 << 12;

pub const GPIO_V2_LINE_ATTR_ID_FLAGS: u32 = 1;
pub const GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES: u32 = 2;
pub const GPIO_V2_LINE_ATTR_ID_DEBOUNCE: u32 = 3;

pub const GPIO_V2_LINE_EVENT_RISING_EDGE: u32 = 1;
pub const GPIO_V2_LINE_EVENT_FALLING_EDGE: u32 = 2;

pub const GPIO_V2_LINE_CHANGED_REQUESTED: u32 = 1;
pub const GPIO_V2_LINE_CHANGED_RELEASED: u32 = 2;
pub const GPIO_V2_LINE_CHANGED_CONFIG: u32 = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpiochip_info {
    pub name: [u8; GPIO_MAX_NAME_SIZE],
    pub label: [u8; GPIO_MAX_NAME_SIZE],
    pub lines: u32,
}

#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct gpio_v2_line_values {
    pub bits: u64,
    pub mask: u64,
}

/// The attribute's value: `flags`, `values` (both `__aligned_u64`) or
/// `debounce_period_us` (`__u32`, at the union's start on any endianness).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub union gpio_v2_line_attribute_value {
    pub flags: u64,
    pub values: u64,
    pub debounce_period_us: u32,
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_attribute {
    pub id: u32,
    pub padding: u32,
    pub u: gpio_v2_line_attribute_value,
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_config_attribute {
    pub attr: gpio_v2_line_attribute,
    pub mask: u64,
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_config {
    pub flags: u64,
    pub num_attrs: u32,
    pub padding: [u32; 5],
    pub attrs: [gpio_v2_line_config_attribute; GPIO_V2_LINE_NUM_ATTRS_MAX],
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_request {
    pub offsets: [u32; GPIO_V2_LINES_MAX],
    pub consumer: [u8; GPIO_MAX_NAME_SIZE],
    pub config: gpio_v2_line_config,
    pub num_lines: u32,
    pub event_buffer_size: u32,
    pub padding: [u32; 5],
    pub fd: i32,
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_info {
    pub name: [u8; GPIO_MAX_NAME_SIZE],
    pub consumer: [u8; GPIO_MAX_NAME_SIZE],
    pub offset: u32,
    pub num_attrs: u32,
    pub flags: u64,
    pub attrs: [gpio_v2_line_attribute; GPIO_V2_LINE_NUM_ATTRS_MAX],
    pub padding: [u32; 4],
}

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct gpio_v2_line_info_changed {
    pub info: gpio_v2_line_info,
    pub timestamp_ns: u64,
    pub event_type: u32,
    pub padding: [u32; 5],
}

#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default)]
pub struct gpio_v2_line_event {
    pub timestamp_ns: u64,
    pub id: u32,
    pub offset: u32,
    pub seqno: u32,
    pub line_seqno: u32,
    pub padding: [u32; 6],
}

// ABI v1 (deprecated in the kernel, still what libgpiod 1.x uses).

/// Most lines in one v1 handle request.
pub const GPIOHANDLES_MAX: usize = 64;

pub const GPIOLINE_FLAG_KERNEL: u32 = 1 << 0;
pub const GPIOLINE_FLAG_IS_OUT: u32 = 1 << 1;
pub const GPIOLINE_FLAG_ACTIVE_LOW: u32 = 1 << 2;
pub const GPIOLINE_FLAG_OPEN_DRAIN: u32 = 1 << 3;
pub const GPIOLINE_FLAG_OPEN_SOURCE: u32 = 1 << 4;
pub const GPIOLINE_FLAG_BIAS_PULL_UP: u32 = 1 << 5;
pub const GPIOLINE_FLAG_BIAS_PULL_DOWN: u32 = 1 << 6;
pub const GPIOLINE_FLAG_BIAS_DISABLE: u32 = 1 << 7;

pub const GPIOLINE_CHANGED_REQUESTED: u32 = 1;
pub const GPIOLINE_CHANGED_RELEASED: u32 = 2;
pub const GPIOLINE_CHANGED_CONFIG: u32 = 3;

pub const GPIOHANDLE_REQUEST_INPUT: u32 = 1 << 0;
pub const GPIOHANDLE_REQUEST_OUTPUT: u32 = 1 << 1;
pub const GPIOHANDLE_REQUEST_ACTIVE_LOW: u32 = 1 << 2;
pub const GPIOHANDLE_REQUEST_OPEN_DRAIN: u32 = 1 << 3;
pub const GPIOHANDLE_REQUEST_OPEN_SOURCE: u32 = 1 << 4;
pub const GPIOHANDLE_REQUEST_BIAS_PULL_UP: u32 = 1 << 5;
pub const GPIOHANDLE_REQUEST_BIAS_PULL_DOWN: u32 = 1 << 6;
pub const GPIOHANDLE_REQUEST_BIAS_DISABLE: u32 = 1 << 7;

pub const GPIOEVENT_REQUEST_RISING_EDGE: u32 = 1 << 0;
pub const GPIOEVENT_REQUEST_FALLING_EDGE: u32 = 1 << 1;
pub const GPIOEVENT_REQUEST_BOTH_EDGES: u32 = GPIOEVENT_REQUEST_RISING_EDGE | GPIOEVENT_REQUEST_FALLING_EDGE;

pub const GPIOEVENT_EVENT_RISING_EDGE: u32 = 0x01;
pub const GPIOEVENT_EVENT_FALLING_EDGE: u32 = 0x02;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpioline_info {
    pub line_offset: u32,
    pub flags: u32,
    pub name: [u8; GPIO_MAX_NAME_SIZE],
    pub consumer: [u8; GPIO_MAX_NAME_SIZE],
}

/// `timestamp` is a plain `__u64` here: on 64-bit targets the struct is
/// 8-aligned and the 72-byte `info` leaves no hole before it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpioline_info_changed {
    pub info: gpioline_info,
    pub timestamp: u64,
    pub event_type: u32,
    pub padding: [u32; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpiohandle_request {
    pub lineoffsets: [u32; GPIOHANDLES_MAX],
    pub flags: u32,
    pub default_values: [u8; GPIOHANDLES_MAX],
    pub consumer_label: [u8; GPIO_MAX_NAME_SIZE],
    pub lines: u32,
    pub fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpiohandle_config {
    pub flags: u32,
    pub default_values: [u8; GPIOHANDLES_MAX],
    pub padding: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpiohandle_data {
    pub values: [u8; GPIOHANDLES_MAX],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gpioevent_request {
    pub lineoffset: u32,
    pub handleflags: u32,
    pub eventflags: u32,
    pub consumer_label: [u8; GPIO_MAX_NAME_SIZE],
    pub fd: i32,
}

/// As the header declares it: 16 bytes where `u64` is 8-aligned (the tail
/// is implicit padding), 12 on i386.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gpioevent_data {
    pub timestamp: u64,
    pub id: u32,
}

/// An all-zero value of a uAPI struct (the kernel wants padding zeroed).
pub fn zeroed<T: Copy>() -> T {
    // SAFETY: only instantiated with the plain-old-data structs above, for
    // which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

// ioctl number encoding (include/uapi/asm-generic/ioctl.h, and the
// alternative layout of mips, powerpc and sparc).
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
mod enc {
    pub const SIZEBITS: u32 = 13;
    pub const NONE: u32 = 1;
    pub const READ: u32 = 2;
    pub const WRITE: u32 = 4;
}
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
mod enc {
    pub const SIZEBITS: u32 = 14;
    pub const NONE: u32 = 0;
    pub const READ: u32 = 2;
    pub const WRITE: u32 = 1;
}

const NRSHIFT: u32 = 0;
const TYPESHIFT: u32 = 8;
const SIZESHIFT: u32 = 16;
const DIRSHIFT: u32 = SIZESHIFT + enc::SIZEBITS;

/// `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    assert!(size < (1 << enc::SIZEBITS), "ioctl argument too large");
    (dir << DIRSHIFT) | (ty << TYPESHIFT) | (nr << NRSHIFT) | ((size as u32) << SIZESHIFT)
}

/// `_IOR(type, nr, T)`.
pub const fn ior<T>(ty: u32, nr: u32) -> u32 {
    ioc(enc::READ, ty, nr, std::mem::size_of::<T>())
}

/// `_IOWR(type, nr, T)`.
pub const fn iowr<T>(ty: u32, nr: u32) -> u32 {
    ioc(enc::READ | enc::WRITE, ty, nr, std::mem::size_of::<T>())
}

/// `_IO(type, nr)` direction, for completeness of the encoding tests.
pub const IOC_NONE: u32 = enc::NONE;

const GPIO_IOC: u32 = 0xB4;
pub const GPIO_GET_CHIPINFO_IOCTL: u32 = ior::<gpiochip_info>(GPIO_IOC, 0x01);
pub const GPIO_V2_GET_LINEINFO_IOCTL: u32 = iowr::<gpio_v2_line_info>(GPIO_IOC, 0x05);
pub const GPIO_V2_GET_LINEINFO_WATCH_IOCTL: u32 = iowr::<gpio_v2_line_info>(GPIO_IOC, 0x06);
pub const GPIO_V2_GET_LINE_IOCTL: u32 = iowr::<gpio_v2_line_request>(GPIO_IOC, 0x07);
pub const GPIO_GET_LINEINFO_UNWATCH_IOCTL: u32 = iowr::<u32>(GPIO_IOC, 0x0C);
pub const GPIO_V2_LINE_SET_CONFIG_IOCTL: u32 = iowr::<gpio_v2_line_config>(GPIO_IOC, 0x0D);
pub const GPIO_V2_LINE_GET_VALUES_IOCTL: u32 = iowr::<gpio_v2_line_values>(GPIO_IOC, 0x0E);
pub const GPIO_V2_LINE_SET_VALUES_IOCTL: u32 = iowr::<gpio_v2_line_values>(GPIO_IOC, 0x0F);

pub const GPIO_GET_LINEINFO_IOCTL: u32 = iowr::<gpioline_info>(GPIO_IOC, 0x02);
pub const GPIO_GET_LINEHANDLE_IOCTL: u32 = iowr::<gpiohandle_request>(GPIO_IOC, 0x03);
pub const GPIO_GET_LINEEVENT_IOCTL: u32 = iowr::<gpioevent_request>(GPIO_IOC, 0x04);
pub const GPIOHANDLE_GET_LINE_VALUES_IOCTL: u32 = iowr::<gpiohandle_data>(GPIO_IOC, 0x08);
pub const GPIOHANDLE_SET_LINE_VALUES_IOCTL: u32 = iowr::<gpiohandle_data>(GPIO_IOC, 0x09);
pub const GPIOHANDLE_SET_CONFIG_IOCTL: u32 = iowr::<gpiohandle_config>(GPIO_IOC, 0x0A);
pub const GPIO_GET_LINEINFO_WATCH_IOCTL: u32 = iowr::<gpioline_info>(GPIO_IOC, 0x0B);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // Expected values worked out from include/uapi/linux/gpio.h (every
    // array length and explicit padding field as the header declares them).

    #[test]
    fn gpiochip_info_layout() {
        assert_eq!(size_of::<gpiochip_info>(), 68);
        assert_eq!(offset_of!(gpiochip_info, name), 0);
        assert_eq!(offset_of!(gpiochip_info, label), 32);
        assert_eq!(offset_of!(gpiochip_info, lines), 64);
    }

    #[test]
    fn line_values_layout() {
        assert_eq!(size_of::<gpio_v2_line_values>(), 16);
        assert_eq!(offset_of!(gpio_v2_line_values, bits), 0);
        assert_eq!(offset_of!(gpio_v2_line_values, mask), 8);
    }

    #[test]
    fn attribute_layouts() {
        assert_eq!(size_of::<gpio_v2_line_attribute_value>(), 8);
        assert_eq!(size_of::<gpio_v2_line_attribute>(), 16);
        assert_eq!(align_of::<gpio_v2_line_attribute>(), 8);
        assert_eq!(offset_of!(gpio_v2_line_attribute, id), 0);
        assert_eq!(offset_of!(gpio_v2_line_attribute, padding), 4);
        assert_eq!(offset_of!(gpio_v2_line_attribute, u), 8);
        assert_eq!(size_of::<gpio_v2_line_config_attribute>(), 24);
        assert_eq!(offset_of!(gpio_v2_line_config_attribute, attr), 0);
        assert_eq!(offset_of!(gpio_v2_line_config_attribute, mask), 16);
        // The u32 member of the union sits at the union's first byte.
        let mut a: gpio_v2_line_attribute = zeroed();
        a.u.debounce_period_us = 0x1234_5678;
        let base = std::ptr::addr_of!(a) as usize;
        let field = std::ptr::addr_of!(a.u.debounce_period_us) as usize;
        assert_eq!(field - base, 8);
    }

    #[test]
    fn line_config_layout() {
        assert_eq!(size_of::<gpio_v2_line_config>(), 272);
        assert_eq!(offset_of!(gpio_v2_line_config, flags), 0);
        assert_eq!(offset_of!(gpio_v2_line_config, num_attrs), 8);
        assert_eq!(offset_of!(gpio_v2_line_config, padding), 12);
        assert_eq!(offset_of!(gpio_v2_line_config, attrs), 32);
    }

    #[test]
    fn line_request_layout() {
        assert_eq!(size_of::<gpio_v2_line_request>(), 592);
        assert_eq!(offset_of!(gpio_v2_line_request, offsets), 0);
        assert_eq!(offset_of!(gpio_v2_line_request, consumer), 256);
        assert_eq!(offset_of!(gpio_v2_line_request, config), 288);
        assert_eq!(offset_of!(gpio_v2_line_request, num_lines), 560);
        assert_eq!(offset_of!(gpio_v2_line_request, event_buffer_size), 564);
        assert_eq!(offset_of!(gpio_v2_line_request, padding), 568);
        assert_eq!(offset_of!(gpio_v2_line_request, fd), 588);
    }

    #[test]
    fn line_info_layout() {
        assert_eq!(size_of::<gpio_v2_line_info>(), 256);
        assert_eq!(offset_of!(gpio_v2_line_info, name), 0);
        assert_eq!(offset_of!(gpio_v2_line_info, consumer), 32);
        assert_eq!(offset_of!(gpio_v2_line_info, offset), 64);
        assert_eq!(offset_of!(gpio_v2_line_info, num_attrs), 68);
        assert_eq!(offset_of!(gpio_v2_line_info, flags), 72);
        assert_eq!(offset_of!(gpio_v2_line_info, attrs), 80);
        assert_eq!(offset_of!(gpio_v2_line_info, padding), 240);
        assert_eq!(size_of::<gpio_v2_line_info_changed>(), 288);
        assert_eq!(offset_of!(gpio_v2_line_info_changed, info), 0);
        assert_eq!(offset_of!(gpio_v2_line_info_changed, timestamp_ns), 256);
        assert_eq!(offset_of!(gpio_v2_line_info_changed, event_type), 264);
        assert_eq!(offset_of!(gpio_v2_line_info_changed, padding), 268);
    }

    #[test]
    fn line_event_layout() {
        assert_eq!(size_of::<gpio_v2_line_event>(), 48);
        assert_eq!(offset_of!(gpio_v2_line_event, timestamp_ns), 0);
        assert_eq!(offset_of!(gpio_v2_line_event, id), 8);
        assert_eq!(offset_of!(gpio_v2_line_event, offset), 12);
        assert_eq!(offset_of!(gpio_v2_line_event, seqno), 16);
        assert_eq!(offset_of!(gpio_v2_line_event, line_seqno), 20);
        assert_eq!(offset_of!(gpio_v2_line_event, padding), 24);
    }

    #[test]
    fn v1_line_info_layouts() {
        assert_eq!(size_of::<gpioline_info>(), 72);
        assert_eq!(offset_of!(gpioline_info, line_offset), 0);
        assert_eq!(offset_of!(gpioline_info, flags), 4);
        assert_eq!(offset_of!(gpioline_info, name), 8);
        assert_eq!(offset_of!(gpioline_info, consumer), 40);
        assert_eq!(size_of::<gpioline_info_changed>(), 104);
        assert_eq!(offset_of!(gpioline_info_changed, info), 0);
        assert_eq!(offset_of!(gpioline_info_changed, timestamp), 72);
        assert_eq!(offset_of!(gpioline_info_changed, event_type), 80);
        assert_eq!(offset_of!(gpioline_info_changed, padding), 84);
    }

    #[test]
    fn v1_handle_layouts() {
        assert_eq!(size_of::<gpiohandle_request>(), 364);
        assert_eq!(offset_of!(gpiohandle_request, lineoffsets), 0);
        assert_eq!(offset_of!(gpiohandle_request, flags), 256);
        assert_eq!(offset_of!(gpiohandle_request, default_values), 260);
        assert_eq!(offset_of!(gpiohandle_request, consumer_label), 324);
        assert_eq!(offset_of!(gpiohandle_request, lines), 356);
        assert_eq!(offset_of!(gpiohandle_request, fd), 360);
        assert_eq!(size_of::<gpiohandle_config>(), 84);
        assert_eq!(offset_of!(gpiohandle_config, flags), 0);
        assert_eq!(offset_of!(gpiohandle_config, default_values), 4);
        assert_eq!(offset_of!(gpiohandle_config, padding), 68);
        assert_eq!(size_of::<gpiohandle_data>(), 64);
        assert_eq!(offset_of!(gpiohandle_data, values), 0);
    }

    #[test]
    fn v1_event_layouts() {
        assert_eq!(size_of::<gpioevent_request>(), 48);
        assert_eq!(offset_of!(gpioevent_request, lineoffset), 0);
        assert_eq!(offset_of!(gpioevent_request, handleflags), 4);
        assert_eq!(offset_of!(gpioevent_request, eventflags), 8);
        assert_eq!(offset_of!(gpioevent_request, consumer_label), 12);
        assert_eq!(offset_of!(gpioevent_request, fd), 44);
        let expected = if cfg!(target_pointer_width = "64") { 16 } else { size_of::<gpioevent_data>() };
        assert_eq!(size_of::<gpioevent_data>(), expected);
        assert_eq!(offset_of!(gpioevent_data, timestamp), 0);
        assert_eq!(offset_of!(gpioevent_data, id), 8);
    }

    #[test]
    fn flag_values_match_the_header() {
        assert_eq!(GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME, 0x800);
        assert_eq!(GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE, 0x1000);
        assert_eq!(
            (GPIO_V2_LINE_CHANGED_REQUESTED, GPIO_V2_LINE_CHANGED_RELEASED, GPIO_V2_LINE_CHANGED_CONFIG),
            (1, 2, 3)
        );
        assert_eq!(
            [
                GPIOLINE_FLAG_KERNEL,
                GPIOLINE_FLAG_IS_OUT,
                GPIOLINE_FLAG_ACTIVE_LOW,
                GPIOLINE_FLAG_OPEN_DRAIN,
                GPIOLINE_FLAG_OPEN_SOURCE,
                GPIOLINE_FLAG_BIAS_PULL_UP,
                GPIOLINE_FLAG_BIAS_PULL_DOWN,
                GPIOLINE_FLAG_BIAS_DISABLE
            ],
            [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80]
        );
        assert_eq!(
            [
                GPIOHANDLE_REQUEST_INPUT,
                GPIOHANDLE_REQUEST_OUTPUT,
                GPIOHANDLE_REQUEST_ACTIVE_LOW,
                GPIOHANDLE_REQUEST_OPEN_DRAIN,
                GPIOHANDLE_REQUEST_OPEN_SOURCE,
                GPIOHANDLE_REQUEST_BIAS_PULL_UP,
                GPIOHANDLE_REQUEST_BIAS_PULL_DOWN,
                GPIOHANDLE_REQUEST_BIAS_DISABLE
            ],
            [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80]
        );
        assert_eq!(
            (GPIOEVENT_REQUEST_RISING_EDGE, GPIOEVENT_REQUEST_FALLING_EDGE, GPIOEVENT_REQUEST_BOTH_EDGES),
            (1, 2, 3)
        );
        assert_eq!((GPIOEVENT_EVENT_RISING_EDGE, GPIOEVENT_EVENT_FALLING_EDGE), (1, 2));
        assert_eq!(GPIOHANDLES_MAX, 64);
    }

    /// The numbers the kernel headers produce on the generic encoding
    /// (x86, arm, arm64, riscv): dir << 30 | size << 16 | 0xB4 << 8 | nr.
    #[cfg(not(any(
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "sparc",
        target_arch = "sparc64"
    )))]
    #[test]
    fn ioctl_numbers_match_the_kernel() {
        assert_eq!(GPIO_GET_CHIPINFO_IOCTL, 0x8044_B401);
        assert_eq!(GPIO_V2_GET_LINEINFO_IOCTL, 0xC100_B405);
        assert_eq!(GPIO_V2_GET_LINEINFO_WATCH_IOCTL, 0xC100_B406);
        assert_eq!(GPIO_V2_GET_LINE_IOCTL, 0xC250_B407);
        assert_eq!(GPIO_GET_LINEINFO_UNWATCH_IOCTL, 0xC004_B40C);
        assert_eq!(GPIO_V2_LINE_SET_CONFIG_IOCTL, 0xC110_B40D);
        assert_eq!(GPIO_V2_LINE_GET_VALUES_IOCTL, 0xC010_B40E);
        assert_eq!(GPIO_V2_LINE_SET_VALUES_IOCTL, 0xC010_B40F);
        assert_eq!(GPIO_GET_LINEINFO_IOCTL, 0xC048_B402);
        assert_eq!(GPIO_GET_LINEHANDLE_IOCTL, 0xC16C_B403);
        assert_eq!(GPIO_GET_LINEEVENT_IOCTL, 0xC030_B404);
        assert_eq!(GPIOHANDLE_GET_LINE_VALUES_IOCTL, 0xC040_B408);
        assert_eq!(GPIOHANDLE_SET_LINE_VALUES_IOCTL, 0xC040_B409);
        assert_eq!(GPIOHANDLE_SET_CONFIG_IOCTL, 0xC054_B40A);
        assert_eq!(GPIO_GET_LINEINFO_WATCH_IOCTL, 0xC048_B40B);
        assert_eq!(IOC_NONE, 0);
    }

    #[test]
    fn ioctl_fields_decode_back() {
        let n = GPIO_V2_GET_LINE_IOCTL;
        assert_eq!(n & 0xFF, 0x07);
        assert_eq!((n >> 8) & 0xFF, 0xB4);
        assert_eq!((n >> 16) & ((1 << enc::SIZEBITS) - 1), 592);
        assert_eq!(n >> DIRSHIFT, enc::READ | enc::WRITE);
    }
}

//! Flag translation, as gpiolib-cdev does it: which v2 line flags and v1
//! handle/event flags a request may carry, v1 flags as v2 ones, the settings
//! a v2 line config gives each line, v2 line info as v1, and the lab
//! [`LineSetup`] a line's flags ask for.

use crate::node::Errno;
use wirespeed::linux::gpio_cdev::uapi::*;
use wirespeed_lab::gpio::{Drive, EdgeDetect, LineSetup, Pull};

pub(crate) const DIRECTION_FLAGS: u64 = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_OUTPUT;
pub(crate) const EDGE_FLAGS: u64 = GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING;
const DRIVE_FLAGS: u64 = GPIO_V2_LINE_FLAG_OPEN_DRAIN | GPIO_V2_LINE_FLAG_OPEN_SOURCE;
const BIAS_FLAGS: u64 =
    GPIO_V2_LINE_FLAG_BIAS_PULL_UP | GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN | GPIO_V2_LINE_FLAG_BIAS_DISABLED;
const VALID_FLAGS: u64 = GPIO_V2_LINE_FLAG_ACTIVE_LOW
    | DIRECTION_FLAGS
    | DRIVE_FLAGS
    | EDGE_FLAGS
    | GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME
    | GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE
    | BIAS_FLAGS;

const HANDLE_VALID_FLAGS: u32 = GPIOHANDLE_REQUEST_INPUT
    | GPIOHANDLE_REQUEST_OUTPUT
    | GPIOHANDLE_REQUEST_ACTIVE_LOW
    | GPIOHANDLE_REQUEST_OPEN_DRAIN
    | GPIOHANDLE_REQUEST_OPEN_SOURCE
    | GPIOHANDLE_REQUEST_BIAS_PULL_UP
    | GPIOHANDLE_REQUEST_BIAS_PULL_DOWN
    | GPIOHANDLE_REQUEST_BIAS_DISABLE;

/// What a request asks of one line (v2 flags, whatever the ABI).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LineConfig {
    pub flags: u64,
    /// Logical output value (before active-low).
    pub value: bool,
    /// Debounce period; 0: none.
    pub debounce_us: u32,
}

/// `gpio_v2_line_flags_validate`: this kernel has no hardware timestamp
/// engine, so `EVENT_CLOCK_HTE` is `EOPNOTSUPP`.
pub(crate) fn validate_v2_flags(flags: u64) -> Result<(), Errno> {
    let has = |f: u64| flags & f != 0;
    if flags & !VALID_FLAGS != 0 {
        return Err(libc::EINVAL);
    }
    if has(GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE) {
        return Err(libc::EOPNOTSUPP);
    }
    let invalid = (has(GPIO_V2_LINE_FLAG_INPUT) && has(GPIO_V2_LINE_FLAG_OUTPUT))
        || (has(EDGE_FLAGS) && !has(GPIO_V2_LINE_FLAG_INPUT))
        || (has(GPIO_V2_LINE_FLAG_OPEN_DRAIN) && has(GPIO_V2_LINE_FLAG_OPEN_SOURCE))
        || (has(DRIVE_FLAGS) && !has(GPIO_V2_LINE_FLAG_OUTPUT))
        || (has(BIAS_FLAGS) && !has(DIRECTION_FLAGS))
        || (flags & BIAS_FLAGS).count_ones() > 1;
    if invalid {
        Err(libc::EINVAL)
    } else {
        Ok(())
    }
}

/// The first attribute with `id` whose mask has line `idx` (lowest index wins).
fn attr_for(lc: &gpio_v2_line_config, idx: usize, id: u32) -> Option<&gpio_v2_line_attribute> {
    let n = (lc.num_attrs as usize).min(GPIO_V2_LINE_NUM_ATTRS_MAX);
    lc.attrs[..n].iter().find(|a| a.attr.id == id && a.mask & (1u64 << idx) != 0).map(|a| &a.attr)
}

/// `gpio_v2_line_config_validate`.
pub(crate) fn validate_v2_config(lc: &gpio_v2_line_config, num_lines: usize) -> Result<(), Errno> {
    if lc.num_attrs as usize > GPIO_V2_LINE_NUM_ATTRS_MAX || lc.padding != [0; 5] {
        return Err(libc::EINVAL);
    }
    for idx in 0..num_lines {
        let flags = v2_line_config(lc, idx).flags;
        validate_v2_flags(flags)?;
        if attr_for(lc, idx, GPIO_V2_LINE_ATTR_ID_DEBOUNCE).is_some() && flags & GPIO_V2_LINE_FLAG_INPUT == 0 {
            return Err(libc::EINVAL);
        }
    }
    Ok(())
}

/// What `lc` asks of the line at request index `idx`.
pub(crate) fn v2_line_config(lc: &gpio_v2_line_config, idx: usize) -> LineConfig {
    let bit = 1u64 << idx;
    // SAFETY: (the three union reads) every member is plain integer data and
    // the whole union came from the program's bytes; `id` says which one is meant.
    let flags = attr_for(lc, idx, GPIO_V2_LINE_ATTR_ID_FLAGS).map_or(lc.flags, |a| unsafe { a.u.flags });
    // SAFETY: as above: an initialized integer union member, selected by `id`.
    let value = attr_for(lc, idx, GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES).is_some_and(|a| unsafe { a.u.values } & bit != 0);
    // SAFETY: as above: an initialized integer union member, selected by `id`.
    let debounce_us = attr_for(lc, idx, GPIO_V2_LINE_ATTR_ID_DEBOUNCE).map_or(0, |a| unsafe { a.u.debounce_period_us });
    LineConfig { flags, value, debounce_us }
}

/// `linehandle_validate_flags`.
pub(crate) fn validate_handle_flags(flags: u32) -> Result<(), Errno> {
    let has = |f: u32| flags & f != 0;
    let bias = GPIOHANDLE_REQUEST_BIAS_PULL_UP | GPIOHANDLE_REQUEST_BIAS_PULL_DOWN | GPIOHANDLE_REQUEST_BIAS_DISABLE;
    let drive = GPIOHANDLE_REQUEST_OPEN_DRAIN | GPIOHANDLE_REQUEST_OPEN_SOURCE;
    let invalid = flags & !HANDLE_VALID_FLAGS != 0
        || (has(GPIOHANDLE_REQUEST_INPUT) && has(GPIOHANDLE_REQUEST_OUTPUT))
        || (has(GPIOHANDLE_REQUEST_OPEN_DRAIN) && has(GPIOHANDLE_REQUEST_OPEN_SOURCE))
        || (has(drive) && !has(GPIOHANDLE_REQUEST_OUTPUT))
        || (has(bias) && !has(GPIOHANDLE_REQUEST_INPUT | GPIOHANDLE_REQUEST_OUTPUT))
        || (flags & bias).count_ones() > 1;
    if invalid {
        Err(libc::EINVAL)
    } else {
        Ok(())
    }
}

/// The checks of `lineevent_create` on its handle and event flags.
pub(crate) fn validate_event_flags(handleflags: u32, eventflags: u32) -> Result<(), Errno> {
    let bias = GPIOHANDLE_REQUEST_BIAS_PULL_UP | GPIOHANDLE_REQUEST_BIAS_PULL_DOWN | GPIOHANDLE_REQUEST_BIAS_DISABLE;
    let output = GPIOHANDLE_REQUEST_OUTPUT | GPIOHANDLE_REQUEST_OPEN_DRAIN | GPIOHANDLE_REQUEST_OPEN_SOURCE;
    let invalid = handleflags & !HANDLE_VALID_FLAGS != 0
        || eventflags & !GPIOEVENT_REQUEST_BOTH_EDGES != 0
        || handleflags & output != 0
        || (handleflags & bias).count_ones() > 1;
    if invalid {
        Err(libc::EINVAL)
    } else {
        Ok(())
    }
}

/// v1 handle flags as v2 line flags (same meanings, other bits).
pub(crate) fn handle_flags_to_v2(flags: u32) -> u64 {
    const MAP: [(u32, u64); 8] = [
        (GPIOHANDLE_REQUEST_INPUT, GPIO_V2_LINE_FLAG_INPUT),
        (GPIOHANDLE_REQUEST_OUTPUT, GPIO_V2_LINE_FLAG_OUTPUT),
        (GPIOHANDLE_REQUEST_ACTIVE_LOW, GPIO_V2_LINE_FLAG_ACTIVE_LOW),
        (GPIOHANDLE_REQUEST_OPEN_DRAIN, GPIO_V2_LINE_FLAG_OPEN_DRAIN),
        (GPIOHANDLE_REQUEST_OPEN_SOURCE, GPIO_V2_LINE_FLAG_OPEN_SOURCE),
        (GPIOHANDLE_REQUEST_BIAS_PULL_UP, GPIO_V2_LINE_FLAG_BIAS_PULL_UP),
        (GPIOHANDLE_REQUEST_BIAS_PULL_DOWN, GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN),
        (GPIOHANDLE_REQUEST_BIAS_DISABLE, GPIO_V2_LINE_FLAG_BIAS_DISABLED),
    ];
    MAP.iter().filter(|(v1, _)| flags & v1 != 0).fold(0, |acc, (_, v2)| acc | v2)
}

/// v1 event flags as v2 edge flags.
pub(crate) fn event_flags_to_v2(eventflags: u32) -> u64 {
    let mut flags = 0;
    if eventflags & GPIOEVENT_REQUEST_RISING_EDGE != 0 {
        flags |= GPIO_V2_LINE_FLAG_EDGE_RISING;
    }
    if eventflags & GPIOEVENT_REQUEST_FALLING_EDGE != 0 {
        flags |= GPIO_V2_LINE_FLAG_EDGE_FALLING;
    }
    flags
}

/// `gpio_v2_line_info_to_v1`.
pub(crate) fn info_to_v1(info: &gpio_v2_line_info) -> gpioline_info {
    const MAP: [(u64, u32); 8] = [
        (GPIO_V2_LINE_FLAG_USED, GPIOLINE_FLAG_KERNEL),
        (GPIO_V2_LINE_FLAG_OUTPUT, GPIOLINE_FLAG_IS_OUT),
        (GPIO_V2_LINE_FLAG_ACTIVE_LOW, GPIOLINE_FLAG_ACTIVE_LOW),
        (GPIO_V2_LINE_FLAG_OPEN_DRAIN, GPIOLINE_FLAG_OPEN_DRAIN),
        (GPIO_V2_LINE_FLAG_OPEN_SOURCE, GPIOLINE_FLAG_OPEN_SOURCE),
        (GPIO_V2_LINE_FLAG_BIAS_PULL_UP, GPIOLINE_FLAG_BIAS_PULL_UP),
        (GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN, GPIOLINE_FLAG_BIAS_PULL_DOWN),
        (GPIO_V2_LINE_FLAG_BIAS_DISABLED, GPIOLINE_FLAG_BIAS_DISABLE),
    ];
    let flags = MAP.iter().filter(|(v2, _)| info.flags & v2 != 0).fold(0, |acc, (_, v1)| acc | v1);
    gpioline_info { line_offset: info.offset, flags, name: info.name, consumer: info.consumer }
}

/// The lab setup a line in `current` state takes for `cfg`; `None` for a
/// request that names no direction (the kernel leaves such a line "as is").
/// No bias flag keeps the line's bias, as `gpiod_direction_*` does.
pub(crate) fn lab_setup(cfg: &LineConfig, current: LineSetup) -> Option<LineSetup> {
    let flags = cfg.flags;
    let active_low = flags & GPIO_V2_LINE_FLAG_ACTIVE_LOW != 0;
    let pull = if flags & GPIO_V2_LINE_FLAG_BIAS_PULL_UP != 0 {
        Pull::Up
    } else if flags & GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN != 0 {
        Pull::Down
    } else if flags & GPIO_V2_LINE_FLAG_BIAS_DISABLED != 0 {
        Pull::None
    } else {
        current.pull
    };
    if flags & GPIO_V2_LINE_FLAG_OUTPUT != 0 {
        let drive = if flags & GPIO_V2_LINE_FLAG_OPEN_DRAIN != 0 {
            Drive::OpenDrain
        } else if flags & GPIO_V2_LINE_FLAG_OPEN_SOURCE != 0 {
            Drive::OpenSource
        } else {
            Drive::PushPull
        };
        Some(LineSetup {
            output: true,
            value: cfg.value != active_low,
            pull,
            drive,
            edge: EdgeDetect::None,
            debounce_ns: 0,
        })
    } else if flags & GPIO_V2_LINE_FLAG_INPUT != 0 {
        // Edges are of the logical value: active-low swaps them on the pad.
        let (rising, falling) =
            (flags & GPIO_V2_LINE_FLAG_EDGE_RISING != 0, flags & GPIO_V2_LINE_FLAG_EDGE_FALLING != 0);
        let (pad_rising, pad_falling) = if active_low { (falling, rising) } else { (rising, falling) };
        let edge = match (pad_rising, pad_falling) {
            (true, true) => EdgeDetect::Both,
            (true, false) => EdgeDetect::Rising,
            (false, true) => EdgeDetect::Falling,
            (false, false) => EdgeDetect::None,
        };
        let debounce_ns = u64::from(cfg.debounce_us) * 1000;
        Some(LineSetup { output: false, value: current.value, pull, drive: current.drive, edge, debounce_ns })
    } else {
        None
    }
}

/// `kstrndup(label, 31)`: the bytes before the first NUL, at most 31.
pub(crate) fn c_label(bytes: &[u8; GPIO_MAX_NAME_SIZE]) -> Vec<u8> {
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(GPIO_MAX_NAME_SIZE - 1);
    bytes[..len].to_vec()
}

/// `strscpy` into a uAPI name field: truncated to 31 bytes, NUL-padded.
pub(crate) fn name_field(s: &[u8]) -> [u8; GPIO_MAX_NAME_SIZE] {
    let mut out = [0u8; GPIO_MAX_NAME_SIZE];
    let len = s.len().min(GPIO_MAX_NAME_SIZE - 1);
    out[..len].copy_from_slice(&s[..len]);
    out
}

//! GPIO checks through wirespeed's GPIO API on the Linux character-device
//! backend (`wirespeed::linux::gpio_cdev`), against the kernel's gpio-mxc
//! chips of the emulated i.MX6Q.

use serde_json::{json, Map, Value};
use wirespeed::gpio::{Chip, Direction, GpioError, LineConfig, LineSettings, RequestConfig};
use wirespeed::linux::gpio_cdev;

/// Consumer name of the lines this program requests.
const CONSUMER: &str = "wirespeed-kt";

/// `/dev/gpiochipN` paths, by N.
fn chip_paths() -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = std::fs::read_dir("/dev")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let n = name.strip_prefix("gpiochip")?.parse().ok()?;
                    Some((n, format!("/dev/{name}")))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs every GPIO check and adds its keys to `out`; failures are listed in `errors`.
pub fn run(out: &mut Map<String, Value>, errors: &mut Vec<String>) {
    let paths = chip_paths();
    out.insert("gpio_chips".into(), json!(paths.len()));
    out.insert("gpio_set_get_ok".into(), json!(false));
    out.insert("gpio_busy_error_typed".into(), json!(false));

    // Chip and line info of every chip; the lines in use tell where the SPI chip select is.
    let mut chips: Vec<(String, Chip)> = Vec::new();
    let mut infos = Vec::new();
    let mut used_lines = Vec::new();
    for (_, path) in &paths {
        let chip = match gpio_cdev::open(path) {
            Ok(c) => c,
            Err(e) => {
                errors.push(format!("gpio: open {path}: {e}"));
                continue;
            }
        };
        match chip.info() {
            Ok(info) => {
                for off in 0..info.lines {
                    match chip.line_info(off) {
                        Ok(li) if li.used => used_lines.push(json!({
                            "chip": info.name, "offset": off, "name": li.name, "consumer": li.consumer,
                            "output": li.settings.direction == Direction::Output,
                        })),
                        Ok(_) => {}
                        Err(e) => errors.push(format!("gpio: {path} line_info({off}): {e}")),
                    }
                }
                infos.push(json!({"name": info.name, "label": info.label, "lines": info.lines}));
            }
            Err(e) => errors.push(format!("gpio: {path} info: {e}")),
        }
        chips.push((path.clone(), chip));
    }
    out.insert("gpio_chip_info".into(), Value::Array(infos));
    out.insert("gpio_used_lines".into(), Value::Array(used_lines.clone()));

    // The SPI chip select (cs-gpios of ECSPI1: GPIO3_19) is held by the kernel's SPI core.
    let busy =
        used_lines.iter().find(|l| l["consumer"].as_str().is_some_and(|c| c.to_ascii_lowercase().contains("spi")));
    let Some(busy) = busy.cloned() else {
        errors.push("gpio: no line held by the SPI core (expected ECSPI1's cs-gpios, GPIO3_19)".into());
        return;
    };
    out.insert("gpio_busy_line".into(), busy.clone());
    let busy_chip = busy["chip"].as_str().unwrap_or_default().to_string();
    let busy_off = busy["offset"].as_u64().unwrap_or_default() as u32;
    let Some((_, chip)) = chips.iter().find(|(p, _)| p.ends_with(&format!("/{busy_chip}"))) else {
        errors.push(format!("gpio: chip {busy_chip} not opened"));
        return;
    };

    match chip.request_lines(&RequestConfig::new(CONSUMER).line(busy_off, LineSettings::output(false))) {
        Ok(_) => errors.push(format!("gpio: requesting busy line {busy_chip}:{busy_off} succeeded")),
        Err(e @ GpioError::LineBusy { .. }) => {
            out.insert("gpio_busy_error".into(), json!(e.to_string()));
            out.insert("gpio_busy_error_typed".into(), json!(true));
        }
        Err(e) => {
            out.insert("gpio_busy_error".into(), json!(format!("{e:?}")));
            errors.push(format!("gpio: busy line {busy_chip}:{busy_off} failed with an untyped error: {e:?}"));
        }
    }

    // A free line of the same chip: output, both levels, then reconfigured as an input.
    let lines = chip.info().map(|i| i.lines).unwrap_or(0);
    let free = (0..lines).rev().find(|&o| chip.line_info(o).is_ok_and(|li| !li.used));
    let Some(free) = free else {
        errors.push(format!("gpio: no free line on {busy_chip}"));
        return;
    };
    match set_get(chip, free) {
        Ok(detail) => {
            out.insert("gpio_free_line".into(), json!({"chip": busy_chip, "offset": free}));
            out.insert("gpio_set_get".into(), detail);
            out.insert("gpio_set_get_ok".into(), json!(true));
        }
        Err(e) => errors.push(format!("gpio: {busy_chip}:{free}: {e}")),
    }
}

/// Requests `off` as an output, sets and reads back both levels, checks the
/// kernel's line info, reconfigures it as an input and reads it once more.
fn set_get(chip: &Chip, off: u32) -> Result<Value, String> {
    let req = chip
        .request_lines(&RequestConfig::new(CONSUMER).line(off, LineSettings::output(false)))
        .map_err(|e| format!("request as output: {e}"))?;
    let li = chip.line_info(off).map_err(|e| format!("line_info: {e}"))?;
    if !li.used || li.consumer != CONSUMER || li.settings.direction != Direction::Output {
        return Err(format!("line info after request: {li:?}"));
    }
    let mut seen = Vec::new();
    for level in [true, false, true] {
        req.set_value(off, level).map_err(|e| format!("set_value({level}): {e}"))?;
        let got = req.value(off).map_err(|e| format!("value(): {e}"))?;
        if got != level {
            return Err(format!("set {level}, read back {got}"));
        }
        seen.push(got);
    }
    // Output is high; as an input the value comes from the pad status register (PSR).
    req.reconfigure(&LineConfig::new().line(off, LineSettings::input()))
        .map_err(|e| format!("reconfigure as input: {e}"))?;
    let li = chip.line_info(off).map_err(|e| format!("line_info: {e}"))?;
    if li.settings.direction != Direction::Input {
        return Err(format!("line info after reconfigure: {li:?}"));
    }
    let input = req.value(off).map_err(|e| format!("value() as input: {e}"))?;
    drop(req);
    let li = chip.line_info(off).map_err(|e| format!("line_info: {e}"))?;
    if li.used {
        return Err(format!("line still used after release: {li:?}"));
    }
    Ok(json!({"output_readback": seen, "input_after_reconfigure": input}))
}

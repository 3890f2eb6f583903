//! Checking board files: the documented example, the bench, and every kind
//! of mistake, each with its line and what is allowed.

use super::*;

const BENCH: &str = include_str!("../../../../examples/lab.toml");

/// The ```toml block of this module's docs.
fn doc_example() -> String {
    let docs: Vec<&str> = include_str!("mod.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let start = docs.iter().position(|l| *l == "```toml").expect("a toml block") + 1;
    let len = docs[start..].iter().position(|l| *l == "```").expect("its end");
    docs[start..start + len].join("\n")
}

/// `text`'s error: it must be at `line` and say `needle`.
#[track_caller]
fn fails(text: &str, line: usize, needle: &str) {
    let e = parse(text, "lab.toml").expect_err(text);
    let shown = e.to_string();
    assert!(!shown.contains('\n'), "one line: {shown}");
    assert!(shown.starts_with(&format!("lab.toml:{line}: ")), "line {line} expected: {shown}");
    assert!(shown.contains(needle), "{needle:?} expected in: {shown}");
}

const BUS: &str = "[[spi]]\nbus = 0\n";

#[test]
fn the_documented_example_parses_with_every_kind_and_driver() {
    let spec = parse(&doc_example(), "doc").unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = spec.spi[0].devices.iter().map(|d| d.kind.name()).collect();
    assert_eq!(kinds, ["spi-nor", "loopback", "mcp2518fd", "ad7606"]);
    let drivers: Vec<LineDriver> = spec.gpio[0].drivers.iter().map(|d| d.driver).collect();
    assert_eq!(
        drivers,
        [
            LineDriver::Toggle { period_us: 10_000 },
            LineDriver::Level(true),
            LineDriver::Wire(WireRef { bus: 0, cs: 2, pin: DevicePin::Int }),
            LineDriver::Wire(WireRef { bus: 0, cs: 0, pin: DevicePin::Wp }),
            LineDriver::Wire(WireRef { bus: 0, cs: 3, pin: DevicePin::Convst }),
            LineDriver::Wire(WireRef { bus: 0, cs: 3, pin: DevicePin::Busy }),
        ]
    );
}

#[test]
fn the_bench_is_a_w25q128jv_on_flash_bin_a_loopback_and_a_ticking_chip() {
    let spec = parse(BENCH, "examples/lab.toml").unwrap_or_else(|e| panic!("{e}"));
    assert!(!spec.instant_wire);
    let bus = &spec.spi[0];
    assert_eq!((bus.bus, bus.bufsiz, bus.base_clock_hz, bus.fifo_bytes), (0, 4096, 200_000_000, 64));
    let nor = &bus.devices[0];
    let DeviceKind::SpiNor { chip, image, time_scale } = &nor.kind else { panic!("{nor:?}") };
    assert_eq!((nor.cs, chip.name, image.as_deref(), *time_scale), (0, "W25Q128JV", Some("flash.bin".as_ref()), 1.0));
    assert_eq!(nor.max_speed_hz, 50_000_000);
    assert_eq!((bus.devices[1].cs, &bus.devices[1].kind), (1, &DeviceKind::Loopback));
    let gpio = &spec.gpio[0];
    assert_eq!((gpio.chip, gpio.lines, gpio.label.as_str()), (0, 32, "wirespeed-lab"));
    assert_eq!(gpio.names.len(), 32);
    assert_eq!(gpio.names[0].as_deref(), Some("TICK"));
    assert!(gpio.names.iter().flatten().count() >= 3);
    assert_eq!(gpio.drivers[0].driver, LineDriver::Toggle { period_us: 10_000 });
}

#[test]
fn defaults_fill_what_a_file_leaves_out() {
    let spec = parse(&format!("{BUS}[[spi.device]]\ncs = 3\nkind = \"mcp2518fd\"\n"), "x").unwrap();
    let (bus, dev) = (&spec.spi[0], &spec.spi[0].devices[0]);
    assert_eq!((bus.base_clock_hz, bus.fifo_bytes, bus.bufsiz, dev.max_speed_hz), (200_000_000, 64, 4096, 50_000_000));
    assert_eq!(
        dev.kind,
        DeviceKind::Mcp2518fd { osc_hz: 40_000_000, can_bitrate: 500_000, can_data_bitrate: 2_000_000 }
    );
    // The default clock is capped by a slow block's input clock.
    let slow = parse("[[spi]]\nbus = 1\nbase_clock_hz = 20000000\n[[spi.device]]\ncs = 0\nkind = \"loopback\"\n", "x");
    assert_eq!(slow.unwrap().spi[0].devices[0].max_speed_hz, 10_000_000);
    assert_eq!(parse("", "x").unwrap(), BoardSpec { instant_wire: false, spi: vec![], gpio: vec![] });
}

#[test]
fn syntax_unknown_keys_and_wrong_types_name_their_line() {
    fails("[lab]\ninstant_wire = false\n[[spi]\nbus = 0\n", 3, "invalid table header");
    fails("[lab]\ninstant_wire = 1\n", 2, "instant_wire: invalid type: integer `1`, expected a boolean");
    fails("[lab]\nfast = true\n", 2, "unknown field `fast`, expected `instant_wire`");
    fails("[board]\n", 1, "unknown field `board`");
    fails(&format!("{BUS}clock = 5\n"), 3, "unknown field `clock`");
    fails(&format!("{BUS}\n[[spi.device]]\ncs = \"a\"\nkind = \"loopback\"\n"), 5, "cs: invalid type: string \"a\"");
    fails(&format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"loopback\"\nspeed = 1\n"), 6, "unknown field `speed`");
    fails(&format!("{BUS}[[spi.device]]\ncs = 300\nkind = \"loopback\"\n"), 4, "cs: invalid value: integer `300`");
    fails("[[gpio]]\nchip = 0\n", 1, "missing field `lines`");
    fails(
        "[[gpio]]\nchip = 0\nlines = 8\n[[gpio.line]]\noffset = 1\nlevel = \"hi\"\n",
        6,
        "level: unknown variant `hi`, expected `high` or `low`",
    );
    fails("[[spi]]\nbus = 0\nbus = 1\n", 3, "duplicate key `bus`");
}

#[test]
fn unknown_kinds_and_chips_list_the_known_ones() {
    fails(
        &format!("{BUS}\n[[spi.device]]\ncs = 0\nkind = \"eeprom\"\n"),
        6,
        "unknown kind \"eeprom\" (known: spi-nor, loopback, mcp2518fd, ad7606)",
    );
    let e = parse(&format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\nchip = \"w25q12\"\n\n"), "lab.toml")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "lab.toml:6: unknown chip \"w25q12\" (known: w25q128jv, mx25l12835f, gd25q64c, sst25vf016b, w25q256jv)"
    );
    assert_eq!((e.line, e.file.as_str()), (Some(6), "lab.toml"));
    fails(
        &format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\n"),
        3,
        "a spi-nor device needs `chip` (known: w25q128jv,",
    );
    fails(
        &format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\nchip = \"W25Q256JV\"\nosc_hz = 4000000\n"),
        7,
        "`osc_hz` is not a key of a spi-nor device (its keys: cs, kind, max_speed_hz, chip, image, time_scale)",
    );
    fails(
        &format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"loopback\"\nchip = \"w25q128jv\"\n"),
        6,
        "`chip` is not a key of a loopback device (its keys: cs, kind, max_speed_hz)",
    );
}

#[test]
fn duplicates_are_refused_at_the_second_naming_the_first() {
    fails("[[spi]]\nbus = 0\n\n[[spi]]\nbus = 0\n", 5, "bus 0 is already described at line 1");
    let dev = "[[spi.device]]\ncs = 1\nkind = \"loopback\"\n";
    fails(&format!("{BUS}{dev}{dev}"), 7, "cs 1 of bus 0 is already used at line 3");
    fails(
        "[[gpio]]\nchip = 2\nlines = 4\n[[gpio]]\nchip = 2\nlines = 4\n",
        5,
        "gpio chip 2 is already described at line 1",
    );
    let line = "[[gpio.line]]\noffset = 3\n";
    fails(
        &format!("[[gpio]]\nchip = 0\nlines = 4\n{line}{line}"),
        7,
        "line 3 of gpiochip0 is already described at line 4",
    );
}

#[test]
fn ranges_say_what_is_allowed() {
    fails(
        &format!("{BUS}[[spi.device]]\ncs = 4\nkind = \"loopback\"\n"),
        4,
        "the SPI block has 4 chip selects (allowed: 0..=3)",
    );
    fails(&format!("{BUS}bufsiz = 0\n"), 3, "bufsiz = 0 is out of range (allowed: 1..=4194304)");
    fails(&format!("{BUS}fifo_bytes = 0\n"), 3, "fifo_bytes = 0 is out of range (allowed: 1..=65536)");
    fails(&format!("{BUS}base_clock_hz = 5000000000\n"), 3, "allowed: 2..=4294967295");
    let dev = |speed: &str| format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"loopback\"\nmax_speed_hz = {speed}\n");
    fails(
        &dev("0"),
        6,
        "max_speed_hz = 0 is out of range (allowed: 191..=100000000) (the block's base_clock_hz is 200000000)",
    );
    fails(&dev("100000001"), 6, "allowed: 191..=100000000");
    fails("[[gpio]]\nchip = 0\nlines = 0\n", 3, "lines = 0 is out of range (allowed: 1..=512)");
    fails("[[gpio]]\nchip = 0\nlines = 513\n", 3, "allowed: 1..=512");
    fails(
        "[[gpio]]\nchip = 0\nlines = 32\n[[gpio.line]]\noffset = 32\n",
        5,
        "gpiochip0 has 32 lines (allowed: 0..=31)",
    );
    let line = |extra: &str| format!("[[gpio]]\nchip = 0\nlines = 8\n[[gpio.line]]\noffset = 0\n{extra}\n");
    fails(&line("toggle_every_us = 1"), 6, "toggle_every_us = 1 is out of range (allowed: 10..=3600000000)");
    fails(&line("name = \"\""), 6, "1 to 31 bytes");
    fails(&line(&format!("name = \"{}\"", "x".repeat(32))), 6, "1 to 31 bytes");
    let nor = format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\nchip = \"gd25q64c\"\n");
    fails(&format!("{nor}time_scale = -1.0\n"), 7, "time_scale = -1 is out of range");
    fails(&format!("{nor}image = \"\"\n"), 7, "give a file name");
    let mcp = format!("{BUS}[[spi.device]]\ncs = 0\nkind = \"mcp2518fd\"\n");
    fails(&format!("{mcp}osc_hz = 8000000\n"), 6, "(allowed: 4000000, 20000000, 40000000)");
    fails(&format!("{mcp}can_bitrate = 1000000\ncan_data_bitrate = 500000\n"), 7, "allowed: 1000000..=10000000");
}

#[test]
fn a_line_has_one_driver_and_a_wire_names_an_existing_pin() {
    let devices = format!(
        "{BUS}[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\nchip = \"w25q128jv\"\n[[spi.device]]\ncs = 1\nkind = \"loopback\"\n"
    );
    let chip = "[[gpio]]\nchip = 0\nlines = 8\n[[gpio.line]]\noffset = 2\n";
    let first = devices.lines().count() + 6; // the line after `offset`
    let line = |extra: &str| format!("{devices}{chip}{extra}\n");
    fails(
        &line("wire = \"spi0.0:wp\"\nlevel = \"low\""),
        first + 1,
        "line 2 has two drivers (wire and level); a line takes at most one of toggle_every_us, level, wire",
    );
    fails(&line("wire = \"spi0.3:int\""), first, "no device at spi0.3 (devices: spi0.0 spi-nor, spi0.1 loopback)");
    fails(&line("wire = \"spi1.0:wp\""), first, "no device at spi1.0");
    fails(&line("wire = \"spi0.0:int\""), first, "spi0.0 (spi-nor) has no pin \"int\" (pins: wp)");
    fails(&line("wire = \"spi0.1:int\""), first, "spi0.1 (loopback) has no pin \"int\" (pins: none)");
    fails(&line("wire = \"gpio0\""), first, "expected \"spi<bus>.<cs>:<pin>\"");
    let twice = format!("{devices}{chip}wire = \"spi0.0:wp\"\n[[gpio.line]]\noffset = 3\nwire = \"spi0.0:wp\"\n");
    fails(&twice, first + 1, "spi0.0:wp is already driven by the line described at line");
    // A device output may drive several lines.
    let mcp = format!("{BUS}[[spi.device]]\ncs = 2\nkind = \"mcp2518fd\"\n");
    let both = format!("{mcp}{chip}wire = \"spi0.2:INT\"\n[[gpio.line]]\noffset = 3\nwire = \"spi0.2:int\"\n");
    assert_eq!(parse(&both, "x").unwrap().gpio[0].drivers.len(), 2);
}

#[test]
fn ad7606_options_pins_and_errors() {
    use wirespeed_lab::devices::ad7606::{Range, Signal};
    let adc = |keys: &str| format!("[[spi]]\nbus = 0\n[[spi.device]]\ncs = 2\nkind = \"ad7606\"\n{keys}");
    let spec = parse(&adc("range = \"5V\"\noversampling = 8\nsignals = [\"sine:1.0V:50Hz\", \"dc:2.5V\"]\n"), "t.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let DeviceKind::Ad7606 { range, oversampling, signals } = &spec.spi[0].devices[0].kind else { panic!() };
    assert_eq!((*range, *oversampling), (Range::Pm5V, 8));
    assert_eq!(signals[0], Signal::Sine { amplitude: 1.0, freq_hz: 50.0, offset: 0.0, phase: 0.0 });
    assert_eq!((signals[1], signals.len()), (Signal::Dc(2.5), 2));
    let err = |keys: &str| parse(&adc(keys), "t.toml").unwrap_err().to_string();
    assert!(err("oversampling = 3\n").contains("oversampling = 3 is not a ratio"), "{}", err("oversampling = 3\n"));
    assert!(err("range = \"7V\"\n").contains("allowed: \"5V\", \"10V\""));
    assert!(err("signals = [\"square:1V\"]\n").contains("bad signal \"square:1V\""));
    assert!(err("chip = \"w25q128jv\"\n").contains("`chip` is not a key of a ad7606 device"));
    let nine = format!("signals = [{}]\n", ["\"dc:0V\""; 9].join(", "));
    assert!(err(&nine).contains("8 channels"));
    // Its pins: CONVST driven by a line's pad, BUSY driving a line's input.
    let wired = adc("[[gpio]]\nchip = 0\nlines = 16\n[[gpio.line]]\noffset = 8\nwire = \"spi0.2:convst\"\n[[gpio.line]]\noffset = 9\nwire = \"spi0.2:BUSY\"\n");
    let spec = parse(&wired, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let pins: Vec<_> = spec.gpio[0].drivers.iter().map(|d| d.driver).collect();
    assert_eq!(
        pins,
        [
            LineDriver::Wire(WireRef { bus: 0, cs: 2, pin: DevicePin::Convst }),
            LineDriver::Wire(WireRef { bus: 0, cs: 2, pin: DevicePin::Busy }),
        ]
    );
    assert!(!DevicePin::Convst.is_device_output() && DevicePin::Busy.is_device_output());
    let bad = adc("[[gpio]]\nchip = 0\nlines = 16\n[[gpio.line]]\noffset = 8\nwire = \"spi0.2:int\"\n");
    assert!(parse(&bad, "t.toml").unwrap_err().to_string().contains("has no pin \"int\" (pins: convst, busy)"));
}

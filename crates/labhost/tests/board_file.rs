//! Boards built from files: the bench (`examples/lab.toml`) and what its
//! parts do once built (nodes, images, a ticking line, wires, traces), and
//! the errors building gives, each naming its line.

use std::ffi::c_void;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirespeed::linux::spidev::uapi::{spi_ioc_message, SpiIocTransfer};
use wirespeed_lab::gpio::{EdgeDetect, LineEvent, LineSetup, Pull};
use wirespeed_labhost::board::{BoardOptions, LabDevice};
use wirespeed_labhost::{Board, CharDev, Errno, FdInstaller, NodeFile};

const BENCH: &str = include_str!("../../../examples/lab.toml");
const MIB16: usize = 16 << 20;

/// A fresh empty directory for one test, removed with its images when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(test: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("wirespeed-board-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

fn build(text: &str, dir: &Path) -> Board {
    Board::from_str(text, "lab.toml", dir).unwrap_or_else(|e| panic!("{e}"))
}

struct NoFds;
impl FdInstaller for NoFds {
    fn install(&self, _: Arc<dyn NodeFile>, _: bool) -> Result<i32, Errno> {
        panic!("spidev installs no descriptors")
    }
}

/// One full-duplex `SPI_IOC_MESSAGE(1)` of `tx` on the node at `path`.
fn exchange(board: &Board, path: &str, tx: &[u8]) -> Vec<u8> {
    let (_, node) = board.nodes().iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("no {path}"));
    let file = node.open(libc::O_RDWR).unwrap();
    let mut rx = vec![0u8; tx.len()];
    let mut t = SpiIocTransfer {
        tx_buf: tx.as_ptr() as u64,
        rx_buf: rx.as_mut_ptr() as u64,
        len: tx.len() as u32,
        ..Default::default()
    };
    // SAFETY: one live transfer with buffers of `len` bytes, as the request says.
    let n = unsafe { file.ioctl(spi_ioc_message(1) as u64, (&mut t as *mut SpiIocTransfer).cast::<c_void>(), &NoFds) };
    assert_eq!(n, Ok(tx.len() as i32));
    rx
}

#[test]
fn the_bench_serves_its_nodes_and_creates_an_erased_image() {
    let dir = temp_dir("bench");
    let board = build(BENCH, &dir);
    let nodes: Vec<(&str, CharDev)> = board.nodes().iter().map(|(p, n)| (p.as_str(), n.char_dev())).collect();
    assert_eq!(
        nodes,
        [
            ("/dev/spidev0.0", CharDev { major: CharDev::SPIDEV_MAJOR, minor: 0 }),
            ("/dev/spidev0.1", CharDev { major: CharDev::SPIDEV_MAJOR, minor: 1 }),
            ("/dev/spidev0.2", CharDev { major: CharDev::SPIDEV_MAJOR, minor: 2 }),
            ("/dev/gpiochip0", CharDev { major: CharDev::GPIO_MAJOR, minor: 0 }),
        ]
    );
    assert_eq!(board.sysfs().file("/sys/module/spidev/parameters/bufsiz"), Some(&b"4096\n"[..]));
    assert_eq!(board.sysfs().file("/sys/bus/gpio/devices/gpiochip0/dev"), Some(&b"254:0\n"[..]));
    let image = fs::read(dir.join("flash.bin")).unwrap();
    assert_eq!(image.len(), MIB16);
    assert!(image.iter().all(|&b| b == 0xFF));
    // The nodes reach their devices: the W25Q128JV's JEDEC ID, and the loopback's echo.
    assert_eq!(exchange(&board, "/dev/spidev0.0", &[0x9F, 0, 0, 0]), [0xFF, 0xEF, 0x40, 0x18]);
    assert_eq!(exchange(&board, "/dev/spidev0.1", &[1, 2, 3]), [1, 2, 3]);
    let Some(LabDevice::SpiNor(nor)) = board.device(0, 0) else { panic!("no NOR on spi0.0") };
    assert_eq!(nor.spec().name, "W25Q128JV");
    let chip = board.gpio_chip(0).unwrap();
    assert_eq!((chip.num_lines(), chip.label()), (32, "wirespeed-lab"));
    assert_eq!(chip.value(1), Ok(true), "BUTTON is held high");
    assert!(!board.lab().config().instant_wire);
    board.finish().unwrap();
}

#[test]
fn an_image_of_the_right_size_is_kept_and_changes_go_through_to_it() {
    let dir = temp_dir("keep");
    let mut image = vec![0xFFu8; MIB16];
    image[..4].copy_from_slice(b"boot");
    fs::write(dir.join("flash.bin"), &image).unwrap();
    let board = build(BENCH, &dir);
    assert_eq!(exchange(&board, "/dev/spidev0.0", &[0x03, 0, 0, 0, 0, 0, 0, 0])[4..], *b"boot");
    let Some(LabDevice::SpiNor(nor)) = board.device(0, 0) else { panic!("no NOR") };
    nor.poke(0x1000, b"new");
    board.finish().unwrap();
    assert_eq!(&fs::read(dir.join("flash.bin")).unwrap()[0x1000..0x1003], b"new");
}

#[test]
fn line_0_of_the_bench_toggles_every_10_ms() {
    let dir = temp_dir("tick");
    let board = build(BENCH, &dir);
    let chip = board.gpio_chip(0).unwrap();
    let (mut seen_low, mut seen_high) = (false, false);
    for _ in 0..60 {
        let high = chip.value(0).unwrap();
        (seen_low, seen_high) = (seen_low || !high, seen_high || high);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(seen_low && seen_high, "line 0 did not toggle in 60 ms");
    // Its edges are stamped exactly one period apart.
    let events = Arc::new(Mutex::new(Vec::<LineEvent>::new()));
    let sink = events.clone();
    chip.configure(0, &LineSetup::input(Pull::None, EdgeDetect::Both), wirespeed_time::now()).unwrap();
    chip.set_listener(0, Some(Arc::new(move |e| sink.lock().unwrap().push(e)))).unwrap();
    std::thread::sleep(Duration::from_millis(55));
    let events = events.lock().unwrap().clone();
    assert!(events.len() >= 3, "{events:?}");
    for pair in events.windows(2) {
        assert_eq!(pair[1].at.ns_since(pair[0].at), 10_000_000, "{events:?}");
        assert_ne!(pair[0].rising, pair[1].rising);
    }
}

#[test]
fn a_wrong_size_image_is_an_error_at_its_device() {
    let dir = temp_dir("size");
    fs::write(dir.join("flash.bin"), [0u8; 1000]).unwrap();
    let e = Board::from_str(BENCH, "examples/lab.toml", &dir).unwrap_err();
    let device_line = BENCH.lines().position(|l| l == "[[spi.device]]").unwrap() + 1;
    assert_eq!(e.line, Some(device_line));
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("examples/lab.toml:{device_line}: spi0.0 (W25Q128JV): flash image ")),
        "{shown}"
    );
    assert!(shown.ends_with("flash.bin is 1000 bytes, the chip is 16777216"), "{shown}");
}

#[test]
fn a_file_that_cannot_be_read_or_checked_names_its_path() {
    let dir = temp_dir("load");
    let missing = dir.join("none.toml");
    let e = Board::load(&missing).unwrap_err();
    assert_eq!(e.line, None);
    assert!(e.to_string().starts_with(&format!("{}: cannot read the board file: ", missing.display())), "{e}");
    let bad = dir.join("bad.toml");
    fs::write(&bad, "[lab]\ninstant_wire = true\n[[gpio]]\nchip = 0\nlines = 600\n").unwrap();
    let e = Board::load(&bad).unwrap_err();
    assert_eq!(e.to_string(), format!("{}:5: lines = 600 is out of range (allowed: 1..=512)", bad.display()));
}

const WIRED: &str = r#"
[lab]
instant_wire = true
[[spi]]
bus = 0
[[spi.device]]
cs = 0
kind = "spi-nor"
chip = "gd25q64c"
time_scale = 0.0
[[spi.device]]
cs = 2
kind = "mcp2518fd"
[[gpio]]
chip = 1
lines = 8
[[gpio.line]]
offset = 4
wire = "spi0.0:wp"
[[gpio.line]]
offset = 5
wire = "spi0.2:int"
"#;

#[test]
fn wires_join_gpio_lines_and_device_pins() {
    let dir = temp_dir("wired");
    let board = build(WIRED, &dir);
    assert!(dir.read_dir().unwrap().next().is_none(), "a chip with no image touches no file");
    let chip = board.gpio_chip(1).unwrap();
    assert_eq!(chip.value(5), Ok(true), "the MCP2518FD's INT is inactive (high)");
    assert_eq!(chip.value(4), Ok(true), "WP# is pulled up");
    let Some(LabDevice::SpiNor(nor)) = board.device(0, 0) else { panic!("no NOR") };
    let sr1 = |board: &Board| exchange(board, "/dev/spidev0.0", &[0x05, 0])[1];
    let write_sr1 = |board: &Board, v: u8| {
        exchange(board, "/dev/spidev0.0", &[0x06]);
        exchange(board, "/dev/spidev0.0", &[0x01, v]);
    };
    // SRP set, WP# high: the status register can be written.
    nor.force_status(0x80, 0);
    write_sr1(&board, 0x84);
    assert_eq!(sr1(&board), 0x84);
    // The line drives WP# low: the write is refused.
    chip.configure(4, &LineSetup::output(false), wirespeed_time::now()).unwrap();
    write_sr1(&board, 0x80);
    assert_eq!(sr1(&board), 0x84);
    chip.configure(4, &LineSetup::output(true), wirespeed_time::now()).unwrap();
    write_sr1(&board, 0x80);
    assert_eq!(sr1(&board), 0x80);
}

#[test]
fn finish_writes_every_bus_trace_as_vcd() {
    let dir = temp_dir("trace");
    let two_buses = "[[spi]]\nbus = 0\n[[spi.device]]\ncs = 1\nkind = \"loopback\"\n[[spi]]\nbus = 3\n[[spi.device]]\ncs = 0\nkind = \"loopback\"\n";
    let options = BoardOptions { trace: Some(dir.join("bus.vcd")) };
    let board = Board::from_str_with(two_buses, "t.toml", &dir, &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(board.nodes()[1].0, "/dev/spidev3.0");
    exchange(&board, "/dev/spidev0.1", &[0xA5]);
    board.finish().unwrap();
    let first = fs::read_to_string(dir.join("bus.vcd")).unwrap();
    assert!(first.starts_with("$date") && first.contains("cs1"), "{first}");
    let second = fs::read_to_string(dir.join("bus.spi3.vcd")).unwrap();
    assert!(second.starts_with("$date") && !second.contains("cs1"), "{second}");
}

#[test]
fn a_dropped_board_stops_its_lab_even_with_a_ticking_line() {
    let dir = temp_dir("drop");
    let board = build(BENCH, &dir);
    let watch = board.lab().scheduler().watch();
    std::thread::sleep(Duration::from_millis(15));
    drop(board);
    for _ in 0..100 {
        if watch.is_stopped() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the lab's interrupt thread outlived its board");
}

#[test]
fn the_bench_ad7606_converts_on_convst_and_reads_over_its_node() {
    use wirespeed_lab::devices::ad7606::Signal;
    let dir = temp_dir("ad7606");
    let board = build(BENCH, &dir);
    let Some(LabDevice::Ad7606(adc)) = board.device(0, 2) else { panic!("no AD7606 on spi0.2") };
    assert_eq!(adc.signals()[2], Signal::Dc(2.5));
    let chip = board.gpio_chip(0).unwrap();
    assert_eq!(chip.value(9), Ok(false), "BUSY idles low");
    // Software drives CONVST (line 8): BUSY (line 9) rises, then falls
    // (64× oversampling: 257 µs, long enough to see it high). A read of
    // BUSY that the host delayed past the conversion (a stalled vCPU takes
    // milliseconds) cannot see it high: such a try starts another one.
    adc.set_oversampling(64).unwrap();
    chip.configure(8, &LineSetup::output(false), wirespeed_time::now()).unwrap();
    let mut conversions = 0;
    for tries_left in (0..5).rev() {
        chip.set_output(8, false).unwrap();
        let t0 = wirespeed_time::now();
        chip.set_output(8, true).unwrap();
        let busy = chip.value(9);
        let read_in_time = wirespeed_time::now().ns_since(t0) < 200_000;
        conversions += 1;
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_eq!(chip.value(9), Ok(false), "BUSY falls when the conversion ends");
        if read_in_time {
            assert_eq!(busy, Ok(true), "BUSY follows CONVST");
            break;
        }
        assert!(tries_left > 0, "five reads of BUSY came later than its 257 µs");
    }
    let raw = exchange(&board, "/dev/spidev0.2", &[0; 16]);
    let code = |ch: usize| i16::from_be_bytes([raw[2 * ch], raw[2 * ch + 1]]);
    assert_eq!((code(2), code(3), code(6)), (8192, -8192, 29491));
    assert_eq!(adc.stats().conversions, conversions);
}

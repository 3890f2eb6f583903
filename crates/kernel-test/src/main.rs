//! Guest program of `scripts/kernel-test`: runs inside QEMU's sabrelite
//! (i.MX6Q) on Debian's armmp kernel and checks wirespeed's Linux backends
//! against the real kernel: SPI through spidev to the board's SST25VF016B
//! flash, GPIO through the character device. Prints one line
//! `WIRESPEED-JSON {...}` and exits 0 (the init script then runs the
//! `wirespeed flash` programmer and prints `WIRESPEED-DONE`): the host judges
//! the result (a failed check is `false` in the JSON and a line in `errors`).

mod bench_spi;
mod flash;
mod gpio_checks;
mod gpio_cs;
mod spi_checks;

use serde_json::{json, Map, Value};
use std::time::Instant;

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn main() {
    let mut out = Map::new();
    let mut errors = Vec::new();
    out.insert("kernel".into(), json!(kernel_release()));
    let t = Instant::now();
    spi_checks::run(&mut out, &mut errors);
    let spi_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    gpio_checks::run(&mut out, &mut errors);
    let gpio_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    bench_spi::run(&mut out, &mut errors);
    gpio_cs::run(&mut out, &mut errors);
    out.insert("guest_ms".into(), json!({"spi": spi_ms, "gpio": gpio_ms, "bench_spi": t.elapsed().as_millis() as u64}));
    out.insert("errors".into(), json!(errors));
    println!("WIRESPEED-JSON {}", Value::Object(out));
}

//! A prepared message on the spidev backend allocates nothing per run:
//! the `spi_ioc_transfer` array is built once by `prepare` (a binary of its
//! own, counting every thread's allocations).

mod common;

use common::alloc_count;
use wirespeed::linux::spidev::uapi::SpiIocTransfer;
use wirespeed::linux::spidev::{Errno, Limits, Spidev, SpidevIo};
use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy};

/// A node that accepts every message and allocates nothing.
struct Sink {
    transfers: u64,
}

impl SpidevIo for Sink {
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno> {
        self.transfers += xfers.len() as u64;
        Ok(())
    }
    fn mode32(&mut self) -> Result<u32, Errno> {
        Ok(0)
    }
    fn set_mode32(&mut self, _: u32) -> Result<(), Errno> {
        Ok(())
    }
    fn max_speed_hz(&mut self) -> Result<u32, Errno> {
        Ok(1_000_000)
    }
}

#[test]
fn prepared_runs_and_sync_messages_allocate_nothing() {
    let sp = Spidev::with_io(Sink { transfers: 0 }, "sink", Limits::with_bufsiz(4096)).unwrap();
    let counters = sp.counters();
    let bus = Bus::with_message_backend(sp, Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 1_000_000).cs_timing_ns(50, 50, 0)).unwrap();
    let mut msg = dev.prepare(vec![OwnedTransfer::write(vec![0x03, 0, 0, 0]), OwnedTransfer::read(256)]).unwrap();
    let cmd = [0x05];
    let mut status = [0u8; 1];
    for _ in 0..10 {
        dev.run(&mut msg).unwrap();
        dev.write_then_read(&cmd, &mut status).unwrap(); // warm: the scratch array, per-thread stats
    }
    // Every message here runs in this thread. Other threads of the process
    // (the bus's pump thread, spawned with the bus; the test harness) may
    // first run only now on a loaded machine, and their start-up
    // allocations were seen in 2 runs of 5 (this thread's count stayed 0).
    // Let them start and go idle before counting.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let before = alloc_count::process();
    for _ in 0..1000 {
        dev.run(&mut msg).unwrap();
        dev.write_then_read(&cmd, &mut status).unwrap();
    }
    let n = alloc_count::process() - before;
    assert_eq!(n, 0, "{n} allocations in 1000 prepared runs and 1000 sync messages");
    assert_eq!(counters.ioctls(), 2020, "one ioctl per message");
}

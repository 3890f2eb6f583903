//! DMA transfers on the WSPI block: a descriptor with the mapped buffers'
//! device addresses, `START`, and a wait for `DONE` (polled, on the
//! interrupt, or timed); a DMA fault is read back from `DMAFAULT` and
//! reported with its address.

use super::{LabSpi, Timeout, MAX_BURST_WORDS};
use crate::spi::{Completion, ControllerFault, DmaAddrs, InFlight, TransferTiming};
use std::time::Duration;
use wirespeed_lab::spi::{regs, DmaDescriptor};
use wirespeed_time::{now, Instant};

impl LabSpi {
    /// Shifts `words` words of `wb` bytes by DMA from and to `addrs`, as
    /// bursts of at most [`MAX_BURST_WORDS`] with CS held.
    ///
    /// # Safety
    /// As [`Controller::transfer_dma`](crate::spi::Controller::transfer_dma).
    pub(super) unsafe fn dma_transfer(
        &mut self,
        words: usize,
        wb: usize,
        addrs: DmaAddrs,
        completion: Completion,
        timeout: &mut Timeout,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let mut timing = TransferTiming { started: None, completed: None };
        let mut from = 0;
        while from < words {
            let n = (words - from).min(MAX_BURST_WORDS);
            let offset = (from * wb) as u64;
            let d = DmaDescriptor { tx: addrs.tx.map(|a| a + offset), rx: addrs.rx.map(|a| a + offset) };
            self.block.write(regs::XFERLEN, n as u32);
            // SAFETY: the addresses are mapped for the whole transfer until
            // this returns (our caller's contract), and every burst ends
            // (DONE seen) or is reset before we return.
            unsafe { self.block.load_dma_descriptor(d) };
            let burst = self.dma_burst(n, completion, timeout, in_flight)?;
            timing.started = timing.started.or(burst.started);
            timing.completed = burst.completed;
            from += n;
        }
        Ok(timing)
    }

    /// Starts the loaded burst of `n` words and waits until it is done.
    fn dma_burst(
        &mut self,
        n: usize,
        completion: Completion,
        timeout: &mut Timeout,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let irq = completion == Completion::Irq;
        if irq {
            self.block.write(regs::IRQEN, regs::IRQ_DONE | regs::IRQ_ERR);
        }
        // A polled burst needs no start time: no clock read for it.
        let started = if completion == Completion::Poll { Instant::ZERO } else { now() };
        self.block.write(regs::START, regs::START_GO);
        in_flight.run();
        match completion {
            Completion::Irq => {
                if !self.block.irq().wait(Some(Duration::from_nanos(timeout.deadline().remaining_ns()))) {
                    return Err(self.fail(ControllerFault::Timeout));
                }
            }
            Completion::Timed => self.sleep_until_near(started.add_ns(self.burst_ns(n))),
            Completion::Poll => {}
        }
        let mut spins = 0;
        loop {
            let status = self.block.read(regs::STATUS);
            if status & regs::STATUS_ERR != 0 {
                return Err(self.dma_error(status));
            }
            if status & regs::STATUS_BUSY == 0 && status & regs::STATUS_DONE != 0 {
                break;
            }
            self.idle(&mut spins, timeout)?;
        }
        if irq {
            self.block.write(regs::IRQEN, 0);
        }
        Ok(TransferTiming { started: irq.then_some(started), completed: irq.then(now) })
    }

    /// The fault `status` shows, read before the reset that stops the engine.
    #[cold]
    fn dma_error(&mut self, status: u32) -> ControllerFault {
        let fault = if status & regs::STATUS_DMAFAULT != 0 {
            let lo = u64::from(self.block.read(regs::DMAFAULT_LO));
            let hi = u64::from(self.block.read(regs::DMAFAULT_HI));
            ControllerFault::DmaFault { device_addr: hi << 32 | lo }
        } else {
            ControllerFault::Fault("DMA burst refused or FIFO error (STATUS.ERR)")
        };
        self.fail(fault)
    }
}

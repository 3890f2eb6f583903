"""The GIL is released while the bus works: other Python threads progress."""

import asyncio
import threading
import time

from wirespeed import Transfer


def _count_while(fn):
    """Runs fn in a thread; counts in this one until it finishes."""
    done = threading.Event()
    err = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            err.append(e)
        finally:
            done.set()

    t = threading.Thread(target=run)
    start = time.monotonic()
    t.start()
    n = 0
    while not done.is_set():
        n += 1
    t.join()
    assert not err, err
    return n, time.monotonic() - start


def test_other_threads_run_during_a_long_transfer(loop):
    loop.max_speed_hz = 100_000  # 2000 bytes: 160 ms on the wire
    n, elapsed = _count_while(lambda: loop.xfer2([0x55] * 2000))
    assert elapsed > 0.1
    assert n > 10_000, f"the counting thread only got {n} iterations in {elapsed:.3f} s"


def test_buffers_transfer_and_prepared_runs_release_it_too(loop):
    loop.max_speed_hz = 100_000
    n, _ = _count_while(lambda: loop.transfer(bytes(2000)))
    assert n > 10_000
    p = loop.prepare([Transfer(tx=bytes(2000))])
    n, _ = _count_while(p.run)
    assert n > 10_000
    n, _ = _count_while(lambda: loop.readbytes(6000))
    assert n > 10_000


def test_awaiting_does_not_block_the_event_loop(loop):
    loop.max_speed_hz = 100_000

    async def main():
        ticks = 0
        task = asyncio.ensure_future(loop.submit([Transfer(tx=bytes(2000))]))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)
        await task
        return ticks

    assert asyncio.run(main()) > 20

"""Messages from Python: message(), prepare()/run(), submit()/wait()/await."""

import asyncio

import pytest

import wirespeed
from wirespeed import Transfer


def test_message_results_per_transfer(loop):
    res = loop.message([
        Transfer(tx=b"\x01\x02"),                       # write only
        Transfer(rx_len=3),                             # read: zeros come back
        Transfer(tx=[7, 8], rx_len=2, speed_hz=1_000_000, delay_ns=2_000),
        Transfer(tx=b"xy", rx_len=2, cs_change=True),
        Transfer(tx=b"z", rx_len=1, word_delay_ns=100),
    ])
    assert res == [None, b"\x00\x00\x00", b"\x07\x08", b"xy", b"z"]


def test_message_on_the_nor_flash_jedec_id(nor):
    cmd, jedec = nor.message([Transfer(tx=b"\x9f"), Transfer(rx_len=3)])
    assert cmd is None and jedec == b"\xef\x40\x18"


def test_transfer_attributes_and_repr():
    t = Transfer(tx=b"ab", rx_len=2, speed_hz=5, delay_ns=6, cs_change=True, cs_change_delay_ns=7)
    assert (t.rx_len, t.speed_hz, t.delay_ns, t.cs_change, t.cs_change_delay_ns) == (2, 5, 6, True, 7)
    assert "Transfer(" in repr(t)


def test_prepared_message_reuses_its_buffers(loop):
    p = loop.prepare([Transfer(tx=b"\x01\x02\x03", rx_len=3), Transfer(tx=b"\x09")])
    assert len(p) == 2 and p.wire_ns > 0
    for i in range(50):
        p.set_tx(0, bytes([i, i + 1, i + 2]))
        p.run()
        assert p.rx(0) == bytes([i, i + 1, i + 2])
    assert p.rx(1) is None
    assert p.results() == [bytes([49, 50, 51]), None]
    out = bytearray(3)
    assert p.readinto(0, out) == 3 and out == bytes([49, 50, 51])


def test_prepared_message_fills_given_rx_buffers_each_run(loop):
    rx = bytearray(2)
    p = loop.prepare([Transfer(tx=b"ab", rx=rx)])
    p.run()
    assert rx == b"ab"
    p.set_tx(0, b"cd")
    p.run()
    assert rx == b"cd"


def test_prepared_message_keeps_its_lengths(loop):
    p = loop.prepare([Transfer(tx=b"ab", rx_len=2)])
    with pytest.raises(ValueError, match="keeps its lengths"):
        p.set_tx(0, b"abc")
    with pytest.raises(IndexError):
        p.rx(5)


def test_prepared_message_keeps_the_settings_it_was_prepared_with(loop):
    p = loop.prepare([Transfer(tx=b"a", rx_len=1)])
    loop.mode = 3
    p.run()
    assert p.rx(0) == b"a"


def test_submit_and_wait(loop):
    pending = loop.submit([Transfer(tx=b"hello", rx_len=5)])
    assert pending.wait(timeout=10) == [b"hello"]
    assert pending.done()
    assert pending.wait() == [b"hello"]  # again: same result


def test_submit_a_prepared_message_then_run_it_again(loop):
    p = loop.prepare([Transfer(tx=b"\x01", rx_len=1)])
    pending = p.submit()
    assert pending.message is p
    assert pending.wait() == [b"\x01"]
    p.set_tx(0, b"\x02")
    p.run()
    assert p.rx(0) == b"\x02"
    assert loop.submit(p).wait() == [b"\x02"]


def test_a_submitted_message_cannot_run_until_it_completes(loop):
    loop.max_speed_hz = 100_000
    p = loop.prepare([Transfer(tx=bytes(2000))])  # 160 ms on the wire
    pending = p.submit()
    with pytest.raises(RuntimeError, match="submitted"):
        p.run()
    with pytest.raises(RuntimeError, match="submitted"):
        loop.submit(p)
    pending.wait()
    p.run()


def test_wait_timeout(loop):
    loop.max_speed_hz = 100_000
    pending = loop.submit([Transfer(tx=bytes(2000))])
    with pytest.raises(TimeoutError):
        pending.wait(timeout=0.001)
    assert pending.wait(timeout=10) == [None]


def test_await_from_asyncio(loop):
    async def main():
        p = loop.prepare([Transfer(tx=b"as", rx_len=2)])
        first = await loop.submit(p)
        rest = await asyncio.gather(*(loop.submit([Transfer(tx=bytes([i]), rx_len=1)]) for i in range(5)))
        return first, rest

    first, rest = asyncio.run(main())
    assert first == [b"as"]
    assert rest == [[bytes([i])] for i in range(5)]


def test_await_outside_a_loop_is_a_type_error(loop):
    pending = loop.submit([Transfer(tx=b"a")])
    with pytest.raises(TypeError, match="event loop"):
        next(pending.__await__())
    pending.wait()


def test_message_errors_name_the_transfer(loop):
    with pytest.raises(ValueError, match="transfer 1"):
        loop.message([Transfer(tx=b"a"), Transfer(tx=b"ab", rx_len=3)])
    with pytest.raises(ValueError, match="empty"):
        loop.message([])
    with pytest.raises(ValueError):
        Transfer()
    with pytest.raises(ValueError, match="not both"):
        Transfer(rx=bytearray(1), rx_len=1)
    with pytest.raises(OverflowError, match="4096"):
        loop.message([Transfer(tx=bytes(5000))])


def test_a_message_longer_than_bufsiz_goes_in_pieces_where_cs_may_drop(loop):
    res = loop.message([Transfer(tx=bytes([i]) * 3000, rx_len=3000, cs_change=True) for i in range(4)])
    assert res == [bytes([i]) * 3000 for i in range(4)]


def test_pending_repr(loop):
    p = loop.submit([Transfer(tx=b"a")])
    p.wait()
    assert "done" in repr(p)
    assert isinstance(p, wirespeed.Pending) and isinstance(p.message, wirespeed.PreparedMessage)

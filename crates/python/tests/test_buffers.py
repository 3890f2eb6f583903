"""Buffers in and out with no per-element conversion."""

import array

import numpy as np
import pytest


def test_transfer_takes_any_buffer_and_returns_bytes(loop):
    for data in (b"abc", bytearray(b"abc"), memoryview(b"xabcx")[1:4], array.array("B", b"abc"),
                 np.frombuffer(b"abc", dtype=np.uint8)):
        assert loop.transfer(data) == b"abc"


def test_transfer_into_a_given_buffer(loop):
    out = bytearray(4)
    assert loop.transfer(b"\x01\x02\x03\x04", out) is None
    assert out == b"\x01\x02\x03\x04"
    arr = np.zeros(4, dtype=np.uint8)
    loop.transfer(b"\x05\x06\x07\x08", arr)
    assert arr.tolist() == [5, 6, 7, 8]
    with pytest.raises(ValueError, match="same length"):
        loop.transfer(b"\x01", bytearray(2))


def test_raw_bytes_of_wider_items(loop):
    a = array.array("H", [0x0102, 0x0304])
    assert loop.transfer(a) == a.tobytes()
    n = np.arange(6, dtype=np.int16)
    assert loop.transfer(n) == n.tobytes()


def test_read_and_readinto(loop):
    assert loop.read(5) == b"\x00" * 5
    assert len(loop.read(9000)) == 9000
    buf = bytearray(b"\xff" * 6000)
    assert loop.readinto(buf) == 6000
    assert buf == bytearray(6000)
    arr = np.full(10, 7, dtype=np.uint8)
    loop.readinto(memoryview(arr)[2:8])
    assert arr.tolist() == [7, 7, 0, 0, 0, 0, 0, 0, 7, 7]


def test_readinto_needs_a_writable_buffer(loop):
    with pytest.raises(TypeError, match="writable"):
        loop.readinto(b"read-only")


def test_write_takes_buffers(loop):
    loop.write(b"x" * 10_000)
    loop.write(np.zeros(5000, dtype=np.uint8))


def test_xfer2_with_numpy_bytes(loop):
    assert loop.xfer2(np.array([1, 2, 3], dtype=np.uint8)) == [1, 2, 3]
    # Non-contiguous arrays fall back to the sequence path.
    assert loop.xfer2(np.arange(6, dtype=np.uint8)[::2]) == [0, 2, 4]
    # Wider items are values, as in py-spidev: each must be a byte.
    assert loop.xfer2(np.array([1, 2], dtype=np.int32)) == [1, 2]
    with pytest.raises(ValueError, match="not a byte"):
        loop.xfer2(np.array([1, 300], dtype=np.int32))


def test_message_fills_numpy_and_bytearray(loop):
    from wirespeed import Transfer

    rx = np.zeros(3, dtype=np.uint8)
    ba = bytearray(2)
    res = loop.message([Transfer(tx=b"abc", rx=rx), Transfer(tx=b"de", rx=ba)])
    assert res[0] is rx and res[1] is ba
    assert bytes(rx) == b"abc" and ba == b"de"

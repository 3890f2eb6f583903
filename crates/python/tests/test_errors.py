"""Errors are Python exceptions with clear messages, never a crash."""

import errno

import pytest

import wirespeed
from wirespeed import Transfer


def test_bad_bus_and_device_numbers(lab):
    spi = wirespeed.SpiDev(lab=lab)
    with pytest.raises(ValueError, match="bus -1"):
        spi.open(-1, 0)
    with pytest.raises(ValueError):
        spi.open(0, 2**40)
    with pytest.raises(FileNotFoundError, match="/dev/spidev0.7") as e:
        spi.open(0, 7)
    assert e.value.errno == errno.ENOENT and "it serves" in str(e.value)
    with pytest.raises(TypeError):
        spi.open("0", 1)


def test_missing_system_node_hints_at_the_lab(bench_cwd):
    with pytest.raises(FileNotFoundError, match="WIRESPEED_LAB"):
        wirespeed.SpiDev().open(250, 250)


def test_closed_device(lab):
    spi = wirespeed.SpiDev(lab=lab)
    calls = [
        lambda: spi.xfer([1]), lambda: spi.xfer2([1]), lambda: spi.xfer3([1]), lambda: spi.readbytes(1),
        lambda: spi.writebytes([1]), lambda: spi.writebytes2(b"a"), lambda: spi.read(1),
        lambda: spi.readinto(bytearray(1)), lambda: spi.write(b"a"), lambda: spi.transfer(b"a"),
        lambda: spi.message([Transfer(tx=b"a")]), lambda: spi.prepare([Transfer(tx=b"a")]),
        lambda: spi.submit([Transfer(tx=b"a")]), lambda: setattr(spi, "mode", 1),
        lambda: setattr(spi, "max_speed_hz", 1000), lambda: setattr(spi, "bits_per_word", 8),
        lambda: setattr(spi, "cshigh", False), lambda: spi.fileno(),
    ]
    for call in calls:
        with pytest.raises(OSError, match="not open") as e:
            call()
        assert e.value.errno == errno.EBADF
    spi.open(0, 1)
    spi.close()
    with pytest.raises(OSError, match="not open"):
        spi.xfer2([1])


def test_wrong_types_and_values(loop):
    cases = [
        (TypeError, "not str", lambda: loop.xfer2("abc")),
        (TypeError, "element 1 is a float", lambda: loop.xfer2([1, 1.5])),
        (TypeError, "element 0 is a NoneType", lambda: loop.writebytes([None])),
        (ValueError, "element 0 is 256", lambda: loop.xfer2([256])),
        (ValueError, "element 0 is -1", lambda: loop.xfer([-1])),
        (TypeError, "empty", lambda: loop.xfer2([])),
        (TypeError, "empty", lambda: loop.writebytes([])),
        (TypeError, "not int", lambda: loop.xfer2(5)),
        (TypeError, "integer", lambda: setattr(loop, "mode", "1")),
        (ValueError, "between 0 and 3", lambda: setattr(loop, "mode", 4)),
        (TypeError, "boolean", lambda: setattr(loop, "cshigh", 1)),
        (ValueError, "8 to 32", lambda: setattr(loop, "bits_per_word", 7)),
        (ValueError, "max_speed_hz", lambda: setattr(loop, "max_speed_hz", 0)),
        (ValueError, "max_speed_hz", lambda: setattr(loop, "max_speed_hz", 2**32)),
        (AttributeError, None, lambda: delattr(loop, "mode")),
        (ValueError, "negative", lambda: loop.readbytes(-1)),
        (TypeError, "bytes-like", lambda: loop.write(123)),
        (TypeError, None, lambda: loop.message([1, 2])),
        (TypeError, "PreparedMessage", lambda: loop.submit(42)),
        (OverflowError, "4096", lambda: loop.xfer2([0] * 5000)),
        (OverflowError, "4096", lambda: loop.transfer(bytes(5000))),
        (OverflowError, None, lambda: loop.xfer2([1], 2**32)),
    ]
    for exc, text, call in cases:
        with pytest.raises(exc, match=text):
            call()
    assert loop.xfer2([1]) == [1]  # still usable


def test_non_contiguous_buffers(loop):
    import numpy as np

    with pytest.raises(ValueError, match="contiguous"):
        loop.write(np.arange(10, dtype=np.uint16)[::2])


def test_speed_the_controller_cannot_do(loop):
    with pytest.raises(OSError):
        loop.xfer2([1], 1)  # 1 Hz: below the lab block's divider range


def test_bits_per_word_the_lab_cannot_shift(loop):
    with pytest.raises(OSError):
        loop.bits_per_word = 12
    assert loop.bits_per_word == 8


def test_odd_arguments_never_panic(loop):
    odd = [None, -1, 2**70, 1.5, "x", b"", [], [[]], {}, object(), float("nan"), [2**70], memoryview(b"")]
    methods = ["xfer", "xfer2", "xfer3", "readbytes", "writebytes", "writebytes2", "read", "readinto", "write",
               "transfer", "message", "prepare", "submit", "open", "open_path"]
    for name in methods:
        for arg in odd:
            try:
                getattr(loop, name)(arg)
            except Exception:
                pass  # an exception, not a PanicException (a BaseException) or a crash
    for name in ("mode", "bits_per_word", "max_speed_hz", "cshigh", "read0"):
        for arg in odd:
            try:
                setattr(loop, name, arg)
            except Exception:
                pass
    for arg in odd:
        try:
            Transfer(tx=arg, rx_len=1)
        except Exception:
            pass
        try:
            Transfer(rx_len=arg)
        except Exception:
            pass

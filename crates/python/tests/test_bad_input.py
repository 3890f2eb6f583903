"""Bad input at the Python API (docs/bad-input.md, surface "Python API").

Each test feeds one kind of bad value and checks the exception class (and
errno where there is one), that the message names the value and what is
allowed, and that nothing reached the bus. The bus check uses the bench's
NOR flash on /dev/spidev0.0: every bad message starts with Write Enable
(0x06), so had any byte gone out, the chip's WEL bit (status register 1,
bit 1) would be set; and the first page must still read erased.
"""

import errno
from datetime import timedelta

import pytest

import wirespeed
from wirespeed import Transfer
from wirespeed.gpio import Chip, LineSettings
from wirespeed.gpio.line import Direction, Edge, Value

WREN = 0x06


def untouched(nor):
    """Nothing reached the chip: WEL clear, the first page erased."""
    assert nor.xfer2([0x05, 0])[1] & 0x02 == 0, "a Write Enable went out"
    assert nor.xfer2([0x03, 0, 0, 0] + [0] * 16)[4:] == [0xFF] * 16


def refused(nor, exc, text, call, err=None):
    with pytest.raises(exc, match=text) as e:
        call()
    if err is not None:
        assert e.value.errno == err, f"errno {e.value.errno}, want {err}: {e.value}"
    untouched(nor)
    return e.value


def test_wrong_types_are_type_errors(nor):
    refused(nor, TypeError, "not str", lambda: nor.xfer2("\x06abc"))
    refused(nor, TypeError, "element 1 is a float", lambda: nor.xfer2([WREN, 1.5]))
    refused(nor, TypeError, "element 1 is a NoneType", lambda: nor.writebytes([WREN, None]))
    refused(nor, TypeError, "bytes-like", lambda: nor.write(0x06))
    refused(nor, TypeError, "integer", lambda: setattr(nor, "mode", "1"))
    refused(nor, TypeError, "boolean", lambda: setattr(nor, "cshigh", 1))
    refused(nor, TypeError, None, lambda: nor.message([WREN, 2]))


def test_byte_values_out_of_range_are_value_errors(nor):
    refused(nor, ValueError, "element 1 is 256", lambda: nor.xfer2([WREN, 256]))
    refused(nor, ValueError, "element 1 is -1", lambda: nor.xfer([WREN, -1]))
    refused(nor, ValueError, "negative", lambda: nor.readbytes(-1))


def test_mode_out_of_range(nor):
    before = nor.mode
    refused(nor, ValueError, "between 0 and 3", lambda: setattr(nor, "mode", 4))
    assert nor.mode == before


def test_bits_per_word_out_of_range_or_unsupported(nor):
    refused(nor, ValueError, "8 to 32", lambda: setattr(nor, "bits_per_word", 7))
    refused(nor, ValueError, "33 bits per word is not supported; allowed: 1, 2", lambda: nor.xfer2([WREN], 0, 0, 33))
    e = refused(nor, OSError, "12", lambda: setattr(nor, "bits_per_word", 12), err=errno.EINVAL)
    assert "bits per word" in str(e), e
    assert nor.bits_per_word == 8


def test_speed_out_of_range(nor):
    before = nor.max_speed_hz
    refused(nor, ValueError, "max_speed_hz", lambda: setattr(nor, "max_speed_hz", 0))
    refused(nor, ValueError, "max_speed_hz", lambda: setattr(nor, "max_speed_hz", 2**32))
    refused(nor, OverflowError, None, lambda: nor.xfer2([WREN], 2**32))
    e = refused(nor, OSError, "1 Hz", lambda: nor.xfer2([WREN], 1), err=errno.EINVAL)
    assert "check the speed" in str(e), e
    assert nor.max_speed_hz == before


def test_transfer_longer_than_bufsiz(nor):
    refused(nor, OverflowError, "4096", lambda: nor.xfer2([WREN] + [0] * 5000))
    refused(nor, OverflowError, "4096", lambda: nor.transfer(bytes([WREN]) + bytes(5000)))
    refused(nor, OverflowError, "4096", lambda: nor.message([Transfer(tx=bytes([WREN]) + bytes(5000))]))


def test_empty_messages(nor):
    refused(nor, TypeError, "empty", lambda: nor.xfer2([]))
    refused(nor, TypeError, "empty", lambda: nor.writebytes([]))


def test_closed_device_is_ebadf(lab, nor):
    spi = wirespeed.SpiDev(lab=lab)
    refused(nor, OSError, "not open", lambda: spi.xfer2([WREN]), err=errno.EBADF)
    spi.open(0, 0)
    spi.close()
    refused(nor, OSError, "not open", lambda: spi.writebytes([WREN]), err=errno.EBADF)


def test_bad_bus_or_device_numbers(lab, nor):
    spi = wirespeed.SpiDev(lab=lab)
    refused(nor, ValueError, "bus -1", lambda: spi.open(-1, 0))
    e = refused(nor, FileNotFoundError, "/dev/spidev0.7", lambda: spi.open(0, 7), err=errno.ENOENT)
    assert "it serves" in str(e), e
    refused(nor, TypeError, None, lambda: spi.open("0", 0))


def test_gpio_bad_offsets_and_settings(lab):
    chip = Chip("/dev/gpiochip0", lab=lab)
    before = chip.get_line_info(2)
    with pytest.raises(ValueError, match="out of range"):
        chip.request_lines({99: None})
    with pytest.raises(TypeError):
        chip.request_lines({2.5: None})
    with pytest.raises(ValueError, match="debounce"):
        chip.request_lines({2: LineSettings(direction=Direction.OUTPUT, debounce_period=timedelta(milliseconds=1))})
    with pytest.raises(ValueError, match="inputs only"):
        chip.request_lines({2: LineSettings(direction=Direction.OUTPUT, edge_detection=Edge.BOTH)})
    after = chip.get_line_info(2)
    assert (after.used, after.direction) == (before.used, before.direction), "a refused request took the line"
    with chip.request_lines({2: LineSettings(direction=Direction.INPUT)}) as req:
        with pytest.raises(PermissionError, match="output") as e:
            req.set_value(2, Value.ACTIVE)
        assert e.value.errno == errno.EPERM
        assert req.get_value(2) == Value.INACTIVE
        with pytest.raises(ValueError, match="not part of this request"):
            req.get_value(5)
    chip.close()


def test_bad_board_files_name_the_file_and_line(bench_cwd):
    with pytest.raises(ValueError, match=r'lab.toml:5: unknown kind "eeprom" \(known: spi-nor, loopback'):
        wirespeed.lab.from_toml('[[spi]]\nbus = 0\n[[spi.device]]\ncs = 0\nkind = "eeprom"\n', name="lab.toml")
    with pytest.raises(ValueError, match=r"lab.toml:2: instant_wire: invalid type: integer `1`, expected a boolean"):
        wirespeed.lab.from_toml("[lab]\ninstant_wire = 1\n", name="lab.toml")
    with pytest.raises(ValueError, match=r"lab.toml:1: missing field `lines`"):
        wirespeed.lab.from_toml("[[gpio]]\nchip = 0\n", name="lab.toml")
    with pytest.raises(ValueError, match=r"lab.toml:5: bus 0 is already described at line 1"):
        wirespeed.lab.from_toml("[[spi]]\nbus = 0\n\n[[spi]]\nbus = 0\n", name="lab.toml")
    with pytest.raises(ValueError, match="missing.toml: cannot read the board file"):
        wirespeed.lab.load(bench_cwd / "missing.toml")

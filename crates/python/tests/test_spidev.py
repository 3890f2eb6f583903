"""The py-spidev compatible surface of wirespeed.SpiDev, on the lab bench."""

import os
import subprocess
import sys

import pytest

import wirespeed
from conftest import BENCH, EXAMPLES


def test_open_reads_the_node_settings(loop):
    assert not loop.closed
    assert loop.mode == 0
    assert loop.bits_per_word == 8
    assert loop.max_speed_hz == 50_000_000  # the bench node's default clock
    assert (loop.cshigh, loop.lsbfirst, loop.threewire, loop.loop, loop.no_cs) == (False,) * 5
    assert loop.bufsiz == 4096
    assert "/dev/spidev0.1" in repr(loop)


def test_xfer_family_on_the_loopback(loop):
    assert loop.xfer([1, 2, 3]) == [1, 2, 3]
    assert loop.xfer2([0xA5, 0x5A]) == [0xA5, 0x5A]
    assert loop.xfer3([9, 8, 7]) == (9, 8, 7)


def test_xfer_fills_a_list_argument_in_place_as_py_spidev_does(loop):
    values = [4, 5, 6]
    out = loop.xfer2(values)
    assert out is values
    t = loop.xfer2((1, 2))
    assert isinstance(t, tuple) and t == (1, 2)
    assert loop.xfer2(b"\x01\x02") == [1, 2]  # a bytes argument: a new list


def test_xfer_knobs(loop):
    assert loop.xfer2([1, 2], 1_000_000) == [1, 2]
    assert loop.xfer2([1, 2], 1_000_000, 10) == [1, 2]
    assert loop.xfer([1, 2], 0, 0, 8) == [1, 2]


def test_xfer3_has_no_bufsiz_cap(loop):
    data = [i & 0xFF for i in range(3 * 4096 + 17)]
    assert loop.xfer3(data) == tuple(data)


def test_readbytes_and_writebytes(loop):
    got = loop.readbytes(8)
    assert got == [0] * 8  # a read sends zeros: the loopback returns them
    assert all(isinstance(x, int) for x in got)
    assert len(loop.readbytes(10_000)) == 10_000  # beyond bufsiz: in pieces
    assert loop.readbytes(0) == []
    assert loop.writebytes([1, 2, 3]) is None
    loop.writebytes(list(range(256)) * 40)  # 10240 bytes: in pieces


def test_writebytes2_takes_buffers_and_sequences(loop):
    import array

    loop.writebytes2(bytes(range(256)))
    loop.writebytes2(bytearray(20_000))
    loop.writebytes2(memoryview(b"abc"))
    loop.writebytes2(array.array("H", [1, 2, 3]))  # raw bytes of any buffer, as py-spidev
    loop.writebytes2([1, 2, 3])


def test_mode_attribute_round_trips(loop):
    for m in (1, 2, 3, 0):
        loop.mode = m
        assert loop.mode == m
        assert loop.xfer2([m]) == [m]


def test_speed_and_bits_attributes(loop):
    loop.max_speed_hz = 1_000_000
    assert loop.max_speed_hz == 1_000_000
    loop.bits_per_word = 8
    assert loop.bits_per_word == 8
    assert loop.xfer2([7]) == [7]


def test_flags_the_lab_controller_lacks_are_refused_and_not_kept(loop):
    # The lab's WSPI block does CPOL/CPHA only: the kernel's answer is EINVAL.
    for name in ("cshigh", "lsbfirst", "threewire", "loop", "no_cs"):
        with pytest.raises(OSError) as e:
            setattr(loop, name, True)
        assert e.value.errno == 22
        assert name in str(e.value)
        assert getattr(loop, name) is False
        setattr(loop, name, False)  # clearing is fine
    assert loop.xfer2([1]) == [1]


def test_context_manager_closes(lab):
    with wirespeed.SpiDev(lab=lab) as spi:
        spi.open(0, 1)
        assert not spi.closed
    assert spi.closed
    assert spi.mode == 0 and spi.max_speed_hz == 0  # py-spidev's values when closed


def test_constructor_opens_like_py_spidev(lab):
    spi = wirespeed.SpiDev(0, 1, lab=lab)
    assert spi.xfer2([3]) == [3]
    spi.close()
    spi.close()  # twice is fine


def test_open_path_and_reopen(lab):
    spi = wirespeed.SpiDev(lab=lab)
    spi.open_path("/dev/spidev0.1")
    assert spi.xfer2([5]) == [5]
    spi.open(0, 0)  # reopening another node closes the first
    assert spi.xfer2([0x9F, 0, 0, 0]) == [0xFF, 0xEF, 0x40, 0x18]
    spi.close()


def test_nor_flash_jedec_id_program_and_read(nor):
    assert nor.xfer2([0x9F, 0, 0, 0])[1:] == [0xEF, 0x40, 0x18]
    addr = [0x00, 0x10, 0x00]
    nor.xfer2([0x06])  # write enable
    nor.xfer2([0x20] + addr)  # sector erase
    while nor.xfer2([0x05, 0])[1] & 1:
        pass
    nor.writebytes([0x06])
    nor.writebytes2(bytes([0x02] + addr) + b"wirespeed")  # page program
    while nor.xfer2([0x05, 0])[1] & 1:
        pass
    got = nor.xfer2([0x03] + addr + [0] * 9)[4:]
    assert bytes(got) == b"wirespeed"


def test_fileno_of_a_lab_node_is_an_oserror(loop):
    with pytest.raises(OSError):
        loop.fileno()


def test_the_py_spidev_readme_script_runs_unchanged_on_the_lab(bench_cwd):
    env = dict(os.environ, WIRESPEED_LAB=str(BENCH))
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "spidev_readme.py")],
        env=env,
        cwd=bench_cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[1, 2, 3]", "[4, 5, 6]", "[0, 0, 0, 0]"]


def test_the_example_differs_from_py_spidev_only_in_its_import():
    import ast

    tree = ast.parse((EXAMPLES / "spidev_readme.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert len(imports) == 1
    assert [(a.name, a.asname) for a in imports[0].names] == [("wirespeed", "spidev")]

"""The lab from Python: wirespeed.lab."""

import os
import subprocess
import sys

import pytest

import wirespeed
from conftest import BENCH


def test_load_serves_the_bench_nodes(lab):
    assert lab.nodes() == ["/dev/spidev0.0", "/dev/spidev0.1", "/dev/spidev0.2", "/dev/gpiochip0"]
    assert str(BENCH) in lab.name and "spidev0.1" in repr(lab)


def test_the_flash_image_is_created_in_the_working_directory(lab, bench_cwd):
    image = bench_cwd / "flash.bin"
    assert image.stat().st_size == 16 * 1024 * 1024


def test_flash_contents_persist_through_the_image(bench_cwd):
    lab = wirespeed.lab.load(BENCH)
    with wirespeed.SpiDev(0, 0, lab=lab) as nor:
        nor.xfer2([0x06])
        nor.xfer2([0x02, 0, 0, 0, 0x12, 0x34])
        while nor.xfer2([0x05, 0])[1] & 1:
            pass
    lab.finish()
    assert (bench_cwd / "flash.bin").read_bytes()[:2] == b"\x12\x34"
    lab2 = wirespeed.lab.load(BENCH)
    with wirespeed.SpiDev(0, 0, lab=lab2) as nor:
        assert nor.xfer2([0x03, 0, 0, 0, 0, 0])[4:] == [0x12, 0x34]


def test_from_toml_and_node_errors(bench_cwd):
    lab = wirespeed.lab.from_toml('[[spi]]\nbus = 2\n[[spi.device]]\ncs = 3\nkind = "loopback"\n')
    assert lab.nodes() == ["/dev/spidev2.3"]
    with wirespeed.SpiDev(2, 3, lab=lab) as spi:
        assert spi.xfer2([1]) == [1]
    with pytest.raises(FileNotFoundError, match="spidev2.3"):
        wirespeed.SpiDev(lab=lab).open(0, 0)
    assert wirespeed.lab.Lab.from_toml('[[gpio]]\nchip = 1\nlines = 4\n').nodes() == ["/dev/gpiochip1"]


def test_bad_board_files_name_the_line(bench_cwd):
    with pytest.raises(ValueError, match=r"<string>:3"):
        wirespeed.lab.from_toml('[[spi]]\nbus = 0\nbogus = 1\n')
    with pytest.raises(ValueError, match="cannot read"):
        wirespeed.lab.load(bench_cwd / "missing.toml")


def test_builder(bench_cwd):
    b = (wirespeed.lab.Builder()
         .spi(0, bufsiz=8192).nor(cs=0, chip="w25q128jv").loopback(cs=1).mcp2518fd(cs=2)
         .gpio(0, lines=8, label="bench").line(0, name="TICK", toggle_every_us=10_000).line(1, level="high"))
    assert 'kind = "spi-nor"' in b.toml()
    lab = b.build()
    assert lab.nodes() == ["/dev/spidev0.0", "/dev/spidev0.1", "/dev/spidev0.2", "/dev/gpiochip0"]
    with wirespeed.SpiDev(0, 1, lab=lab) as spi:
        assert spi.bufsiz == 8192
        assert spi.xfer2(list(range(6000)) and [1] * 6000) == [1] * 6000
    with wirespeed.SpiDev(0, 0, lab=lab) as nor:
        assert nor.xfer2([0x9F, 0, 0, 0])[1:] == [0xEF, 0x40, 0x18]
    with pytest.raises(ValueError):
        wirespeed.lab.Builder().loopback(cs=0)


def test_gpio_chip_of_the_lab(lab):
    chip = wirespeed.gpio.Chip("/dev/gpiochip0", lab=lab)
    try:
        assert chip.get_info().num_lines == 32
    finally:
        chip.close()


def test_env_var_lab(bench_cwd):
    code = (
        "import wirespeed\n"
        "lab = wirespeed.lab.from_env()\n"
        "print(lab.nodes())\n"
        "s = wirespeed.SpiDev(); s.open(0, 1); print(s.xfer2([1, 2]))\n"
        "print(wirespeed.gpio.Chip('/dev/gpiochip0').get_info().num_lines)\n"
    )
    env = dict(os.environ, WIRESPEED_LAB=str(BENCH))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=bench_cwd, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "['/dev/spidev0.0', '/dev/spidev0.1', '/dev/spidev0.2', '/dev/gpiochip0']",
        "[1, 2]",
        "32",
    ]


def test_from_env_is_none_without_the_variable(bench_cwd):
    assert wirespeed.lab.from_env() is None


def test_bad_env_var_board_is_a_clear_error(bench_cwd, monkeypatch):
    monkeypatch.setenv("WIRESPEED_LAB", str(bench_cwd / "nope.toml"))
    with pytest.raises(ValueError, match="WIRESPEED_LAB"):
        wirespeed.SpiDev().open(0, 1)


def test_two_spidevs_on_one_node_share_it(lab):
    a = wirespeed.SpiDev(0, 1, lab=lab)
    b = wirespeed.SpiDev(0, 1, lab=lab)
    assert a.xfer2([1]) == [1] and b.xfer2([2]) == [2]
    a.close()
    b.close()

"""Fixtures: the bench of examples/lab.toml, built in a temporary working
directory (its flash image, flash.bin, is created there)."""

import os
import pathlib

import pytest

import wirespeed

REPO = pathlib.Path(__file__).resolve().parents[3]
BENCH = REPO / "examples" / "lab.toml"
EXAMPLES = REPO / "crates" / "python" / "examples"


@pytest.fixture
def bench_cwd(tmp_path, monkeypatch):
    """A temporary working directory for flash.bin; no WIRESPEED_LAB leaking in."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WIRESPEED_LAB", raising=False)
    return tmp_path


@pytest.fixture
def lab(bench_cwd):
    board = wirespeed.lab.load(BENCH)
    yield board
    board.finish()


@pytest.fixture
def loop(lab):
    """/dev/spidev0.1 of the bench: a loopback."""
    with wirespeed.SpiDev(lab=lab) as spi:
        spi.open(0, 1)
        yield spi


@pytest.fixture
def nor(lab):
    """/dev/spidev0.0 of the bench: a W25Q128JV NOR flash."""
    with wirespeed.SpiDev(lab=lab) as spi:
        spi.open(0, 0)
        yield spi


def pytest_report_header(config):
    return f"wirespeed {wirespeed.__version__} from {os.path.dirname(wirespeed.__file__)}; bench {BENCH}"

"""wirespeed.ad7606 on the bench of examples/lab.toml (/dev/spidev0.2 an
AD7606; CONVST on gpiochip0 line 8, BUSY on line 9; V1 a 5 V 1 kHz sine,
V3 2.5 V, V4 -2.5 V, V6 0 V, V7 9 V, V8 -9 V): values, shapes, overruns,
the GIL, errors."""

import array
import threading
import time

import numpy as np
import pytest

import wirespeed
from wirespeed.ad7606 import Ad7606

LSB = 10.0 / 32768
WIRING = dict(spi=(0, 2), convst=("/dev/gpiochip0", 8), busy=("/dev/gpiochip0", 9))


@pytest.fixture
def adc(lab):
    return Ad7606(lab=lab, **WIRING)


def test_dc_channels_come_back_within_a_code(adc):
    codes, t_ns = adc.sample()
    assert len(codes) == 8 and all(isinstance(c, int) for c in codes)
    assert 0 <= time.monotonic_ns() - t_ns < 1_000_000_000
    v = adc.volts(codes)
    for ch, want in [(2, 2.5), (3, -2.5), (5, 0.0), (6, 9.0), (7, -9.0)]:
        assert abs(v[ch] - want) <= LSB, (ch, v)
    assert abs(v[4]) < 0.05  # noise of 10 mV
    assert adc.busy_mode == "poll" and adc.samples == 1
    assert len(adc.volts()) == 8 and adc.samples == 2


def test_read_shapes_and_the_sine(lab):
    adc = Ad7606(lab=lab, max_lag_us=50_000, **WIRING)
    n, rate = 2000, 10_000
    codes, stamps, overruns = adc.read(n, rate)
    assert isinstance(codes, array.array) and codes.typecode == "h"
    assert isinstance(stamps, array.array) and stamps.typecode == "Q"
    # A loaded machine can make the sampler miss periods: they are counted, never silent.
    got = n - overruns
    assert adc.overruns == overruns and got > n // 2
    x = np.frombuffer(codes, np.int16).reshape(-1, 8)
    t = np.frombuffer(stamps, np.uint64)
    assert x.shape == (got, 8) and t.shape == (got,)
    dt = np.diff(t.astype(np.int64))
    assert (dt > 0).all() and abs(np.median(dt) - 1e9 / rate) < 2_000
    # V1: 5 V at 1 kHz; a least-squares fit on the timestamps.
    ts = (t - t[0]).astype(np.float64) / 1e9
    basis = np.column_stack([np.sin(2e3 * np.pi * ts), np.cos(2e3 * np.pi * ts), np.ones_like(ts)])
    volts = x[:, 0] * LSB
    coef, *_ = np.linalg.lstsq(basis, volts, rcond=None)
    assert abs(np.hypot(coef[0], coef[1]) - 5.0) < 0.05, coef
    # Each value is the sine at its own timestamp (the CONVST instant): to
    # 30 mV (1 µs of the 31 mV/µs slope) for 99 % of them; a preemption
    # between the timestamp and CONVST's edge can move a few further.
    assert np.percentile(np.abs(basis @ coef - volts), 99) < 0.03
    assert (np.abs(x[:, 6] * LSB - 9.0) <= LSB).all()


def test_modest_rate_has_no_overrun_and_timestamps_are_on_the_period(lab):
    # 5 kHz; a loaded machine may stop the sampler for milliseconds: with
    # 50 ms of lag allowed, those periods are caught up, not lost.
    adc = Ad7606(lab=lab, max_lag_us=50_000, **WIRING)
    codes, stamps, overruns = adc.read(1000, 5_000)
    assert overruns == 0 and len(stamps) == 1000 and len(codes) == 8000
    t = np.frombuffer(stamps, np.uint64).astype(np.int64)
    assert abs((t[-1] - t[0]) / 999 - 200_000) < 2_000


def test_predicted_busy_and_five_volt_range(lab):
    adc = Ad7606(lab=lab, busy_mode="predicted", range=5, **WIRING)
    assert adc.busy_mode == "predicted" and adc.range == 5.0
    codes, _ = adc.sample()
    # The part is strapped ±10 V on this board: the driver scales by its own range.
    assert abs(adc.volts(codes)[2] - 1.25) <= 5.0 / 32768


def test_the_gil_is_released_while_sampling(adc):
    ticks = 0
    done = threading.Event()

    def spin():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        adc.read(5000, 20_000)  # 250 ms in Rust
    finally:
        done.set()
        th.join()
    assert ticks > 10_000


def test_errors(lab):
    with pytest.raises(ValueError, match="range"):
        Ad7606(lab=lab, range=7, **WIRING)
    with pytest.raises(ValueError, match="oversampling"):
        Ad7606(lab=lab, oversampling=3, **WIRING)
    with pytest.raises(ValueError, match="busy_mode"):
        Ad7606(lab=lab, busy_mode="sometimes", **WIRING)
    with pytest.raises(ValueError, match="busy"):
        Ad7606(lab=lab, spi=(0, 2), convst=("/dev/gpiochip0", 8), busy_mode="edge")
    with pytest.raises(ValueError, match="max_lag"):
        Ad7606(lab=lab, max_lag_us=20_000_000, **WIRING)
    with pytest.raises(ValueError, match="SPI clock"):
        Ad7606(lab=lab, speed_hz=50_000_000, **WIRING)
    with pytest.raises(FileNotFoundError, match="spidev0.7"):
        Ad7606(lab=lab, spi=(0, 7), convst=("/dev/gpiochip0", 8))
    with pytest.raises(FileNotFoundError, match="gpiochip3"):
        Ad7606(lab=lab, spi=(0, 2), convst=("/dev/gpiochip3", 8))
    with pytest.raises(ValueError, match="convst"):
        Ad7606(lab=lab, spi=(0, 2), convst=8)
    adc = Ad7606(lab=lab, **WIRING)
    with pytest.raises(OSError):  # CONVST is taken
        Ad7606(lab=lab, **WIRING)
    with pytest.raises(ValueError, match="sample rate"):
        adc.read(10, 500_000)
    with pytest.raises(ValueError, match="n:"):
        adc.read(0, 1000)


def test_busy_never_falling_is_a_timeout(bench_cwd):
    # BUSY is read from line 10, held high from outside: it never falls.
    board = wirespeed.lab.from_toml("""
[[spi]]
bus = 0
[[spi.device]]
cs = 2
kind = "ad7606"
[[gpio]]
chip = 0
lines = 16
[[gpio.line]]
offset = 8
wire = "spi0.2:convst"
[[gpio.line]]
offset = 10
level = "high"
""")
    adc = Ad7606(lab=board, spi=(0, 2), convst=("/dev/gpiochip0", 8), busy=("/dev/gpiochip0", 10))
    with pytest.raises(TimeoutError, match="BUSY"):
        adc.sample()

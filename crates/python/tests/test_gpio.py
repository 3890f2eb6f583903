"""wirespeed.gpio on the lab board of examples/lab.toml (gpiochip0: 32 lines,
TICK toggling every 10 ms, BUTTON held high, LED, RESET_N, FLASH_WP_N), and
through the LD_PRELOAD shim on the kernel-device path.

Run from a scratch directory: the board creates flash.bin in the working
directory. ``pytest crates/python/tests/test_gpio.py``
"""

import asyncio
import errno
import os
import select
import subprocess
import sys
import threading
import time
import warnings
from datetime import timedelta
from pathlib import Path

import pytest

import wirespeed
from wirespeed import gpio
from wirespeed.gpio import Chip, EdgeEvent, LineSettings
from wirespeed.gpio.line import Bias, Clock, Direction, Drive, Edge, Value

ROOT = Path(__file__).resolve().parents[3]
BOARD = ROOT / "examples" / "lab.toml"
SHIM = ROOT / "target" / "release" / "libwirespeed_shim.so"
PERIOD_NS = 10_000_000
TOLERANCE_NS = 1_000_000


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("lab"))  # flash.bin lands here
    try:
        yield wirespeed.lab.load(str(BOARD))
    finally:
        os.chdir(cwd)


@pytest.fixture
def chip(lab):
    with Chip("/dev/gpiochip0", lab=lab) as c:
        yield c


def tick_settings(**kw):
    return LineSettings(direction=Direction.INPUT, edge_detection=Edge.BOTH, **kw)


def collect(req, n, timeout=2.0):
    """At least n edge events, read as they come."""
    events = []
    deadline = time.monotonic() + timeout
    while len(events) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(events)} events in {timeout} s"
        if req.wait_edge_events(timedelta(seconds=left)):
            events.extend(req.read_edge_events())
    return events


# Chip


def test_chip_info_label_and_line_names(chip):
    info = chip.get_info()
    assert (info.name, info.label, info.num_lines) == ("gpiochip0", "wirespeed-lab", 32)
    assert str(info) == '<ChipInfo name="gpiochip0" label="wirespeed-lab" num_lines=32>'
    names = [chip.get_line_info(i).name for i in range(5)]
    assert names == ["TICK", "BUTTON", "LED", "RESET_N", "FLASH_WP_N"]
    assert chip.get_line_info(5).name == ""
    assert chip.line_offset_from_id("LED") == 2
    assert chip.line_offset_from_id("7") == 7
    assert chip.line_offset_from_id(31) == 31
    assert chip.is_lab and chip.path == "/dev/gpiochip0"
    li = chip.get_line_info("BUTTON")
    assert li.offset == 1 and not li.used and li.direction is Direction.INPUT
    assert isinstance(li.debounce_period, timedelta)


def test_line_ids_that_are_wrong(chip):
    with pytest.raises(OSError) as e:
        chip.line_offset_from_id("NO_SUCH_LINE")
    assert e.value.errno == errno.ENOENT and "NO_SUCH_LINE" in str(e.value)
    with pytest.raises(ValueError, match="out of range"):
        chip.line_offset_from_id(32)
    with pytest.raises(ValueError, match="out of range"):
        chip.request_lines({99: None})
    with pytest.raises(ValueError, match="exactly once"):
        chip.request_lines({("LED", 2): None})
    with pytest.raises(TypeError):
        chip.request_lines({2.5: None})


def test_a_path_the_lab_does_not_serve(lab):
    with pytest.raises(FileNotFoundError, match="gpiochip3"):
        Chip("/dev/gpiochip3", lab=lab)
    assert Chip("gpiochip0", lab=lab).get_info().name == "gpiochip0"
    assert gpio.is_gpiochip_device("/dev/gpiochip0", lab=lab)
    assert not gpio.is_gpiochip_device("/dev/spidev0.0", lab=lab)


def test_closed_chip_raises(lab):
    c = Chip("/dev/gpiochip0", lab=lab)
    req = c.request_lines({2: LineSettings(direction=Direction.OUTPUT)})
    c.close()
    c.close()
    assert not c
    assert str(c) == "<Chip CLOSED>"
    for call in (c.get_info, lambda: c.get_line_info(0), lambda: c.request_lines({3: None})):
        with pytest.raises(gpio.ChipClosedError, match="closed chip"):
            call()
    req.set_value(2, Value.ACTIVE)  # requests outlive their chip, as in gpiod
    assert req.get_value(2) is Value.ACTIVE
    req.release()


# Values


def test_output_set_and_get_values(chip):
    cfg = {("LED", "RESET_N"): LineSettings(direction=Direction.OUTPUT, drive=Drive.PUSH_PULL)}
    with chip.request_lines(cfg, consumer="values", output_values={"RESET_N": Value.ACTIVE}) as req:
        assert req.offsets == [2, 3] and req.lines == ["LED", "RESET_N"] and req.num_lines == 2
        assert req.chip_name == "gpiochip0"
        assert req.get_values() == [Value.INACTIVE, Value.ACTIVE]
        req.set_value("LED", Value.ACTIVE)
        assert req.get_value(2) is Value.ACTIVE
        req.set_values({2: Value.INACTIVE, "RESET_N": Value.INACTIVE})
        assert req.get_values(["RESET_N", 2]) == [Value.INACTIVE, Value.INACTIVE]
        req.set_value(3, True)  # bools (and ints) work too
        assert req.get_value("RESET_N")
        info = chip.get_line_info("LED")
        assert info.used and info.consumer == "values" and info.direction is Direction.OUTPUT
        with pytest.raises(ValueError, match="not part of this request"):
            req.get_value(5)
        with pytest.raises(ValueError, match="unknown line name"):
            req.get_value("TICK")
    assert not chip.get_line_info("LED").used


def test_active_low(chip):
    # BUTTON is held high from outside: active-low reads it as inactive.
    with chip.request_lines({"BUTTON": LineSettings(direction=Direction.INPUT)}) as req:
        assert req.get_value("BUTTON") is Value.ACTIVE
    with chip.request_lines({"BUTTON": LineSettings(direction=Direction.INPUT, active_low=True)}) as req:
        assert req.get_value("BUTTON") is Value.INACTIVE
        assert chip.get_line_info(1).active_low
    out = LineSettings(direction=Direction.OUTPUT, active_low=True, output_value=Value.ACTIVE)
    with chip.request_lines({"LED": out}) as req:
        assert req.get_value("LED") is Value.ACTIVE
        assert chip.get_line_info("LED").active_low
        req.set_value("LED", Value.INACTIVE)
        assert req.get_value("LED") is Value.INACTIVE


def test_setting_an_input_is_refused(chip):
    with chip.request_lines({"BUTTON": LineSettings(direction=Direction.INPUT)}) as req:
        with pytest.raises(PermissionError, match="output"):
            req.set_value("BUTTON", Value.ACTIVE)


def test_reconfigure_lines(chip):
    with chip.request_lines({2: LineSettings(direction=Direction.OUTPUT)}) as req:
        req.reconfigure_lines({2: LineSettings(direction=Direction.INPUT, bias=Bias.PULL_UP)})
        assert chip.get_line_info(2).direction is Direction.INPUT
        assert req.get_value(2) is Value.ACTIVE  # pulled up
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            req.reconfigure_lines({(2,): LineSettings(direction=Direction.OUTPUT), 7: None, "NOPE": None})
        assert len(w) == 2 and "not included" in str(w[0].message)
        assert chip.get_line_info(2).direction is Direction.OUTPUT
        with pytest.raises(ValueError, match="inputs only"):
            req.reconfigure_lines({2: LineSettings(direction=Direction.OUTPUT, edge_detection=Edge.BOTH)})


# Edge events


def assert_tick_spacing(events, period):
    """Edges `period` ± 1 ms apart. The lab stamps each edge with its due
    time; only when its scheduler thread runs a whole period late (an
    overloaded machine: CPU hogs on every core) does it skip ahead, making
    that gap longer, never shorter. Those are tolerated up to half the gaps;
    on an idle machine every gap is exact."""
    gaps = [b.timestamp_ns - a.timestamp_ns for a, b in zip(events, events[1:])]
    assert all(g >= period - TOLERANCE_NS for g in gaps), gaps
    on_time = [g for g in gaps if abs(g - period) <= TOLERANCE_NS]
    assert len(on_time) * 2 >= len(gaps), gaps


def test_tick_edges_every_10_ms_alternating(chip):
    with chip.request_lines({"TICK": tick_settings()}, consumer="tick", event_buffer_size=1024) as req:
        events = collect(req, 21)
    assert all(isinstance(e, EdgeEvent) and e.line_offset == 0 for e in events)
    for a, b in zip(events, events[1:]):
        assert a.event_type != b.event_type
        assert b.global_seqno == a.global_seqno + 1 and b.line_seqno == a.line_seqno + 1
    assert_tick_spacing(events, PERIOD_NS)
    assert events[0].global_seqno == 1
    # Kernel-style stamps: CLOCK_MONOTONIC, i.e. time.monotonic_ns()'s clock.
    assert 0 <= time.monotonic_ns() - events[-1].timestamp_ns < 1_000_000_000
    assert {e.event_type for e in events} == {EdgeEvent.Type.RISING_EDGE, EdgeEvent.Type.FALLING_EDGE}


def test_edge_types_follow_active_low(chip):
    for active_low in (False, True):
        with chip.request_lines({"TICK": tick_settings(active_low=active_low)}) as req:
            checked = 0
            while checked < 3:
                ev = req.read_edge_events()[-1]
                level = req.get_value(0)
                if time.monotonic_ns() - ev.timestamp_ns < PERIOD_NS * 8 // 10:  # before the next edge
                    assert (ev.event_type is EdgeEvent.Type.RISING_EDGE) == bool(level)
                    checked += 1


def test_rising_only_and_max_events(chip):
    settings = LineSettings(direction=Direction.INPUT, edge_detection=Edge.RISING)
    with chip.request_lines({0: settings}, event_buffer_size=64) as req:
        time.sleep(0.1)
        first = req.read_edge_events(max_events=2)
        assert len(first) == 2
        events = first + collect(req, 3)
    assert all(e.event_type is EdgeEvent.Type.RISING_EDGE for e in events)
    assert_tick_spacing(events, 2 * PERIOD_NS)


def test_realtime_clock(chip):
    with chip.request_lines({0: tick_settings(event_clock=Clock.REALTIME)}) as req:
        ev = collect(req, 1)[0]
    assert abs(time.time_ns() - ev.timestamp_ns) < 1_000_000_000
    with pytest.raises(OSError) as e:
        chip.request_lines({0: tick_settings(event_clock=Clock.HTE)})
    assert e.value.errno == errno.EOPNOTSUPP


def test_wait_times_out_without_edges(chip):
    with chip.request_lines({5: tick_settings()}) as req:
        t = time.monotonic()
        assert req.wait_edge_events(timedelta(milliseconds=30)) is False
        assert time.monotonic() - t >= 0.029
        assert req.wait_edge_events(0) is False


def test_debounce_settings_accepted(chip):
    settings = tick_settings(bias=Bias.PULL_DOWN, debounce_period=timedelta(microseconds=500))
    with chip.request_lines({"TICK": settings}) as req:
        info = chip.get_line_info("TICK")
        assert info.debounced and info.debounce_period == timedelta(microseconds=500)
        assert info.edge_detection is Edge.BOTH
        events = collect(req, 6)
    assert_tick_spacing(events, PERIOD_NS)
    with pytest.raises(ValueError, match="debounce"):
        chip.request_lines({2: LineSettings(direction=Direction.OUTPUT, debounce_period=timedelta(milliseconds=1))})


# Descriptors


def test_select_readiness(chip):
    with chip.request_lines({"TICK": tick_settings()}) as tick, chip.request_lines({5: tick_settings()}) as quiet:
        assert isinstance(tick.fileno(), int) and tick.fd == tick.fileno()
        r, _, _ = select.select([tick.fileno(), quiet.fileno()], [], [], 1.0)
        assert r == [tick.fileno()]
        assert select.select([quiet], [], [], 0.03)[0] == []  # LineRequest itself has fileno()
        tick.read_edge_events()
        # Drained; readable again with the next edge, 10 ms later.
        p = select.poll()
        p.register(tick.fileno(), select.POLLIN)
        t = time.monotonic()
        assert p.poll(1000)
        assert time.monotonic() - t < 0.5
        assert tick.read_edge_events()


def test_asyncio_add_reader(chip):
    async def main(req):
        loop = asyncio.get_running_loop()
        got = asyncio.Queue()

        def on_readable():
            for ev in req.read_edge_events():
                got.put_nowait(ev)

        loop.add_reader(req.fileno(), on_readable)
        try:
            return [await asyncio.wait_for(got.get(), 1.0) for _ in range(5)]
        finally:
            loop.remove_reader(req.fileno())

    with chip.request_lines({"TICK": tick_settings()}) as req:
        events = asyncio.run(main(req))
    assert [e.line_seqno for e in events] == list(range(events[0].line_seqno, events[0].line_seqno + 5))


# Errors


def test_busy_line(lab, chip):
    with chip.request_lines({"LED": LineSettings(direction=Direction.OUTPUT)}, consumer="first"):
        with pytest.raises(OSError) as e:
            chip.request_lines({2: None})
        assert e.value.errno == errno.EBUSY and "first" in str(e.value)
        # Another Chip of the same lab board sees it too.
        with pytest.raises(OSError) as e:
            Chip("/dev/gpiochip0", lab=lab).request_lines({"LED": None})
        assert e.value.errno == errno.EBUSY
    chip.request_lines({2: None}).release()  # free again


def test_released_request(chip):
    req = chip.request_lines({0: tick_settings(), 2: LineSettings(direction=Direction.OUTPUT)})
    assert req
    req.release()
    req.release()
    assert not req and str(req) == "<LineRequest RELEASED>"
    calls = [
        lambda: req.get_value(2),
        req.get_values,
        lambda: req.set_value(2, Value.ACTIVE),
        lambda: req.set_values({2: Value.ACTIVE}),
        lambda: req.reconfigure_lines({2: None}),
        lambda: req.wait_edge_events(0),
        req.read_edge_events,
        req.fileno,
        lambda: req.offsets,
        lambda: req.__enter__(),
    ]
    for call in calls:
        with pytest.raises(gpio.RequestReleasedError, match="released"):
            call()
    chip.request_lines({0: None, 2: None}).release()  # the lines are free


def test_release_wakes_a_waiting_thread(chip):
    req = chip.request_lines({5: tick_settings()})
    result = []

    def waiter():
        try:
            req.wait_edge_events(None)
            result.append("returned")
        except gpio.RequestReleasedError as e:
            result.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.05)
    assert t.is_alive()  # blocked, with the GIL released (we are running)
    req.release()
    t.join(2)
    assert not t.is_alive() and isinstance(result[0], gpio.RequestReleasedError)


def test_blocking_read_releases_the_gil(chip):
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    req = chip.request_lines({5: tick_settings()})  # no edges: read_edge_events blocks
    t = threading.Thread(target=spin)
    t.start()
    threading.Timer(0.05, req.release).start()
    try:
        before = counter[0]
        with pytest.raises(gpio.RequestReleasedError):
            req.read_edge_events()
        during = counter[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 1000


def test_module_level_request_lines(lab):
    with gpio.request_lines("/dev/gpiochip0", {"LED": LineSettings(direction=Direction.OUTPUT)}, lab=lab) as req:
        req.set_value("LED", Value.ACTIVE)
        assert req.get_value(2) is Value.ACTIVE


def test_line_module_and_defaults():
    from wirespeed.gpio import line

    assert line.Value is Value and gpio.Value is Value
    assert bool(Value.ACTIVE) and not Value.INACTIVE
    s = LineSettings()
    assert s.direction is Direction.AS_IS and s.debounce_period == timedelta() and s.output_value is Value.INACTIVE
    assert "Direction.AS_IS" in repr(s)


# WIRESPEED_LAB and the kernel-device path (through the LD_PRELOAD shim).


def run_py(code, env, cwd):
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_wirespeed_lab_env(tmp_path):
    env = dict(os.environ, WIRESPEED_LAB=str(BOARD))
    out = run_py(
        "from wirespeed.gpio import Chip\n"
        "c = Chip('/dev/gpiochip0'); print(c.is_lab, c.get_line_info(0).name)\n"
        "try:\n    Chip('/dev/gpiochip9')\nexcept FileNotFoundError as e:\n    print('real', e.errno)\n",
        env,
        tmp_path,
    )
    assert out.split() == ["True", "TICK", "real", "2"]


@pytest.mark.skipif(not SHIM.exists(), reason="the LD_PRELOAD shim is not built (cargo build --release -p wirespeed-shim)")
def test_kernel_device_path_through_the_shim(tmp_path):
    env = dict(os.environ, WIRESPEED_LAB=str(BOARD), LD_PRELOAD=str(SHIM))
    code = """
import os, select
os.stat("/dev/gpiochip0")            # the shim loads its board now
del os.environ["WIRESPEED_LAB"]      # so wirespeed.gpio takes the kernel path
from datetime import timedelta
from wirespeed.gpio import Chip, LineSettings
from wirespeed.gpio.line import Direction, Edge, Value
c = Chip("/dev/gpiochip0")
assert not c.is_lab and c.get_info().label == "wirespeed-lab" and c.get_line_info(2).name == "LED"
req = c.request_lines({"TICK": LineSettings(direction=Direction.INPUT, edge_detection=Edge.BOTH),
                       "LED": LineSettings(direction=Direction.OUTPUT, active_low=True)}, consumer="cdev")
assert select.select([req.fileno()], [], [], 1)[0]
ev = req.read_edge_events()
assert ev and ev[0].line_offset == 0
req.set_value("LED", Value.ACTIVE)
assert req.get_value("LED") is Value.ACTIVE and c.get_line_info("LED").active_low
try:
    c.request_lines({2: None})
except OSError as e:
    print("busy", e.errno)
req.release()
print("ok")
"""
    assert run_py(code, env, tmp_path).split() == ["busy", "16", "ok"]


@pytest.mark.skipif(not os.path.exists("/dev/gpiochip0") or "WIRESPEED_LAB" in os.environ, reason="no GPIO chip")
def test_real_chip_info():
    with Chip("/dev/gpiochip0") as c:
        assert not c.is_lab and c.get_info().num_lines > 0

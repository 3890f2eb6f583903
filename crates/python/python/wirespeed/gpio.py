"""wirespeed.gpio: GPIO lines, shaped like python gpiod 2.x.

Runs on the kernel's GPIO character device (``/dev/gpiochipN``, uAPI v2)
and on a wirespeed lab board. ``Chip``, ``LineRequest`` and the exceptions
are native (Rust); the enums and data classes below carry python gpiod's
names, fields and values.

Porting a python gpiod script means changing its imports::

    import gpiod                          ->  import wirespeed.gpio as gpiod
    from gpiod.line import Direction      ->  from wirespeed.gpio.line import Direction

Example (on the lab; on hardware, drop ``lab=``)::

    from datetime import timedelta
    import wirespeed
    from wirespeed.gpio import Chip, LineSettings
    from wirespeed.gpio.line import Direction, Edge, Value

    lab = wirespeed.lab.load("examples/lab.toml")
    with Chip("/dev/gpiochip0", lab=lab) as chip:
        print(chip.get_info())      # <ChipInfo name="gpiochip0" label="wirespeed-lab" num_lines=32>
        with chip.request_lines(
            {"LED": LineSettings(direction=Direction.OUTPUT),
             "TICK": LineSettings(direction=Direction.INPUT, edge_detection=Edge.BOTH)},
            consumer="demo",
        ) as req:
            req.set_value("LED", Value.ACTIVE)
            if req.wait_edge_events(timedelta(milliseconds=50)):
                for ev in req.read_edge_events():
                    print(ev)       # <EdgeEvent type=Type.RISING_EDGE timestamp_ns=... line_offset=0 ...>

Which chip a path opens: with ``lab=`` (a ``wirespeed.lab.Lab``) that
board's; else, when the environment variable ``WIRESPEED_LAB`` names a
board file that serves the path, that board's (built once per process and
shared with ``SpiDev``); else the kernel's device. ``chip.is_lab`` tells.

Where wirespeed.gpio differs from python gpiod 2.x:

- ``Chip(path, lab=None)`` and ``request_lines(..., lab=None)`` take a lab;
  ``Chip.is_lab`` is extra; ``"gpiochip0"`` is accepted for
  ``"/dev/gpiochip0"``.
- No line-info watches: ``watch_line_info``, ``unwatch_line_info``,
  ``wait_info_event``, ``read_info_event`` raise ``NotImplementedError``;
  ``Chip`` has no ``fd``/``fileno()`` (``LineRequest.fileno()`` exists).
  No ``InfoEvent``, ``api_version``.
- ``Clock.REALTIME`` stamps are the monotonic stamp moved by the clocks'
  offset when the event is read (the kernel reads the realtime clock at
  the edge); ``Clock.HTE`` raises ``OSError(EOPNOTSUPP)``.
- ``Direction.AS_IS`` keeps the line's current direction (input when edge
  detection is asked for, as libgpiod does); on a line that is an output it
  drives ``output_value`` (the kernel leaves the level alone).
- Errors: a bad offset or setting (e.g. edge detection on an output) raises
  ``ValueError`` where the kernel says ``OSError(EINVAL)``; a busy line
  ``OSError(EBUSY)``; a removed chip ``OSError(ENODEV)``; setting an input
  ``PermissionError`` (EPERM). An unknown line name in ``Chip`` methods is
  ``OSError(ENOENT)``, as in gpiod.
- ``read_edge_events()`` returns at most 64 events unless told otherwise;
  it blocks (GIL released) until one arrives, as gpiod's does.
- ``wait_edge_events`` and ``read_edge_events`` release the GIL; a thread
  waiting on a request another thread releases wakes with
  ``RequestReleasedError``.
- The enums are also exported at the top level (``wirespeed.gpio.Value``).
- On the lab, line info reports the lab's view (direction, bias, and the
  settings of lines this process requested); names come from the board file.
"""

from __future__ import annotations

import os
import stat
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, Optional, Union

from ._wirespeed import gpio as _gpio

Chip = _gpio.Chip
LineRequest = _gpio.LineRequest
ChipClosedError = _gpio.ChipClosedError
RequestReleasedError = _gpio.RequestReleasedError


# The enums: python gpiod's names and integer values (gpiod._ext's constants),
# so gpiod's own members and plain ints are accepted too.


class Value(Enum):
    """A line's logical value (active-low already applied)."""

    INACTIVE = 0
    ACTIVE = 1

    def __bool__(self) -> bool:
        return self is Value.ACTIVE


class Direction(Enum):
    """Line direction."""

    AS_IS = 1
    INPUT = 2
    OUTPUT = 3


class Bias(Enum):
    """Internal pull."""

    AS_IS = 1
    UNKNOWN = 2
    DISABLED = 3
    PULL_UP = 4
    PULL_DOWN = 5


class Drive(Enum):
    """Output drive."""

    PUSH_PULL = 1
    OPEN_DRAIN = 2
    OPEN_SOURCE = 3


class Edge(Enum):
    """Edge detection."""

    NONE = 1
    RISING = 2
    FALLING = 3
    BOTH = 4


class Clock(Enum):
    """Clock of edge-event timestamps."""

    MONOTONIC = 1
    REALTIME = 2
    HTE = 3


# `wirespeed.gpio.line`, as `gpiod.line`: importable (`from wirespeed.gpio.line import Value`).
line = types.ModuleType(__name__ + ".line", "Line enums, as gpiod.line.")
for _e in (Value, Direction, Bias, Drive, Edge, Clock):
    setattr(line, _e.__name__, _e)
line.__all__ = ["Value", "Direction", "Bias", "Drive", "Edge", "Clock"]
sys.modules[line.__name__] = line


@dataclass(repr=False)
class LineSettings:
    """Settings of one or more lines, as gpiod's ``LineSettings``.

    ``debounce_period`` is a ``timedelta`` (whole microseconds; inputs only),
    ``output_value`` the logical value an output starts at.

    Example::

        LineSettings(direction=Direction.INPUT, edge_detection=Edge.FALLING,
                     bias=Bias.PULL_UP, debounce_period=timedelta(milliseconds=5))
    """

    direction: Direction = Direction.AS_IS
    edge_detection: Edge = Edge.NONE
    bias: Bias = Bias.AS_IS
    drive: Drive = Drive.PUSH_PULL
    active_low: bool = False
    debounce_period: timedelta = timedelta()
    event_clock: Clock = Clock.MONOTONIC
    output_value: Value = Value.INACTIVE

    def __repr__(self) -> str:
        return (
            "wirespeed.gpio.LineSettings(direction=wirespeed.gpio.line.{}, edge_detection=wirespeed.gpio.line.{}, "
            "bias=wirespeed.gpio.line.{}, drive=wirespeed.gpio.line.{}, active_low={}, debounce_period={}, "
            "event_clock=wirespeed.gpio.line.{}, output_value=wirespeed.gpio.line.{})"
        ).format(
            self.direction,
            self.edge_detection,
            self.bias,
            self.drive,
            self.active_low,
            repr(self.debounce_period),
            self.event_clock,
            self.output_value,
        )

    def __str__(self) -> str:
        return (
            f"<LineSettings direction={self.direction} edge_detection={self.edge_detection} bias={self.bias} "
            f"drive={self.drive} active_low={self.active_low} debounce_period={self.debounce_period} "
            f"event_clock={self.event_clock} output_value={self.output_value}>"
        )


@dataclass(frozen=True, repr=False)
class ChipInfo:
    """A chip's name, label and number of lines."""

    name: str
    label: str
    num_lines: int

    def __str__(self) -> str:
        return f'<ChipInfo name="{self.name}" label="{self.label}" num_lines={self.num_lines}>'

    __repr__ = __str__


@dataclass(frozen=True, init=False, repr=False)
class LineInfo:
    """A snapshot of one line: name, user, settings."""

    offset: int
    name: str
    used: bool
    consumer: str
    direction: Direction
    active_low: bool
    bias: Bias
    drive: Drive
    edge_detection: Edge
    event_clock: Clock
    debounced: bool
    debounce_period: timedelta

    def __init__(
        self,
        offset: int,
        name: str,
        used: bool,
        consumer: str,
        direction: int,
        active_low: bool,
        bias: int,
        drive: int,
        edge_detection: int,
        event_clock: int,
        debounced: bool,
        debounce_period_us: int,
    ):
        s = object.__setattr__
        s(self, "offset", offset)
        s(self, "name", name)
        s(self, "used", used)
        s(self, "consumer", consumer)
        s(self, "direction", Direction(direction))
        s(self, "active_low", active_low)
        s(self, "bias", Bias(bias))
        s(self, "drive", Drive(drive))
        s(self, "edge_detection", Edge(edge_detection))
        s(self, "event_clock", Clock(event_clock))
        s(self, "debounced", debounced)
        s(self, "debounce_period", timedelta(microseconds=debounce_period_us))

    def __str__(self) -> str:
        return (
            f'<LineInfo offset={self.offset} name="{self.name}" used={self.used} consumer="{self.consumer}" '
            f"direction={self.direction} active_low={self.active_low} bias={self.bias} drive={self.drive} "
            f"edge_detection={self.edge_detection} event_clock={self.event_clock} debounced={self.debounced} "
            f"debounce_period={self.debounce_period}>"
        )

    __repr__ = __str__


@dataclass(frozen=True, init=False, repr=False)
class EdgeEvent:
    """One edge on a requested line.

    ``timestamp_ns``: ``CLOCK_MONOTONIC`` nanoseconds (``time.monotonic_ns()``'s
    clock) unless the line asked for ``Clock.REALTIME``. ``global_seqno``
    counts the request's events, ``line_seqno`` the line's (both from 1; a
    gap means the buffer overflowed).
    """

    class Type(Enum):
        """Edge direction (logical: active-low lines report the logical edge)."""

        RISING_EDGE = 1
        FALLING_EDGE = 2

    event_type: Type
    timestamp_ns: int
    line_offset: int
    global_seqno: int
    line_seqno: int

    def __init__(self, event_type: int, timestamp_ns: int, line_offset: int, global_seqno: int, line_seqno: int):
        s = object.__setattr__
        s(self, "event_type", EdgeEvent.Type(event_type))
        s(self, "timestamp_ns", timestamp_ns)
        s(self, "line_offset", line_offset)
        s(self, "global_seqno", global_seqno)
        s(self, "line_seqno", line_seqno)

    def __str__(self) -> str:
        return (
            f"<EdgeEvent type={self.event_type} timestamp_ns={self.timestamp_ns} line_offset={self.line_offset} "
            f"global_seqno={self.global_seqno} line_seqno={self.line_seqno}>"
        )

    __repr__ = __str__


LineId = Union[int, str]


def request_lines(
    path: str,
    config: dict[Union[Iterable[LineId], LineId], Optional[LineSettings]],
    consumer: Optional[str] = None,
    event_buffer_size: Optional[int] = None,
    output_values: Optional[dict[LineId, Value]] = None,
    *,
    lab: Any = None,
) -> LineRequest:
    """Opens the chip at ``path`` (on ``lab`` if given), requests lines, closes
    the chip and returns the request, as gpiod's ``request_lines``.

    Example::

        req = wirespeed.gpio.request_lines("/dev/gpiochip0", {2: LineSettings(direction=Direction.OUTPUT)},
                                           consumer="led", lab=lab)
    """
    with Chip(path, lab=lab) as chip:
        return chip.request_lines(
            config=config, consumer=consumer, event_buffer_size=event_buffer_size, output_values=output_values
        )


def is_gpiochip_device(path: str, *, lab: Any = None) -> bool:
    """Whether ``path`` is a GPIO chip: a node of ``lab`` (or of the
    ``WIRESPEED_LAB`` board), or a character device of the gpio subsystem."""
    from . import lab as _lab

    board = lab if lab is not None else _lab.from_env()
    if board is not None:
        node = path if "/" in str(path) else "/dev/" + str(path)
        if node.startswith("/dev/gpiochip") and node in board.nodes():
            return True
        if lab is not None:
            return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISCHR(st.st_mode):
        return False
    sub = f"/sys/dev/char/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/subsystem"
    try:
        return os.path.basename(os.path.realpath(sub)) == "gpio"
    except OSError:
        return False


__all__ = [
    "Chip",
    "ChipClosedError",
    "ChipInfo",
    "EdgeEvent",
    "LineInfo",
    "LineRequest",
    "LineSettings",
    "RequestReleasedError",
    "is_gpiochip_device",
    "line",
    "request_lines",
    "Value",
    "Direction",
    "Bias",
    "Drive",
    "Edge",
    "Clock",
]

"""Type stubs of wirespeed.gpio (GPIO shaped like python gpiod 2.x)."""

import os
import types
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Optional, Union

from .lab import Lab

class Value(Enum):
    INACTIVE = 0
    ACTIVE = 1
    def __bool__(self) -> bool: ...

class Direction(Enum):
    AS_IS = 1
    INPUT = 2
    OUTPUT = 3

class Bias(Enum):
    AS_IS = 1
    UNKNOWN = 2
    DISABLED = 3
    PULL_UP = 4
    PULL_DOWN = 5

class Drive(Enum):
    PUSH_PULL = 1
    OPEN_DRAIN = 2
    OPEN_SOURCE = 3

class Edge(Enum):
    NONE = 1
    RISING = 2
    FALLING = 3
    BOTH = 4

class Clock(Enum):
    MONOTONIC = 1
    REALTIME = 2
    HTE = 3

line: types.ModuleType
"""``wirespeed.gpio.line``: Value, Direction, Bias, Drive, Edge, Clock (as ``gpiod.line``)."""

@dataclass(repr=False)
class LineSettings:
    direction: Direction = ...
    edge_detection: Edge = ...
    bias: Bias = ...
    drive: Drive = ...
    active_low: bool = ...
    debounce_period: timedelta = ...
    event_clock: Clock = ...
    output_value: Value = ...

@dataclass(frozen=True, repr=False)
class ChipInfo:
    name: str
    label: str
    num_lines: int

@dataclass(frozen=True, init=False, repr=False)
class LineInfo:
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
    ) -> None: ...

@dataclass(frozen=True, init=False, repr=False)
class EdgeEvent:
    class Type(Enum):
        RISING_EDGE = 1
        FALLING_EDGE = 2

    event_type: Type
    timestamp_ns: int
    """CLOCK_MONOTONIC ns (CLOCK_REALTIME for lines with ``Clock.REALTIME``)."""
    line_offset: int
    global_seqno: int
    line_seqno: int
    def __init__(
        self, event_type: int, timestamp_ns: int, line_offset: int, global_seqno: int, line_seqno: int
    ) -> None: ...

class ChipClosedError(Exception): ...
class RequestReleasedError(Exception): ...

LineId = Union[int, str]
LineConfig = dict[Union[Iterable[LineId], LineId], Optional[LineSettings]]
Timeout = Union[timedelta, float, None]

class LineRequest:
    """Requested lines; made by ``Chip.request_lines``."""

    def __bool__(self) -> bool: ...
    def __enter__(self) -> LineRequest: ...
    def __exit__(self, *args: object) -> None: ...
    def release(self) -> None: ...
    def get_value(self, line: LineId) -> Value: ...
    def get_values(self, lines: Optional[Iterable[LineId]] = None) -> list[Value]: ...
    def set_value(self, line: LineId, value: Union[Value, bool, int]) -> None: ...
    def set_values(self, values: dict[LineId, Union[Value, bool, int]]) -> None: ...
    def reconfigure_lines(self, config: LineConfig) -> None: ...
    def wait_edge_events(self, timeout: Timeout = None) -> bool:
        """Sleeps (GIL released) until edge events are ready; False on timeout."""
    def read_edge_events(self, max_events: Optional[int] = None) -> list[EdgeEvent]:
        """Up to ``max_events`` (default 64) events; blocks (GIL released) until one arrives."""
    def fileno(self) -> int:
        """A descriptor readable while edge events wait (select / asyncio add_reader)."""
    @property
    def fd(self) -> int: ...
    @property
    def chip_name(self) -> str: ...
    @property
    def num_lines(self) -> int: ...
    @property
    def offsets(self) -> list[int]: ...
    @property
    def lines(self) -> list[LineId]: ...

class Chip:
    """A GPIO chip: ``Chip("/dev/gpiochip0")``, or a lab board's: ``Chip("/dev/gpiochip0", lab=lab)``.

    Without ``lab``, a board file named by ``WIRESPEED_LAB`` that serves the path is used.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], lab: Optional[Lab] = None) -> None: ...
    def __bool__(self) -> bool: ...
    def __enter__(self) -> Chip: ...
    def __exit__(self, *args: object) -> None: ...
    def close(self) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def is_lab(self) -> bool: ...
    def get_info(self) -> ChipInfo: ...
    def line_offset_from_id(self, id: LineId) -> int: ...
    def get_line_info(self, line: LineId) -> LineInfo: ...
    def request_lines(
        self,
        config: LineConfig,
        consumer: Optional[str] = None,
        event_buffer_size: Optional[int] = None,
        output_values: Optional[dict[LineId, Value]] = None,
    ) -> LineRequest: ...
    def watch_line_info(self, *args: object) -> None:
        """Not supported: raises NotImplementedError."""
    def unwatch_line_info(self, *args: object) -> None:
        """Not supported: raises NotImplementedError."""
    def wait_info_event(self, *args: object) -> None:
        """Not supported: raises NotImplementedError."""
    def read_info_event(self, *args: object) -> None:
        """Not supported: raises NotImplementedError."""

def request_lines(
    path: str,
    config: LineConfig,
    consumer: Optional[str] = None,
    event_buffer_size: Optional[int] = None,
    output_values: Optional[dict[LineId, Value]] = None,
    *,
    lab: Optional[Lab] = None,
) -> LineRequest: ...
def is_gpiochip_device(path: str, *, lab: Optional[Lab] = None) -> bool: ...

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

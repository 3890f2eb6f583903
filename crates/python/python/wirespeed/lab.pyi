"""Type stubs of ``wirespeed.lab``."""

import os
from typing import Any, Optional, Union

ENV_VAR: str

class Lab:
    """A built lab board; open its nodes with ``SpiDev(lab=…)`` and ``gpio.Chip(…, lab=…)``."""

    @classmethod
    def from_toml(
        cls, text: str, base_dir: Optional[Union[str, os.PathLike[str]]] = None, name: Optional[str] = None
    ) -> Lab: ...
    @property
    def name(self) -> str: ...
    def nodes(self) -> list[str]:
        """The nodes it serves, e.g. ``['/dev/spidev0.0', '/dev/spidev0.1', '/dev/gpiochip0']``."""
    def finish(self) -> None:
        """Syncs flash images and writes traces."""
    def __enter__(self) -> Lab: ...
    def __exit__(self, *args: Any) -> bool: ...

def load(path: Union[str, os.PathLike[str]]) -> Lab:
    """Reads, checks and builds a board file (``ValueError`` naming the line for a bad one)."""

def from_toml(text: str, base_dir: Optional[Union[str, os.PathLike[str]]] = None, name: Optional[str] = None) -> Lab:
    """Builds a board from TOML text."""

def from_env() -> Optional[Lab]:
    """The board ``WIRESPEED_LAB`` names (built once per process), or None."""

class Builder:
    """A lab board from calls.

    >>> lab = Builder().spi(0).nor(cs=0).loopback(cs=1).gpio(0, lines=8).build()
    """

    def __init__(self, instant_wire: bool = False) -> None: ...
    def spi(
        self,
        bus: int,
        *,
        base_clock_hz: Optional[int] = None,
        fifo_bytes: Optional[int] = None,
        bufsiz: Optional[int] = None,
    ) -> Builder: ...
    def loopback(self, cs: int) -> Builder: ...
    def nor(
        self,
        cs: int,
        chip: str = "w25q128jv",
        *,
        image: Optional[str] = None,
        max_speed_hz: Optional[int] = None,
        time_scale: Optional[float] = None,
    ) -> Builder: ...
    def mcp2518fd(
        self,
        cs: int,
        *,
        osc_hz: Optional[int] = None,
        can_bitrate: Optional[int] = None,
        can_data_bitrate: Optional[int] = None,
    ) -> Builder: ...
    def gpio(self, chip: int, lines: int = 32, *, label: Optional[str] = None) -> Builder: ...
    def line(
        self,
        offset: int,
        *,
        name: Optional[str] = None,
        toggle_every_us: Optional[int] = None,
        level: Optional[str] = None,
        wire: Optional[str] = None,
    ) -> Builder: ...
    def toml(self) -> str: ...
    def build(self, base_dir: Optional[Union[str, os.PathLike[str]]] = None) -> Lab: ...

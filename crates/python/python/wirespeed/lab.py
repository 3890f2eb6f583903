"""The emulated bench: SPI devices and GPIO chips with no hardware.

A lab board is described in TOML (the format of ``examples/lab.toml``,
the same file the ``LD_PRELOAD`` shim reads), loaded from a file or a
string, or put together with :class:`Builder`. Its nodes open with the
same classes as real hardware::

    import wirespeed
    lab = wirespeed.lab.load("examples/lab.toml")
    spi = wirespeed.SpiDev(lab=lab)
    spi.open(0, 1)                              # /dev/spidev0.1: the loopback
    assert spi.xfer2([1, 2, 3]) == [1, 2, 3]
    chip = wirespeed.gpio.Chip("/dev/gpiochip0", lab=lab)

    lab = (wirespeed.lab.Builder()
           .spi(0).nor(cs=0, chip="w25q128jv").loopback(cs=1)
           .gpio(0, lines=8).line(0, name="TICK", toggle_every_us=10_000)
           .build())

With ``WIRESPEED_LAB=board.toml`` in the environment, every ``SpiDev`` and
GPIO chip opened without ``lab=`` comes from that board (built once per
process): an unchanged py-spidev script runs on the lab.
"""

from ._wirespeed import lab as _lab

Lab = _lab.Lab
load = _lab.load
from_toml = _lab.from_toml
from_env = _lab.from_env
ENV_VAR = _lab.ENV_VAR

__all__ = ["Lab", "Builder", "load", "from_toml", "from_env", "ENV_VAR"]


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"board values are bool, int, float or str, not {type(v).__name__}")


def _table(header, keys):
    lines = [header]
    lines += [f"{k} = {_value(v)}" for k, v in keys.items() if v is not None]
    return "\n".join(lines)


class Builder:
    """A lab board from calls; ``build()`` checks and builds it (errors name
    the generated TOML's lines: ``toml()`` shows it).

    >>> lab = (Builder().spi(0, bufsiz=4096)
    ...        .nor(cs=0, chip="w25q128jv")           # in memory; image="flash.bin" for a file
    ...        .loopback(cs=1)
    ...        .mcp2518fd(cs=2)
    ...        .gpio(0, lines=32).line(0, name="TICK", toggle_every_us=10_000)
    ...        .build())
    >>> lab.nodes()
    ['/dev/spidev0.0', '/dev/spidev0.1', '/dev/spidev0.2', '/dev/gpiochip0']
    """

    def __init__(self, instant_wire=False):
        self._lab = {"instant_wire": bool(instant_wire)}
        self._spi = []  # [(keys, [device keys])]
        self._gpio = []  # [(keys, [line keys])]

    def spi(self, bus, *, base_clock_hz=None, fifo_bytes=None, bufsiz=None):
        """Adds SPI bus ``bus`` (``/dev/spidev<bus>.<cs>``); the devices that follow go on it."""
        self._spi.append(({"bus": bus, "base_clock_hz": base_clock_hz, "fifo_bytes": fifo_bytes,
                           "bufsiz": bufsiz}, []))
        return self

    def _device(self, keys):
        if not self._spi:
            raise ValueError("add a bus with spi(bus) before its devices")
        self._spi[-1][1].append(keys)
        return self

    def loopback(self, cs):
        """A loopback (MISO = MOSI) on chip select ``cs``."""
        return self._device({"cs": cs, "kind": "loopback"})

    def nor(self, cs, chip="w25q128jv", *, image=None, max_speed_hz=None, time_scale=None):
        """A SPI NOR flash (``w25q128jv``, ``mx25l12835f``, ``gd25q64c``, ``sst25vf016b``,
        ``w25q256jv``); ``image``: its backing file (memory when None)."""
        return self._device({"cs": cs, "kind": "spi-nor", "chip": chip, "image": image,
                             "max_speed_hz": max_speed_hz, "time_scale": time_scale})

    def mcp2518fd(self, cs, *, osc_hz=None, can_bitrate=None, can_data_bitrate=None):
        """An MCP2518FD CAN-FD controller on a lab CAN bus of its own."""
        return self._device({"cs": cs, "kind": "mcp2518fd", "osc_hz": osc_hz, "can_bitrate": can_bitrate,
                             "can_data_bitrate": can_data_bitrate})

    def gpio(self, chip, lines=32, *, label=None):
        """Adds GPIO chip ``/dev/gpiochip<chip>`` with ``lines`` lines; ``line()`` calls that follow describe them."""
        self._gpio.append(({"chip": chip, "lines": lines, "label": label}, []))
        return self

    def line(self, offset, *, name=None, toggle_every_us=None, level=None, wire=None):
        """Names or drives a line of the last GPIO chip: ``toggle_every_us`` (a clock from outside),
        ``level`` ("high"/"low", held from outside) or ``wire`` (e.g. "spi0.2:int")."""
        if not self._gpio:
            raise ValueError("add a chip with gpio(chip) before its lines")
        self._gpio[-1][1].append({"offset": offset, "name": name, "toggle_every_us": toggle_every_us,
                                  "level": level, "wire": wire})
        return self

    def toml(self):
        """The board file these calls describe."""
        parts = [_table("[lab]", self._lab)]
        for keys, devices in self._spi:
            parts.append(_table("[[spi]]", keys))
            parts += [_table("[[spi.device]]", d) for d in devices]
        for keys, lines in self._gpio:
            parts.append(_table("[[gpio]]", keys))
            parts += [_table("[[gpio.line]]", x) for x in lines]
        return "\n\n".join(parts) + "\n"

    def build(self, base_dir=None):
        """Checks and builds the board (image paths relative to ``base_dir``, default the working directory)."""
        return from_toml(self.toml(), base_dir, "<wirespeed.lab.Builder>")

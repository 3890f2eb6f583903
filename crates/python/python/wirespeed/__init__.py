"""wirespeed: low-latency SPI and GPIO for Linux, with an emulated hardware lab.

``wirespeed.SpiDev`` is py-spidev's class: a py-spidev script changes only
its import::

    from wirespeed import SpiDev        # was: from spidev import SpiDev

    spi = SpiDev()
    spi.open(0, 0)
    spi.max_speed_hz = 1_000_000
    print(spi.xfer2([0x9F, 0, 0, 0]))   # a NOR flash's JEDEC ID

Beyond py-spidev: buffers in and out (``read``, ``readinto``, ``write``,
``transfer``), multi-transfer messages (``message``, ``prepare``,
``submit``), no ``bufsiz`` cap on reads and writes, the GIL released while
the bus works.

The emulated bench (``wirespeed.lab``) serves the same nodes with no
hardware::

    lab = wirespeed.lab.load("examples/lab.toml")
    spi = wirespeed.SpiDev(lab=lab)
    spi.open(0, 1)                       # the bench's loopback

or, for an unchanged script, ``WIRESPEED_LAB=examples/lab.toml python
script.py``: every ``SpiDev`` and GPIO chip opened without ``lab=`` then
comes from that board.
"""

from . import _wirespeed
from ._wirespeed import Pending, PreparedMessage, SpiDev, Transfer
from . import ad7606, gpio, lab

__all__ = ["SpiDev", "Transfer", "PreparedMessage", "Pending", "ad7606", "gpio", "lab"]
__version__ = "0.1.0"

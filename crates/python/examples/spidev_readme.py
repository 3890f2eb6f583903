#!/usr/bin/env python3
"""py-spidev's README example, unchanged but for its import.

With py-spidev it starts ``import spidev``; with wirespeed it is
``import wirespeed as spidev`` and nothing else changes. On the emulated
bench (no hardware), run it with the lab board in the environment::

    WIRESPEED_LAB=examples/lab.toml python3 crates/python/examples/spidev_readme.py

/dev/spidev0.1 of that bench is a loopback: what is sent comes back.
"""

import wirespeed as spidev

spi = spidev.SpiDev()
spi.open(0, 1)

# Settings (for example)
spi.max_speed_hz = 5000
spi.mode = 0b01

to_send = [0x01, 0x02, 0x03]
print(spi.xfer(to_send))
print(spi.xfer2([0x04, 0x05, 0x06]))
print(spi.readbytes(4))
spi.writebytes([0x07, 0x08])
spi.close()

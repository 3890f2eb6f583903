"""wirespeed.ad7606: the AD7606 (8 channels, 16 bits, simultaneous sampling)
through wirespeed's driver, on a lab board or on real hardware.

Example (on hardware: drop ``lab=``)::

    import numpy as np
    import wirespeed
    lab = wirespeed.lab.load("examples/lab.toml")
    adc = wirespeed.ad7606.Ad7606(lab=lab, spi=(0, 2), convst=("/dev/gpiochip0", 8),
                                  busy=("/dev/gpiochip0", 9))
    codes, t_ns = adc.sample()                 # 8 ints; CONVST instant, time.monotonic_ns() clock
    print(adc.volts(codes))
    codes, stamps, overruns = adc.read(10_000, 50_000)
    x = np.frombuffer(codes, np.int16).reshape(-1, 8)

Every call runs the Rust driver with the GIL released.
"""

from ._wirespeed import ad7606 as _ad7606

Ad7606 = _ad7606.Ad7606
CHANNELS = _ad7606.CHANNELS

__all__ = ["Ad7606", "CHANNELS"]

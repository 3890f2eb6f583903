"""Type stubs of ``wirespeed.ad7606``."""

from array import array
from typing import Optional, Sequence, Union

from .lab import Lab

CHANNELS: int

class Ad7606:
    """An AD7606 on a spidev node, CONVST and (optionally) BUSY on GPIO lines.

    ``busy_mode``: "auto" (BUSY when given, else the datasheet's maximum
    conversion time), "edge" (BUSY required) or "predicted" (never BUSY).
    ``range``: 10 (±10 V) or 5 (±5 V). Errors: ``ValueError`` for a bad
    setting (nothing is sent), ``FileNotFoundError`` for a missing node,
    ``TimeoutError`` when BUSY never falls, ``OSError`` for bus and line failures.
    """

    def __init__(
        self,
        spi: Union[tuple[int, int], str],
        convst: tuple[str, int],
        busy: Optional[tuple[str, int]] = None,
        *,
        busy_mode: str = "auto",
        range: float = 10,
        oversampling: int = 1,
        speed_hz: int = 20_000_000,
        max_lag_us: int = 1000,
        lab: Optional[Lab] = None,
    ) -> None: ...
    def sample(self) -> tuple[tuple[int, int, int, int, int, int, int, int], int]:
        """One conversion: (8 codes, CONVST instant in ns on CLOCK_MONOTONIC)."""
    def volts(self, codes: Optional[Sequence[int]] = None) -> list[float]:
        """Volts of ``codes``, or of a new sample."""
    def read(self, n: int, rate_hz: float) -> tuple[array, array, int]:
        """``n`` sets at ``rate_hz``: (array('h') of 8·got codes, array('Q') of got timestamps, overruns)."""
    @property
    def overruns(self) -> int:
        """Overruns of every ``read`` so far."""
    @property
    def samples(self) -> int:
        """Sets read so far."""
    @property
    def busy_mode(self) -> str:
        """"poll", "sleep" or "predicted"."""
    @property
    def range(self) -> float: ...
    @property
    def oversampling(self) -> int: ...
    @property
    def max_rate_hz(self) -> float: ...

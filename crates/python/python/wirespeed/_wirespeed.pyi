"""Type stubs of the native module ``wirespeed._wirespeed`` (SPI part; ``gpio`` has its own stubs)."""

from typing import Any, Generator, Iterable, Optional, Sequence, Union

from . import gpio as gpio
from . import lab as lab
from .lab import Lab

# Anything with the buffer protocol: bytes, bytearray, memoryview, array.array, numpy arrays …
Buffer = Any
# What py-spidev's methods take: a buffer of 1-byte items or a sequence of ints 0..255.
ByteValues = Union[Buffer, Sequence[int], Iterable[int]]

class SpiDev:
    """py-spidev's ``SpiDev``: ``open(bus, device)`` opens ``/dev/spidev<bus>.<device>``, or that
    node of a lab board (``lab=``, or the board the ``WIRESPEED_LAB`` environment variable names).

    >>> from wirespeed import SpiDev
    >>> spi = SpiDev(lab=wirespeed.lab.load("examples/lab.toml"))
    >>> spi.open(0, 1)
    >>> spi.xfer2([1, 2, 3])
    [1, 2, 3]
    """

    mode: int
    """SPI mode as two bit pattern of clock polarity and phase [CPOL|CPHA]: 0..3."""
    bits_per_word: int
    """Bits per word, 8..32."""
    max_speed_hz: int
    """The default clock of transfers, Hz."""
    cshigh: bool
    """CS active high."""
    lsbfirst: bool
    """Least significant bit first."""
    threewire: bool
    """SI/SO signals shared."""
    loop: bool
    """Loopback configuration."""
    no_cs: bool
    """No chip select."""
    read0: bool
    """py-spidev's CS_HIGH workaround flag; kept for compatibility, has no effect."""
    @property
    def closed(self) -> bool:
        """Whether it is not open."""
    @property
    def bufsiz(self) -> int:
        """spidev's bufsiz (bytes per ioctl each way); 0 when closed."""
    def __init__(self, bus: Optional[int] = None, client: Optional[int] = None, *, lab: Optional[Lab] = None) -> None:
        """Opens ``/dev/spidev<bus>.<client>`` when ``bus`` is given."""
    def open(self, bus: int, device: int) -> None:
        """Connects to ``/dev/spidev<bus>.<device>``.

        Raises ``FileNotFoundError`` (no such node), ``PermissionError``, ``ValueError`` (negative numbers)."""
    def open_path(self, path: str) -> None:
        """Connects to a spidev node by path."""
    def close(self) -> None:
        """Disconnects; settings read back as 0/False until the next open."""
    def fileno(self) -> int:
        """The node's descriptor (a lab node has none: OSError)."""
    def readbytes(self, n: int) -> list[int]:
        """Reads ``n`` bytes; beyond bufsiz in pieces (CS dropping between them)."""
    def writebytes(self, values: ByteValues) -> None:
        """Writes bytes; beyond bufsiz in pieces."""
    def writebytes2(self, values: ByteValues) -> None:
        """Writes any buffer (its raw bytes) or sequence of ints; beyond bufsiz in pieces."""
    def xfer(self, values: ByteValues, speed_hz: int = 0, delay_usecs: int = 0, bits_per_word: int = 0) -> Any:
        """One full-duplex transfer, CS held (as ``xfer2``). Returns a list (a list argument is filled
        in place and returned, as py-spidev does; a tuple gives a tuple)."""
    def xfer2(self, values: ByteValues, speed_hz: int = 0, delay_usecs: int = 0, bits_per_word: int = 0) -> Any:
        """One full-duplex transfer, CS held across it; at most bufsiz bytes (``OverflowError``)."""
    def xfer3(
        self, values: ByteValues, speed_hz: int = 0, delay_usecs: int = 0, bits_per_word: int = 0
    ) -> tuple[int, ...]:
        """Any length, in pieces of bufsiz (CS dropping between them); returns a tuple."""
    def read(self, n: int) -> bytes:
        """Reads ``n`` bytes into a new ``bytes``."""
    def readinto(self, buffer: Buffer) -> int:
        """Fills a writable buffer; returns its length."""
    def write(self, data: Buffer) -> None:
        """Writes any bytes-like object."""
    def transfer(
        self,
        data: Buffer,
        out: Optional[Buffer] = None,
        speed_hz: int = 0,
        delay_usecs: int = 0,
        bits_per_word: int = 0,
    ) -> Optional[bytes]:
        """One full-duplex transfer, CS held: returns the bytes read, or fills ``out`` and returns None.

        >>> spi.transfer(b"\\x9f\\x00\\x00\\x00")
        b'\\xff\\xef@\\x18'
        """
    def message(self, transfers: Sequence[Transfer]) -> list[Any]:
        """Runs the transfers as one message (CS held across them unless ``cs_change``); one result per
        transfer: ``bytes`` (``rx_len``), the ``rx`` buffer given (filled), or None (write only).

        >>> cmd, jedec = spi.message([Transfer(tx=b"\\x9f"), Transfer(rx_len=3)])
        """
    def prepare(self, transfers: Sequence[Transfer]) -> PreparedMessage:
        """Validates a message once; ``run()`` it many times with no validation or allocation."""
    def submit(self, message: Union[PreparedMessage, Sequence[Transfer]]) -> Pending:
        """Queues a message for the bus's thread; ``wait()`` or ``await`` the result."""
    def __enter__(self) -> SpiDev: ...
    def __exit__(self, *args: Any) -> bool: ...

class Transfer:
    """One transfer of a message.

    >>> Transfer(tx=b"\\x03\\x00\\x10\\x00")            # write
    >>> Transfer(rx_len=256, speed_hz=10_000_000)       # read
    >>> Transfer(tx=b"\\x9f\\x00\\x00\\x00", rx_len=4)  # full duplex
    >>> Transfer(tx=b"\\x06", cs_change=True, delay_ns=1000)
    """

    tx: Optional[Any]
    rx: Optional[Buffer]
    rx_len: Optional[int]
    speed_hz: int
    bits_per_word: int
    delay_ns: int
    cs_change: bool
    cs_change_delay_ns: Optional[int]
    word_delay_ns: int
    def __init__(
        self,
        tx: Optional[ByteValues] = None,
        rx_len: Optional[int] = None,
        *,
        rx: Optional[Buffer] = None,
        speed_hz: int = 0,
        bits_per_word: int = 0,
        delay_ns: int = 0,
        cs_change: bool = False,
        cs_change_delay_ns: Optional[int] = None,
        word_delay_ns: int = 0,
    ) -> None: ...

class PreparedMessage:
    """A message validated once: ``run()`` reuses its buffers.

    >>> status = spi.prepare([Transfer(tx=b"\\x05\\x00", rx_len=2)])
    >>> status.run(); status.rx(0)
    b'\\x00\\x00'
    """

    @property
    def wire_ns(self) -> int:
        """Expected wire time of one run, ns."""
    def run(self) -> None:
        """Runs it and waits (GIL released); ``rx`` buffers given are filled."""
    def submit(self) -> Pending:
        """Queues it for the bus's thread."""
    def rx(self, i: int) -> Optional[bytes]:
        """What transfer ``i`` received in the last run (None: write only)."""
    def readinto(self, i: int, buffer: Buffer) -> int:
        """Copies what transfer ``i`` received into ``buffer``; returns the bytes copied."""
    def results(self) -> list[Any]:
        """One result per transfer, as ``SpiDev.message`` returns them."""
    def set_tx(self, i: int, data: ByteValues) -> None:
        """Replaces what transfer ``i`` sends (same length)."""
    def __len__(self) -> int: ...

class Pending:
    """A submitted message.

    >>> pending = spi.submit([Transfer(tx=b"\\x9f", rx_len=1)])
    >>> pending.wait()
    [b'\\xff']
    >>> async def main():
    ...     return await spi.submit(prepared)
    """

    @property
    def message(self) -> PreparedMessage:
        """The message submitted."""
    def wait(self, timeout: Optional[float] = None) -> list[Any]:
        """Waits (GIL released; ``TimeoutError`` after ``timeout`` seconds); returns the results."""
    def done(self) -> bool:
        """Whether it has completed."""
    def __await__(self) -> Generator[Any, None, list[Any]]: ...

"""`wirespeed bench shim`'s Python client: the cost of one 9-byte
SPI_IOC_MESSAGE(1) through Python's fcntl.ioctl (the standard library only,
no py-spidev), as a Python program sees it.

Usage: python3 client.py DEVICE COUNT WARMUP SPEED_HZ

Same protocol as client.c: mode 0 and SPEED_HZ set, WARMUP messages, then
one round of COUNT messages per line read on stdin until EOF, timed with
CLOCK_MONOTONIC; every message returns 9 and the loopback's echo is
checked; one flushed line per round: "round <ns per ioctl>". Errors go to
stderr with exit status 1 (2: bad arguments).
"""
import ctypes
import fcntl
import os
import struct
import sys
import time

SPI_IOC_WR_MODE = 0x40016B01
SPI_IOC_WR_MAX_SPEED_HZ = 0x40046B04
SPI_IOC_MESSAGE_1 = 0x40206B00  # _IOW('k', 0, char[32])
LEN = 9


class SpiIocTransfer(ctypes.Structure):
    _fields_ = [
        ("tx_buf", ctypes.c_uint64),
        ("rx_buf", ctypes.c_uint64),
        ("len", ctypes.c_uint32),
        ("speed_hz", ctypes.c_uint32),
        ("delay_usecs", ctypes.c_uint16),
        ("bits_per_word", ctypes.c_uint8),
        ("cs_change", ctypes.c_uint8),
        ("tx_nbits", ctypes.c_uint8),
        ("rx_nbits", ctypes.c_uint8),
        ("word_delay_usecs", ctypes.c_uint8),
        ("pad", ctypes.c_uint8),
    ]


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: client.py DEVICE COUNT WARMUP SPEED_HZ\n")
        return 2
    dev = argv[1]
    try:
        count, warmup, speed = (int(a) for a in argv[2:5])
    except ValueError as e:
        sys.stderr.write(f"client.py: {e}\n")
        return 2
    if count < 1:
        sys.stderr.write("client.py: COUNT must be at least 1\n")
        return 2
    assert ctypes.sizeof(SpiIocTransfer) == 32
    try:
        fd = os.open(dev, os.O_RDWR)
        fcntl.ioctl(fd, SPI_IOC_WR_MODE, struct.pack("B", 0))
        fcntl.ioctl(fd, SPI_IOC_WR_MAX_SPEED_HZ, struct.pack("I", speed))
    except OSError as e:
        sys.stderr.write(f"client.py: {dev}: {e}\n")
        return 1
    tx = (ctypes.c_uint8 * LEN)(0x9F, 1, 2, 3, 4, 5, 6, 7, 8)
    rx = (ctypes.c_uint8 * LEN)()
    x = SpiIocTransfer(ctypes.addressof(tx), ctypes.addressof(rx), LEN, speed, 0, 8)
    ioctl = fcntl.ioctl
    clock = time.clock_gettime_ns
    mono = time.CLOCK_MONOTONIC
    try:
        for i in range(warmup):
            tx[0] = i & 0xFF
            if ioctl(fd, SPI_IOC_MESSAGE_1, x) != LEN:
                sys.stderr.write("client.py: SPI_IOC_MESSAGE(1) moved the wrong count\n")
                return 1
        for r, _ in enumerate(sys.stdin):
            bad = False
            t0 = clock(mono)
            for i in range(count):
                tx[0] = (i + r) & 0xFF
                if ioctl(fd, SPI_IOC_MESSAGE_1, x) != LEN:
                    sys.stderr.write("client.py: SPI_IOC_MESSAGE(1) moved the wrong count\n")
                    return 1
                bad |= rx[0] != tx[0]
            t1 = clock(mono)
            if bad or bytes(rx) != bytes(tx):
                sys.stderr.write(f"client.py: the loopback did not echo what was sent (round {r})\n")
                return 1
            print(f"round {(t1 - t0) / count:.1f}", flush=True)
    except OSError as e:
        sys.stderr.write(f"client.py: SPI_IOC_MESSAGE(1): {e}\n")
        return 1
    os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

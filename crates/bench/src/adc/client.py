"""`wirespeed bench adc`'s Python client: samples the lab AD7606 in a Python
loop, one of three ways, and answers the bench's requests on stdin/stdout.

    client.py python     BOARD OVERSAMPLING SPEED_HZ   wirespeed.ad7606.Ad7606.sample()
    client.py python_raw BOARD OVERSAMPLING SPEED_HZ   wirespeed.gpio + SpiDev.message, by hand
    client.py pyspidev   -     OVERSAMPLING SPEED_HZ   python gpiod 2.x + py-spidev (under the shim)

Requests (one line each), answers (one line each):

    max ROUNDS PER_ROUND          -> max HZ              (median of rounds of back-to-back sets)
    trial RATE_HZ PERIODS LAG_NS  -> trial PERIODS SAMPLES MISSED MAX_LATE_NS ELAPSED_NS
    quit

A trial paces itself as the Rust driver's `Ad7606::run` does: deadlines
start + k * period on the monotonic clock; a set later than
max(LAG_NS, period) after its deadline is not taken and the periods
passed are missed (overruns); later but within the bound it is caught up.
Errors go to stderr with exit status 1.
"""

import statistics
import struct
import sys
import time

CONVST, BUSY = 8, 9
CHIP = "/dev/gpiochip0"


def make_wirespeed(board, oversampling, speed_hz):
    import wirespeed

    lab = wirespeed.lab.load(board)
    adc = wirespeed.ad7606.Ad7606(lab=lab, spi=(0, 2), convst=(CHIP, CONVST), busy=(CHIP, BUSY),
                                  oversampling=oversampling, speed_hz=speed_hz)
    return adc.sample, (lab, adc)


def make_raw(gpiod, spi, message):
    """The loop a user writes by hand: CONVST up and down, BUSY polled until
    low, one 16-byte read, the codes decoded."""
    from_value = gpiod.line.Value
    req = gpiod.Chip(CHIP).request_lines(
        consumer="ad7606",
        config={
            CONVST: gpiod.LineSettings(direction=gpiod.line.Direction.OUTPUT, output_value=from_value.INACTIVE),
            BUSY: gpiod.LineSettings(direction=gpiod.line.Direction.INPUT),
        },
    )
    high, low = from_value.ACTIVE, from_value.INACTIVE
    set_value, get_value, unpack = req.set_value, req.get_value, struct.Struct(">8h").unpack

    def sample():
        t = time.monotonic_ns()
        set_value(CONVST, high)
        set_value(CONVST, low)
        while get_value(BUSY) == high:
            pass
        return unpack(bytes(message())), t

    return sample, (req, spi)


def make_python_raw(board, oversampling, speed_hz):
    import wirespeed
    import wirespeed.gpio as gpiod
    from wirespeed import Transfer

    lab = wirespeed.lab.load(board)
    spi = wirespeed.SpiDev(lab=lab)
    spi.open(0, 2)
    spi.mode = 2
    spi.max_speed_hz = speed_hz
    read = [Transfer(rx_len=16)]
    gpiod_lab = _LabGpiod(gpiod, lab)
    sample, keep = make_raw(gpiod_lab, spi, lambda: spi.message(read)[0])
    return sample, (lab, keep)


class _LabGpiod:
    """wirespeed.gpio with the lab board bound to Chip (the rest unchanged)."""

    def __init__(self, gpiod, lab):
        self.line, self.LineSettings = gpiod.line, gpiod.LineSettings
        self.Chip = lambda path: gpiod.Chip(path, lab=lab)


def make_pyspidev(_board, oversampling, speed_hz):
    import gpiod
    import spidev

    spi = spidev.SpiDev()
    spi.open(0, 2)
    spi.mode = 2
    spi.max_speed_hz = speed_hz
    zeros = [0] * 16
    return make_raw(gpiod, spi, lambda: spi.xfer2(zeros))


def free_running(sample, rounds, per_round):
    for _ in range(1000):
        sample()
    per_set = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for _ in range(per_round):
            sample()
        per_set.append((time.perf_counter_ns() - t) / per_round)
    return 1e9 / statistics.median(per_set)


def trial(sample, rate_hz, periods, lag_ns):
    period = round(1e9 / rate_hz)
    max_lag = max(lag_ns, period)
    sets = [None] * periods
    now = time.monotonic_ns
    done = samples = missed = max_late = 0
    start = nxt = now()
    while done < periods:
        t = now()
        if nxt - t > 2_000_000:
            time.sleep((nxt - t - 1_000_000) / 1e9)
        while t < nxt:
            t = now()
        late = t - nxt
        if late > max_lag:
            skip = min(late // period, periods - done)
            missed += skip
            done += skip
            nxt += skip * period
            continue
        if late > max_late:
            max_late = late
        sets[samples] = sample()
        samples += 1
        done += 1
        nxt += period
    return done, samples, missed, max_late, now() - start


def main():
    kind, board, oversampling, speed_hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    make = {"python": make_wirespeed, "python_raw": make_python_raw, "pyspidev": make_pyspidev}[kind]
    sample, _keep = make(board, oversampling, speed_hz)
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "max":
            print("max", free_running(sample, int(words[1]), int(words[2])), flush=True)
        elif words[0] == "trial":
            r = trial(sample, float(words[1]), int(words[2]), int(words[3]))
            print("trial", *r, flush=True)
        else:
            raise ValueError(f"unknown request {line!r}")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the bench shows this line
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)

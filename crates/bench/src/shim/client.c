/*
 * `wirespeed bench shim`'s C client: the cost of one 9-byte
 * SPI_IOC_MESSAGE(1) on a spidev node, as an unmodified program sees it.
 *
 * Usage: client DEVICE COUNT WARMUP SPEED_HZ
 *
 * Opens DEVICE (a loopback), sets mode 0 and SPEED_HZ, runs WARMUP
 * messages, then one round of COUNT messages per line read on stdin (the
 * benchmark interleaves rounds of its clients this way) until EOF, each
 * round timed with clock_gettime(CLOCK_MONOTONIC). Every message must
 * return 9 and echo its first byte (which changes each message); each
 * round's last reply must equal what was sent. Prints one line per round,
 * flushed: "round <ns per ioctl>". Errors go to stderr with exit status 1
 * (2: bad arguments).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/spi/spidev.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define LEN 9

static int fail(const char *what) {
    fprintf(stderr, "client: %s: %s\n", what, strerror(errno));
    return 1;
}

static long arg(const char *s, const char *name) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 0) {
        fprintf(stderr, "client: bad %s: %s\n", name, s);
        exit(2);
    }
    return v;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s DEVICE COUNT WARMUP SPEED_HZ\n", argv[0]);
        return 2;
    }
    long count = arg(argv[2], "COUNT"), warmup = arg(argv[3], "WARMUP");
    uint32_t speed = (uint32_t)arg(argv[4], "SPEED_HZ");
    if (count == 0) {
        fprintf(stderr, "client: COUNT must be at least 1\n");
        return 2;
    }

    int fd = open(argv[1], O_RDWR);
    if (fd < 0)
        return fail(argv[1]);
    uint8_t mode = SPI_MODE_0;
    if (ioctl(fd, SPI_IOC_WR_MODE, &mode) < 0)
        return fail("SPI_IOC_WR_MODE");
    if (ioctl(fd, SPI_IOC_WR_MAX_SPEED_HZ, &speed) < 0)
        return fail("SPI_IOC_WR_MAX_SPEED_HZ");

    uint8_t tx[LEN] = {0x9f, 1, 2, 3, 4, 5, 6, 7, 8}, rx[LEN];
    struct spi_ioc_transfer x;
    memset(&x, 0, sizeof x);
    x.tx_buf = (uintptr_t)tx;
    x.rx_buf = (uintptr_t)rx;
    x.len = LEN;
    x.speed_hz = speed;
    x.bits_per_word = 8;

    for (long i = 0; i < warmup; i++) {
        tx[0] = (uint8_t)i;
        if (ioctl(fd, SPI_IOC_MESSAGE(1), &x) != LEN)
            return fail("SPI_IOC_MESSAGE(1) (warm-up)");
    }
    char line[64];
    for (long r = 0; fgets(line, sizeof line, stdin) != NULL; r++) {
        int bad = 0;
        uint64_t t0 = now_ns();
        for (long i = 0; i < count; i++) {
            tx[0] = (uint8_t)(i + r);
            if (ioctl(fd, SPI_IOC_MESSAGE(1), &x) != LEN)
                return fail("SPI_IOC_MESSAGE(1)");
            bad |= rx[0] != tx[0];
        }
        uint64_t t1 = now_ns();
        if (bad || memcmp(rx, tx, LEN) != 0) {
            fprintf(stderr, "client: the loopback did not echo what was sent (round %ld)\n", r);
            return 1;
        }
        printf("round %.1f\n", (double)(t1 - t0) / (double)count);
        fflush(stdout);
    }
    close(fd);
    return 0;
}

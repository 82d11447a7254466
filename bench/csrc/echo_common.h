/* echo_common.h: what the C echo programs (lcm_echo.c, udp_echo_floor.c) share, so that they keep one clock, one
 * sending schedule and one wait for late echoes (the Rust roles in src/harness/nerve.rs do the same). */
#ifndef ECHO_COMMON_H
#define ECHO_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MSG_SIZE 800

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Sends MSG_SIZE-byte requests (sequence number u64 LE, CLOCK_MONOTONIC stamp u64 LE, filler) with `send` at
 * `rate_bps` bytes/s (0: as fast as possible) for `duration_ms`: every message due by now (message i is due at
 * i / rate), then an absolute sleep until the next is due. Returns how many were sent; `*send_ns` is the time taken. */
static uint64_t send_paced(double rate_bps, int duration_ms, void (*send)(void *ctx, const uint8_t *msg), void *ctx,
                           uint64_t *send_ns) {
    uint8_t msg[MSG_SIZE];
    for (int i = 0; i < MSG_SIZE; i++) msg[i] = (uint8_t)(i * 7);
    double per_s = rate_bps / MSG_SIZE;
    uint64_t sent = 0;
    uint64_t t0 = mono_ns();
    uint64_t end = t0 + (uint64_t)duration_ms * 1000000ull;
    for (;;) {
        uint64_t now = mono_ns();
        if (now >= end) break;
        uint64_t due = per_s > 0 ? (uint64_t)((double)(now - t0) * 1e-9 * per_s) + 1 : sent + 1;
        while (sent < due) {
            uint64_t stamp = mono_ns();
            memcpy(msg, &sent, 8); /* x86-64: little endian */
            memcpy(msg + 8, &stamp, 8);
            send(ctx, msg);
            sent++;
        }
        if (per_s > 0) {
            uint64_t next = t0 + (uint64_t)((double)sent / per_s * 1e9);
            if (next > end) next = end;
            sleep_until_ns(next);
        }
    }
    *send_ns = mono_ns() - t0;
    return sent;
}

/* Waits up to `drain_ms` for `sent` echoes from each of `clients` (counted in `received` by another thread: a racy
 * read, only to stop early). */
static void wait_for_echoes(volatile uint64_t *received, int clients, uint64_t sent, int drain_ms) {
    uint64_t drain_end = mono_ns() + (uint64_t)drain_ms * 1000000ull;
    for (;;) {
        uint64_t got = 0;
        for (int k = 0; k < clients; k++) got += received[k];
        if (got >= sent * (uint64_t)clients || mono_ns() >= drain_end) break;
        sleep_until_ns(mono_ns() + 1000000ull);
    }
}

/* The report's first lines, the same in every program: "sent N SEND_NS", then "client K RECEIVED" per client (the
 * caller prints "rtt NS" per echo and "end"). */
static void print_counts(uint64_t sent, uint64_t send_ns, const uint64_t *received, int clients) {
    printf("sent %" PRIu64 " %" PRIu64 "\n", sent, send_ns);
    for (int k = 0; k < clients; k++) printf("client %d %" PRIu64 "\n", k, received[k]);
}

#endif

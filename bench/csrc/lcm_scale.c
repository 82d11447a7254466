/* lcm_scale: the lcm-c subscriber of the scale suite (bench/README.md, "scale"), on the real LCM 1.5.3 C library from
 * the PyPI wheel (build.rs links it with an rpath to the wheel's lib/ directory).
 *
 *   lcm_scale sub URL PREFIX START N ACTIVE MAX_MS
 *       subscribes to the N channels PREFIX<START> .. PREFIX<START+N-1>, one lcm_subscribe each (how an LCM program
 *       reads many channels), prints "ready", and handles messages until one shorter than 16 bytes (stop) or MAX_MS;
 *       then prints "recv TOTAL" (messages handled on all its channels), "lat NS" for each message on channel
 *       PREFIX<ACTIVE> (now - the sender's CLOCK_MONOTONIC stamp in bytes 8..16; ACTIVE -1: none), and "end".
 *
 * src/suites/scale/role.rs is the same role on nerve-bus and iceoryx2, printing the same lines.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lcm/lcm.h>

#include "echo_common.h"

struct sub {
    const char *active;
    uint64_t *lat;
    size_t n, cap;
    uint64_t total;
    int stop;
};

static void on_msg(const lcm_recv_buf_t *rbuf, const char *channel, void *user) {
    struct sub *s = user;
    uint64_t now = mono_ns();
    if (rbuf->data_size < 16) {
        s->stop = 1;
        return;
    }
    s->total++;
    if (s->active && !strcmp(channel, s->active)) {
        uint64_t stamp;
        memcpy(&stamp, (const uint8_t *)rbuf->data + 8, 8); /* x86-64: little endian */
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1024;
            s->lat = realloc(s->lat, s->cap * sizeof(uint64_t));
            if (!s->lat) {
                fprintf(stderr, "lcm_scale: out of memory\n");
                exit(3);
            }
        }
        s->lat[s->n++] = now - stamp;
    }
}

static int run_sub(const char *url, const char *prefix, long start, long n, long active, int max_ms) {
    lcm_t *lcm = lcm_create(url);
    if (!lcm) {
        fprintf(stderr, "lcm_scale: lcm_create(%s) failed\n", url);
        return 3;
    }
    struct sub s = {0};
    char active_name[256];
    if (active >= 0) {
        snprintf(active_name, sizeof active_name, "%s%ld", prefix, active);
        s.active = active_name;
    }
    for (long i = start; i < start + n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s%ld", prefix, i);
        if (!lcm_subscribe(lcm, name, on_msg, &s)) {
            fprintf(stderr, "lcm_scale: lcm_subscribe(%s) failed\n", name);
            return 3;
        }
    }
    printf("ready\n");
    fflush(stdout);
    uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000ull;
    while (!s.stop && mono_ns() < deadline) lcm_handle_timeout(lcm, 100);
    printf("recv %" PRIu64 "\n", s.total);
    for (size_t i = 0; i < s.n; i++) printf("lat %" PRIu64 "\n", s.lat[i]);
    printf("end\n");
    fflush(stdout);
    lcm_destroy(lcm);
    free(s.lat);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 8 && !strcmp(argv[1], "sub"))
        return run_sub(argv[2], argv[3], strtol(argv[4], 0, 10), strtol(argv[5], 0, 10), strtol(argv[6], 0, 10),
                       atoi(argv[7]));
    fprintf(stderr, "usage: lcm_scale sub URL PREFIX START N ACTIVE MAX_MS (see the comment at the top of lcm_scale.c)\n");
    return 2;
}

/* lcm_echo: the lcm-c side of the echo and latency suites (bench/README.md), written against the real LCM 1.5.3 C
 * library from the PyPI wheel (build.rs links it with an rpath to the wheel's lib/ directory).
 *
 * Roles (the driver, `nerve-bench echo` / `nerve-bench latency`, starts them; src/harness/nerve.rs is the same program
 * on nerve-bus, and both print the same lines, so the driver computes every statistic with one piece of code):
 *
 *   lcm_echo client URL REQ REP MAX_MS
 *       subscribes to REQ with LCM's defaults (queue of 30, drop newest), prints "ready", and republishes every
 *       message on REP from the handler, until a message shorter than 16 bytes (stop) or MAX_MS.
 *   lcm_echo source URL REQ REP_PREFIX CLIENTS RATE_BPS DURATION_MS DRAIN_MS
 *       publishes 800-byte messages (seq u64 LE, CLOCK_MONOTONIC ns u64 LE, filler) on REQ at RATE_BPS bytes/s
 *       (0: as fast as possible) for DURATION_MS, a thread handles the replies on REP_PREFIX<k> (queue unbounded),
 *       waits up to DRAIN_MS for the last echoes, sends stop, and prints
 *         "sent N SEND_NS" / "client K RECEIVED" per client / "rtt NS" per echo / "end".
 *   lcm_echo lat-recv URL CHAN COUNT MAX_MS
 *       prints "ready", receives until COUNT messages, a stop message or MAX_MS, prints "recv N", "lat NS" per
 *       message (now - the sender's CLOCK_MONOTONIC stamp), "end".
 *   lcm_echo lat-send URL CHAN COUNT HZ SIZE
 *       publishes COUNT SIZE-byte messages at HZ (absolute-time sleeps), then stop messages; prints "sent N".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <lcm/lcm.h>

#include "echo_common.h"

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); } /* x86-64: little endian */
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static lcm_t *open_lcm(const char *url) {
    lcm_t *lcm = lcm_create(url);
    if (!lcm) {
        fprintf(stderr, "lcm_echo: lcm_create(%s) failed\n", url);
        exit(3);
    }
    return lcm;
}

/* ---- client ---- */

struct client {
    lcm_t *lcm;
    const char *rep;
    volatile int stop;
};

static void on_request(const lcm_recv_buf_t *rbuf, const char *channel, void *user) {
    (void)channel;
    struct client *c = user;
    if (rbuf->data_size < 16) {
        c->stop = 1;
        return;
    }
    lcm_publish(c->lcm, c->rep, rbuf->data, rbuf->data_size);
}

static int run_client(const char *url, const char *req, const char *rep, int max_ms) {
    struct client c = {open_lcm(url), rep, 0};
    lcm_subscribe(c.lcm, req, on_request, &c);
    printf("ready\n");
    fflush(stdout);
    uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000ull;
    while (!c.stop && mono_ns() < deadline) lcm_handle_timeout(c.lcm, 100);
    lcm_destroy(c.lcm);
    return 0;
}

/* ---- source ---- */

struct sample {
    uint32_t client;
    uint64_t rtt;
};

struct source {
    lcm_t *lcm;
    const char *req;
    size_t prefix_len;
    int clients;
    uint64_t *received;
    struct sample *samples;
    size_t n, cap;
    volatile int stop;
};

static void on_reply(const lcm_recv_buf_t *rbuf, const char *channel, void *user) {
    uint64_t now = mono_ns();
    struct source *s = user;
    if (rbuf->data_size < 16) return;
    int k = atoi(channel + s->prefix_len);
    if (k < 0 || k >= s->clients) return;
    uint64_t ts = get_u64((const uint8_t *)rbuf->data + 8);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1 << 16;
        s->samples = realloc(s->samples, s->cap * sizeof *s->samples);
        if (!s->samples) abort();
    }
    s->samples[s->n].client = (uint32_t)k;
    s->samples[s->n].rtt = now - ts;
    s->n++;
    s->received[k]++;
}

static void publish_request(void *ctx, const uint8_t *msg) {
    struct source *s = ctx;
    lcm_publish(s->lcm, s->req, msg, MSG_SIZE);
}

static void *source_handler(void *arg) {
    struct source *s = arg;
    while (!s->stop) lcm_handle_timeout(s->lcm, 20);
    return NULL;
}

static int run_source(const char *url, const char *req, const char *rep_prefix, int clients, double rate_bps,
                      int duration_ms, int drain_ms) {
    struct source s = {0};
    s.lcm = open_lcm(url);
    s.req = req;
    s.prefix_len = strlen(rep_prefix);
    s.clients = clients;
    s.received = calloc((size_t)clients, sizeof *s.received);
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s[0-9]+", rep_prefix);
    lcm_subscription_t *sub = lcm_subscribe(s.lcm, pattern, on_reply, &s);
    lcm_subscription_set_queue_capacity(sub, 0);
    pthread_t th;
    pthread_create(&th, NULL, source_handler, &s);

    uint64_t send_ns;
    uint64_t sent = send_paced(rate_bps, duration_ms, publish_request, &s, &send_ns);
    wait_for_echoes(s.received, clients, sent, drain_ms);
    s.stop = 1;
    pthread_join(th, NULL);
    uint8_t stop[8] = {0};
    for (int i = 0; i < 3; i++) {
        lcm_publish(s.lcm, req, stop, sizeof stop);
        sleep_until_ns(mono_ns() + 5000000ull);
    }
    print_counts(sent, send_ns, s.received, clients);
    for (size_t i = 0; i < s.n; i++) printf("rtt %" PRIu64 "\n", s.samples[i].rtt);
    printf("end\n");
    fflush(stdout);
    lcm_destroy(s.lcm);
    return 0;
}

/* ---- one-way latency ---- */

struct lat {
    uint64_t *lat;
    size_t n, want;
    volatile int stop;
};

static void on_lat(const lcm_recv_buf_t *rbuf, const char *channel, void *user) {
    (void)channel;
    uint64_t now = mono_ns();
    struct lat *l = user;
    if (rbuf->data_size < 16) {
        l->stop = 1;
        return;
    }
    if (l->n < l->want) l->lat[l->n++] = now - get_u64((const uint8_t *)rbuf->data + 8);
    if (l->n >= l->want) l->stop = 1;
}

static int run_lat_recv(const char *url, const char *chan, size_t count, int max_ms) {
    lcm_t *lcm = open_lcm(url);
    struct lat l = {calloc(count ? count : 1, sizeof(uint64_t)), 0, count, 0};
    lcm_subscribe(lcm, chan, on_lat, &l);
    printf("ready\n");
    fflush(stdout);
    uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000ull;
    while (!l.stop && mono_ns() < deadline) lcm_handle_timeout(lcm, 100);
    printf("recv %zu\n", l.n);
    for (size_t i = 0; i < l.n; i++) printf("lat %" PRIu64 "\n", l.lat[i]);
    printf("end\n");
    fflush(stdout);
    lcm_destroy(lcm);
    return 0;
}

static int run_lat_send(const char *url, const char *chan, size_t count, double hz, size_t size) {
    lcm_t *lcm = open_lcm(url);
    if (size < 16) size = 16;
    uint8_t *msg = calloc(1, size);
    uint64_t period = (uint64_t)(1e9 / hz);
    uint64_t t = mono_ns() + period;
    for (size_t i = 0; i < count; i++) {
        sleep_until_ns(t);
        put_u64(msg, i);
        put_u64(msg + 8, mono_ns());
        lcm_publish(lcm, chan, msg, (unsigned)size);
        t += period;
    }
    uint8_t stop[8] = {0};
    for (int i = 0; i < 3; i++) {
        sleep_until_ns(mono_ns() + 5000000ull);
        lcm_publish(lcm, chan, stop, sizeof stop);
    }
    printf("sent %zu\n", count);
    fflush(stdout);
    lcm_destroy(lcm);
    return 0;
}

int main(int argc, char **argv) {
    /* The same timer slack as the Rust roles set, so that paced sleeps end as precisely in both. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    if (argc == 6 && !strcmp(argv[1], "client")) return run_client(argv[2], argv[3], argv[4], atoi(argv[5]));
    if (argc == 9 && !strcmp(argv[1], "source"))
        return run_source(argv[2], argv[3], argv[4], atoi(argv[5]), atof(argv[6]), atoi(argv[7]), atoi(argv[8]));
    if (argc == 6 && !strcmp(argv[1], "lat-recv"))
        return run_lat_recv(argv[2], argv[3], (size_t)strtoull(argv[4], 0, 10), atoi(argv[5]));
    if (argc == 7 && !strcmp(argv[1], "lat-send"))
        return run_lat_send(argv[2], argv[3], (size_t)strtoull(argv[4], 0, 10), atof(argv[5]),
                            (size_t)strtoull(argv[6], 0, 10));
    fprintf(stderr, "usage: lcm_echo client|source|lat-recv|lat-send ... (see the comment at the top of lcm_echo.c)\n");
    return 2;
}

/* udp_echo_floor: the echo suite's floor (bench/README.md, "echo"): the same two roles as lcm_echo.c, speaking LCM's
 * small-message datagram (LC02 magic, sequence number, channel, payload) on the same group and port, with nothing but
 * the system calls a message needs: a blocking recv and a sendto on one socket per process, no library, no queue, no
 * second thread in the client. What it measures is what the kernel's UDP multicast path and the wake-ups of this
 * host cost a round trip, which no library that sleeps while it waits can go below.
 *
 *   udp_echo_floor client URL REQ REP MAX_MS
 *       prints "ready", then republishes every datagram on REQ as one on REP, until a message shorter than 16 bytes
 *       (stop) or MAX_MS.
 *   udp_echo_floor source URL REQ REP_PREFIX CLIENTS RATE_BPS DURATION_MS DRAIN_MS
 *       as lcm_echo.c's source (a thread takes the replies), printing the same lines.
 *
 * URL: udpm://GROUP:PORT?... (the options are the suite's: ttl=0 and recv_buf_size, which this program applies).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include "echo_common.h"

#define MAX_DATAGRAM 2048

static void die(const char *what) {
    fprintf(stderr, "udp_echo_floor: %s: %s\n", what, strerror(errno));
    exit(3);
}

/* One socket bound to the group's port and joined to it, as every LCM receiver has; it also sends. */
static int open_group(const char *url, struct sockaddr_in *group) {
    char host[64];
    unsigned port;
    const char *rest = strncmp(url, "udpm://", 7) == 0 ? url + 7 : url;
    if (sscanf(rest, "%63[0-9.]:%u", host, &port) != 2) {
        fprintf(stderr, "udp_echo_floor: bad url %s\n", url);
        exit(2);
    }
    const char *rb = strstr(url, "recv_buf_size=");
    int rcvbuf = rb ? atoi(rb + strlen("recv_buf_size=")) : 0;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)) die("SO_REUSEADDR");
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf)) die("SO_RCVBUF");
    memset(group, 0, sizeof *group);
    group->sin_family = AF_INET;
    group->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &group->sin_addr) != 1) die("group address");
    struct sockaddr_in any = *group;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&any, sizeof any)) die("bind");
    struct ip_mreq m = {group->sin_addr, {htonl(INADDR_ANY)}};
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m)) die("IP_ADD_MEMBERSHIP");
    unsigned char ttl = 0;
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl)) die("IP_MULTICAST_TTL");
    return fd;
}

/* LCM's small-message datagram: magic "LC02", sequence number (both big endian), channel, NUL, payload. */
static size_t frame(uint8_t *out, uint32_t seq, const char *channel, const uint8_t *payload, size_t n) {
    uint32_t magic = htonl(0x4c433032u), s = htonl(seq);
    size_t cl = strlen(channel) + 1;
    memcpy(out, &magic, 4);
    memcpy(out + 4, &s, 4);
    memcpy(out + 8, channel, cl);
    memcpy(out + 8 + cl, payload, n);
    return 8 + cl + n;
}

/* The channel and payload of a small-message datagram of n bytes; 0 if it is not one. */
static int unframe(const uint8_t *d, ssize_t n, const char **channel, const uint8_t **payload, size_t *len) {
    uint32_t magic;
    if (n < 9) return 0;
    memcpy(&magic, d, 4);
    if (magic != htonl(0x4c433032u)) return 0;
    const uint8_t *nul = memchr(d + 8, 0, (size_t)n - 8);
    if (!nul) return 0;
    *channel = (const char *)d + 8;
    *payload = nul + 1;
    *len = (size_t)(d + n - (nul + 1));
    return 1;
}

static int run_client(const char *url, const char *req, const char *rep, int max_ms) {
    struct sockaddr_in group;
    int fd = open_group(url, &group);
    /* A receive timeout only so that MAX_MS can end a client whose stop message was lost. */
    struct timeval tv = {0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    printf("ready\n");
    fflush(stdout);
    uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000ull;
    uint8_t in[MAX_DATAGRAM], out[MAX_DATAGRAM + 64];
    uint32_t seq = 0;
    while (mono_ns() < deadline) {
        ssize_t n = recv(fd, in, sizeof in, 0);
        const char *channel;
        const uint8_t *payload;
        size_t len;
        if (n < 0 || !unframe(in, n, &channel, &payload, &len) || strcmp(channel, req)) continue;
        if (len < 16) break;
        size_t m = frame(out, seq++, rep, payload, len);
        sendto(fd, out, m, 0, (struct sockaddr *)&group, sizeof group);
    }
    return 0;
}

struct source {
    int fd;
    struct sockaddr_in group;
    const char *req;
    uint32_t seq;
    size_t prefix_len;
    const char *prefix;
    int clients;
    uint64_t *received;
    uint64_t *rtt;
    size_t n, cap;
    volatile int stop;
};

static void send_request(void *ctx, const uint8_t *msg) {
    struct source *s = ctx;
    uint8_t out[MAX_DATAGRAM + 64];
    size_t m = frame(out, s->seq++, s->req, msg, MSG_SIZE);
    sendto(s->fd, out, m, 0, (struct sockaddr *)&s->group, sizeof s->group);
}

static void *take_replies(void *arg) {
    struct source *s = arg;
    uint8_t in[MAX_DATAGRAM];
    while (!s->stop) {
        ssize_t n = recv(s->fd, in, sizeof in, 0);
        uint64_t now = mono_ns();
        const char *channel;
        const uint8_t *payload;
        size_t len;
        if (n < 0 || !unframe(in, n, &channel, &payload, &len) || len < 16) continue;
        if (strncmp(channel, s->prefix, s->prefix_len)) continue;
        int k = atoi(channel + s->prefix_len);
        if (k < 0 || k >= s->clients) continue;
        uint64_t ts;
        memcpy(&ts, payload + 8, 8);
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1 << 16;
            s->rtt = realloc(s->rtt, s->cap * sizeof *s->rtt);
            if (!s->rtt) abort();
        }
        s->rtt[s->n++] = now - ts;
        s->received[k]++;
    }
    return NULL;
}

static int run_source(const char *url, const char *req, const char *rep_prefix, int clients, double rate_bps,
                      int duration_ms, int drain_ms) {
    struct sockaddr_in group;
    struct source s = {0};
    s.fd = open_group(url, &group);
    s.group = group;
    s.req = req;
    s.prefix = rep_prefix;
    s.prefix_len = strlen(rep_prefix);
    s.clients = clients;
    s.received = calloc((size_t)clients, sizeof *s.received);
    /* The reply thread looks up every 20 ms to see whether it should stop, as lcm_echo.c's does. */
    struct timeval tv = {0, 20000};
    setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    pthread_t th;
    pthread_create(&th, NULL, take_replies, &s);

    uint64_t send_ns;
    uint64_t sent = send_paced(rate_bps, duration_ms, send_request, &s, &send_ns);
    wait_for_echoes(s.received, clients, sent, drain_ms);
    s.stop = 1;
    pthread_join(th, NULL);
    uint8_t stop[8] = {0}, out[MAX_DATAGRAM + 64];
    for (int i = 0; i < 3; i++) {
        size_t m = frame(out, s.seq++, req, stop, sizeof stop);
        sendto(s.fd, out, m, 0, (struct sockaddr *)&group, sizeof group);
        sleep_until_ns(mono_ns() + 5000000ull);
    }
    print_counts(sent, send_ns, s.received, clients);
    for (size_t i = 0; i < s.n; i++) printf("rtt %" PRIu64 "\n", s.rtt[i]);
    printf("end\n");
    return 0;
}

int main(int argc, char **argv) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    if (argc == 6 && !strcmp(argv[1], "client")) return run_client(argv[2], argv[3], argv[4], atoi(argv[5]));
    if (argc == 9 && !strcmp(argv[1], "source"))
        return run_source(argv[2], argv[3], argv[4], atoi(argv[5]), atof(argv[6]), atoi(argv[7]), atoi(argv[8]));
    fprintf(stderr, "usage: udp_echo_floor client|source ... (see the comment at the top of udp_echo_floor.c)\n");
    return 2;
}

/*
 * Programs written for LCM 1.5.3's C API (lcm/lcm.h, lcm/eventlog.h), in the style of LCM's C examples, built by
 * tests/interop/test_liblcm.py both against the real liblcm (the PyPI wheel's headers and library) and against
 * Nerve's (an install by scripts/install-c), from this one source. Each role prints what it saw; the test compares
 * the two builds' output.
 *
 *   raw URL          one process: own messages come back, lcm_handle dispatches one message, handle_timeout's
 *                    return codes, the fileno polls readable, queue sizes, unsubscribe inside a handler
 *   send URL N       publishes N numbered messages on "RAW" (after a pause for the listener)
 *   listen URL N     prints N messages from "RAW", or fails after a few seconds
 *   log-write PATH   writes three events with lcm_eventlog (as lcm-logger would)
 *   log-read PATH    prints every event of a log (as LCM's log reader example)
 *   log-seek PATH TS seeks to TS and prints the event there
 *   hostile          every entry point handed NULL and garbage returns LCM's error value, and lcm_handle inside a
 *                    handler is an error (Nerve's build only: the real liblcm dereferences such pointers, and
 *                    blocks in a nested lcm_handle)
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lcm/lcm.h>

static void pause_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long) (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

struct state {
    lcm_t *lcm;
    lcm_subscription_t *self;
    int count;
    int unsubscribe_at;
    int nested;
};

static void on_raw(const lcm_recv_buf_t *rbuf, const char *channel, void *user)
{
    struct state *s = (struct state *) user;
    s->count++;
    printf("%s: %.*s (%u bytes, lcm %s)\n", channel, (int) rbuf->data_size, (const char *) rbuf->data,
           rbuf->data_size, rbuf->lcm == s->lcm ? "same" : "other");
    if (s->nested)
        printf("lcm_handle inside a handler: %d\n", lcm_handle(s->lcm));
    if (s->count == s->unsubscribe_at)
        printf("unsubscribe inside the handler: %d\n", lcm_unsubscribe(s->lcm, s->self));
    fflush(stdout);
}

static int role_raw(const char *url)
{
    struct state s;
    struct pollfd pfd;
    lcm_subscription_t *other;
    int other_count = 0, i;
    memset(&s, 0, sizeof(s));
    s.lcm = lcm_create(url);
    if (!s.lcm)
        return 1;
    s.self = lcm_subscribe(s.lcm, "RAW.*", on_raw, &s);
    other = lcm_subscribe(s.lcm, "NOBODY", on_raw, &other_count);
    if (!s.self || !other)
        return 1;
    printf("timeout with nothing published: %d\n", lcm_handle_timeout(s.lcm, 50));
    printf("negative timeout: %d\n", lcm_handle_timeout(s.lcm, -1));
    pfd.fd = lcm_get_fileno(s.lcm);
    pfd.events = POLLIN;
    printf("publish: %d\n", lcm_publish(s.lcm, "RAW1", "one", 3));
    printf("publish: %d\n", lcm_publish(s.lcm, "RAW2", "two", 3));
    printf("fileno readable: %d\n", poll(&pfd, 1, 2000) == 1 && (pfd.revents & POLLIN));
    /* lcm_handle dispatches one message per call. */
    for (i = 0; i < 2; i++) {
        int r = lcm_handle(s.lcm);
        printf("handle: %d, count %d\n", r, s.count);
    }
    printf("empty message: %d\n", lcm_publish(s.lcm, "RAW3", "", 0));
    printf("handled: %d\n", lcm_handle_timeout(s.lcm, 2000));

    lcm_subscription_set_queue_capacity(s.self, 10);
    for (i = 0; i < 3; i++)
        lcm_publish(s.lcm, "RAWQ", "q", 1);
    pause_ms(200);
    printf("queue size: %d\n", lcm_subscription_get_queue_size(s.self));
    printf("handled: %d\n", lcm_handle_timeout(s.lcm, 2000));
    s.unsubscribe_at = s.count + 1;
    while (lcm_handle_timeout(s.lcm, 200) > 0)
        ;
    printf("after unsubscribe inside a handler, count %d\n", s.count);
    lcm_publish(s.lcm, "RAW4", "late", 4);
    while (lcm_handle_timeout(s.lcm, 200) > 0)
        ;
    printf("after a later publish, count %d, other %d\n", s.count, other_count);
    printf("unsubscribe again: %d\n", lcm_unsubscribe(s.lcm, s.self));
    printf("unsubscribe other: %d\n", lcm_unsubscribe(s.lcm, other));
    lcm_destroy(s.lcm);
    return 0;
}

static int role_send(const char *url, int n)
{
    char text[32];
    int i;
    lcm_t *lcm = lcm_create(url);
    if (!lcm)
        return 1;
    pause_ms(300);
    for (i = 0; i < n; i++) {
        int len = snprintf(text, sizeof(text), "message %d", i);
        if (lcm_publish(lcm, "RAW", text, (unsigned) len) != 0)
            return 1;
        pause_ms(20);
    }
    lcm_destroy(lcm);
    return 0;
}

static int role_listen(const char *url, int n)
{
    struct state s;
    int tries = 0;
    memset(&s, 0, sizeof(s));
    s.lcm = lcm_create(url);
    if (!s.lcm)
        return 1;
    s.self = lcm_subscribe(s.lcm, "RAW", on_raw, &s);
    while (s.count < n && tries++ < 50)
        lcm_handle_timeout(s.lcm, 100);
    lcm_destroy(s.lcm);
    return s.count == n ? 0 : 1;
}

static int role_log_write(const char *path)
{
    static const char *channels[] = {"POSE", "EMPTY", "CAMERA/left"};
    static const char *payloads[] = {"\x01\x02\x03", "", "image"};
    lcm_eventlog_t *log = lcm_eventlog_create(path, "w");
    int i;
    if (!log)
        return 1;
    for (i = 0; i < 3; i++) {
        lcm_eventlog_event_t e;
        e.eventnum = 99; /* the log numbers events itself */
        e.timestamp = 1000 * (i + 1);
        e.channellen = (int32_t) strlen(channels[i]);
        e.datalen = (int32_t) strlen(payloads[i]);
        e.channel = (char *) channels[i];
        e.data = (void *) payloads[i];
        if (lcm_eventlog_write_event(log, &e) != 0)
            return 1;
        printf("wrote event %" PRId64 ", count %" PRId64 "\n", e.eventnum, log->eventcount);
    }
    lcm_eventlog_destroy(log);
    return 0;
}

static void print_event(const lcm_eventlog_event_t *e)
{
    int32_t k;
    printf("%" PRId64 " %" PRId64 " %s %d ", e->eventnum, e->timestamp, e->channel, (int) e->channellen);
    for (k = 0; k < e->datalen; k++)
        printf("%02x", ((const unsigned char *) e->data)[k]);
    printf("\n");
}

static int role_log_read(const char *path)
{
    lcm_eventlog_t *log = lcm_eventlog_create(path, "r");
    lcm_eventlog_event_t *e;
    if (!log)
        return 1;
    while ((e = lcm_eventlog_read_next_event(log)) != NULL) {
        print_event(e);
        lcm_eventlog_free_event(e);
    }
    lcm_eventlog_destroy(log);
    return 0;
}

static int role_log_seek(const char *path, int64_t ts)
{
    lcm_eventlog_t *log = lcm_eventlog_create(path, "r");
    lcm_eventlog_event_t *e;
    if (!log)
        return 1;
    printf("seek: %d\n", lcm_eventlog_seek_to_timestamp(log, ts));
    e = lcm_eventlog_read_next_event(log);
    if (e) {
        print_event(e);
        lcm_eventlog_free_event(e);
    }
    lcm_eventlog_destroy(log);
    return 0;
}

static void never(const lcm_recv_buf_t *rbuf, const char *channel, void *user)
{
    (void) rbuf;
    (void) channel;
    (void) user;
}

#define EXPECT(cond)                                                \
    do {                                                            \
        if (!(cond)) {                                              \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                               \
        }                                                           \
    } while (0)

static int role_hostile(void)
{
    /* Garbage: addresses that are not handles this library made (never dereferenced by it). */
    char junk[64];
    lcm_t *garbage = (lcm_t *) (void *) junk;
    lcm_subscription_t *gsub = (lcm_subscription_t *) (void *) junk;
    lcm_eventlog_t *glog = (lcm_eventlog_t *) (void *) junk;
    lcm_eventlog_event_t bad;
    lcm_t *lcm, *other;
    lcm_subscription_t *sub;
    lcm_eventlog_t *log;
    memset(junk, 0x5a, sizeof(junk));

    EXPECT(lcm_create("no-such-provider://") == NULL);
    EXPECT(lcm_create("udpm://239.255.76.67:7667?no_such_option=1") == NULL);
    EXPECT(lcm_create("\xff\xfe") == NULL);
    lcm_destroy(NULL);
    lcm_destroy(garbage);
    EXPECT(lcm_get_fileno(NULL) == -1 && lcm_get_fileno(garbage) == -1);
    EXPECT(lcm_subscribe(NULL, "A", never, NULL) == NULL && lcm_subscribe(garbage, "A", never, NULL) == NULL);
    EXPECT(lcm_unsubscribe(NULL, NULL) == -1 && lcm_unsubscribe(garbage, gsub) == -1);
    EXPECT(lcm_publish(NULL, "A", "x", 1) == -1 && lcm_publish(garbage, "A", "x", 1) == -1);
    EXPECT(lcm_handle(NULL) == -1 && lcm_handle(garbage) == -1);
    EXPECT(lcm_handle_timeout(NULL, 0) == -1 && lcm_handle_timeout(garbage, 0) == -1);
    EXPECT(lcm_subscription_set_queue_capacity(NULL, 1) == -1 && lcm_subscription_set_queue_capacity(gsub, 1) == -1);
    EXPECT(lcm_subscription_get_queue_size(NULL) == -1 && lcm_subscription_get_queue_size(gsub) == -1);

    lcm = lcm_create("memq://");
    other = lcm_create("memq://");
    EXPECT(lcm && other);
    EXPECT(lcm_subscribe(lcm, NULL, never, NULL) == NULL);
    EXPECT(lcm_subscribe(lcm, "A", NULL, NULL) == NULL);
    EXPECT(lcm_subscribe(lcm, "(unclosed", never, NULL) == NULL);
    EXPECT(lcm_subscribe(lcm, "\xff", never, NULL) == NULL);
    EXPECT(lcm_publish(lcm, NULL, "x", 1) == -1);
    EXPECT(lcm_publish(lcm, "A", NULL, 5) == -1);
    EXPECT(lcm_publish(lcm, "A", NULL, 0) == 0);
    EXPECT(lcm_handle_timeout(lcm, -5) == -1);
    sub = lcm_subscribe(lcm, "A", never, NULL);
    EXPECT(sub != NULL);
    EXPECT(lcm_unsubscribe(other, sub) == -1); /* someone else's subscription */
    EXPECT(lcm_unsubscribe(lcm, sub) == 0);
    EXPECT(lcm_unsubscribe(lcm, sub) == -1);
    EXPECT(lcm_subscription_get_queue_size(sub) == -1);
    {
        struct state s;
        memset(&s, 0, sizeof(s));
        s.lcm = lcm;
        s.nested = 1;
        s.self = lcm_subscribe(lcm, "N", on_raw, &s);
        EXPECT(lcm_publish(lcm, "N", "n", 1) == 0 && lcm_handle_timeout(lcm, 1000) == 1 && s.count == 1);
        EXPECT(lcm_unsubscribe(lcm, s.self) == 0);
    }
    sub = lcm_subscribe(lcm, "A", never, NULL);
    lcm_destroy(lcm); /* ends its subscriptions too */
    EXPECT(lcm_subscription_get_queue_size(sub) == -1);
    EXPECT(lcm_publish(lcm, "A", "x", 1) == -1);
    lcm_destroy(lcm);
    lcm_destroy(other);

    EXPECT(lcm_eventlog_create(NULL, "r") == NULL && lcm_eventlog_create("/tmp", NULL) == NULL);
    EXPECT(lcm_eventlog_create("/nonexistent/dir/x.log", "w") == NULL);
    EXPECT(lcm_eventlog_create("/dev/null", "rw+") == NULL);
    EXPECT(lcm_eventlog_read_next_event(NULL) == NULL && lcm_eventlog_read_next_event(glog) == NULL);
    EXPECT(lcm_eventlog_seek_to_timestamp(NULL, 0) == -1 && lcm_eventlog_seek_to_timestamp(glog, 0) == -1);
    EXPECT(lcm_eventlog_write_event(NULL, &bad) == -1 && lcm_eventlog_write_event(glog, &bad) == -1);
    lcm_eventlog_free_event(NULL);
    lcm_eventlog_destroy(NULL);
    lcm_eventlog_destroy(glog);
    log = lcm_eventlog_create("/dev/null", "w");
    EXPECT(log != NULL);
    EXPECT(lcm_eventlog_write_event(log, NULL) == -1);
    memset(&bad, 0, sizeof(bad));
    bad.channellen = -1;
    EXPECT(lcm_eventlog_write_event(log, &bad) == -1);
    bad.channellen = 3; /* channel NULL */
    EXPECT(lcm_eventlog_write_event(log, &bad) == -1);
    lcm_eventlog_destroy(log);
    EXPECT(lcm_eventlog_read_next_event(log) == NULL);
    printf("hostile: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "raw"))
        return role_raw(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "send"))
        return role_send(argv[2], atoi(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "listen"))
        return role_listen(argv[2], atoi(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "log-write"))
        return role_log_write(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "log-read"))
        return role_log_read(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "log-seek"))
        return role_log_seek(argv[2], strtoll(argv[3], NULL, 10));
    if (argc >= 2 && !strcmp(argv[1], "hostile"))
        return role_hostile();
    fprintf(stderr, "usage: see the comment at the top of lcm_programs.c\n");
    return 2;
}

/* nerve.h's bus from C:
 *   selftest URL     own messages, pattern subscriptions, capacity and overflow policies, stats, the descriptor,
 *                    unsubscribe inside a handler, handle inside a handler
 *   send URL N       N raw messages "c N" on RAW (after a pause for the listener)
 *   listen URL N     prints N messages from RAW
 *   hostile          every bus entry point handed NULL and garbage returns NERVE_E_INVALID */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nerve/nerve.h>

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        int status_ = (call);                                                                           \
        if (status_ < 0) {                                                                              \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, nerve_status_string(status_), \
                    nerve_last_error());                                                                \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, nerve_last_error()); \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

struct state {
    nerve_bus *bus;
    nerve_subscription *sub;
    int count;
    int unsubscribe_at;
    int nested;
};

static void on_message(const nerve_received *m, void *user)
{
    struct state *s = (struct state *) user;
    s->count++;
    printf("%s: %.*s (%s)\n", m->channel, (int) m->len, (const char *) m->data, m->local ? "local" : "transport");
    if (s->nested)
        printf("handle inside a handler: %s\n", nerve_status_string(nerve_bus_handle(s->bus)));
    if (s->count == s->unsubscribe_at)
        printf("unsubscribe inside the handler: %s\n", nerve_status_string(nerve_bus_unsubscribe(s->bus, s->sub)));
    fflush(stdout);
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int selftest(const char *url)
{
    struct state s, newest;
    nerve_subscription_stats st;
    struct pollfd pfd;
    int i;
    char text[16];
    memset(&s, 0, sizeof(s));
    memset(&newest, 0, sizeof(newest));
    CHECK(nerve_bus_open(url, &s.bus));
    newest.bus = s.bus;
    CHECK(nerve_bus_subscribe(s.bus, "RAW.*", 2, NERVE_DROP_OLDEST, on_message, &s, &s.sub));
    CHECK(nerve_bus_subscribe(s.bus, "RAWQ", 2, NERVE_DROP_NEWEST, on_message, &newest, &newest.sub));
    printf("nothing: %s\n", nerve_status_string(nerve_bus_handle_timeout(s.bus, 20000000)));
    CHECK(nerve_bus_fileno(s.bus, &pfd.fd));
    pfd.events = POLLIN;
    CHECK(nerve_bus_publish(s.bus, "RAW1", "one", 3));
    printf("readable: %d\n", poll(&pfd, 1, 2000) == 1);
    CHECK(nerve_bus_handle(s.bus));
    /* Capacity 2: of five, drop-oldest keeps q3 q4, drop-newest keeps q0 q1. */
    for (i = 0; i < 5; i++) {
        int len = snprintf(text, sizeof(text), "q%d", i);
        CHECK(nerve_bus_publish(s.bus, "RAWQ", text, (size_t) len));
    }
    pause_ms(100);
    while (nerve_bus_handle_timeout(s.bus, 200000000) == NERVE_OK)
        ;
    CHECK(nerve_subscription_stats_get(s.sub, &st));
    printf("drop-oldest: received %llu delivered %llu dropped %llu queued %llu\n", (unsigned long long) st.received,
           (unsigned long long) st.delivered, (unsigned long long) st.dropped, (unsigned long long) st.queued);
    CHECK(nerve_subscription_stats_get(newest.sub, &st));
    printf("drop-newest: delivered %llu dropped %llu\n", (unsigned long long) st.delivered,
           (unsigned long long) st.dropped);
    CHECK(nerve_subscription_set_capacity(s.sub, 0));
    s.nested = 1;
    CHECK(nerve_bus_publish(s.bus, "RAW2", "two", 3));
    CHECK(nerve_bus_handle_timeout(s.bus, 2000000000));
    s.nested = 0;
    s.unsubscribe_at = s.count + 1;
    CHECK(nerve_bus_publish(s.bus, "RAW3", "three", 5));
    CHECK(nerve_bus_publish(s.bus, "RAW4", "four", 4));
    while (nerve_bus_handle_timeout(s.bus, 200000000) == NERVE_OK)
        ;
    printf("count %d\n", s.count);
    printf("unsubscribe again: %s\n", nerve_status_string(nerve_bus_unsubscribe(s.bus, s.sub)));
    CHECK(nerve_bus_close(s.bus));
    return 0;
}

static int send(const char *url, int n)
{
    nerve_bus *bus;
    char text[32];
    int i;
    CHECK(nerve_bus_open(url, &bus));
    pause_ms(300);
    for (i = 0; i < n; i++) {
        int len = snprintf(text, sizeof(text), "c %d", i);
        CHECK(nerve_bus_publish(bus, "RAW", text, (size_t) len));
        pause_ms(20);
    }
    CHECK(nerve_bus_close(bus));
    return 0;
}

static int listen_n(const char *url, int n)
{
    struct state s;
    int tries = 0;
    memset(&s, 0, sizeof(s));
    CHECK(nerve_bus_open(url, &s.bus));
    CHECK(nerve_bus_subscribe(s.bus, "RAW", 100, NERVE_DROP_OLDEST, on_message, &s, &s.sub));
    while (s.count < n && tries++ < 100)
        CHECK(nerve_bus_handle_timeout(s.bus, 100000000));
    CHECK(nerve_bus_close(s.bus));
    return s.count == n ? 0 : 1;
}

static int hostile(void)
{
    char junk[64];
    nerve_bus *garbage = (nerve_bus *) (void *) junk, *bus, *other;
    nerve_subscription *gsub = (nerve_subscription *) (void *) junk, *sub;
    nerve_subscription_stats st;
    int fd;
    struct state s;
    memset(junk, 0x5a, sizeof(junk));
    memset(&s, 0, sizeof(s));
    EXPECT(nerve_bus_open("no-such://", &bus) == NERVE_E_INVALID);
    EXPECT(nerve_bus_open("udpm://239.255.76.67:7667?bogus=1", &bus) == NERVE_E_INVALID);
    EXPECT(nerve_bus_open("\xff", &bus) == NERVE_E_INVALID);
    EXPECT(nerve_bus_open("memq://", NULL) == NERVE_E_INVALID);
    EXPECT(nerve_bus_close(NULL) == NERVE_E_INVALID && nerve_bus_close(garbage) == NERVE_E_INVALID);
    EXPECT(nerve_bus_publish(NULL, "A", "x", 1) == NERVE_E_INVALID);
    EXPECT(nerve_bus_publish(garbage, "A", "x", 1) == NERVE_E_INVALID);
    EXPECT(nerve_bus_subscribe(garbage, "A", 1, NERVE_DROP_OLDEST, on_message, NULL, &sub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_unsubscribe(garbage, gsub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_handle(NULL) == NERVE_E_INVALID && nerve_bus_handle(garbage) == NERVE_E_INVALID);
    EXPECT(nerve_bus_handle_timeout(garbage, 0) == NERVE_E_INVALID);
    EXPECT(nerve_bus_fileno(garbage, &fd) == NERVE_E_INVALID);
    EXPECT(nerve_subscription_set_capacity(NULL, 1) == NERVE_E_INVALID);
    EXPECT(nerve_subscription_set_capacity(gsub, 1) == NERVE_E_INVALID);
    EXPECT(nerve_subscription_stats_get(gsub, &st) == NERVE_E_INVALID);

    CHECK(nerve_bus_open("memq://", &bus));
    CHECK(nerve_bus_open("memq://", &other));
    EXPECT(nerve_bus_publish(bus, NULL, "x", 1) == NERVE_E_INVALID);
    EXPECT(nerve_bus_publish(bus, "A", NULL, 3) == NERVE_E_INVALID);
    EXPECT(nerve_bus_publish(bus, "A", NULL, 0) == NERVE_OK);
    EXPECT(nerve_bus_subscribe(bus, NULL, 1, NERVE_DROP_OLDEST, on_message, NULL, &sub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_subscribe(bus, "(", 1, NERVE_DROP_OLDEST, on_message, NULL, &sub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_subscribe(bus, "A", 1, 7, on_message, NULL, &sub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_subscribe(bus, "A", 1, NERVE_DROP_OLDEST, NULL, NULL, &sub) == NERVE_E_INVALID);
    EXPECT(nerve_bus_subscribe(bus, "A", 1, NERVE_DROP_OLDEST, on_message, NULL, NULL) == NERVE_E_INVALID);
    EXPECT(nerve_bus_fileno(bus, NULL) == NERVE_E_INVALID);
    CHECK(nerve_bus_subscribe(bus, "A", 1, NERVE_DROP_OLDEST, on_message, &s, &sub));
    EXPECT(nerve_subscription_stats_get(sub, NULL) == NERVE_E_INVALID);
    EXPECT(nerve_bus_unsubscribe(other, sub) == NERVE_E_INVALID); /* another bus's */
    EXPECT(nerve_bus_unsubscribe(bus, sub) == NERVE_OK);
    EXPECT(nerve_bus_unsubscribe(bus, sub) == NERVE_E_INVALID);
    CHECK(nerve_bus_subscribe(bus, "A", 1, NERVE_DROP_OLDEST, on_message, &s, &sub));
    CHECK(nerve_bus_close(bus)); /* ends its subscriptions */
    EXPECT(nerve_subscription_stats_get(sub, &st) == NERVE_E_INVALID);
    EXPECT(nerve_bus_publish(bus, "A", "x", 1) == NERVE_E_INVALID);
    CHECK(nerve_bus_close(other));
    printf("hostile: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "selftest"))
        return selftest(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "send"))
        return send(argv[2], atoi(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "listen"))
        return listen_n(argv[2], atoi(argv[3]));
    if (argc >= 2 && !strcmp(argv[1], "hostile"))
        return hostile();
    fprintf(stderr, "usage: see the comment at the top of bus_c.c\n");
    return 2;
}

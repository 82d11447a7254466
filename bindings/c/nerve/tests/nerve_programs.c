/*
 * C programs against libnerve (nerve.h), one role per command (tests/interop/test_nerve_c.py runs them under
 * AddressSanitizer and UndefinedBehaviorSanitizer):
 *
 *   channels DIR          create/open/put/get (next, newest, missed, too small, waits), loans, views, stats, remove
 *   log-write PATH        writes three events (read back by the real LCM's Python EventLog in the test)
 *   log-read PATH         prints every event as "NUMBER UTIME CHANNEL HEX", then "damage REGIONS BYTES"
 *   hostile DIR           every entry point handed NULL, garbage and closed handles
 *   dump DIR NAME         prints every message a channel holds, oldest first, as hex lines
 *
 * Exit status 0 on success; a failed check prints the file:line, the status and nerve_last_error().
 */

#define _GNU_SOURCE
#include <nerve/nerve.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define EXPECT(call, status)                                                                                         \
    do {                                                                                                             \
        int r_ = (call);                                                                                             \
        if (r_ != (status)) {                                                                                        \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,                 \
                    nerve_status_string(r_), nerve_status_string(status), nerve_last_error());                      \
            failures++;                                                                                              \
        }                                                                                                            \
    } while (0)

#define CHECK(cond)                                                                                                  \
    do {                                                                                                             \
        if (!(cond)) {                                                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                \
            failures++;                                                                                              \
        }                                                                                                            \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

static int cmd_channels(const char *dir)
{
    nerve_channel *w = NULL, *r = NULL, *late = NULL, *again = NULL;
    nerve_message_info info;
    char buf[64];
    uint64_t seq = 0, frames = 0, frame_size = 0;

    EXPECT(nerve_channel_create("pose", 4, 32, 0600, dir, NERVE_CREATE_NEW, &w), NERVE_OK);
    EXPECT(nerve_channel_create("pose", 4, 32, 0600, dir, NERVE_CREATE_NEW, &again), NERVE_E_EXISTS);
    EXPECT(nerve_channel_create("pose", 8, 32, 0600, dir, NERVE_CREATE_OR_OPEN, &again), NERVE_E_EXISTS);
    EXPECT(nerve_channel_create("pose", 4, 32, 0600, dir, NERVE_CREATE_OR_OPEN, &again), NERVE_OK);
    EXPECT(nerve_channel_close(again), NERVE_OK);
    EXPECT(nerve_channel_sizes(w, &frames, &frame_size), NERVE_OK);
    CHECK(frames == 4 && frame_size == 32);
    EXPECT(nerve_channel_open("pose", dir, NERVE_START_OLDEST, &r), NERVE_OK);

    /* Empty: nothing new at once; a timeout waits about that long. */
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_NOTHING_NEW);
    double t0 = now_s();
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 50000000, &info), NERVE_TIMED_OUT);
    CHECK(now_s() - t0 >= 0.045);

    /* In order, with sequence numbers. */
    EXPECT(nerve_channel_put(w, "one", 3, &seq), NERVE_OK);
    CHECK(seq == 1);
    EXPECT(nerve_channel_put(w, "two", 3, NULL), NERVE_OK);
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, -1, &info), NERVE_OK);
    CHECK(info.seq == 1 && info.len == 3 && info.missed == 0 && memcmp(buf, "one", 3) == 0 && info.put_utime > 0);
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_OK);
    CHECK(info.seq == 2 && memcmp(buf, "two", 3) == 0);

    /* Falling behind a 4-frame channel: the oldest kept, the rest counted missed. */
    for (int i = 0; i < 10; i++) {
        char m[16];
        snprintf(m, sizeof m, "m%d", i);
        EXPECT(nerve_channel_put(w, m, strlen(m), NULL), NERVE_OK);
    }
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_OK);
    CHECK(info.seq == 9 && info.missed == 6 && memcmp(buf, "m6", 2) == 0);
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEWEST, 0, &info), NERVE_OK);
    CHECK(info.seq == 12 && memcmp(buf, "m9", 2) == 0);

    /* Too small: the length needed, nothing lost. */
    EXPECT(nerve_channel_put(w, "a longer message", 16, NULL), NERVE_OK);
    EXPECT(nerve_channel_get(r, buf, 4, NERVE_READ_NEXT, 0, &info), NERVE_BUFFER_TOO_SMALL);
    CHECK(info.len == 16);
    EXPECT(nerve_channel_get(r, NULL, 0, NERVE_READ_NEXT, 0, &info), NERVE_BUFFER_TOO_SMALL);
    EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_OK);
    CHECK(info.len == 16 && memcmp(buf, "a longer message", 16) == 0);
    EXPECT(nerve_channel_put(w, buf, 33, NULL), NERVE_E_TOO_LARGE);

    /* A loan, written in place and committed; another aborted (nothing published); a put while a loan is held by
       this thread is refused, not a deadlock. */
    {
        void *data = NULL;
        nerve_loan *loan = NULL;
        EXPECT(nerve_channel_loan(w, 5, &data, &loan), NERVE_OK);
        memcpy(data, "loan!", 5);
        EXPECT(nerve_channel_put(w, "x", 1, NULL), NERVE_E_BUSY);
        EXPECT(nerve_loan_commit(loan, &seq), NERVE_OK);
        EXPECT(nerve_loan_commit(loan, &seq), NERVE_E_INVALID);
        EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_OK);
        CHECK(info.seq == seq && info.len == 5 && memcmp(buf, "loan!", 5) == 0);
        EXPECT(nerve_channel_loan(w, 5, &data, &loan), NERVE_OK);
        EXPECT(nerve_loan_abort(loan), NERVE_OK);
        EXPECT(nerve_channel_get(r, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_NOTHING_NEW);
        EXPECT(nerve_channel_loan(w, 33, &data, &loan), NERVE_E_TOO_LARGE);
    }

    /* A late handle starting at the newest; skip_to_newest. */
    EXPECT(nerve_channel_open("pose", dir, NERVE_START_NEWEST, &late), NERVE_OK);
    EXPECT(nerve_channel_get(late, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_OK);
    CHECK(memcmp(buf, "loan!", 5) == 0);
    EXPECT(nerve_channel_put(w, "z", 1, NULL), NERVE_OK);
    EXPECT(nerve_channel_skip_to_newest(late), NERVE_OK);
    EXPECT(nerve_channel_get(late, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_NOTHING_NEW);

    {
        nerve_channel_stats st;
        EXPECT(nerve_channel_stats_get(w, &st), NERVE_OK);
        CHECK(st.frames == 4 && st.frame_size == 32 && st.messages == info.seq + 1 && st.mode == 0600);
    }

    /* Views: the message in place, valid until the writers come round to its frame (a 4-frame ring of 32-byte
       frames: four more full frames reclaim it), then NERVE_OVERWRITTEN for ever; release once; a view outlives
       the handles. */
    {
        nerve_view *v = NULL, *kept = NULL, *none = NULL;
        const void *data = NULL, *kept_data = NULL;
        size_t len = 0;
        EXPECT(nerve_channel_skip_to_newest(r), NERVE_OK);
        EXPECT(nerve_channel_put(w, "viewed", 6, &seq), NERVE_OK);
        EXPECT(nerve_channel_view(r, NERVE_READ_NEXT, 0, &v, &data, &len, &info), NERVE_OK);
        CHECK(len == 6 && info.seq == seq && info.len == 6 && memcmp(data, "viewed", 6) == 0);
        CHECK(((uintptr_t) data) % 8 == 0);
        EXPECT(nerve_view_check(v), NERVE_OK);
        EXPECT(nerve_channel_view(r, NERVE_READ_NEXT, 0, &none, &data, NULL, NULL), NERVE_NOTHING_NEW);
        t0 = now_s();
        EXPECT(nerve_channel_view(r, NERVE_READ_NEXT, 20000000, &none, &data, NULL, NULL), NERVE_TIMED_OUT);
        CHECK(now_s() - t0 >= 0.015);
        for (int i = 0; i < 4; i++) {
            char frame[32];
            memset(frame, 'a' + i, sizeof frame);
            EXPECT(nerve_channel_put(w, frame, sizeof frame, NULL), NERVE_OK);
        }
        EXPECT(nerve_view_check(v), NERVE_OVERWRITTEN);
        CHECK(strstr(nerve_last_error(), "overwritten") != NULL);
        EXPECT(nerve_view_check(v), NERVE_OVERWRITTEN);
        EXPECT(nerve_view_release(v), NERVE_OK);
        EXPECT(nerve_view_release(v), NERVE_E_INVALID);
        EXPECT(nerve_view_check(v), NERVE_E_INVALID);
        EXPECT(nerve_channel_view(r, NERVE_READ_NEWEST, -1, &kept, &kept_data, &len, NULL), NERVE_OK);
        CHECK(len == 32 && memcmp(kept_data, "dddd", 4) == 0);
        EXPECT(nerve_channel_close(late), NERVE_OK);
        EXPECT(nerve_channel_close(r), NERVE_OK);
        EXPECT(nerve_channel_close(w), NERVE_OK);
        /* Every handle closed: the view still holds the mapping, and nothing overwrote its frame. */
        CHECK(memcmp(kept_data, "dddddddd", 8) == 0);
        EXPECT(nerve_view_check(kept), NERVE_OK);
        EXPECT(nerve_view_release(kept), NERVE_OK);
        late = r = NULL;
    }
    EXPECT(nerve_channel_close(w), NERVE_E_INVALID);
    EXPECT(nerve_channel_remove("pose", dir), NERVE_OK);
    EXPECT(nerve_channel_open("pose", dir, NERVE_START_NEWEST, &r), NERVE_E_NOT_FOUND);
    return failures ? 1 : 0;
}

static int cmd_log_write(const char *path)
{
    nerve_log_writer *w = NULL;
    EXPECT(nerve_log_writer_open(path, NERVE_LOG_OVERWRITE, &w), NERVE_OK);
    EXPECT(nerve_log_writer_write(w, 1000, "POSE", "\x01\x02\x03", 3), NERVE_OK);
    EXPECT(nerve_log_writer_write(w, 2000, "EMPTY", NULL, 0), NERVE_OK);
    EXPECT(nerve_log_writer_write(w, 3000, "CAMERA/left", "image", 5), NERVE_OK);
    EXPECT(nerve_log_writer_write(w, 4000, "", "x", 1), NERVE_E_INVALID);
    EXPECT(nerve_log_writer_close(w), NERVE_OK);
    EXPECT(nerve_log_writer_open(path, NERVE_LOG_CREATE, &w), NERVE_E_EXISTS);
    return failures ? 1 : 0;
}

static int cmd_log_read(const char *path)
{
    nerve_log_reader *r = NULL;
    nerve_log_event ev;
    nerve_log_damage d;
    int s;
    EXPECT(nerve_log_reader_open(path, &r), NERVE_OK);
    if (failures)
        return 1;
    while ((s = nerve_log_reader_next(r, &ev)) == NERVE_OK) {
        printf("%lld %lld %.*s ", (long long) ev.number, (long long) ev.utime, (int) ev.channel_len, ev.channel);
        for (size_t i = 0; i < ev.data_len; i++)
            printf("%02x", ((const unsigned char *) ev.data)[i]);
        printf("\n");
    }
    EXPECT(s, NERVE_END);
    EXPECT(nerve_log_reader_damage(r, &d), NERVE_OK);
    printf("damage %llu %llu\n", (unsigned long long) d.regions, (unsigned long long) d.bytes);
    EXPECT(nerve_log_reader_close(r), NERVE_OK);
    return failures ? 1 : 0;
}

static int cmd_hostile(const char *dir)
{
    char garbage_bytes[256];
    void *garbage = garbage_bytes + 8;
    nerve_channel *c = NULL;
    nerve_message_info info;
    nerve_channel_stats st;
    nerve_log_event ev;
    nerve_log_damage d;
    char buf[16];
    uint64_t u;
    memset(garbage_bytes, 0xab, sizeof garbage_bytes);
    nerve_channel *handles[] = {NULL, (nerve_channel *) garbage};
    for (size_t i = 0; i < 2; i++) {
        nerve_channel *h = handles[i];
        void *data;
        nerve_loan *loan;
        EXPECT(nerve_channel_put(h, "x", 1, NULL), NERVE_E_INVALID);
        EXPECT(nerve_channel_get(h, buf, sizeof buf, NERVE_READ_NEXT, 0, &info), NERVE_E_INVALID);
        EXPECT(nerve_channel_get(h, buf, sizeof buf, NERVE_READ_NEXT, -1, &info), NERVE_E_INVALID);
        EXPECT(nerve_channel_loan(h, 1, &data, &loan), NERVE_E_INVALID);
        EXPECT(nerve_channel_sizes(h, &u, &u), NERVE_E_INVALID);
        EXPECT(nerve_channel_stats_get(h, &st), NERVE_E_INVALID);
        EXPECT(nerve_channel_skip_to_newest(h), NERVE_E_INVALID);
        EXPECT(nerve_channel_close(h), NERVE_E_INVALID);
        EXPECT(nerve_loan_commit((nerve_loan *) h, &u), NERVE_E_INVALID);
        EXPECT(nerve_loan_abort((nerve_loan *) h), NERVE_E_INVALID);
        {
            nerve_view *v = NULL;
            const void *p = NULL;
            size_t n = 0;
            EXPECT(nerve_channel_view(h, NERVE_READ_NEXT, 0, &v, &p, &n, &info), NERVE_E_INVALID);
            EXPECT(nerve_channel_view(h, NERVE_READ_NEXT, -1, &v, &p, &n, &info), NERVE_E_INVALID);
            CHECK(v == NULL && p == NULL);
            EXPECT(nerve_view_check((nerve_view *) h), NERVE_E_INVALID);
            EXPECT(nerve_view_release((nerve_view *) h), NERVE_E_INVALID);
        }
        EXPECT(nerve_log_reader_next((nerve_log_reader *) h, &ev), NERVE_E_INVALID);
        EXPECT(nerve_log_reader_damage((nerve_log_reader *) h, &d), NERVE_E_INVALID);
        EXPECT(nerve_log_reader_close((nerve_log_reader *) h), NERVE_E_INVALID);
        EXPECT(nerve_log_writer_write((nerve_log_writer *) h, 0, "A", "x", 1), NERVE_E_INVALID);
        EXPECT(nerve_log_writer_flush((nerve_log_writer *) h), NERVE_E_INVALID);
        EXPECT(nerve_log_writer_close((nerve_log_writer *) h), NERVE_E_INVALID);
    }
    EXPECT(nerve_channel_create(NULL, 4, 32, 0600, dir, NERVE_CREATE_NEW, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("h", 4, 32, 0600, dir, NERVE_CREATE_NEW, NULL), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("h", 4, 32, 0600, dir, 7, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("h", 1, 32, 0600, dir, NERVE_CREATE_NEW, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("h", UINT64_MAX, UINT64_MAX, 0600, dir, NERVE_CREATE_NEW, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("a/b", 4, 32, 0600, dir, NERVE_CREATE_NEW, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_create("h", 4, 32, 077777, dir, NERVE_CREATE_NEW, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_open("h", dir, 9, &c), NERVE_E_INVALID);
    EXPECT(nerve_channel_open("missing", dir, NERVE_START_NEWEST, &c), NERVE_E_NOT_FOUND);
    EXPECT(nerve_channel_remove(NULL, dir), NERVE_E_INVALID);
    EXPECT(nerve_log_reader_open(NULL, (nerve_log_reader **) &c), NERVE_E_INVALID);
    EXPECT(nerve_log_reader_open("/nonexistent/log", (nerve_log_reader **) &c), NERVE_E_NOT_FOUND);
    EXPECT(nerve_log_writer_open(NULL, NERVE_LOG_CREATE, (nerve_log_writer **) &c), NERVE_E_INVALID);
    EXPECT(nerve_log_writer_open("/tmp/x.log", 9, (nerve_log_writer **) &c), NERVE_E_INVALID);

    /* An open channel with bad arguments. */
    EXPECT(nerve_channel_create("h", 4, 32, 0600, dir, NERVE_CREATE_NEW, &c), NERVE_OK);
    EXPECT(nerve_channel_put(c, NULL, 4, NULL), NERVE_E_INVALID);
    EXPECT(nerve_channel_put(c, NULL, 0, NULL), NERVE_OK); /* an empty message */
    EXPECT(nerve_channel_get(c, NULL, 4, NERVE_READ_NEXT, 0, &info), NERVE_E_INVALID);
    EXPECT(nerve_channel_get(c, buf, sizeof buf, 5, 0, &info), NERVE_E_INVALID);
    EXPECT(nerve_channel_loan(c, 1, NULL, NULL), NERVE_E_INVALID);
    EXPECT(nerve_channel_stats_get(c, NULL), NERVE_E_INVALID);
    {
        /* Views with bad arguments; a channel handle is not a view and a view is not a channel handle. */
        nerve_view *v = NULL;
        const void *p = NULL;
        EXPECT(nerve_channel_put(c, "v", 1, NULL), NERVE_OK);
        EXPECT(nerve_channel_view(c, NERVE_READ_NEWEST, 0, NULL, &p, NULL, NULL), NERVE_E_INVALID);
        EXPECT(nerve_channel_view(c, NERVE_READ_NEWEST, 0, &v, NULL, NULL, NULL), NERVE_E_INVALID);
        EXPECT(nerve_channel_view(c, 5, 0, &v, &p, NULL, NULL), NERVE_E_INVALID);
        EXPECT(nerve_view_check((nerve_view *) c), NERVE_E_INVALID);
        EXPECT(nerve_view_release((nerve_view *) c), NERVE_E_INVALID);
        EXPECT(nerve_channel_view(c, NERVE_READ_NEWEST, 0, &v, &p, NULL, NULL), NERVE_OK);
        EXPECT(nerve_channel_close((nerve_channel *) v), NERVE_E_INVALID);
        EXPECT(nerve_view_release(v), NERVE_OK);
        EXPECT(nerve_view_release(v), NERVE_E_INVALID);
    }
    EXPECT(nerve_channel_close(c), NERVE_OK);
    EXPECT(nerve_channel_remove("h", dir), NERVE_OK);
    CHECK(strcmp(nerve_status_string(NERVE_E_BUSY), "NERVE_E_BUSY") == 0);
    CHECK(strcmp(nerve_status_string(12345), "unknown status") == 0);
    CHECK(nerve_last_error() != NULL);
    return failures ? 1 : 0;
}

static int cmd_dump(const char *dir, const char *name)
{
    nerve_channel *c = NULL;
    nerve_message_info info;
    unsigned char buf[4096];
    int s;
    EXPECT(nerve_channel_open(name, dir, NERVE_START_OLDEST, &c), NERVE_OK);
    if (failures)
        return 1;
    while ((s = nerve_channel_get(c, buf, sizeof buf, NERVE_READ_NEXT, 0, &info)) == NERVE_OK) {
        for (uint64_t i = 0; i < info.len; i++)
            printf("%02x", buf[i]);
        printf("\n");
    }
    EXPECT(s, NERVE_NOTHING_NEW);
    EXPECT(nerve_channel_close(c), NERVE_OK);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2], argv[3]);
    if (argc != 3) {
        fprintf(stderr, "usage: %s channels|log-write|log-read|hostile ARG\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "channels") == 0)
        return cmd_channels(argv[2]);
    if (strcmp(argv[1], "log-write") == 0)
        return cmd_log_write(argv[2]);
    if (strcmp(argv[1], "log-read") == 0)
        return cmd_log_read(argv[2]);
    if (strcmp(argv[1], "hostile") == 0)
        return cmd_hostile(argv[2]);
    fprintf(stderr, "unknown command %s\n", argv[1]);
    return 2;
}

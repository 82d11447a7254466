/*
 * Ach-style C programs against Nerve's libach, one program with a role per command (tests/interop/test_ach.py runs
 * them under AddressSanitizer and UndefinedBehaviorSanitizer):
 *
 *   flags CHAN            one process: every ach_get flag combination, statuses, overflow, flush, attrs, chmod
 *   wake CHAN             a reader waiting forever is woken by a put from another thread
 *   cancel CHAN           ach_cancel from a signal handler (SIGALRM) and from another thread; sticky until cleared
 *   hostile               every entry point handed NULL, a zeroed, a garbage and a closed handle
 *   create CHAN F S       makes a channel of F frames of S bytes (replacing one of that name)
 *   writer CHAN ID N      N self-checking frames (many writers at once)
 *   reader CHAN W N       flushes, prints "ready", then reads until it has seen frame N-1 of all W writers (or a
 *                         deadline): every frame intact, each writer's frames in order (a crash-writer's frames
 *                         are checked whole and skipped); prints "ok RECEIVED MISSED"
 *   crash-writer CHAN     puts 256 KiB frames until killed (SIGKILLed mid-put by the test)
 *   put CHAN HEX...       puts each argument's bytes
 *   get CHAN N            waits for N frames (from the oldest unseen) and prints each as hex
 *
 * Channels are made in $NERVE_SHM_DIR (the test's temporary directory). Exit status 0 on success; a failed check
 * prints the file:line, the status and ach_errstr().
 */

#define _GNU_SOURCE
#include <ach.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Ach's layout, which programs compiled against Ach's header rely on. */
_Static_assert(sizeof(ach_channel_t) == 128, "ach_channel_t is 128 bytes");
_Static_assert(offsetof(ach_channel_t, fd) == 16, "fd");
_Static_assert(offsetof(ach_channel_t, seq_num) == 24, "seq_num");
_Static_assert(offsetof(ach_channel_t, cancel) == 64, "cancel");
_Static_assert(offsetof(ach_channel_t, vtab) == 72, "vtab");
_Static_assert(sizeof(ach_create_attr_t) == 128 && offsetof(ach_create_attr_t, clock) == 16, "create attr");
_Static_assert(sizeof(ach_attr_t) == 64 && sizeof(ach_cancel_attr_t) == 64, "attrs");
_Static_assert(ACH_OK == 0 && ACH_OVERFLOW == 1 && ACH_STALE_FRAMES == 5 && ACH_MISSED_FRAME == 6 &&
                   ACH_TIMEOUT == 7 && ACH_EEXIST == 8 && ACH_ENOENT == 9 && ACH_EINVAL == 12 &&
                   ACH_CORRUPT == 13 && ACH_CANCELED == 16 && ACH_ENOTSUP == 19,
               "Ach's status values");
_Static_assert(ACH_O_WAIT == 1 && ACH_O_LAST == 2 && ACH_O_COPY == 4 && ACH_O_RELTIME == 8 && ACH_O_FIRST == 0 &&
                   ACH_O_NONBLOCK == 0 && ACH_O_ABSTIME == 0,
               "Ach's option values");

static int failures;

#define CHECK(cond)                                                                                                  \
    do {                                                                                                             \
        if (!(cond)) {                                                                                               \
            fprintf(stderr, "%s:%d: check failed: %s (errstr: %s)\n", __FILE__, __LINE__, #cond, ach_errstr());     \
            failures++;                                                                                              \
        }                                                                                                            \
    } while (0)

#define EXPECT(call, status)                                                                                         \
    do {                                                                                                             \
        enum ach_status r_ = (call);                                                                                 \
        if (r_ != (status)) {                                                                                        \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (errstr: %s)\n", __FILE__, __LINE__, #call,         \
                    ach_result_to_string(r_), ach_result_to_string(status), ach_errstr());                          \
            failures++;                                                                                              \
        }                                                                                                            \
    } while (0)

static struct timespec rel_ms(long ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    return t;
}

static struct timespec abs_ms(long ms)
{
    struct timespec t;
    clock_gettime(ACH_DEFAULT_CLOCK, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

static void put_u32(ach_channel_t *c, uint32_t v)
{
    EXPECT(ach_put(c, &v, sizeof v), ACH_OK);
}

/* Gets one uint32 frame with `options`, expecting status `want` and (if a frame came) value `value`. */
static void get_u32(ach_channel_t *c, int options, enum ach_status want, uint32_t value, int line)
{
    uint32_t v = 0xffffffffu;
    size_t n = 0;
    struct timespec t = rel_ms(50);
    enum ach_status r = ach_get(c, &v, sizeof v, &n, &t, options | ACH_O_RELTIME);
    if (r != want) {
        fprintf(stderr, "line %d: ach_get(options %#x) returned %s, expected %s (errstr: %s)\n", line, options,
                ach_result_to_string(r), ach_result_to_string(want), ach_errstr());
        failures++;
    } else if ((r == ACH_OK || r == ACH_MISSED_FRAME) && (n != sizeof v || v != value)) {
        fprintf(stderr, "line %d: got %u (%zu bytes), expected %u\n", line, v, n, value);
        failures++;
    }
}
#define GET(c, opt, want, value) get_u32((c), (opt), (want), (value), __LINE__)

static int cmd_flags(const char *chan)
{
    ach_channel_t w, r, late;
    ach_create_attr_t attr;
    ach_create_attr_init(&attr);
    EXPECT(ach_create_attr_set_truncate(&attr, 1), ACH_OK);
    EXPECT(ach_create(chan, 4, 256, &attr), ACH_OK);
    EXPECT(ach_create(chan, 4, 256, NULL), ACH_EEXIST);
    EXPECT(ach_open(&w, chan, NULL), ACH_OK);
    EXPECT(ach_open(&r, chan, NULL), ACH_OK);

    /* An empty channel: nothing with any flag; a wait times out (relative and absolute). */
    GET(&r, 0, ACH_STALE_FRAMES, 0);
    GET(&r, ACH_O_LAST, ACH_STALE_FRAMES, 0);
    GET(&r, ACH_O_COPY, ACH_STALE_FRAMES, 0);
    GET(&r, ACH_O_LAST | ACH_O_COPY, ACH_STALE_FRAMES, 0);
    {
        double t0 = now_s();
        GET(&r, ACH_O_WAIT, ACH_TIMEOUT, 0);
        GET(&r, ACH_O_WAIT | ACH_O_LAST, ACH_TIMEOUT, 0);
        CHECK(now_s() - t0 >= 0.09);
        struct timespec past = abs_ms(-1000), soon = abs_ms(50);
        uint32_t v;
        EXPECT(ach_get(&r, &v, sizeof v, NULL, &past, ACH_O_WAIT), ACH_TIMEOUT);
        t0 = now_s();
        EXPECT(ach_get(&r, &v, sizeof v, NULL, &soon, ACH_O_WAIT | ACH_O_ABSTIME), ACH_TIMEOUT);
        CHECK(now_s() - t0 >= 0.04);
    }

    /* In order; then the newest again with ACH_O_COPY; ACH_O_LAST has nothing new. */
    put_u32(&w, 1);
    put_u32(&w, 2);
    put_u32(&w, 3);
    GET(&r, ACH_O_FIRST, ACH_OK, 1);
    GET(&r, ACH_O_NONBLOCK, ACH_OK, 2);
    GET(&r, ACH_O_WAIT, ACH_OK, 3);
    CHECK(r.seq_num == 3);
    GET(&r, 0, ACH_STALE_FRAMES, 0);
    GET(&r, ACH_O_COPY, ACH_OK, 3);
    GET(&r, ACH_O_LAST, ACH_STALE_FRAMES, 0);
    GET(&r, ACH_O_LAST | ACH_O_COPY, ACH_OK, 3);
    GET(&r, ACH_O_WAIT | ACH_O_COPY, ACH_TIMEOUT, 0); /* a waiting copy waits for a new frame */

    /* ACH_O_LAST skips to the newest and says frames were skipped. */
    put_u32(&w, 4);
    put_u32(&w, 5);
    put_u32(&w, 6);
    GET(&r, ACH_O_LAST, ACH_MISSED_FRAME, 6);
    GET(&r, ACH_O_FIRST, ACH_STALE_FRAMES, 0);
    put_u32(&w, 7);
    GET(&r, ACH_O_LAST | ACH_O_WAIT, ACH_OK, 7);

    /* Falling more than the channel's 4 frames behind: the oldest kept, with ACH_MISSED_FRAME, then in order. */
    for (uint32_t i = 8; i <= 20; i++)
        put_u32(&w, i);
    GET(&r, 0, ACH_MISSED_FRAME, 17);
    GET(&r, 0, ACH_OK, 18);
    GET(&r, ACH_O_LAST, ACH_MISSED_FRAME, 20);

    /* A handle opened late starts at the oldest frame still there, and knows frames were dropped before it. */
    EXPECT(ach_open(&late, chan, NULL), ACH_OK);
    GET(&late, 0, ACH_MISSED_FRAME, 17);
    EXPECT(ach_flush(&late), ACH_OK);
    GET(&late, 0, ACH_STALE_FRAMES, 0);
    CHECK(late.seq_num == 20);

    /* A buffer too small: ACH_OVERFLOW with the size needed, nothing consumed; then the same frame. */
    {
        char big[200], small[10];
        size_t n = 0;
        for (int i = 0; i < 200; i++)
            big[i] = (char) i;
        EXPECT(ach_put(&w, big, sizeof big), ACH_OK);
        EXPECT(ach_get(&r, small, sizeof small, &n, NULL, 0), ACH_OVERFLOW);
        CHECK(n == 200);
        EXPECT(ach_get(&r, NULL, 0, &n, NULL, 0), ACH_OVERFLOW);
        CHECK(n == 200);
        memset(big, 0, sizeof big);
        EXPECT(ach_get(&r, big, sizeof big, &n, NULL, 0), ACH_OK);
        CHECK(n == 200 && big[0] == 0 && big[199] == (char) 199);
        /* A frame longer than the channel's frame size is refused whole. */
        char huge[257];
        memset(huge, 1, sizeof huge);
        EXPECT(ach_put(&w, huge, sizeof huge), ACH_OVERFLOW);
        EXPECT(ach_put(&w, huge, 256), ACH_OK);
        EXPECT(ach_put(&w, huge, 0), ACH_EINVAL);
    }

    /* Channel facts. */
    {
        int fd = -1;
        enum ach_map map = ACH_MAP_DEFAULT;
        clockid_t clock = (clockid_t) -1;
        struct stat st;
        EXPECT(ach_channel_fd(&r, &fd), ACH_OK);
        CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
        EXPECT(ach_chmod(&r, 0640), ACH_OK);
        CHECK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0640);
        EXPECT(ach_channel_map(&r, &map), ACH_OK);
        CHECK(map == ACH_MAP_USER);
        EXPECT(ach_channel_clock(&r, &clock), ACH_OK);
        CHECK(clock == ACH_DEFAULT_CLOCK);
        ach_dump(r.shm);
    }

    /* Statuses and masks. */
    CHECK(strcmp(ach_result_to_string(ACH_STALE_FRAMES), "ACH_STALE_FRAMES") == 0);
    CHECK(strcmp(ach_result_to_string(ACH_CANCELED), "ACH_CANCELED") == 0);
    CHECK(strcmp(ach_result_to_string((ach_status_t) 99), "UNKNOWN") == 0);
    CHECK(ach_status_match(ACH_MISSED_FRAME, ACH_MASK_OK | ACH_MASK_MISSED_FRAME));
    CHECK(!ach_status_match(ACH_TIMEOUT, ACH_MASK_OK | ACH_MASK_MISSED_FRAME));
    CHECK(ach_status_match(ACH_STALE_FRAMES, ACH_MASK_STALE_FRAMES));

    /* Names, mappings, clocks. */
    EXPECT(ach_create("bad/name", 4, 64, NULL), ACH_INVALID_NAME);
    EXPECT(ach_create(".hidden", 4, 64, NULL), ACH_INVALID_NAME);
    EXPECT(ach_create("a-name-that-is-far-too-long-for-ach-because-it-has-64-characters", 4, 64, NULL),
           ACH_INVALID_NAME);
    EXPECT(ach_open(&late, "no-such-channel", NULL), ACH_ENOENT);
    EXPECT(ach_unlink("no-such-channel"), ACH_ENOENT);
    ach_create_attr_init(&attr);
    EXPECT(ach_create_attr_set_map(&attr, ACH_MAP_KERNEL), ACH_OK);
    EXPECT(ach_create("kernel-chan", 4, 64, &attr), ACH_ENOTSUP);
    EXPECT(ach_create_attr_set_map(&attr, (enum ach_map) 7), ACH_EINVAL);
    ach_create_attr_init(&attr);
    EXPECT(ach_create_attr_set_clock(&attr, CLOCK_REALTIME), ACH_ENOTSUP);
    EXPECT(ach_create_attr_set_clock(&attr, ACH_DEFAULT_CLOCK), ACH_OK);
    {
        ach_attr_t oattr;
        ach_attr_init(&oattr);
        EXPECT(ach_attr_set_shm(&oattr, NULL), ACH_OK);
        EXPECT(ach_open(&late, chan, &oattr), ACH_ENOTSUP);
    }

    EXPECT(ach_close(&late), ACH_OK);
    EXPECT(ach_close(&late), ACH_EINVAL);
    EXPECT(ach_close(&r), ACH_OK);
    EXPECT(ach_close(&w), ACH_OK);
    EXPECT(ach_unlink(chan), ACH_OK);
    EXPECT(ach_open(&r, chan, NULL), ACH_ENOENT);
    return failures ? 1 : 0;
}

struct waiter {
    ach_channel_t *chan;
    enum ach_status status;
    uint32_t value;
};

static void *wait_forever(void *arg)
{
    struct waiter *w = (struct waiter *) arg;
    size_t n;
    w->status = ach_get(w->chan, &w->value, sizeof w->value, &n, NULL, ACH_O_WAIT);
    return NULL;
}

static int cmd_wake(const char *chan)
{
    ach_channel_t r, w;
    pthread_t t;
    struct waiter wt = {&r, ACH_BUG, 0};
    EXPECT(ach_create(chan, 8, 64, NULL), ACH_OK);
    EXPECT(ach_open(&r, chan, NULL), ACH_OK);
    EXPECT(ach_open(&w, chan, NULL), ACH_OK);
    CHECK(pthread_create(&t, NULL, wait_forever, &wt) == 0);
    usleep(200 * 1000); /* asleep through several wait slices, with no deadline */
    put_u32(&w, 42);    /* a put on another handle wakes it */
    CHECK(pthread_join(t, NULL) == 0);
    EXPECT(wt.status, ACH_OK);
    CHECK(wt.value == 42);
    EXPECT(ach_close(&r), ACH_OK);
    EXPECT(ach_close(&w), ACH_OK);
    EXPECT(ach_unlink(chan), ACH_OK);
    return failures ? 1 : 0;
}

static ach_channel_t cancel_chan;
static volatile sig_atomic_t cancel_status = -1;

static void on_alarm(int sig)
{
    (void) sig;
    cancel_status = ach_cancel(&cancel_chan, NULL);
}

static int cmd_cancel(const char *chan)
{
    struct sigaction act;
    struct itimerval it;
    uint32_t v;
    size_t n;
    EXPECT(ach_create(chan, 8, 64, NULL), ACH_OK);
    EXPECT(ach_open(&cancel_chan, chan, NULL), ACH_OK);

    /* From a signal handler, while ach_get waits with no deadline. */
    memset(&act, 0, sizeof act);
    act.sa_handler = on_alarm;
    CHECK(sigaction(SIGALRM, &act, NULL) == 0);
    memset(&it, 0, sizeof it);
    it.it_value.tv_usec = 100 * 1000;
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    double t0 = now_s();
    EXPECT(ach_get(&cancel_chan, &v, sizeof v, &n, NULL, ACH_O_WAIT), ACH_CANCELED);
    CHECK(now_s() - t0 < 10.0);
    CHECK(cancel_status == ACH_OK);
    /* Sticky, as Ach's: until the program clears the handle's cancel field. */
    EXPECT(ach_get(&cancel_chan, &v, sizeof v, &n, NULL, 0), ACH_CANCELED);
    cancel_chan.cancel = 0;
    EXPECT(ach_get(&cancel_chan, &v, sizeof v, &n, NULL, 0), ACH_STALE_FRAMES);

    /* From another thread (Ach's async_unsafe attribute), while a get waits. */
    {
        pthread_t t;
        struct waiter wt = {&cancel_chan, ACH_BUG, 0};
        ach_cancel_attr_t cattr;
        ach_cancel_attr_init(&cattr);
        cattr.async_unsafe = 1;
        CHECK(pthread_create(&t, NULL, wait_forever, &wt) == 0);
        usleep(100 * 1000);
        EXPECT(ach_cancel(&cancel_chan, &cattr), ACH_OK);
        CHECK(pthread_join(t, NULL) == 0);
        EXPECT(wt.status, ACH_CANCELED);
        cancel_chan.cancel = 0;
    }
    /* A put still gets through after all this. */
    put_u32(&cancel_chan, 5);
    EXPECT(ach_get(&cancel_chan, &v, sizeof v, &n, NULL, ACH_O_WAIT), ACH_OK);
    CHECK(v == 5);
    EXPECT(ach_close(&cancel_chan), ACH_OK);
    EXPECT(ach_unlink(chan), ACH_OK);
    return failures ? 1 : 0;
}

static int cmd_hostile(void)
{
    ach_channel_t zero, garbage, closed, reopened, stale, forged;
    char buf[16];
    size_t n;
    struct timespec bad = {0, 2000000000L};
    memset(&zero, 0, sizeof zero);
    memset(&garbage, 0xab, sizeof garbage);
    ach_channel_t *handles[] = {NULL, &zero, &garbage, &closed, &stale, &forged};

    EXPECT(ach_create("hostile", 4, 64, NULL), ACH_OK);
    EXPECT(ach_open(&closed, "hostile", NULL), ACH_OK);
    stale = closed; /* a copy of the handle, left behind when it is closed */
    EXPECT(ach_close(&closed), ACH_OK);
    /* A new handle may take the closed one's place; the stale copy must not reach it. */
    EXPECT(ach_open(&reopened, "hostile", NULL), ACH_OK);
    forged = reopened; /* the open mark, with a handle this library never made */
    forged.shm = (struct ach_header *) (uintptr_t) 0xdeadbeefcafeULL;

    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) {
        ach_channel_t *h = handles[i];
        int fd;
        enum ach_map map;
        clockid_t clock;
        EXPECT(ach_get(h, buf, sizeof buf, &n, NULL, 0), ACH_EINVAL);
        EXPECT(ach_get(h, buf, sizeof buf, &n, NULL, ACH_O_WAIT), ACH_EINVAL);
        EXPECT(ach_put(h, buf, sizeof buf), ACH_EINVAL);
        EXPECT(ach_flush(h), ACH_EINVAL);
        EXPECT(ach_close(h), ACH_EINVAL);
        EXPECT(ach_chmod(h, 0600), ACH_EINVAL);
        EXPECT(ach_cancel(h, NULL), ACH_EINVAL);
        EXPECT(ach_channel_fd(h, &fd), ACH_EINVAL);
        EXPECT(ach_channel_map(h, &map), ACH_EINVAL);
        EXPECT(ach_channel_clock(h, &clock), ACH_EINVAL);
        if (h)
            ach_dump(h->shm); /* says it is not an open channel */
    }
    /* None of that touched the open handle. */
    put_u32(&reopened, 7);
    get_u32(&reopened, ACH_O_LAST, ACH_OK, 7, __LINE__);
    EXPECT(ach_close(&reopened), ACH_OK);
    EXPECT(ach_open(NULL, "hostile", NULL), ACH_EINVAL);
    EXPECT(ach_create(NULL, 4, 64, NULL), ACH_INVALID_NAME);
    EXPECT(ach_open(&zero, NULL, NULL), ACH_INVALID_NAME);
    EXPECT(ach_unlink(NULL), ACH_INVALID_NAME);
    EXPECT(ach_create("\xff\xfe", 4, 64, NULL), ACH_INVALID_NAME);
    EXPECT(ach_create("hostile2", (size_t) -1, 64, NULL), ACH_EINVAL);
    EXPECT(ach_create("hostile2", 4, (size_t) -1, NULL), ACH_EINVAL);
    ach_attr_init(NULL);
    ach_create_attr_init(NULL);
    ach_cancel_attr_init(NULL);
    EXPECT(ach_attr_set_shm(NULL, NULL), ACH_EINVAL);
    EXPECT(ach_create_attr_set_clock(NULL, ACH_DEFAULT_CLOCK), ACH_EINVAL);
    EXPECT(ach_create_attr_set_map(NULL, ACH_MAP_USER), ACH_EINVAL);
    EXPECT(ach_create_attr_set_truncate(NULL, 1), ACH_EINVAL);
    EXPECT(ach_create_attr_get_shm(NULL, NULL), ACH_EINVAL);
    {
        ach_create_attr_t attr;
        memset(&attr, 0x5a, sizeof attr); /* garbage attributes: the map value is out of range */
        EXPECT(ach_create("hostile3", 4, 64, &attr), ACH_EINVAL);
    }
    ach_dump(NULL);
    CHECK(ach_result_to_string((ach_status_t) -5) != NULL);
    CHECK(ach_errstr() != NULL);

    /* An open handle with bad arguments. */
    {
        ach_channel_t c;
        EXPECT(ach_open(&c, "hostile", NULL), ACH_OK);
        EXPECT(ach_put(&c, NULL, 4), ACH_EINVAL);
        EXPECT(ach_get(&c, NULL, 4, &n, NULL, 0), ACH_EINVAL);
        EXPECT(ach_get(&c, buf, sizeof buf, &n, NULL, 0x100), ACH_EINVAL);
        EXPECT(ach_put(&c, "x", 1), ACH_OK);
        EXPECT(ach_get(&c, buf, sizeof buf, &n, &bad, ACH_O_WAIT), ACH_EINVAL);
        EXPECT(ach_channel_fd(&c, NULL), ACH_EINVAL);
        EXPECT(ach_close(&c), ACH_OK);
    }
    EXPECT(ach_unlink("hostile"), ACH_OK);
    return failures ? 1 : 0;
}

/* A frame of the multi-process tests: writer id, index, then bytes derived from both. */
struct frame {
    uint32_t writer;
    uint32_t index;
    uint32_t len;
    uint8_t bytes[500];
};

static uint8_t frame_byte(uint32_t writer, uint32_t index, uint32_t k)
{
    return (uint8_t) (writer * 31u + index * 7u + k);
}

static int cmd_writer(const char *chan, int id, int count)
{
    ach_channel_t c;
    struct frame f;
    EXPECT(ach_open(&c, chan, NULL), ACH_OK);
    for (int i = 0; i < count && !failures; i++) {
        f.writer = (uint32_t) id;
        f.index = (uint32_t) i;
        f.len = 12 + (uint32_t) ((i * 37 + id) % 480);
        for (uint32_t k = 0; k + 12 < f.len; k++)
            f.bytes[k] = frame_byte(f.writer, f.index, k);
        EXPECT(ach_put(&c, &f, f.len), ACH_OK);
        if (i % 16 == 0)
            usleep(1000);
    }
    EXPECT(ach_close(&c), ACH_OK);
    return failures ? 1 : 0;
}

#define BIG_FRAME (256 * 1024)

static int cmd_reader(const char *chan, int writers, int count)
{
    ach_channel_t c;
    static uint8_t buf[BIG_FRAME + 64];
    struct frame f;
    long last[64];
    long received = 0, missed = 0;
    int done = 0;
    double deadline = now_s() + 60.0;
    if (writers > 64)
        return 2;
    for (int i = 0; i < writers; i++)
        last[i] = -1;
    EXPECT(ach_open(&c, chan, NULL), ACH_OK);
    EXPECT(ach_flush(&c), ACH_OK);
    printf("ready\n");
    fflush(stdout);
    while (done < writers && now_s() < deadline && !failures) {
        size_t n = 0;
        struct timespec t = rel_ms(500);
        enum ach_status r = ach_get(&c, buf, sizeof buf, &n, &t, ACH_O_WAIT | ACH_O_RELTIME);
        if (r == ACH_TIMEOUT)
            continue;
        if (r == ACH_MISSED_FRAME)
            missed++;
        else if (r != ACH_OK) {
            EXPECT(r, ACH_OK);
            break;
        }
        received++;
        if (n == BIG_FRAME) {
            /* A crash-writer's frame: one byte value throughout, or it was torn. */
            for (size_t k = 1; k < n; k++) {
                if (buf[k] != buf[0]) {
                    fprintf(stderr, "torn big frame at byte %zu\n", k);
                    failures++;
                    break;
                }
            }
            continue;
        }
        memcpy(&f, buf, n < sizeof f ? n : sizeof f);
        if (n < 12 || n != f.len || f.writer >= (uint32_t) writers) {
            fprintf(stderr, "bad frame: %zu bytes, len %u, writer %u\n", n, f.len, f.writer);
            failures++;
            break;
        }
        for (uint32_t k = 0; k + 12 < f.len; k++) {
            if (f.bytes[k] != frame_byte(f.writer, f.index, k)) {
                fprintf(stderr, "torn frame %u of writer %u at byte %u\n", f.index, f.writer, k);
                failures++;
                break;
            }
        }
        if ((long) f.index <= last[f.writer]) {
            fprintf(stderr, "writer %u: frame %u after %ld\n", f.writer, f.index, last[f.writer]);
            failures++;
        }
        last[f.writer] = f.index;
        if (f.index == (uint32_t) count - 1)
            done++;
    }
    EXPECT(ach_close(&c), ACH_OK);
    if (done < writers) {
        fprintf(stderr, "saw the last frame of %d of %d writers\n", done, writers);
        failures++;
    }
    printf("ok %ld %ld\n", received, missed);
    return failures ? 1 : 0;
}

static int cmd_crash_writer(const char *chan)
{
    ach_channel_t c;
    static uint8_t big[2][BIG_FRAME];
    /* Two frames, each one byte value throughout: a torn frame would mix them. Prepared once, so the loop spends
       nearly all its time inside ach_put, where the kill should land. */
    memset(big[0], 0x11, BIG_FRAME);
    memset(big[1], 0x22, BIG_FRAME);
    EXPECT(ach_open(&c, chan, NULL), ACH_OK);
    printf("writing\n");
    fflush(stdout);
    for (uint32_t i = 0;; i++) {
        EXPECT(ach_put(&c, big[i & 1], BIG_FRAME), ACH_OK);
        if (failures)
            return 1;
    }
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

static int cmd_put(const char *chan, int argc, char **argv)
{
    ach_channel_t c;
    EXPECT(ach_open(&c, chan, NULL), ACH_OK);
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]) / 2;
        uint8_t *b = (uint8_t *) malloc(len ? len : 1);
        for (size_t k = 0; k < len; k++)
            b[k] = (uint8_t) (hexval(argv[i][2 * k]) * 16 + hexval(argv[i][2 * k + 1]));
        EXPECT(ach_put(&c, b, len), ACH_OK);
        free(b);
    }
    EXPECT(ach_close(&c), ACH_OK);
    return failures ? 1 : 0;
}

static int cmd_get(const char *chan, int count)
{
    ach_channel_t c;
    uint8_t buf[4096];
    EXPECT(ach_open(&c, chan, NULL), ACH_OK);
    for (int i = 0; i < count && !failures; i++) {
        size_t n = 0;
        struct timespec t = rel_ms(20000);
        enum ach_status r = ach_get(&c, buf, sizeof buf, &n, &t, ACH_O_WAIT | ACH_O_RELTIME);
        if (r != ACH_OK && r != ACH_MISSED_FRAME) {
            EXPECT(r, ACH_OK);
            break;
        }
        for (size_t k = 0; k < n; k++)
            printf("%02x", buf[k]);
        printf("\n");
        fflush(stdout);
    }
    EXPECT(ach_close(&c), ACH_OK);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "hostile") == 0)
        return cmd_hostile();
    if (argc < 3) {
        fprintf(stderr, "usage: %s flags|wake|cancel|hostile|writer|reader|crash-writer|put|get CHAN ...\n", argv[0]);
        return 2;
    }
    const char *cmd = argv[1], *chan = argv[2];
    if (strcmp(cmd, "flags") == 0)
        return cmd_flags(chan);
    if (strcmp(cmd, "wake") == 0)
        return cmd_wake(chan);
    if (strcmp(cmd, "cancel") == 0)
        return cmd_cancel(chan);
    if (strcmp(cmd, "create") == 0 && argc == 5) {
        ach_create_attr_t attr;
        ach_create_attr_init(&attr);
        ach_create_attr_set_truncate(&attr, 1);
        EXPECT(ach_create(chan, (size_t) atol(argv[3]), (size_t) atol(argv[4]), &attr), ACH_OK);
        return failures ? 1 : 0;
    }
    if (strcmp(cmd, "writer") == 0 && argc == 5)
        return cmd_writer(chan, atoi(argv[3]), atoi(argv[4]));
    if (strcmp(cmd, "reader") == 0 && argc == 5)
        return cmd_reader(chan, atoi(argv[3]), atoi(argv[4]));
    if (strcmp(cmd, "crash-writer") == 0)
        return cmd_crash_writer(chan);
    if (strcmp(cmd, "put") == 0)
        return cmd_put(chan, argc - 3, argv + 3);
    if (strcmp(cmd, "get") == 0 && argc == 4)
        return cmd_get(chan, atoi(argv[3]));
    fprintf(stderr, "unknown command %s\n", cmd);
    return 2;
}

/* What the two hostile-test readers share (tests/interop/test_shm_hostile.py): the payload check of the writer of
 * crates/shm/tests/hostile.rs, the per-channel tallies, the reopen decision and the RESULT line it parses.
 * Each reader includes this and supplies reader_open(), reader_get() and reader_close() over its own API. */
#ifndef SHM_HOSTILE_READER_H
#define SHM_HOSTILE_READER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANNELS 8
#define BUF_SIZE 65536

/* reader_get outcomes. */
enum { GOT_MESSAGE, GOT_NOTHING, GOT_ERROR };

static int reader_open(int ch, const char *dir);
static int reader_get(int ch, void *buf, size_t cap, size_t *len);
static void reader_close(int ch);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static uint64_t u64_at(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* FNV-1a 64 of the body, as crates/shm/tests/common/mod.rs's checksum. */
static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Whether @p p is a message the writer put (its checksum and its generated body), with its writer id. */
static int check_payload(const unsigned char *p, size_t len, uint64_t *writer)
{
    if (len < 24 || fnv(p, len - 8) != u64_at(p + len - 8)) return 0;
    uint64_t w = u64_at(p), counter = u64_at(p + 8);
    uint64_t x = w * 0x9e3779b97f4a7c15ull ^ counter ^ 1;
    for (size_t i = 16; i < len - 8; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (p[i] != (unsigned char)x) return 0;
    }
    *writer = w;
    return 1;
}

/* Reads channels hostile0..N-1 of DIR until DIR/stop exists or LIFE seconds pass, reopening a channel whose get
 * failed or whose path names another file; prints the RESULT line hostile.rs checks. Exit 3 on a bad message. */
static int run_reader(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR CHANNELS LIFE_SECONDS\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int n = atoi(argv[2]);
    double deadline = now_s() + atof(argv[3]);
    if (n < 1 || n > MAX_CHANNELS) return 2;
    char stop[4096], final_mark[4096], path[MAX_CHANNELS][4096];
    snprintf(stop, sizeof stop, "%s/stop", dir);
    snprintf(final_mark, sizeof final_mark, "%s/final", dir);
    int open_[MAX_CHANNELS] = {0}, after[MAX_CHANNELS] = {0};
    ino_t ino[MAX_CHANNELS] = {0};
    double checked[MAX_CHANNELS] = {0};
    uint64_t got[MAX_CHANNELS] = {0}, finals[MAX_CHANNELS] = {0}, errors[MAX_CHANNELS] = {0},
             reopens[MAX_CHANNELS] = {0};
    for (int ch = 0; ch < n; ch++) snprintf(path[ch], sizeof path[ch], "%s/nerve-hostile%d", dir, ch);
    static unsigned char buf[BUF_SIZE];
    while (now_s() < deadline && !exists(stop)) {
        for (int ch = 0; ch < n; ch++) {
            struct stat st;
            double now = now_s();
            if (open_[ch] && now - checked[ch] > 0.05) {
                checked[ch] = now;
                if (stat(path[ch], &st) != 0 || st.st_ino != ino[ch]) {
                    reader_close(ch);
                    open_[ch] = 0;
                }
            }
            if (!open_[ch]) {
                if (stat(path[ch], &st) != 0 || reader_open(ch, dir) != 0) continue;
                open_[ch] = 1;
                ino[ch] = st.st_ino;
                reopens[ch]++;
                after[ch] = exists(final_mark);
                /* Only what the last file opened carried counts as traffic after the channels were made anew. */
                finals[ch] = 0;
            }
            size_t len = 0;
            int r = reader_get(ch, buf, sizeof buf, &len);
            if (r == GOT_ERROR) {
                errors[ch]++;
                reader_close(ch);
                open_[ch] = 0;
                continue;
            }
            if (r == GOT_NOTHING) continue;
            uint64_t w;
            if (!check_payload(buf, len, &w)) {
                printf("RESULT BAD channel %d: %zu bytes that no writer put\n", ch, len);
                return 3;
            }
            if (w / 1000 != (uint64_t)ch) {
                printf("RESULT BAD channel %d: a message of channel %llu's writer\n", ch,
                       (unsigned long long)(w / 1000));
                return 3;
            }
            got[ch]++;
            if (w % 1000 == 99 && after[ch]) finals[ch]++;
        }
    }
    printf("RESULT");
    for (int ch = 0; ch < n; ch++)
        printf(" got%d=%llu final%d=%llu errors%d=%llu reopens%d=%llu", ch, (unsigned long long)got[ch], ch,
               (unsigned long long)finals[ch], ch, (unsigned long long)errors[ch], ch,
               (unsigned long long)reopens[ch]);
    printf("\n");
    return 0;
}

#endif

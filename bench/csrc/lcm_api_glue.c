/* Bench glue for C code that follows LCM's C API (lcm-gen -c, and Nerve's C generator).
 *
 * build.rs compiles this file once per system as a unity build: it defines SYS (the exported prefix, e.g. lcmc)
 * and UNITY (a file that #includes every generated .c file). Only the SYS_* functions below are visible outside
 * the object (the generated code is compiled with -fvisibility=hidden and localised), so two systems that generate
 * the same symbol names link into one binary.
 *
 * Every timed function ends with bench_clobber(): an empty asm statement with a memory clobber, C's black_box, so
 * the compiler cannot drop stores into memory that is freed right after.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include UNITY

#define BENCH_CAT2(a, b) a##_##b
#define BENCH_CAT(a, b) BENCH_CAT2(a, b)
#define FN(name) BENCH_CAT(SYS, name)
#define EXPORT __attribute__((visibility("default")))

static inline void bench_clobber(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* ---------------------------------------------------------------- lidar.lidar_t */

EXPORT void *FN(lidar_new)(int64_t kind, int64_t timestamp, int64_t guid, int32_t n, const float *pos,
                           const uint8_t *intensity)
{
    lidar_lidar_t *m = calloc(1, sizeof *m);
    m->msg_info.kind = kind;
    m->msg_info.timestamp = timestamp;
    m->msg_info.guid = guid;
    m->npoints = n;
    m->points = malloc(sizeof(lidar_lidar_point_t) * (size_t)(n > 0 ? n : 1));
    for (int32_t i = 0; i < n; i++) {
        m->points[i].position[0] = pos[3 * i];
        m->points[i].position[1] = pos[3 * i + 1];
        m->points[i].position[2] = pos[3 * i + 2];
        m->points[i].intensity = intensity[i];
    }
    return m;
}

EXPORT void FN(lidar_free)(void *p)
{
    lidar_lidar_t *m = p;
    free(m->points);
    free(m);
}

EXPORT int FN(lidar_encode)(const void *msg, uint8_t *buf, int maxlen)
{
    int n = lidar_lidar_t_encode(buf, 0, maxlen, (const lidar_lidar_t *)msg);
    bench_clobber(buf);
    return n;
}

EXPORT int FN(lidar_decode)(const uint8_t *buf, int len)
{
    lidar_lidar_t m;
    int n = lidar_lidar_t_decode(buf, 0, len, &m);
    if (n < 0) return n;
    bench_clobber(&m);
    bench_clobber(m.points);
    lidar_lidar_t_decode_cleanup(&m);
    return n;
}

EXPORT int FN(lidar_reencode)(const uint8_t *buf, int len, uint8_t *out, int maxout)
{
    lidar_lidar_t m;
    if (lidar_lidar_t_decode(buf, 0, len, &m) < 0) return -1;
    int n = lidar_lidar_t_encode(out, 0, maxout, &m);
    lidar_lidar_t_decode_cleanup(&m);
    return n;
}

/* Decode, then sum every numeric value as a double (msg_info, npoints, every position and intensity). */
EXPORT int FN(lidar_full)(const uint8_t *buf, int len, double *sum)
{
    lidar_lidar_t m;
    if (lidar_lidar_t_decode(buf, 0, len, &m) < 0) return -1;
    double s = (double)m.msg_info.kind + (double)m.msg_info.timestamp + (double)m.msg_info.guid + (double)m.npoints;
    for (int32_t i = 0; i < m.npoints; i++) {
        const lidar_lidar_point_t *p = &m.points[i];
        s += (double)p->position[0] + (double)p->position[1] + (double)p->position[2] + (double)(uint8_t)p->intensity;
    }
    *sum = s;
    lidar_lidar_t_decode_cleanup(&m);
    return 0;
}

/* The fixed-region field: msg_info.guid. LCM's C API has no way to read it without decoding the whole message. */
EXPORT int FN(lidar_fixed)(const uint8_t *buf, int len, int64_t *guid)
{
    lidar_lidar_t m;
    if (lidar_lidar_t_decode(buf, 0, len, &m) < 0) return -1;
    *guid = m.msg_info.guid;
    bench_clobber(m.points);
    lidar_lidar_t_decode_cleanup(&m);
    return 0;
}

/* The variable-region field: position[1] of the middle point (index npoints / 2). */
EXPORT int FN(lidar_var)(const uint8_t *buf, int len, float *y)
{
    lidar_lidar_t m;
    if (lidar_lidar_t_decode(buf, 0, len, &m) < 0) return -1;
    if (m.npoints <= 0) { lidar_lidar_t_decode_cleanup(&m); return -1; }
    *y = m.points[m.npoints / 2].position[1];
    bench_clobber(m.points);
    lidar_lidar_t_decode_cleanup(&m);
    return 0;
}

/* ---------------------------------------------------------------- seed.image_t */

EXPORT void *FN(image_new)(int64_t utime, int32_t width, int32_t height, int32_t pixelformat, int32_t size,
                           const uint8_t *data)
{
    seed_image_t *m = calloc(1, sizeof *m);
    m->utime = utime;
    m->width = width;
    m->height = height;
    m->pixelformat = pixelformat;
    m->size = size;
    m->data = malloc((size_t)(size > 0 ? size : 1));
    memcpy(m->data, data, (size_t)size);
    return m;
}

EXPORT void FN(image_free)(void *p)
{
    seed_image_t *m = p;
    free(m->data);
    free(m);
}

EXPORT int FN(image_encode)(const void *msg, uint8_t *buf, int maxlen)
{
    int n = seed_image_t_encode(buf, 0, maxlen, (const seed_image_t *)msg);
    bench_clobber(buf);
    return n;
}

EXPORT int FN(image_decode)(const uint8_t *buf, int len)
{
    seed_image_t m;
    int n = seed_image_t_decode(buf, 0, len, &m);
    if (n < 0) return n;
    bench_clobber(&m);
    bench_clobber(m.data);
    seed_image_t_decode_cleanup(&m);
    return n;
}

EXPORT int FN(image_reencode)(const uint8_t *buf, int len, uint8_t *out, int maxout)
{
    seed_image_t m;
    if (seed_image_t_decode(buf, 0, len, &m) < 0) return -1;
    int n = seed_image_t_encode(out, 0, maxout, &m);
    seed_image_t_decode_cleanup(&m);
    return n;
}

/* ---------------------------------------------------------------- seed.laser_t */

EXPORT void *FN(laser_new)(int64_t utime, int32_t n, const float *ranges, float rad0, float radstep)
{
    seed_laser_t *m = calloc(1, sizeof *m);
    m->utime = utime;
    m->nranges = n;
    m->ranges = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    memcpy(m->ranges, ranges, sizeof(float) * (size_t)n);
    m->rad0 = rad0;
    m->radstep = radstep;
    return m;
}

EXPORT void FN(laser_free)(void *p)
{
    seed_laser_t *m = p;
    free(m->ranges);
    free(m);
}

EXPORT int FN(laser_encode)(const void *msg, uint8_t *buf, int maxlen)
{
    int n = seed_laser_t_encode(buf, 0, maxlen, (const seed_laser_t *)msg);
    bench_clobber(buf);
    return n;
}

EXPORT int FN(laser_decode)(const uint8_t *buf, int len)
{
    seed_laser_t m;
    int n = seed_laser_t_decode(buf, 0, len, &m);
    if (n < 0) return n;
    bench_clobber(&m);
    bench_clobber(m.ranges);
    seed_laser_t_decode_cleanup(&m);
    return n;
}

EXPORT int FN(laser_reencode)(const uint8_t *buf, int len, uint8_t *out, int maxout)
{
    seed_laser_t m;
    if (seed_laser_t_decode(buf, 0, len, &m) < 0) return -1;
    int n = seed_laser_t_encode(out, 0, maxout, &m);
    seed_laser_t_decode_cleanup(&m);
    return n;
}

/* ---------------------------------------------------------------- seed.path_t */

EXPORT void *FN(path_new)(int64_t timestamp, int32_t n, const char *const *ids, const float *pos)
{
    seed_path_t *m = calloc(1, sizeof *m);
    m->timestamp = timestamp;
    m->num_waypoints = n;
    m->waypoints = calloc((size_t)(n > 0 ? n : 1), sizeof(seed_waypoint_t));
    for (int32_t i = 0; i < n; i++) {
        m->waypoints[i].id = strdup(ids[i]);
        m->waypoints[i].position[0] = pos[2 * i];
        m->waypoints[i].position[1] = pos[2 * i + 1];
    }
    return m;
}

EXPORT void FN(path_free)(void *p)
{
    seed_path_t *m = p;
    for (int32_t i = 0; i < m->num_waypoints; i++) free(m->waypoints[i].id);
    free(m->waypoints);
    free(m);
}

EXPORT int FN(path_encode)(const void *msg, uint8_t *buf, int maxlen)
{
    int n = seed_path_t_encode(buf, 0, maxlen, (const seed_path_t *)msg);
    bench_clobber(buf);
    return n;
}

EXPORT int FN(path_decode)(const uint8_t *buf, int len)
{
    seed_path_t m;
    int n = seed_path_t_decode(buf, 0, len, &m);
    if (n < 0) return n;
    bench_clobber(&m);
    bench_clobber(m.waypoints);
    seed_path_t_decode_cleanup(&m);
    return n;
}

EXPORT int FN(path_reencode)(const uint8_t *buf, int len, uint8_t *out, int maxout)
{
    seed_path_t m;
    if (seed_path_t_decode(buf, 0, len, &m) < 0) return -1;
    int n = seed_path_t_encode(out, 0, maxout, &m);
    seed_path_t_decode_cleanup(&m);
    return n;
}

/* ---------------------------------------------------------------- allocation-free decode (nerve-c only)
 *
 * pkg_T_decode_arena() carves strings and arrays from a caller-owned arena instead of calling malloc (the real-time
 * API; lcm-gen has nothing like it). The arena is reset before each decode; nothing is freed. Timed as the system
 * "nerve-c (arena)", next to the normal decode + cleanup. For lcm-c these return BENCH_UNSUPPORTED. */
#define BENCH_UNSUPPORTED (-1000)
#ifdef NERVE_LCM_H
static uint8_t bench_arena_mem[1 << 22] __attribute__((aligned(64)));
static nerve_lcm_arena bench_arena = { bench_arena_mem, sizeof bench_arena_mem, 0 };
#define ARENA_FNS(T, CT)                                                                                              \
    EXPORT int FN(T##_decode_arena)(const uint8_t *buf, int len)                                                      \
    {                                                                                                                 \
        CT m;                                                                                                         \
        int n;                                                                                                        \
        nerve_lcm_arena_reset(&bench_arena);                                                                          \
        n = CT##_decode_arena(buf, 0, len, &m, &bench_arena);                                                         \
        bench_clobber(&m);                                                                                            \
        return n;                                                                                                     \
    }                                                                                                                 \
    EXPORT int FN(T##_reencode_arena)(const uint8_t *buf, int len, uint8_t *out, int maxout)                          \
    {                                                                                                                 \
        CT m;                                                                                                         \
        nerve_lcm_arena_reset(&bench_arena);                                                                          \
        if (CT##_decode_arena(buf, 0, len, &m, &bench_arena) < 0) return -1;                                          \
        return CT##_encode(out, 0, maxout, &m);                                                                       \
    }
#else
#define ARENA_FNS(T, CT)                                                                                              \
    EXPORT int FN(T##_decode_arena)(const uint8_t *buf, int len)                                                      \
    {                                                                                                                 \
        (void) buf;                                                                                                   \
        (void) len;                                                                                                   \
        return BENCH_UNSUPPORTED;                                                                                     \
    }                                                                                                                 \
    EXPORT int FN(T##_reencode_arena)(const uint8_t *buf, int len, uint8_t *out, int maxout)                          \
    {                                                                                                                 \
        (void) buf;                                                                                                   \
        (void) len;                                                                                                   \
        (void) out;                                                                                                   \
        (void) maxout;                                                                                                \
        return BENCH_UNSUPPORTED;                                                                                     \
    }
#endif
ARENA_FNS(lidar, lidar_lidar_t)
ARENA_FNS(image, seed_image_t)
ARENA_FNS(laser, seed_laser_t)
ARENA_FNS(path, seed_path_t)

/*
 * ach.h - Ach 2.x's C API, implemented by Nerve's libach over nerve-shm channels.
 *
 * Programs written for Ach's <ach.h> build against this header and link against this libach unchanged (the names,
 * values, status codes and struct layouts below are Ach's), and a channel made here is a Nerve channel: `nerve chan
 * ls` lists it, `nerve chan dump` reads it, the bus's shm:// provider carries it.
 *
 * What differs from Ach (README.md, "Ach programs on Nerve", has the whole list):
 *  - a writer killed in the middle of ach_put() leaves the channel usable (the next writer recovers it); Ach
 *    returns ACH_CORRUPT on that channel forever. ACH_CORRUPT here means a channel file someone scribbled on;
 *  - channels live in /dev/shm (or $NERVE_SHM_DIR) as `nerve-NAME`, mode 0600 until ach_chmod();
 *  - ACH_MAP_KERNEL (the kernel module) and ACH_MAP_ANON (heap channels) are not offered: ACH_ENOTSUP;
 *  - timeouts are on ACH_DEFAULT_CLOCK (CLOCK_MONOTONIC) only: ach_create_attr_set_clock() accepts only it;
 *  - a message may be at most the nominal frame size given to ach_create() (Ach takes up to frame count x frame
 *    size); a longer one is ACH_OVERFLOW from ach_put(), and nothing is written;
 *  - a channel keeps at least 2 frames; ach_evhandle(), ach_srv_search() and the ach_pipe_* helpers are not here;
 *  - a process holds at most 4096 open handles (ach_open() then fails with ACH_FAILED_SYSCALL).
 *
 * Threads: one handle may be used by several threads at once (a get and a put do not wait for each other; two gets
 * on one handle take turns). ach_cancel() is async-signal-safe with its default attributes.
 *
 * Compile with POSIX visible (-std=gnu99 / gnu11, or _POSIX_C_SOURCE >= 199309L), as for Ach: the header uses
 * struct timespec, clockid_t and CLOCK_MONOTONIC, and anonymous unions (C11, or a GNU extension in C99).
 *
 * Checks: every function returns ACH_EINVAL (or ACH_INVALID_NAME for a name) for a NULL pointer it needs, a handle
 * that is not open (never opened, closed, or garbage) and out-of-range arguments; ach_errstr() says why. A pointer
 * to memory that is not there cannot be detected in C and remains the caller's bug.
 */

#ifndef ACH_H
#define ACH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/** Defined by Nerve's ach.h (not by Ach's). */
#define ACH_NERVE 1

#ifdef __cplusplus
/** Alias restrict keyword */
#define ACH_RESTRICT
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
/** Alias restrict keyword */
#define ACH_RESTRICT restrict
#else
/** Alias restrict keyword */
#define ACH_RESTRICT
#endif

#if defined(__GNUC__) && (__GNUC__ > 3 || (__GNUC__ == 3 && __GNUC_MINOR__ >= 1))
/** Deprecated old symbol */
#define ACH_DEPRECATED __attribute__((__deprecated__))
/** Warn if result is unused */
#define ACH_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define ACH_DEPRECATED
#define ACH_WARN_UNUSED
#endif

/** The clock of ach_get() timeouts (the only one this library offers). */
#define ACH_DEFAULT_CLOCK CLOCK_MONOTONIC

/** Frames of a channel made with frame_cnt 0. */
#define ACH_DEFAULT_FRAME_COUNT 16

/** Nominal frame size of a channel made with frame_size 0. */
#define ACH_DEFAULT_FRAME_SIZE 512

/** Longest channel name plus one: a name has at most 63 characters. */
#define ACH_CHAN_NAME_MAX 64ul

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes of the ach functions (Ach's values). */
typedef enum ach_status {
    ACH_OK = 0,             /**< Call successful */
    ACH_OVERFLOW = 1,       /**< buffer (or channel frame) too small for the message */
    ACH_INVALID_NAME = 2,   /**< invalid channel name */
    ACH_BAD_SHM_FILE = 3,   /**< the channel file is not a channel (of this layout version) */
    ACH_FAILED_SYSCALL = 4, /**< a system call failed */
    ACH_EAGAIN = 5,         /**< no new data in the channel */
    ACH_MISSED_FRAME = 6,   /**< frames were skipped to get this one */
    ACH_TIMEOUT = 7,        /**< timeout before a frame came */
    ACH_EEXIST = 8,         /**< the channel already exists */
    ACH_ENOENT = 9,         /**< the channel does not exist */
    ACH_CLOSED = 10,        /**< unused */
    ACH_BUG = 11,           /**< internal error */
    ACH_EINVAL = 12,        /**< invalid argument or handle */
    ACH_CORRUPT = 13,       /**< the channel file holds values no channel can have */
    ACH_BAD_HEADER = 14,    /**< unused */
    ACH_EACCES = 15,        /**< permission denied */
    ACH_CANCELED = 16,      /**< operation canceled (ach_cancel()) */
    ACH_EFAULT = 17,        /**< unused: bad addresses cannot be detected */
    ACH_EINTR = 18,         /**< never returned */
    ACH_ENOTSUP = 19        /**< not supported by this implementation */
} ach_status_t;

/** No new data (the older name of ACH_EAGAIN). */
#define ACH_STALE_FRAMES ACH_EAGAIN
/** Same value as ACH_EAGAIN. */
#define ACH_LOCKED ACH_EAGAIN

/** The bit of a status in a mask. */
#define ACH_STATUS_MASK(r) (1 << (r))

/** Masks of the status codes, to test a status against a set with ach_status_match(). */
enum ach_mask {
    ACH_MASK_OK = ACH_STATUS_MASK(ACH_OK),
    ACH_MASK_OVERFLOW = ACH_STATUS_MASK(ACH_OVERFLOW),
    ACH_MASK_INVALID_NAME = ACH_STATUS_MASK(ACH_INVALID_NAME),
    ACH_MASK_BAD_SHM_FILE = ACH_STATUS_MASK(ACH_BAD_SHM_FILE),
    ACH_MASK_FAILED_SYSCALL = ACH_STATUS_MASK(ACH_FAILED_SYSCALL),
    ACH_MASK_EAGAIN = ACH_STATUS_MASK(ACH_EAGAIN),
    ACH_MASK_MISSED_FRAME = ACH_STATUS_MASK(ACH_MISSED_FRAME),
    ACH_MASK_TIMEOUT = ACH_STATUS_MASK(ACH_TIMEOUT),
    ACH_MASK_EEXIST = ACH_STATUS_MASK(ACH_EEXIST),
    ACH_MASK_ENOENT = ACH_STATUS_MASK(ACH_ENOENT),
    ACH_MASK_CLOSED = ACH_STATUS_MASK(ACH_CLOSED),
    ACH_MASK_BUG = ACH_STATUS_MASK(ACH_BUG),
    ACH_MASK_EINVAL = ACH_STATUS_MASK(ACH_EINVAL),
    ACH_MASK_CORRUPT = ACH_STATUS_MASK(ACH_CORRUPT),
    ACH_MASK_BAD_HEADER = ACH_STATUS_MASK(ACH_BAD_HEADER),
    ACH_MASK_EACCES = ACH_STATUS_MASK(ACH_EACCES),
    ACH_MASK_CANCELED = ACH_STATUS_MASK(ACH_CANCELED),
    ACH_MASK_EFAULT = ACH_STATUS_MASK(ACH_EFAULT),
    ACH_MASK_EINTR = ACH_STATUS_MASK(ACH_EINTR),
    ACH_MASK_ENOTSUP = ACH_STATUS_MASK(ACH_ENOTSUP),

    ACH_MASK_NONE = 0,
    ACH_MASK_ALL = 0xffffffff
};

/** Mask of ACH_STALE_FRAMES. */
#define ACH_MASK_STALE_FRAMES ACH_MASK_EAGAIN
/** Mask of ACH_LOCKED. */
#define ACH_MASK_LOCKED ACH_MASK_EAGAIN

/** Convenience typedef for enum ach_mask */
typedef enum ach_mask ach_mask_t;

/** The mask bit of a status. */
static inline int ach_status_mask(enum ach_status status)
{
    return ACH_STATUS_MASK(status);
}

/** Whether @p status is one of the statuses in @p mask (a bitwise OR of enum ach_mask values). */
static inline int ach_status_match(enum ach_status status, int mask)
{
    return (ACH_STATUS_MASK(status) & mask) ? 1 : 0;
}

/** Option flags of ach_get(); 0 is: the oldest unseen frame, without waiting, timeout absolute. */
typedef enum {
    ACH_O_NONBLOCK = 0x00, /**< Do not wait for a new message (exclusive with ACH_O_WAIT). */
    ACH_O_FIRST = 0x00,    /**< The oldest unseen message (exclusive with ACH_O_LAST). */
    ACH_O_ABSTIME = 0x00,  /**< The timeout is an absolute time on ACH_DEFAULT_CLOCK. */
    ACH_O_WAIT = 0x01,     /**< Wait until an unseen message comes, or the timeout passes. */
    ACH_O_LAST = 0x02,     /**< The newest message, skipping older unseen ones (ACH_MISSED_FRAME if it did). */
    ACH_O_COPY = 0x04,     /**< Copy the newest message even if already seen (ACH_OK). */
    ACH_O_RELTIME = 0x08   /**< The timeout is relative to now. */
} ach_get_opts_t;

/** Ach's kernel-device options (part of ach_channel_t's layout; unused here). */
typedef struct achk_opt {
    int options;             /**< get options used by the kernel */
    struct timespec reltime; /**< kernel use relative time */
} achk_opt_t;

/** Where a channel's memory is. */
enum ach_map {
    ACH_MAP_DEFAULT = 0, /**< the default: ACH_MAP_USER */
    ACH_MAP_ANON = 1,    /**< heap memory of one process: not offered (ACH_ENOTSUP) */
    ACH_MAP_USER = 2,    /**< shared memory: a Nerve channel file */
    ACH_MAP_KERNEL = 3   /**< Ach's kernel module: not offered (ACH_ENOTSUP) */
};

/** A channel as this library holds it (opaque). */
struct ach_header;

/** Attributes for ach_open(). */
struct ach_attr {
    union {
        struct {
            union {
                int map_anon ACH_DEPRECATED; /**< old name of map */
                enum ach_map map;            /**< where the channel is */
            };
            struct ach_header *shm; /**< the memory of an anonymous channel (not offered) */
        };
        uint64_t reserved_size[8]; /**< room for future options */
    };
};

/** Attributes for ach_open(). */
typedef struct ach_attr ach_attr_t;

/** Initialises attributes for ach_open() (the defaults). */
void ach_attr_init(ach_attr_t *attr);

/** Sets the memory of an anonymous channel (ACH_MAP_ANON: ach_open() then returns ACH_ENOTSUP). */
enum ach_status ach_attr_set_shm(ach_attr_t *attr, struct ach_header *shm);

/** Attributes for ach_create(). */
struct ach_create_attr {
    union {
        struct {
            union {
                int map_anon;     /**< old name of map */
                enum ach_map map; /**< where the channel is */
            };
            struct ach_header *shm;     /**< an anonymous channel's memory (not offered) */
            clockid_t clock;            /**< the timeout clock if set_clock (only ACH_DEFAULT_CLOCK) */
            unsigned int truncate : 1;  /**< remove an existing channel of this name and make a new one */
            unsigned int set_clock : 1; /**< use clock */
        };
        uint64_t reserved[16]; /**< room for future options */
    };
};

/** Attributes for ach_create(). */
typedef struct ach_create_attr ach_create_attr_t;

/** Initialises attributes for ach_create() (the defaults). */
void ach_create_attr_init(ach_create_attr_t *attr);

/** Sets the timeout clock (only ACH_DEFAULT_CLOCK; another is ACH_ENOTSUP). */
enum ach_status ach_create_attr_set_clock(ach_create_attr_t *attr, clockid_t clock);

/** Sets the mapping (ACH_MAP_DEFAULT and ACH_MAP_USER work; ach_create() refuses the others with ACH_ENOTSUP). */
enum ach_status ach_create_attr_set_map(ach_create_attr_t *attr, enum ach_map map);

/** Sets whether ach_create() replaces an existing channel of the same name. */
enum ach_status ach_create_attr_set_truncate(ach_create_attr_t *attr, int truncate);

/** The memory of an anonymous channel (ACH_EINVAL: anonymous channels are not offered). */
enum ach_status ach_create_attr_get_shm(ach_create_attr_t *attr, struct ach_header **shm);

/** Ach's method table type (opaque; its pointer marks an open handle). */
struct ach_channel_vtab;

/**
 * A handle on a channel, filled by ach_open() and emptied by ach_close(). Its layout is Ach's; use the functions
 * rather than the fields, except `cancel`, which ach_cancel() sets and a program may clear (as Ach's tests do) to
 * use the handle again.
 */
typedef struct ach_channel {
    union {
        struct {
            struct ach_header *shm; /**< this library's handle number for the channel (not a pointer) */
            size_t len;             /**< the channel file's length */
            int fd;                 /**< the channel file's descriptor */
            union {
                uint64_t seq_num;   /**< the sequence number of the last frame this handle got */
                achk_opt_t k_opts;  /**< unused (kernel devices) */
            };
            size_t next_index;                   /**< unused */
            enum ach_map map;                    /**< ACH_MAP_USER */
            clockid_t clock;                     /**< ACH_DEFAULT_CLOCK */
            volatile sig_atomic_t cancel;        /**< set by ach_cancel(): gets return ACH_CANCELED while set */
            const struct ach_channel_vtab *vtab; /**< marks an open handle */
        };
        uint64_t reserved[16]; /**< room for future fields */
    };
} ach_channel_t;

/** The file descriptor of the channel file. */
enum ach_status ach_channel_fd(const struct ach_channel *channel, int *file_descriptor);

/** The mapping of the channel (ACH_MAP_USER). */
enum ach_status ach_channel_map(const struct ach_channel *channel, enum ach_map *map);

/** The clock of the channel's timeouts (ACH_DEFAULT_CLOCK). */
enum ach_status ach_channel_clock(const struct ach_channel *channel, clockid_t *clock);

/**
 * Makes a channel of @p frame_cnt frames (0: ACH_DEFAULT_FRAME_COUNT; at least 2) of at most @p frame_size bytes
 * each (0: ACH_DEFAULT_FRAME_SIZE). @p attr may be NULL. ACH_EEXIST if it exists (unless attr's truncate),
 * ACH_INVALID_NAME for a name that is not 1 to 63 of [A-Za-z0-9._-] (not starting with '.').
 */
enum ach_status ach_create(const char *channel_name, size_t frame_cnt, size_t frame_size, ach_create_attr_t *attr);

/**
 * Opens a handle on a channel; its first ach_get() without ACH_O_LAST returns the oldest frame the channel still
 * has. ACH_ENOENT if there is no such channel. @p attr may be NULL.
 */
enum ach_status ach_open(ach_channel_t *chan, const char *channel_name, ach_attr_t *attr);

/**
 * Gets a frame into @p buf (@p size bytes; NULL only with size 0), storing its length in @p frame_size (may be
 * NULL). Returns ACH_OK, or ACH_MISSED_FRAME if frames were skipped (the frame is still copied);
 * ACH_STALE_FRAMES if there is nothing new and ACH_O_WAIT is not given; ACH_TIMEOUT if @p abstime (NULL: wait
 * forever; on ACH_DEFAULT_CLOCK, or relative with ACH_O_RELTIME) passes; ACH_CANCELED if ach_cancel() was called on
 * this handle (until its `cancel` field is cleared); ACH_OVERFLOW if the frame is longer than @p size: then
 * *frame_size is the length needed and nothing is consumed, so a call with a larger buffer gets that same frame.
 */
enum ach_status ach_get(ach_channel_t *chan, void *buf, size_t size, size_t *frame_size,
                        const struct timespec *ACH_RESTRICT abstime, int options);

/**
 * Puts a copy of @p len bytes (1 to the channel's frame size) as the newest frame, dropping the oldest frames to make
 * room; never waits for a reader. ACH_OVERFLOW if longer than the frame size (nothing is written).
 */
enum ach_status ach_put(ach_channel_t *chan, const void *buf, size_t len);

/** Marks every frame now in the channel as seen by this handle (the channel is unchanged). */
enum ach_status ach_flush(ach_channel_t *chan);

/** Closes the handle; it may be opened again with ach_open(). */
enum ach_status ach_close(ach_channel_t *chan);

/** The name of a status code ("ACH_OK", ...; "UNKNOWN" for other values). Never NULL; static storage. */
const char *ach_result_to_string(ach_status_t result);

/** A message saying why this thread's last failing call failed (empty if none). Valid until its next call. */
const char *ach_errstr(void);

/** Prints a channel's sizes and counters to stderr (for debugging). @p shm is ach_channel_t's shm field. */
void ach_dump(struct ach_header *shm);

/** Sets the permission bits of the channel file. */
enum ach_status ach_chmod(ach_channel_t *chan, mode_t mode);

/** Removes a channel (handles open on it keep working; new ach_open() calls get ACH_ENOENT). */
enum ach_status ach_unlink(const char *name);

/** Attributes for ach_cancel(). */
typedef struct ach_cancel_attr {
    union {
        struct {
            int async_unsafe; /**< Ach: permit calls unsafe in a signal handler. Here every cancel is safe. */
        };
        int64_t reserved[8]; /**< room for future options */
    };
} ach_cancel_attr_t;

/** Initialises attributes for ach_cancel() (the defaults). */
void ach_cancel_attr_init(ach_cancel_attr_t *attr);

/**
 * Cancels gets on this handle: a get waiting now returns ACH_CANCELED at once, and so do later ones until the
 * handle's `cancel` field is cleared. Async-signal-safe (no lock, no allocation). @p attr may be NULL.
 */
enum ach_status ach_cancel(ach_channel_t *chan, const ach_cancel_attr_t *attr);

#ifdef __cplusplus
}
#endif

#endif /* ACH_H */

/*
 * nerve.h - the C ABI of Nerve: the bus (publish/subscribe by URL over every provider), shared-memory channels
 * (nerve-shm) and LCM event logs (nerve-log).
 *
 * Conventions, for every function:
 *  - The return value is a status: NERVE_OK (0), a positive outcome that is not an error (NERVE_NOTHING_NEW,
 *    NERVE_TIMED_OUT, NERVE_BUFFER_TOO_SMALL, NERVE_END, NERVE_OVERWRITTEN), or a negative NERVE_E_* error. After an error,
 *    nerve_last_error() says what went wrong, in this thread.
 *  - NULL where a pointer is needed, a handle that is not open (never opened, closed, or garbage) and out-of-range
 *    values are NERVE_E_INVALID, never a crash. A pointer to memory that does not exist cannot be detected in C.
 *  - Handles (nerve_bus, nerve_subscription, nerve_channel, nerve_loan, nerve_view, nerve_log_reader, nerve_log_writer) are owned by the caller from the
 *    function that makes them until the one that closes them; after that the pointer must not be used (it is refused
 *    if it is, unless the address was reused for a new handle).
 *  - Threads: a nerve_channel may be used by several threads at once (a get and a put do not wait for each other;
 *    gets on one channel handle take turns). A nerve_loan belongs to the thread that took it. A log reader or writer
 *    is used by one thread at a time. A nerve_bus may be used by several threads at once (publish from any thread);
 *    its handlers run inside nerve_bus_handle* on the calling thread, one at a time.
 *  - No Rust panic crosses into C: an internal error is NERVE_E_INTERNAL.
 */

#ifndef NERVE_NERVE_H
#define NERVE_NERVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Statuses. */
enum nerve_status {
    NERVE_OK = 0,               /**< success */
    NERVE_NOTHING_NEW = 1,      /**< a get without waiting found nothing newer than this handle's last */
    NERVE_TIMED_OUT = 2,        /**< a get's wait ended with nothing new */
    NERVE_BUFFER_TOO_SMALL = 3, /**< the message is longer than the buffer: info->len is its length; nothing lost */
    NERVE_END = 4,              /**< a log reader is at the end of the file */
    NERVE_OVERWRITTEN = 5,      /**< a view's frame was reclaimed by a writer: its bytes are no longer the message */

    NERVE_E_INVALID = -1,     /**< NULL or out-of-range argument, or a handle that is not open */
    NERVE_E_NOT_FOUND = -2,   /**< no such channel or file */
    NERVE_E_EXISTS = -3,      /**< the channel or file exists (for a channel: with other sizes, or not reusable) */
    NERVE_E_PERMISSION = -4,  /**< permission denied */
    NERVE_E_BAD_FILE = -5,    /**< not a channel (or of another layout version), truncated or corrupt */
    NERVE_E_TOO_LARGE = -6,   /**< a message longer than the channel's frame size, or a log event beyond LCM's */
    NERVE_E_IO = -7,          /**< a system call failed */
    NERVE_E_BUSY = -8,        /**< the channel's writer lock is held by this thread (a loan not yet committed) */
    NERVE_E_INTERNAL = -9     /**< a bug in Nerve (please report it) */
};

/** This thread's last error message (empty if none); valid until this thread's next call into libnerve. */
const char *nerve_last_error(void);

/** The name of a status ("NERVE_OK", ...; "unknown status" otherwise); static storage. */
const char *nerve_status_string(int status);

/* ------------------------------------------------------------------------------------------------------------- */
/* Shared-memory channels: a channel is a file `nerve-NAME` in a directory (NULL: $NERVE_SHM_DIR, else /dev/shm)  */
/* holding the last `frames` messages of at most `frame_size` bytes. A writer never waits for a reader; the       */
/* newest message wins. The same channels as `nerve chan`, the bus's shm:// provider and Ach programs (libach).  */
/* ------------------------------------------------------------------------------------------------------------- */

/** An open channel with this handle's own read position. */
typedef struct nerve_channel nerve_channel;

/** nerve_channel_create flags. */
enum nerve_create_flags {
    NERVE_CREATE_NEW = 0,       /**< fail with NERVE_E_EXISTS if the channel exists */
    NERVE_CREATE_OR_OPEN = 1    /**< open it if it exists with these sizes (NERVE_E_EXISTS with other sizes) */
};

/** Where a handle starts reading. */
enum nerve_start {
    NERVE_START_NEWEST = 0, /**< the newest message now in the channel comes first (a late joiner sees the state) */
    NERVE_START_OLDEST = 1, /**< the oldest message the channel still holds comes first */
    NERVE_START_NEXT = 2    /**< only messages put after the handle was opened */
};

/**
 * Makes a channel of @p frames messages (2 or more) of at most @p frame_size bytes, file mode @p mode (e.g. 0600),
 * in @p dir (NULL: the default directory), and opens a handle on it into *@p out (read position: NERVE_START_NEWEST).
 */
int nerve_channel_create(const char *name, uint64_t frames, uint64_t frame_size, uint32_t mode, const char *dir,
                         int flags, nerve_channel **out);

/** Opens an existing channel (NERVE_E_NOT_FOUND if there is none); @p start is an enum nerve_start. */
int nerve_channel_open(const char *name, const char *dir, int start, nerve_channel **out);

/** Closes a handle (NULL is NERVE_E_INVALID). The channel stays for others. */
int nerve_channel_close(nerve_channel *channel);

/** Removes a channel's file (handles open on it keep working; new opens get NERVE_E_NOT_FOUND). */
int nerve_channel_remove(const char *name, const char *dir);

/** The channel's frames and frame size (either output may be NULL). */
int nerve_channel_sizes(const nerve_channel *channel, uint64_t *frames, uint64_t *frame_size);

/** Puts a copy of @p len bytes (NULL data only with len 0) as the newest message; *@p seq (may be NULL) gets its
 *  sequence number (1, 2, ...). Never waits for a reader; NERVE_E_TOO_LARGE beyond the frame size. */
int nerve_channel_put(nerve_channel *channel, const void *data, size_t len, uint64_t *seq);

/** A frame lent to write a message in place (a camera image) before publishing it. */
typedef struct nerve_loan nerve_loan;

/**
 * Lends a frame of @p len bytes: *@p data points to it (fill all of it), *@p loan is the loan. It holds the channel's
 * writer lock (other writers wait; readers never do) until nerve_loan_commit() or nerve_loan_abort(), which must be
 * called from this same thread, promptly.
 */
int nerve_channel_loan(nerve_channel *channel, size_t len, void **data, nerve_loan **loan);

/** Publishes a loan's frame as the newest message (*@p seq, may be NULL, gets its number) and ends the loan. */
int nerve_loan_commit(nerve_loan *loan, uint64_t *seq);

/** Ends a loan without publishing anything. */
int nerve_loan_abort(nerve_loan *loan);

/** Which message a get returns. */
enum nerve_read_mode {
    NERVE_READ_NEXT = 0,  /**< the next one this handle has not seen, in order (skipped ones counted in missed) */
    NERVE_READ_NEWEST = 1 /**< the newest one, skipping older unseen ones (not counted as missed) */
};

/** What came with a message. */
typedef struct nerve_message_info {
    uint64_t seq;      /**< its sequence number */
    uint64_t len;      /**< its length in bytes (for NERVE_BUFFER_TOO_SMALL: the buffer size it needs) */
    uint64_t missed;   /**< messages this handle missed (dropped before it read them) since its last one */
    int64_t put_utime; /**< when it was put, microseconds since the Unix epoch */
    uint64_t origin;   /**< its writer's process id stamp (the same for every writer of one process) */
} nerve_message_info;

/**
 * Copies the next (or newest, per @p mode) message into @p buf (@p capacity bytes; NULL only with capacity 0) and
 * fills *@p info (may be NULL). @p timeout_ns: 0 returns NERVE_NOTHING_NEW at once if there is nothing new; > 0
 * waits that long (NERVE_TIMED_OUT); < 0 waits until a message comes. NERVE_BUFFER_TOO_SMALL leaves the message
 * unread, with its length in info->len.
 */
int nerve_channel_get(nerve_channel *channel, void *buf, size_t capacity, int mode, int64_t timeout_ns,
                      nerve_message_info *info);

/** Moves this handle's read position so that the next NERVE_READ_NEXT get returns only messages put from now on. */
int nerve_channel_skip_to_newest(nerve_channel *channel);

/** A received message kept in place: a view of its frame in the channel's shared memory (no copy). */
typedef struct nerve_view nerve_view;

/**
 * Takes the next (or newest) message as a view, without copying it: *@p data points to its bytes in shared memory
 * (8-byte aligned), *@p len (may be NULL) is their length, *@p info (may be NULL) what came with it, *@p view the
 * view to check and release. Waits as nerve_channel_get does (NERVE_NOTHING_NEW, NERVE_TIMED_OUT). The cost is the
 * same whatever the message's size.
 *
 * The rule: a writer never waits for a view. When the channel's writers come round to the frame (about `frames`
 * messages later) they overwrite it, and from then on nerve_view_check() returns NERVE_OVERWRITTEN. So read what
 * you need through data, then call nerve_view_check(): NERVE_OK means every byte you read before it was the
 * message's (a memcpy followed by a passing check is an intact copy); NERVE_OVERWRITTEN means discard what you read.
 * The bytes stay readable (never a crash) until nerve_view_release(), even after the channel handle is closed.
 * Views may be held several at a time, checked and released from any thread.
 */
int nerve_channel_view(nerve_channel *channel, int mode, int64_t timeout_ns, nerve_view **view, const void **data,
                       size_t *len, nerve_message_info *info);

/** NERVE_OK while the view's frame still holds its message; NERVE_OVERWRITTEN once a writer reclaimed it (for ever
 *  after). A released, NULL or garbage view is NERVE_E_INVALID. */
int nerve_view_check(const nerve_view *view);

/** Ends a view: its data pointer must not be used after. A second release (or NULL, garbage) is NERVE_E_INVALID. */
int nerve_view_release(nerve_view *view);

/** A running view subscription (nerve_shm_subscribe_views). */
typedef struct nerve_view_subscription nerve_view_subscription;

/** A view subscription's callback: @p channel (the bus name, NUL-terminated, valid during the call), @p view and
 *  its bytes @p data (info->len of them; the view is the handler's: check it, and release it now or later), what
 *  came with it, and what was given to nerve_shm_subscribe_views as @p user. */
typedef void (*nerve_view_handler)(const char *channel, nerve_view *view, const void *data,
                                   const nerve_message_info *info, void *user);

/**
 * Calls @p handler for every message on the shm channels of @p dir (NULL: $NERVE_SHM_DIR, else /dev/shm) whose bus
 * name @p pattern (a regular expression) matches in full, each as a view of its frame (no copy): channels that
 * exist now from their next message, channels made later from their oldest. The bus's shm receive path: one thread
 * sleeping on every channel at once (a wait set), the handler called on it as each message is read. Writers never
 * wait: a view the handler holds while they lap the ring fails nerve_view_check() with NERVE_OVERWRITTEN, and
 * messages overwritten before they were read show in the next one's info->missed. A bad pattern or a missing
 * directory is NERVE_E_INVALID. The subscription is *@p out until nerve_view_subscription_close.
 */
int nerve_shm_subscribe_views(const char *dir, const char *pattern, nerve_view_handler handler, void *user,
                              nerve_view_subscription **out);

/** Stops a view subscription (allowed inside its handler; a handler call under way on another thread finishes
 *  first). A second close (or NULL, garbage) is NERVE_E_INVALID. */
int nerve_view_subscription_close(nerve_view_subscription *sub);

/** A channel's counters. */
typedef struct nerve_channel_stats {
    uint64_t frames;         /**< messages the channel keeps */
    uint64_t frame_size;     /**< the largest message */
    uint64_t messages;       /**< messages put since creation (also the newest sequence number) */
    uint64_t writer_opens;   /**< writers made since creation */
    uint64_t reader_opens;   /**< readers made since creation */
    uint64_t recoveries;     /**< times a writer found the lock's owner dead and recovered the channel */
    uint32_t waiting_readers;/**< readers asleep on it now */
    uint32_t mode;           /**< the file's permission bits */
} nerve_channel_stats;

/** Fills *@p stats. */
int nerve_channel_stats_get(const nerve_channel *channel, nerve_channel_stats *stats);

/* ------------------------------------------------------------------------------------------------------------- */
/* LCM event logs (the format lcm-logger writes), read with damage reported, written byte for byte as LCM does.  */
/* ------------------------------------------------------------------------------------------------------------- */

/** A log being read. */
typedef struct nerve_log_reader nerve_log_reader;

/** One event; its pointers stay valid until the next call on the same reader. */
typedef struct nerve_log_event {
    int64_t number;          /**< the event number */
    int64_t utime;           /**< the timestamp, microseconds since the Unix epoch */
    const char *channel;     /**< the channel (not NUL-terminated: channel_len bytes) */
    size_t channel_len;      /**< bytes of channel */
    const void *data;        /**< the message */
    size_t data_len;         /**< bytes of data */
    uint64_t offset;         /**< where the event starts in the file */
} nerve_log_event;

/** Totals of the damage a reader skipped so far (regions that were not events, and their bytes). */
typedef struct nerve_log_damage {
    uint64_t regions; /**< damaged regions */
    uint64_t bytes;   /**< bytes skipped in them */
} nerve_log_damage;

/** Opens a log for reading. */
int nerve_log_reader_open(const char *path, nerve_log_reader **out);

/** The next intact event into *@p event, or NERVE_END. Damage is skipped (see nerve_log_reader_damage()). */
int nerve_log_reader_next(nerve_log_reader *reader, nerve_log_event *event);

/** The damage skipped so far. */
int nerve_log_reader_damage(const nerve_log_reader *reader, nerve_log_damage *damage);

/** Closes a reader. */
int nerve_log_reader_close(nerve_log_reader *reader);

/** A log being written. */
typedef struct nerve_log_writer nerve_log_writer;

/** nerve_log_writer_open flags. */
enum nerve_log_open_flags {
    NERVE_LOG_CREATE = 0,    /**< a new file (NERVE_E_EXISTS if it exists) */
    NERVE_LOG_OVERWRITE = 1, /**< replace the file if it exists */
    NERVE_LOG_APPEND = 2     /**< append to the file (made if missing); event numbers start at 0 again, as LCM's */
};

/** Opens a log for writing (missing directories are made). */
int nerve_log_writer_open(const char *path, int flags, nerve_log_writer **out);

/** Writes one event: @p channel (1 to 999 bytes, NUL-terminated), @p len bytes of @p data (NULL only with len 0). */
int nerve_log_writer_write(nerve_log_writer *writer, int64_t utime, const char *channel, const void *data,
                           size_t len);

/** Writes buffered events to the file. */
int nerve_log_writer_flush(nerve_log_writer *writer);

/** Flushes and closes a writer (the handle is gone even if the flush fails, which is reported). */
int nerve_log_writer_close(nerve_log_writer *writer);

/* ------------------------------------------------------------------------------------------------------------- */
/* The bus: publish and subscribe by URL over every transport Nerve has (udpm://, mpudpm://, shm://, inproc://,   */
/* memq://, file://, ...), compatible with LCM on udpm://. A bus receives its own messages.                      */
/* ------------------------------------------------------------------------------------------------------------- */

typedef struct nerve_bus nerve_bus;
typedef struct nerve_subscription nerve_subscription;

/** What a full subscription queue gives up. */
enum nerve_overflow {
    NERVE_DROP_OLDEST = 0, /**< the oldest queued message: the newest wins (Nerve's default) */
    NERVE_DROP_NEWEST = 1  /**< the arriving message (LCM's way) */
};

/** One message as a handler sees it; it and everything it points to are valid only during the handler call. */
typedef struct nerve_received {
    const char *channel; /**< the channel, NUL-terminated */
    const void *data;    /**< the bytes (not to be written to) */
    size_t len;          /**< their length */
    int64_t recv_utime;  /**< when it arrived, microseconds since the Unix epoch */
    int local;           /**< 1 if published through this same bus, 0 if it came from the transport */
} nerve_received;

/** A subscription's callback; @p user is what was given to nerve_bus_subscribe. */
typedef void (*nerve_handler)(const nerve_received *msg, void *user);

/** Counters of a subscription. */
typedef struct nerve_subscription_stats {
    uint64_t received;  /**< messages that matched and were queued */
    uint64_t delivered; /**< messages handed to the handler */
    uint64_t dropped;   /**< messages dropped because the queue was full */
    uint64_t queued;    /**< messages waiting now */
} nerve_subscription_stats;

/** Opens a bus on @p url (NULL or "": NERVE_URL, then LCM_DEFAULT_URL, then LCM's default group) into *@p out.
 *  A bad URL, an unknown provider or option is NERVE_E_INVALID; a transport that cannot start is NERVE_E_IO. */
int nerve_bus_open(const char *url, nerve_bus **out);

/** Ends the bus's subscriptions, flushes and closes it. */
int nerve_bus_close(nerve_bus *bus);

/** Publishes @p len bytes of @p data (NULL only with len 0) on @p channel. */
int nerve_bus_publish(nerve_bus *bus, const char *channel, const void *data, size_t len);

/**
 * Calls @p handler for each message on a channel that @p pattern (a regular expression) matches in full. Messages
 * wait in the subscription's queue of @p capacity messages (0: unbounded) until nerve_bus_handle*; when it is full,
 * @p overflow (enum nerve_overflow) says which message goes. The subscription is *@p out, until
 * nerve_bus_unsubscribe or nerve_bus_close. A bad pattern is NERVE_E_INVALID.
 */
int nerve_bus_subscribe(nerve_bus *bus, const char *pattern, size_t capacity, int overflow, nerve_handler handler,
                        void *user, nerve_subscription **out);

/** Ends a subscription of @p bus (allowed inside a handler). */
int nerve_bus_unsubscribe(nerve_bus *bus, nerve_subscription *sub);

/** Waits for one message and runs the handlers it is queued for. NERVE_E_BUSY inside a handler; a transport error
 *  since the last call is NERVE_E_IO. */
int nerve_bus_handle(nerve_bus *bus);

/** Like nerve_bus_handle, waiting at most @p timeout_ns (0: do not wait; < 0: forever): NERVE_OK when a message
 *  was handled, NERVE_TIMED_OUT when none came. */
int nerve_bus_handle_timeout(nerve_bus *bus, int64_t timeout_ns);

/** A file descriptor, into *@p fd, readable while a message waits for nerve_bus_handle (poll, epoll, select); it
 *  belongs to the bus and stays open until nerve_bus_close. */
int nerve_bus_fileno(nerve_bus *bus, int *fd);

/** Changes a subscription's queue capacity (0: unbounded); messages beyond it are dropped oldest first. */
int nerve_subscription_set_capacity(nerve_subscription *sub, size_t capacity);

/** A subscription's counters into *@p stats. */
int nerve_subscription_stats_get(const nerve_subscription *sub, nerve_subscription_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NERVE_NERVE_H */

/*
 * lcm/lcm.h (Nerve's liblcm): LCM 1.5.3's C API over Nerve's bus. Same function names, types, struct layouts,
 * soname (liblcm.so.1) and return codes as LCM's, so a program built against the real liblcm runs on this one and
 * the other way round. Differences from LCM are listed in docs/lcm-differences.md; in short:
 *   - lcm_create takes any URL Nerve understands (udpm://, memq://, file://, shm://, inproc://, ...), and with
 *     NULL reads NERVE_URL before LCM_DEFAULT_URL;
 *   - a full subscription queue drops its OLDEST message (LCM drops the newest); the default capacity is LCM's 30;
 *     on memq:// nothing is dropped: every publication waits for lcm_handle, as in LCM;
 *   - a channel pattern is anchored as ^(?:PATTERN)$ (LCM: ^PATTERN$, so "A|B" also matched "AX" there);
 *   - every handle is checked: NULL, destroyed or garbage pointers return -1 / NULL instead of crashing.
 *
 * Threads: lcm_publish may be called from any thread; handlers run inside lcm_handle / lcm_handle_timeout on the
 * thread calling it, one at a time. As in LCM, a second thread's lcm_handle waits until the first returns, while
 * lcm_handle_timeout callers wait side by side; each message is dispatched once. Calling lcm_handle from inside a
 * handler is an error (-1). On file:// (mode r) each call dispatches the log's next event, and every call after
 * the last one returns -1.
 * Ownership: lcm_create's result is freed with lcm_destroy (which also ends its subscriptions); a subscription is
 * freed by lcm_unsubscribe or lcm_destroy. A handler's rbuf, rbuf->data and channel are valid only during the call
 * and must not be written to.
 */
#ifndef NERVE_LIBLCM_LCM_H
#define NERVE_LIBLCM_LCM_H

#include <stdint.h>

#include "lcm_export.h"
#include "lcm_version.h"
#include "eventlog.h"

#define LCM_MAX_MESSAGE_SIZE (1 << 28)
#define LCM_MAX_CHANNEL_NAME_LENGTH 63

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _lcm_t lcm_t;
typedef struct _lcm_subscription_t lcm_subscription_t;
typedef struct _lcm_recv_buf_t lcm_recv_buf_t;

/* What a handler is told about the message it handles. */
struct _lcm_recv_buf_t {
    void *data;          /* the message bytes */
    uint32_t data_size;  /* their length */
    int64_t recv_utime;  /* when it was received, microseconds since the epoch */
    lcm_t *lcm;          /* the lcm_t that received it */
};

typedef void (*lcm_msg_handler_t)(const lcm_recv_buf_t *rbuf, const char *channel, void *user_data);

/* An instance on `provider` (a URL; NULL or "" for the default). NULL on error, with the reason on stderr. */
LCM_EXPORT lcm_t *lcm_create(const char *provider);

/* Ends the instance and its subscriptions. */
LCM_EXPORT void lcm_destroy(lcm_t *lcm);

/* A descriptor readable while a message waits for lcm_handle (for select/poll/epoll); -1 on error. */
LCM_EXPORT int lcm_get_fileno(lcm_t *lcm);

/* Calls `handler` for each message on a channel that the regular expression `channel` matches in full. NULL on
 * error. The instance receives its own publications. */
LCM_EXPORT lcm_subscription_t *lcm_subscribe(lcm_t *lcm, const char *channel, lcm_msg_handler_t handler,
                                             void *userdata);

/* Ends a subscription (safe inside a handler); 0, or -1 on error. */
LCM_EXPORT int lcm_unsubscribe(lcm_t *lcm, lcm_subscription_t *handler);

/* Publishes `datalen` bytes on `channel`; 0, or -1 on error. */
LCM_EXPORT int lcm_publish(lcm_t *lcm, const char *channel, const void *data, unsigned int datalen);

/* Waits for a message and dispatches it to its handlers; 0, or -1 on error. */
LCM_EXPORT int lcm_handle(lcm_t *lcm);

/* Like lcm_handle, waiting at most timeout_millis: >0 handled, 0 timed out, <0 error (a negative timeout is). */
LCM_EXPORT int lcm_handle_timeout(lcm_t *lcm, int timeout_millis);

/* Caps the subscription's queue (default 30; 0 or less: no limit); 0, or -1 on error. */
LCM_EXPORT int lcm_subscription_set_queue_capacity(lcm_subscription_t *handler, int num_messages);

/* Messages waiting in the subscription's queue, or -1 on error. */
LCM_EXPORT int lcm_subscription_get_queue_size(lcm_subscription_t *handler);

#ifdef __cplusplus
}
#endif
#endif

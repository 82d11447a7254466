/*
 * lcm/eventlog.h (Nerve's liblcm): LCM 1.5.3's event-log C API, same names, struct layouts and semantics, so
 * programs built against either library run on the other. Log files are LCM's format byte for byte.
 *
 * Ownership: lcm_eventlog_create returns a log the caller frees with lcm_eventlog_destroy; an event from
 * lcm_eventlog_read_next_event is the caller's, freed with lcm_eventlog_free_event. A log is not thread-safe: one
 * thread at a time. NULL or a pointer this library did not make returns NULL / -1 (or does nothing for destroy).
 */
#ifndef NERVE_LIBLCM_EVENTLOG_H
#define NERVE_LIBLCM_EVENTLOG_H

#include <stdint.h>
#include <stdio.h>

#include "lcm_export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _lcm_eventlog_t lcm_eventlog_t;
/* An open log. `f` is its stdio stream; `eventcount` the number the next written event gets. */
struct _lcm_eventlog_t {
    FILE *f;
    int64_t eventcount;
};

typedef struct _lcm_eventlog_event_t lcm_eventlog_event_t;
/* One event: its number, timestamp (microseconds since the epoch), channel (channellen bytes; NUL-terminated when
 * read) and data (datalen bytes). */
struct _lcm_eventlog_event_t {
    int64_t eventnum;
    int64_t timestamp;
    int32_t channellen;
    int32_t datalen;
    char *channel;
    void *data;
};

/* Opens `path` with mode "r", "w" or "a"; NULL on error (also for any other mode). */
LCM_EXPORT lcm_eventlog_t *lcm_eventlog_create(const char *path, const char *mode);

/* The next event, or NULL at the end (damage between events is skipped, as LCM does). */
LCM_EXPORT lcm_eventlog_event_t *lcm_eventlog_read_next_event(lcm_eventlog_t *eventlog);

/* Frees an event from lcm_eventlog_read_next_event. NULL does nothing. */
LCM_EXPORT void lcm_eventlog_free_event(lcm_eventlog_event_t *event);

/* Positions the log at an event with a timestamp near `ts` (bisection, as LCM); 0, or -1 on error. */
LCM_EXPORT int lcm_eventlog_seek_to_timestamp(lcm_eventlog_t *eventlog, int64_t ts);

/* Appends `event`, numbered by the log (event->eventnum is set to that number); 0, or -1 on error. */
LCM_EXPORT int lcm_eventlog_write_event(lcm_eventlog_t *eventlog, lcm_eventlog_event_t *event);

/* Flushes, closes and frees the log. */
LCM_EXPORT void lcm_eventlog_destroy(lcm_eventlog_t *eventlog);

#ifdef __cplusplus
}
#endif
#endif

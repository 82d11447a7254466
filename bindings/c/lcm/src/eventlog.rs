//! LCM's event-log C API (`include/lcm/eventlog.h`): `lcm_eventlog_t` and `lcm_eventlog_event_t` at LCM's
//! layouts, over C's stdio.
//!
//! Over `FILE *` rather than over nerve-log's `LogReader` and `LogWriter` because the header makes both structs
//! public: programs read `log->f` and `log->eventcount`, fill events themselves and free what
//! `lcm_eventlog_read_next_event` returns with `lcm_eventlog_free_event`, so the objects must be C's (malloc'd,
//! holding a real `FILE *`); and because LCM's C reader and writer take what nerve-log's refuse (a channel of 1000
//! bytes and more, an empty one when writing) and stop where nerve-log's skips damage. The framing is nerve-log's
//! ([`nerve_log::encode_header`], [`nerve_log::RawHeader`]): per event the sync word, event number, timestamp,
//! channel length, data length (all big-endian), channel, data. Reading resynchronises on the sync word after
//! damage, as LCM does; the live logs are kept in [`LOGS`] so NULL and garbage pointers are refused rather than
//! used.

use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, PoisonError};

use nerve_c_common::{guard, set_last_error};
use nerve_log::{encode_header, RawHeader, HEADER_LEN, SYNC};

use crate::sys;

/// LCM's limit on channel names when reading (a longer one means the reader is not at an event).
const MAX_CHANNEL_LEN: i32 = 1 << 20;

/// `lcm_eventlog_t`, at LCM's layout.
#[repr(C)]
pub struct EventLog {
    /// The open file.
    pub f: *mut libc::FILE,
    /// Events written so far (the next event number written).
    pub eventcount: i64,
}

/// `lcm_eventlog_event_t`, at LCM's layout.
#[repr(C)]
pub struct Event {
    /// Its number in the log.
    pub eventnum: i64,
    /// Microseconds since the epoch.
    pub timestamp: i64,
    /// The channel name's length (no NUL).
    pub channellen: i32,
    /// The data's length.
    pub datalen: i32,
    /// The channel name (NUL-terminated when read).
    pub channel: *mut c_char,
    /// The data.
    pub data: *mut c_void,
}

/// The live `lcm_eventlog_t`s, by address.
static LOGS: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn live(log: *mut EventLog) -> bool {
    LOGS.lock().unwrap_or_else(PoisonError::into_inner).as_ref().is_some_and(|s| s.contains(&(log as usize)))
}

/// `lcm_eventlog_t *lcm_eventlog_create(const char *path, const char *mode)`: mode "r", "w" or "a"; NULL on
/// error (LCM asserts on another mode; this returns NULL).
///
/// # Safety
///
/// `path` and `mode` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_create(path: *const c_char, mode: *const c_char) -> *mut EventLog {
    guard(std::ptr::null_mut(), || {
        if path.is_null() || mode.is_null() {
            set_last_error("lcm_eventlog_create: path or mode is NULL");
            return std::ptr::null_mut();
        }
        // SAFETY: not NULL; the caller promises a NUL-terminated string.
        let fmode = match unsafe { CStr::from_ptr(mode) }.to_bytes() {
            b"r" => c"rb",
            b"w" => c"wb",
            b"a" => c"ab",
            _ => {
                set_last_error("lcm_eventlog_create: mode is not \"r\", \"w\" or \"a\"");
                return std::ptr::null_mut();
            }
        };
        // SAFETY: both are NUL-terminated strings.
        let f = unsafe { libc::fopen(path, fmode.as_ptr()) };
        if f.is_null() {
            set_last_error(format!("lcm_eventlog_create: {}", std::io::Error::last_os_error()));
            return std::ptr::null_mut();
        }
        // SAFETY: malloc of the struct's size; checked for NULL before use.
        let log = unsafe { libc::malloc(std::mem::size_of::<EventLog>()) } as *mut EventLog;
        if log.is_null() {
            // SAFETY: `f` is the stream fopen returned above.
            unsafe { libc::fclose(f) };
            set_last_error("lcm_eventlog_create: out of memory");
            return std::ptr::null_mut();
        }
        // SAFETY: `log` is a fresh allocation of the right size and alignment (malloc's).
        unsafe { log.write(EventLog { f, eventcount: 0 }) };
        LOGS.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(HashSet::new).insert(log as usize);
        log
    })
}

/// `void lcm_eventlog_destroy(lcm_eventlog_t *)`: flushes, closes and frees; NULL or unknown pointers are ignored.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_destroy(log: *mut EventLog) {
    guard((), || {
        let removed =
            LOGS.lock().unwrap_or_else(PoisonError::into_inner).as_mut().is_some_and(|s| s.remove(&(log as usize)));
        if removed {
            // SAFETY: `log` is live (it was in LOGS): made by lcm_eventlog_create, with the stream it opened.
            unsafe {
                libc::fclose((*log).f);
                libc::free(log as *mut c_void);
            }
        }
    })
}

fn read_exact(f: *mut libc::FILE, buf: &mut [u8]) -> bool {
    // SAFETY: `buf` is writable for its length; `f` is a live stream (callers check the log).
    buf.is_empty() || unsafe { libc::fread(buf.as_mut_ptr() as *mut c_void, buf.len(), 1, f) } == 1
}

/// Moves the stream just past the next sync word; false at the end of the file.
fn sync(f: *mut libc::FILE) -> bool {
    let mut window = 0u32;
    loop {
        // SAFETY: `f` is a live stream.
        let c = unsafe { libc::fgetc(f) };
        if c == libc::EOF {
            return false;
        }
        window = (window << 8) | (c as u32 & 0xff);
        if window == SYNC {
            return true;
        }
    }
}

/// One event's header after the sync word (the stream is just past it), unless the file ends first.
fn header(f: *mut libc::FILE) -> Option<RawHeader> {
    let mut b = [0u8; HEADER_LEN];
    read_exact(f, &mut b[4..]).then(|| RawHeader::parse(&b))
}

fn malloc_bytes(len: usize) -> *mut u8 {
    // SAFETY: calloc of len + 1 bytes (room for a NUL; never a zero-size request); NULL is checked by callers.
    unsafe { libc::calloc(1, len + 1) as *mut u8 }
}

/// `lcm_eventlog_event_t *lcm_eventlog_read_next_event(lcm_eventlog_t *)`: the next event (free it with
/// `lcm_eventlog_free_event`), or NULL at the end of the log or on error. Damage between events is skipped.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_read_next_event(log: *mut EventLog) -> *mut Event {
    guard(std::ptr::null_mut(), || {
        if !live(log) {
            set_last_error("lcm_eventlog_read_next_event: not a live lcm_eventlog_t");
            return std::ptr::null_mut();
        }
        // SAFETY: live, so made by lcm_eventlog_create and not destroyed.
        let f = unsafe { (*log).f };
        loop {
            if !sync(f) {
                return std::ptr::null_mut();
            }
            // SAFETY: `f` is a live stream.
            let after_sync = unsafe { sys::ftello(f) };
            let Some(RawHeader { number: eventnum, utime: timestamp, channel_len: channellen, data_len: datalen }) =
                header(f)
            else {
                return std::ptr::null_mut();
            };
            if !(1..MAX_CHANNEL_LEN).contains(&channellen) || datalen < 0 {
                // Not an event after all (a sync word inside data, or damage): look again from just after it.
                // SAFETY: `f` is a live stream; `after_sync` came from ftello on it.
                unsafe { sys::fseeko(f, after_sync, libc::SEEK_SET) };
                continue;
            }
            let channel = malloc_bytes(channellen as usize);
            let data = malloc_bytes(datalen as usize);
            // SAFETY: malloc of the struct's size, checked below.
            let event = unsafe { libc::malloc(std::mem::size_of::<Event>()) } as *mut Event;
            let free_all = || {
                // SAFETY: each is NULL or a fresh allocation of ours; free(NULL) does nothing.
                unsafe {
                    libc::free(channel as *mut c_void);
                    libc::free(data as *mut c_void);
                    libc::free(event as *mut c_void);
                }
            };
            if channel.is_null() || data.is_null() || event.is_null() {
                free_all();
                set_last_error("lcm_eventlog_read_next_event: out of memory");
                return std::ptr::null_mut();
            }
            // SAFETY: each buffer was allocated with room for its length (plus a NUL, zeroed by calloc).
            let (name, bytes) = unsafe {
                (
                    std::slice::from_raw_parts_mut(channel, channellen as usize),
                    std::slice::from_raw_parts_mut(data, datalen as usize),
                )
            };
            if !read_exact(f, name) || !read_exact(f, bytes) {
                // A truncated last event is the end of the log.
                free_all();
                return std::ptr::null_mut();
            }
            // As LCM does: an event must be followed by the end of the file or by the next sync word; otherwise
            // its lengths were damaged, the event is not trusted, and reading stops here. (nerve.h's log reader
            // is the one that skips damage and reports it.)
            let mut next = [0u8; 4];
            if read_exact(f, &mut next) {
                if u32::from_be_bytes(next) != SYNC {
                    free_all();
                    set_last_error("lcm_eventlog_read_next_event: invalid header after log data");
                    return std::ptr::null_mut();
                }
                // SAFETY: `f` is a live stream; back to the sync word just read.
                unsafe { sys::fseeko(f, -4, libc::SEEK_CUR) };
            }
            // SAFETY: `event` is a fresh allocation of the struct's size (malloc's alignment).
            unsafe {
                event.write(Event {
                    eventnum,
                    timestamp,
                    channellen,
                    datalen,
                    channel: channel as *mut c_char,
                    data: data as *mut c_void,
                })
            };
            return event;
        }
    })
}

/// `void lcm_eventlog_free_event(lcm_eventlog_event_t *)`: frees an event `lcm_eventlog_read_next_event` returned.
///
/// # Safety
///
/// `event` is NULL or an event returned by `lcm_eventlog_read_next_event` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_free_event(event: *mut Event) {
    guard((), || {
        if event.is_null() {
            return;
        }
        // SAFETY: the caller promises an event of ours, whose fields we allocated with malloc.
        unsafe {
            libc::free((*event).channel as *mut c_void);
            libc::free((*event).data);
            libc::free(event as *mut c_void);
        }
    })
}

fn write_all(f: *mut libc::FILE, bytes: &[u8]) -> bool {
    // SAFETY: `bytes` is readable for its length; `f` is a live stream.
    bytes.is_empty() || unsafe { libc::fwrite(bytes.as_ptr() as *const c_void, bytes.len(), 1, f) } == 1
}

/// `int lcm_eventlog_write_event(lcm_eventlog_t *, lcm_eventlog_event_t *)`: appends the event, numbered by the
/// log's own count (which it stores in `event->eventnum`, as LCM does); 0, or -1 on error.
///
/// # Safety
///
/// `event` is NULL or points to an event whose `channel` holds `channellen` bytes and `data` `datalen` bytes.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_write_event(log: *mut EventLog, event: *mut Event) -> c_int {
    guard(-1, || {
        if !live(log) || event.is_null() {
            set_last_error("lcm_eventlog_write_event: not a live lcm_eventlog_t, or the event is NULL");
            return -1;
        }
        // SAFETY: `event` is not NULL and the caller promises a valid event; `log` is live.
        let (e, log) = unsafe { (&mut *event, &mut *log) };
        if e.channellen < 0
            || e.datalen < 0
            || (e.channellen > 0 && e.channel.is_null())
            || (e.datalen > 0 && e.data.is_null())
        {
            set_last_error("lcm_eventlog_write_event: negative length or NULL channel/data");
            return -1;
        }
        // SAFETY: checked non-NULL when non-empty; the caller promises the lengths are readable.
        let (name, data): (&[u8], &[u8]) = unsafe {
            (
                if e.channellen == 0 {
                    &[]
                } else {
                    std::slice::from_raw_parts(e.channel as *const u8, e.channellen as usize)
                },
                if e.datalen == 0 { &[] } else { std::slice::from_raw_parts(e.data as *const u8, e.datalen as usize) },
            )
        };
        let mut head = [0u8; HEADER_LEN];
        encode_header(&mut head, log.eventcount, e.timestamp, name.len(), data.len());
        if !(write_all(log.f, &head) && write_all(log.f, name) && write_all(log.f, data)) {
            set_last_error(format!("lcm_eventlog_write_event: {}", std::io::Error::last_os_error()));
            return -1;
        }
        e.eventnum = log.eventcount;
        log.eventcount += 1;
        0
    })
}

/// The timestamp of the event at or after the stream's position, leaving the stream at that event's sync word.
fn next_event_time(f: *mut libc::FILE) -> Option<i64> {
    if !sync(f) {
        return None;
    }
    let timestamp = header(f)?.utime;
    // SAFETY: `f` is a live stream; back over the header, its sync word included.
    unsafe { sys::fseeko(f, -(HEADER_LEN as sys::Offset), libc::SEEK_CUR) };
    Some(timestamp)
}

/// `int lcm_eventlog_seek_to_timestamp(lcm_eventlog_t *, int64_t ts)`: positions the log at an event whose
/// timestamp is near `ts` (a bisection over file offsets, as LCM does: exact only for logs in time order); 0, or
/// -1 on error (`ts` past the end among them).
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_eventlog_seek_to_timestamp(log: *mut EventLog, ts: i64) -> c_int {
    guard(-1, || {
        if !live(log) {
            set_last_error("lcm_eventlog_seek_to_timestamp: not a live lcm_eventlog_t");
            return -1;
        }
        // SAFETY: live, so made by lcm_eventlog_create and not destroyed.
        let f = unsafe { (*log).f };
        // SAFETY: `f` is a live stream.
        let len = unsafe {
            sys::fseeko(f, 0, libc::SEEK_END);
            sys::ftello(f)
        };
        let (mut low, mut high, mut previous) = (0.0f64, 1.0f64, -1.0f64);
        loop {
            let frac = 0.5 * (low + high);
            // SAFETY: `f` is a live stream; the offset is within the file.
            unsafe { sys::fseeko(f, (frac * len as f64) as sys::Offset, libc::SEEK_SET) };
            let Some(t) = next_event_time(f) else { return -1 };
            if low >= high || (frac - previous).abs() < 1e-12 || t == ts {
                return 0;
            }
            if t < ts {
                low = frac;
            } else {
                high = frac;
            }
            previous = frac;
        }
    })
}

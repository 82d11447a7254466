//! nerve.h's status codes and enum values, and the names `nerve_status_string` gives them.

use std::ffi::{c_int, CStr};

/// Success.
pub const NERVE_OK: c_int = 0;
/// Nothing new (a get without waiting).
pub const NERVE_NOTHING_NEW: c_int = 1;
/// A wait ended with nothing new.
pub const NERVE_TIMED_OUT: c_int = 2;
/// The buffer is too small; nothing lost.
pub const NERVE_BUFFER_TOO_SMALL: c_int = 3;
/// End of a log.
pub const NERVE_END: c_int = 4;
/// A view's frame was reclaimed by a writer (or the channel file shrank): its bytes are no longer the message's.
pub const NERVE_OVERWRITTEN: c_int = 5;
/// Invalid argument or handle.
pub const NERVE_E_INVALID: c_int = -1;
/// Not found.
pub const NERVE_E_NOT_FOUND: c_int = -2;
/// Exists.
pub const NERVE_E_EXISTS: c_int = -3;
/// Permission denied.
pub const NERVE_E_PERMISSION: c_int = -4;
/// Not a channel, truncated or corrupt.
pub const NERVE_E_BAD_FILE: c_int = -5;
/// Too large.
pub const NERVE_E_TOO_LARGE: c_int = -6;
/// A system call failed.
pub const NERVE_E_IO: c_int = -7;
/// The writer lock is held by this thread.
pub const NERVE_E_BUSY: c_int = -8;
/// A bug.
pub const NERVE_E_INTERNAL: c_int = -9;

/// `NERVE_CREATE_NEW`.
pub const NERVE_CREATE_NEW: c_int = 0;
/// `NERVE_CREATE_OR_OPEN`.
pub const NERVE_CREATE_OR_OPEN: c_int = 1;
/// `NERVE_START_NEWEST`.
pub const NERVE_START_NEWEST: c_int = 0;
/// `NERVE_START_OLDEST`.
pub const NERVE_START_OLDEST: c_int = 1;
/// `NERVE_START_NEXT`.
pub const NERVE_START_NEXT: c_int = 2;
/// `NERVE_READ_NEXT`.
pub const NERVE_READ_NEXT: c_int = 0;
/// `NERVE_READ_NEWEST`.
pub const NERVE_READ_NEWEST: c_int = 1;
/// `NERVE_LOG_CREATE`.
pub const NERVE_LOG_CREATE: c_int = 0;
/// `NERVE_LOG_OVERWRITE`.
pub const NERVE_LOG_OVERWRITE: c_int = 1;
/// `NERVE_LOG_APPEND`.
pub const NERVE_LOG_APPEND: c_int = 2;

/// `NERVE_DROP_OLDEST`: a full subscription queue drops its oldest message.
pub const NERVE_DROP_OLDEST: c_int = 0;
/// `NERVE_DROP_NEWEST`: a full subscription queue drops the arriving message (LCM's way).
pub const NERVE_DROP_NEWEST: c_int = 1;

/// The name of a status, or "unknown status".
pub fn status_name(status: c_int) -> &'static CStr {
    match status {
        NERVE_OK => c"NERVE_OK",
        NERVE_NOTHING_NEW => c"NERVE_NOTHING_NEW",
        NERVE_TIMED_OUT => c"NERVE_TIMED_OUT",
        NERVE_BUFFER_TOO_SMALL => c"NERVE_BUFFER_TOO_SMALL",
        NERVE_END => c"NERVE_END",
        NERVE_OVERWRITTEN => c"NERVE_OVERWRITTEN",
        NERVE_E_INVALID => c"NERVE_E_INVALID",
        NERVE_E_NOT_FOUND => c"NERVE_E_NOT_FOUND",
        NERVE_E_EXISTS => c"NERVE_E_EXISTS",
        NERVE_E_PERMISSION => c"NERVE_E_PERMISSION",
        NERVE_E_BAD_FILE => c"NERVE_E_BAD_FILE",
        NERVE_E_TOO_LARGE => c"NERVE_E_TOO_LARGE",
        NERVE_E_IO => c"NERVE_E_IO",
        NERVE_E_BUSY => c"NERVE_E_BUSY",
        NERVE_E_INTERNAL => c"NERVE_E_INTERNAL",
        _ => c"unknown status",
    }
}

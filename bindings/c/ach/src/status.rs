//! Ach's status codes (`enum ach_status`, Ach's values), their names (`ach_result_to_string`) and the status of
//! each nerve-shm error.

use std::ffi::{c_int, CStr};

use nerve_shm::ShmError;

/// Call successful.
pub const ACH_OK: c_int = 0;
/// Buffer or frame too small for the message.
pub const ACH_OVERFLOW: c_int = 1;
/// Invalid channel name.
pub const ACH_INVALID_NAME: c_int = 2;
/// The channel file is not a channel.
pub const ACH_BAD_SHM_FILE: c_int = 3;
/// A system call failed.
pub const ACH_FAILED_SYSCALL: c_int = 4;
/// No new data (`ACH_EAGAIN`).
pub const ACH_STALE_FRAMES: c_int = 5;
/// Frames were skipped.
pub const ACH_MISSED_FRAME: c_int = 6;
/// Nothing came before the timeout.
pub const ACH_TIMEOUT: c_int = 7;
/// The channel exists.
pub const ACH_EEXIST: c_int = 8;
/// The channel does not exist.
pub const ACH_ENOENT: c_int = 9;
/// Unused.
pub const ACH_CLOSED: c_int = 10;
/// Internal error.
pub const ACH_BUG: c_int = 11;
/// Invalid argument.
pub const ACH_EINVAL: c_int = 12;
/// The channel file holds values no channel can have.
pub const ACH_CORRUPT: c_int = 13;
/// Unused.
pub const ACH_BAD_HEADER: c_int = 14;
/// Permission denied.
pub const ACH_EACCES: c_int = 15;
/// Canceled.
pub const ACH_CANCELED: c_int = 16;
/// Unused.
pub const ACH_EFAULT: c_int = 17;
/// Never returned.
pub const ACH_EINTR: c_int = 18;
/// Not supported here.
pub const ACH_ENOTSUP: c_int = 19;

const NAMES: [&CStr; 20] = [
    c"ACH_OK",
    c"ACH_OVERFLOW",
    c"ACH_INVALID_NAME",
    c"ACH_BAD_SHM_FILE",
    c"ACH_FAILED_SYSCALL",
    c"ACH_STALE_FRAMES",
    c"ACH_MISSED_FRAME",
    c"ACH_TIMEOUT",
    c"ACH_EEXIST",
    c"ACH_ENOENT",
    c"ACH_CLOSED",
    c"ACH_BUG",
    c"ACH_EINVAL",
    c"ACH_CORRUPT",
    c"ACH_BAD_HEADER",
    c"ACH_EACCES",
    c"ACH_CANCELED",
    c"ACH_EFAULT",
    c"ACH_EINTR",
    c"ACH_ENOTSUP",
];

/// The name of a status code, or `UNKNOWN`.
pub fn status_name(status: c_int) -> &'static CStr {
    usize::try_from(status).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or(c"UNKNOWN")
}

/// The Ach status of a nerve-shm error.
pub fn status_of(e: &ShmError) -> c_int {
    match e {
        ShmError::InvalidName { .. } => ACH_INVALID_NAME,
        ShmError::InvalidConfig { .. } => ACH_EINVAL,
        ShmError::NotFound { .. } => ACH_ENOENT,
        ShmError::AlreadyExists { .. } | ShmError::SizeMismatch { .. } => ACH_EEXIST,
        ShmError::PermissionDenied { .. } => ACH_EACCES,
        ShmError::NotAChannel { .. } | ShmError::UnsupportedVersion { .. } | ShmError::Truncated { .. } => {
            ACH_BAD_SHM_FILE
        }
        ShmError::Corrupt { .. } => ACH_CORRUPT,
        ShmError::MessageTooLarge { .. } => ACH_OVERFLOW,
        ShmError::Lock { .. } | ShmError::Io { .. } => ACH_FAILED_SYSCALL,
        _ => ACH_BUG,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_values() {
        assert_eq!(status_name(ACH_OK), c"ACH_OK");
        assert_eq!(status_name(ACH_STALE_FRAMES), c"ACH_STALE_FRAMES");
        assert_eq!(status_name(ACH_ENOTSUP), c"ACH_ENOTSUP");
        assert_eq!(status_name(20), c"UNKNOWN");
        assert_eq!(status_name(-1), c"UNKNOWN");
    }
}

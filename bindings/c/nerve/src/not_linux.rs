//! What stands in for nerve.h's shared-memory channels elsewhere (Windows, macOS, the BSDs): nerve-shm's channels are
//! built on Linux's futexes and /dev/shm. Every channel entry point is still exported, so nerve.h and a program's
//! link are the same everywhere, and each fails with `NERVE_E_INVALID` and, as `nerve_last_error()`, the bus's own
//! refusal of `shm://` naming the transports that work here (the bus, logs and everything else in nerve.h work).

use std::ffi::{c_char, c_int, c_void};

use nerve_c_common::{guard, shm_unavailable};

use super::status::*;
use super::{fail, NerveChannelStats, NerveMessageInfo, NerveViewHandler};

/// The status and last error of every channel entry point here.
fn refuse() -> c_int {
    fail(NERVE_E_INVALID, shm_unavailable())
}

macro_rules! refused {
    ($($name:ident($($arg:ty),*);)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: fails here, as shared-memory channels are Linux only.")]
        ///
        /// # Safety
        ///
        /// Any arguments are accepted: none is read.
        #[no_mangle]
        pub unsafe extern "C" fn $name($(_: $arg),*) -> c_int {
            guard(NERVE_E_INTERNAL, refuse)
        }
    )*};
}

refused! {
    nerve_channel_create(*const c_char, u64, u64, u32, *const c_char, c_int, *mut *mut c_void);
    nerve_channel_open(*const c_char, *const c_char, c_int, *mut *mut c_void);
    nerve_channel_close(*mut c_void);
    nerve_channel_remove(*const c_char, *const c_char);
    nerve_channel_sizes(*const c_void, *mut u64, *mut u64);
    nerve_channel_put(*mut c_void, *const c_void, usize, *mut u64);
    nerve_channel_loan(*mut c_void, usize, *mut *mut c_void, *mut *mut c_void);
    nerve_loan_commit(*mut c_void, *mut u64);
    nerve_loan_abort(*mut c_void);
    nerve_channel_get(*mut c_void, *mut c_void, usize, c_int, i64, *mut NerveMessageInfo);
    nerve_channel_view(*mut c_void, c_int, i64, *mut *mut c_void, *mut *const c_void, *mut usize, *mut NerveMessageInfo);
    nerve_view_check(*const c_void);
    nerve_view_release(*mut c_void);
    nerve_shm_subscribe_views(*const c_char, *const c_char, Option<NerveViewHandler>, *mut c_void, *mut *mut c_void);
    nerve_view_subscription_close(*mut c_void);
    nerve_channel_skip_to_newest(*mut c_void);
    nerve_channel_stats_get(*const c_void, *mut NerveChannelStats);
}

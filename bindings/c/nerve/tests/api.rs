//! nerve.h's entry points called from Rust as C calls them: a put/get round trip, a loan, the bus (delivery, capacity,
//! stats), and NULL, garbage and closed handles refused with NERVE_E_INVALID. (nerve_programs.c and the bus programs,
//! run under ASan and UBSan by tests/interop/test_nerve_c.py and test_nerve_bus_c.py, cover the rest from C.)

#![allow(unsafe_code)] // Calling the C ABI is what this file tests.

use std::ffi::{c_void, CString};

use nerve::status::*;
use nerve::*;

#[test]
fn a_round_trip_a_loan_and_hostile_handles() {
    let dir = std::env::temp_dir().join(format!("nerve-c-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_c = CString::new(dir.to_str().unwrap()).unwrap();
    let name = CString::new("api").unwrap();
    let mut ch: *mut c_void = std::ptr::null_mut();
    let mut info = NerveMessageInfo::default();
    let mut buf = [0u8; 16];
    // SAFETY: every pointer handed over is valid for what nerve.h says the function does with it.
    unsafe {
        assert_eq!(
            nerve_channel_create(name.as_ptr(), 4, 16, 0o600, dir_c.as_ptr(), NERVE_CREATE_NEW, &mut ch),
            NERVE_OK
        );
        assert_eq!(nerve_channel_put(ch, b"abc".as_ptr().cast(), 3, std::ptr::null_mut()), NERVE_OK);
        let get = |ch, buf: &mut [u8], info: &mut NerveMessageInfo| {
            nerve_channel_get(ch, buf.as_mut_ptr().cast(), buf.len(), NERVE_READ_NEXT, 0, info)
        };
        assert_eq!(get(ch, &mut buf[..1], &mut info), NERVE_BUFFER_TOO_SMALL);
        assert_eq!(info.len, 3);
        assert_eq!(get(ch, &mut buf, &mut info), NERVE_OK);
        assert_eq!((&buf[..3], info.seq), (&b"abc"[..], 1));

        let (mut data, mut loan): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(nerve_channel_loan(ch, 2, &mut data, &mut loan), NERVE_OK);
        std::ptr::copy_nonoverlapping(b"hi".as_ptr(), data.cast::<u8>(), 2);
        let mut seq = 0u64;
        assert_eq!(nerve_loan_commit(loan, &mut seq), NERVE_OK);
        assert_eq!(get(ch, &mut buf, &mut info), NERVE_OK);
        assert_eq!((&buf[..2], info.seq, seq), (&b"hi"[..], 2, 2));
        assert_eq!(nerve_loan_abort(loan), NERVE_E_INVALID);

        assert_eq!(nerve_channel_close(ch), NERVE_OK);
        let mut garbage = [0xabu8; 64];
        for h in [ch, std::ptr::null_mut(), garbage.as_mut_ptr().cast()] {
            assert_eq!(get(h, &mut buf, &mut info), NERVE_E_INVALID);
            assert_eq!(nerve_channel_close(h), NERVE_E_INVALID);
            assert_eq!(nerve_log_reader_close(h), NERVE_E_INVALID);
            assert_eq!(nerve_log_writer_close(h), NERVE_E_INVALID);
        }
        assert!(std::ffi::CStr::from_ptr(nerve_last_error()).to_bytes().ends_with(b"not open"));
        assert_eq!(nerve_channel_remove(name.as_ptr(), dir_c.as_ptr()), NERVE_OK);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The bus handler of the test below: counts messages into the `usize` behind `user`.
unsafe extern "C" fn count(msg: *const bus::NerveReceived, user: *mut c_void) {
    // SAFETY: libnerve passes a valid message; `user` is the test's counter, alive for the subscription.
    unsafe {
        assert_eq!(std::slice::from_raw_parts((*msg).data.cast::<u8>(), (*msg).len), b"xy");
        *user.cast::<usize>() += 1;
    }
}

#[test]
fn the_bus_delivers_counts_and_refuses_hostile_handles() {
    use bus::*;
    let (mut b, mut sub): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    let mut n = 0usize;
    let mut stats = NerveSubscriptionStats { received: 0, delivered: 0, dropped: 0, queued: 0 };
    let garbage = [0x5au8; 64];
    let g = garbage.as_ptr() as *mut c_void;
    // SAFETY: every pointer handed over is valid for what nerve.h says the function does with it, or is one the
    // function must refuse without dereferencing (NULL, garbage).
    unsafe {
        assert_eq!(nerve_bus_open(c"inproc://".as_ptr(), &mut b), NERVE_OK);
        let user = (&mut n as *mut usize).cast();
        assert_eq!(nerve_bus_subscribe(b, c"X".as_ptr(), 1, NERVE_DROP_OLDEST, Some(count), user, &mut sub), NERVE_OK);
        for _ in 0..3 {
            assert_eq!(nerve_bus_publish(b, c"X".as_ptr(), b"xy".as_ptr().cast(), 2), NERVE_OK);
        }
        assert_eq!(nerve_bus_handle_timeout(b, 1_000_000_000), NERVE_OK);
        assert_eq!(nerve_bus_handle_timeout(b, 0), NERVE_TIMED_OUT);
        assert_eq!(n, 1, "capacity 1 keeps one of three");
        assert_eq!(nerve_subscription_stats_get(sub, &mut stats), NERVE_OK);
        assert_eq!((stats.received, stats.delivered, stats.dropped, stats.queued), (3, 1, 2, 0));

        assert_eq!(nerve_bus_open(c"nope://".as_ptr(), &mut b.clone()), NERVE_E_INVALID);
        assert_eq!(nerve_bus_publish(g, c"X".as_ptr(), std::ptr::null(), 0), NERVE_E_INVALID);
        assert_eq!(nerve_bus_handle(std::ptr::null_mut()), NERVE_E_INVALID);
        assert_eq!(nerve_bus_unsubscribe(b, g), NERVE_E_INVALID);
        assert_eq!(nerve_subscription_set_capacity(g, 1), NERVE_E_INVALID);
        assert_eq!(nerve_bus_subscribe(b, c"X".as_ptr(), 1, 9, Some(count), user, &mut sub), NERVE_E_INVALID);
        assert_eq!(nerve_bus_close(b), NERVE_OK);
        assert_eq!(nerve_subscription_stats_get(sub, &mut stats), NERVE_E_INVALID, "closing ended it");
        assert_eq!(nerve_bus_close(b), NERVE_E_INVALID);
    }
}

#[test]
fn a_view_is_the_frame_in_place_until_overwritten_and_released_once() {
    let dir = std::env::temp_dir().join(format!("nerve-c-api-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_c = CString::new(dir.to_str().unwrap()).unwrap();
    let mut ch: *mut c_void = std::ptr::null_mut();
    let mut view: *mut c_void = std::ptr::null_mut();
    let mut data: *const c_void = std::ptr::null();
    let mut len = 0usize;
    let mut info = NerveMessageInfo::default();
    let garbage = [0x5au8; 64];
    let g = garbage.as_ptr() as *mut c_void;
    // SAFETY: every pointer handed over is valid for what nerve.h says the function does with it, or is one the
    // function must refuse without dereferencing (NULL, garbage, released).
    unsafe {
        assert_eq!(
            nerve_channel_create(c"v".as_ptr(), 2, 64, 0o600, dir_c.as_ptr(), NERVE_CREATE_NEW, &mut ch),
            NERVE_OK
        );
        assert_eq!(nerve_channel_put(ch, [7u8; 64].as_ptr().cast(), 64, std::ptr::null_mut()), NERVE_OK);
        assert_eq!(nerve_channel_view(ch, NERVE_READ_NEWEST, 0, &mut view, &mut data, &mut len, &mut info), NERVE_OK);
        assert_eq!((len, info.seq, info.len), (64, 1, 64));
        assert_eq!(std::slice::from_raw_parts(data.cast::<u8>(), len), &[7u8; 64]);
        assert_eq!(nerve_view_check(view), NERVE_OK);
        // A 2-frame channel keeps a data ring of 3 frames: the third put after it reclaims the frame.
        for i in 0..3u8 {
            assert_eq!(nerve_channel_put(ch, [i; 64].as_ptr().cast(), 64, std::ptr::null_mut()), NERVE_OK);
        }
        assert_eq!(nerve_view_check(view), NERVE_OVERWRITTEN);
        assert_eq!(std::ffi::CStr::from_ptr(nerve_status_string(NERVE_OVERWRITTEN)).to_bytes(), b"NERVE_OVERWRITTEN");
        assert_eq!(nerve_view_release(view), NERVE_OK);
        assert_eq!(nerve_view_release(view), NERVE_E_INVALID, "a double release is refused");
        assert_eq!(nerve_view_check(view), NERVE_E_INVALID);
        for bad in [std::ptr::null_mut(), g, ch] {
            assert_eq!(nerve_view_check(bad), NERVE_E_INVALID);
            assert_eq!(nerve_view_release(bad), NERVE_E_INVALID);
        }
        let null_out = std::ptr::null_mut();
        assert_eq!(
            nerve_channel_view(ch, NERVE_READ_NEWEST, 0, null_out, &mut data, &mut len, &mut info),
            NERVE_E_INVALID
        );
        assert_eq!(
            nerve_channel_view(ch, NERVE_READ_NEWEST, 0, &mut view, std::ptr::null_mut(), &mut len, &mut info),
            NERVE_E_INVALID
        );
        assert_eq!(nerve_channel_view(ch, 9, 0, &mut view, &mut data, &mut len, &mut info), NERVE_E_INVALID);
        assert_eq!(
            nerve_channel_view(g, NERVE_READ_NEXT, 0, &mut view, &mut data, &mut len, &mut info),
            NERVE_E_INVALID
        );
        // A view outlives the channel handle it came from.
        let (mut kept, mut kept_data) = (std::ptr::null_mut(), std::ptr::null());
        assert_eq!(
            nerve_channel_view(ch, NERVE_READ_NEWEST, 0, &mut kept, &mut kept_data, &mut len, std::ptr::null_mut()),
            NERVE_OK
        );
        assert_eq!(
            nerve_channel_view(ch, NERVE_READ_NEXT, 0, &mut view, &mut data, &mut len, &mut info),
            NERVE_NOTHING_NEW
        );
        assert_eq!(nerve_channel_close(ch), NERVE_OK);
        assert_eq!(
            nerve_channel_view(ch, NERVE_READ_NEXT, 0, &mut view, &mut data, &mut len, &mut info),
            NERVE_E_INVALID
        );
        assert_eq!(std::slice::from_raw_parts(kept_data.cast::<u8>(), 64), &[2u8; 64]);
        assert_eq!(nerve_view_check(kept), NERVE_OK);
        assert_eq!(nerve_view_release(kept), NERVE_OK);
        assert_eq!(nerve_channel_remove(c"v".as_ptr(), dir_c.as_ptr()), NERVE_OK);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// What the view handler of the test below saw: per message its sequence number, whether its view still held it
/// when handed over, and the view itself (kept, released at the end).
struct Seen {
    got: std::sync::Mutex<Vec<(u64, i32, usize)>>,
    hold_first: std::sync::Mutex<()>,
}

unsafe extern "C" fn on_view(
    channel: *const std::ffi::c_char,
    view: *mut c_void,
    data: *const c_void,
    info: *const NerveMessageInfo,
    user: *mut c_void,
) {
    // SAFETY: nerve.h: the channel, info and data are valid during the call; `user` is the test's `Seen`.
    unsafe {
        assert_eq!(std::ffi::CStr::from_ptr(channel).to_str(), Ok("pose"));
        let seen = &*(user as *const Seen);
        let seq = (*info).seq;
        if seq == 1 {
            drop(seen.hold_first.lock()); // a slow handler: it waits while the test's writer laps the ring
        }
        let first = *data.cast::<u8>();
        let status = nerve_view_check(view);
        assert!(status != NERVE_OK || u64::from(first) == seq, "an intact view holds its message");
        seen.got.lock().unwrap().push((seq, status, view as usize));
    }
}

#[test]
fn a_view_subscription_hands_views_over_and_a_lapping_writer_never_waits() {
    let dir = std::env::temp_dir().join(format!("nerve-c-api-viewsub-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_c = CString::new(dir.to_str().unwrap()).unwrap();
    let seen = Seen { got: std::sync::Mutex::new(Vec::new()), hold_first: std::sync::Mutex::new(()) };
    let mut ch: *mut c_void = std::ptr::null_mut();
    let mut sub: *mut c_void = std::ptr::null_mut();
    let user = &seen as *const Seen as *mut c_void;
    // SAFETY: every pointer handed over is valid for what nerve.h says the function does with it, or is one the
    // function must refuse (NULL, garbage, closed); `seen` outlives the subscription.
    unsafe {
        assert_eq!(
            nerve_channel_create(c"pose".as_ptr(), 4, 64, 0o600, dir_c.as_ptr(), NERVE_CREATE_NEW, &mut ch),
            NERVE_OK
        );
        assert_eq!(
            nerve_shm_subscribe_views(dir_c.as_ptr(), c"(".as_ptr(), Some(on_view), user, &mut sub),
            NERVE_E_INVALID
        );
        assert_eq!(nerve_shm_subscribe_views(dir_c.as_ptr(), c"pose".as_ptr(), None, user, &mut sub), NERVE_E_INVALID);
        assert_eq!(
            nerve_shm_subscribe_views(dir_c.as_ptr(), c"pose".as_ptr(), Some(on_view), user, std::ptr::null_mut()),
            NERVE_E_INVALID
        );
        assert_eq!(
            nerve_shm_subscribe_views(dir_c.as_ptr(), c"pose".as_ptr(), Some(on_view), user, &mut sub),
            NERVE_OK
        );
        let hold = seen.hold_first.lock().unwrap();
        assert_eq!(nerve_channel_put(ch, [1u8; 64].as_ptr().cast(), 64, std::ptr::null_mut()), NERVE_OK);
        std::thread::sleep(std::time::Duration::from_millis(200)); // the handler is waiting inside message 1
        let t = std::time::Instant::now();
        for i in 2..=20u8 {
            assert_eq!(nerve_channel_put(ch, [i; 64].as_ptr().cast(), 64, std::ptr::null_mut()), NERVE_OK);
        }
        assert!(t.elapsed() < std::time::Duration::from_millis(100), "the writer never waits for a view");
        drop(hold);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while seen.got.lock().unwrap().last().map(|g| g.0) != Some(20) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(nerve_view_subscription_close(sub), NERVE_OK);
        assert_eq!(nerve_view_subscription_close(sub), NERVE_E_INVALID, "a second close is refused");
        let got = seen.got.lock().unwrap();
        assert_eq!(got[0].0, 1);
        assert_eq!(got[0].1, NERVE_OVERWRITTEN, "message 1 was overwritten while the handler held it");
        assert_eq!(got.last().map(|g| (g.0, g.1)), Some((20, NERVE_OK)), "the newest arrives intact: {got:?}");
        assert!(got.windows(2).all(|p| p[0].0 < p[1].0), "in order: {got:?}");
        for &(_, _, view) in got.iter() {
            assert_eq!(nerve_view_release(view as *mut c_void), NERVE_OK, "each view is the handler's to release");
        }
        assert_eq!(nerve_channel_close(ch), NERVE_OK);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A handler that closes its own subscription: `user` points at the subscription's handle.
unsafe extern "C" fn close_self(
    _channel: *const std::ffi::c_char,
    view: *mut c_void,
    _data: *const c_void,
    _info: *const NerveMessageInfo,
    user: *mut c_void,
) {
    // SAFETY: `user` is the test's `AtomicPtr` holding the subscription; the view is the handler's.
    unsafe {
        let sub = &*(user as *const std::sync::atomic::AtomicPtr<c_void>);
        let status = nerve_view_subscription_close(sub.swap(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst));
        assert_eq!(status, NERVE_OK, "a handler may close its own subscription");
        assert_eq!(nerve_view_release(view), NERVE_OK);
    }
}

#[test]
fn a_view_handler_may_close_its_own_subscription() {
    let dir = std::env::temp_dir().join(format!("nerve-c-api-viewclose-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_c = CString::new(dir.to_str().unwrap()).unwrap();
    let slot = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
    let mut ch: *mut c_void = std::ptr::null_mut();
    let mut sub: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid pointers throughout; `slot` outlives the subscription (the handler closes it).
    unsafe {
        assert_eq!(
            nerve_channel_create(c"cmd".as_ptr(), 4, 64, 0o600, dir_c.as_ptr(), NERVE_CREATE_NEW, &mut ch),
            NERVE_OK
        );
        let user = &slot as *const _ as *mut c_void;
        assert_eq!(
            nerve_shm_subscribe_views(dir_c.as_ptr(), c"cmd".as_ptr(), Some(close_self), user, &mut sub),
            NERVE_OK
        );
        slot.store(sub, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(nerve_channel_put(ch, [1u8; 8].as_ptr().cast(), 8, std::ptr::null_mut()), NERVE_OK);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !slot.load(std::sync::atomic::Ordering::SeqCst).is_null() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(slot.load(std::sync::atomic::Ordering::SeqCst).is_null(), "the handler ran and closed it");
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(nerve_view_subscription_close(sub), NERVE_E_INVALID, "closed already");
        assert_eq!(nerve_channel_close(ch), NERVE_OK);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

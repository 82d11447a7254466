//! The C entry points called from Rust, as C would call them: a round trip with Ach's statuses, and handles that are
//! NULL, zeroed, garbage or closed refused with ACH_EINVAL. (The C programs in ach_programs.c, run under ASan and
//! UBSan by tests/interop/test_ach.py, cover every flag and process scenario.)

#![allow(unsafe_code)] // Calling the C ABI is what this file tests.

use std::ffi::{c_void, CString};
use std::mem::MaybeUninit;

use ach::layout::AchChannelT;
use ach::status::*;
use ach::*;

fn channel_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nerve-ach-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Set before any channel call, in the one test of this binary that uses channels.
    std::env::set_var("NERVE_SHM_DIR", &dir);
    dir
}

#[test]
fn a_round_trip_and_hostile_handles() {
    let dir = channel_dir();
    let name = CString::new("api").unwrap();
    let mut chan = MaybeUninit::<AchChannelT>::zeroed();
    let c = chan.as_mut_ptr();
    let mut buf = [0u8; 16];
    let mut n = 0usize;
    // SAFETY: every pointer handed over is valid for what ach.h says the function does with it.
    unsafe {
        assert_eq!(ach_create(name.as_ptr(), 4, 16, std::ptr::null_mut()), ACH_OK);
        assert_eq!(ach_open(c, name.as_ptr(), std::ptr::null_mut()), ACH_OK);
        let get = |c, buf: &mut [u8], n: &mut usize, opts| {
            ach_get(c, buf.as_mut_ptr().cast(), buf.len(), n, std::ptr::null(), opts)
        };
        assert_eq!(get(c, &mut buf, &mut n, 0), ACH_STALE_FRAMES);
        assert_eq!(ach_put(c, b"hello".as_ptr().cast(), 5), ACH_OK);
        assert_eq!(get(c, &mut buf[..2], &mut n, 0), ACH_OVERFLOW);
        assert_eq!(n, 5);
        assert_eq!(get(c, &mut buf, &mut n, 0), ACH_OK);
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(ach_put(c, [0u8; 17].as_ptr().cast(), 17), ACH_OVERFLOW);
        assert_eq!(text(ach_result_to_string(ACH_MISSED_FRAME)), "ACH_MISSED_FRAME");
        assert!(text(ach_errstr()).contains("17 bytes"));

        // A copy of the open handle whose shm field holds a small number: what a slot handle of the pool looks like
        // unmixed (slot i, generation 0 is i + 1). The field is not taken at its word.
        for raw in 1..=8usize {
            let mut forged = std::ptr::read(c);
            forged.shm = raw as *mut c_void;
            assert_eq!(ach_put(&mut forged, b"x".as_ptr().cast::<c_void>(), 1), ACH_EINVAL, "shm = {raw}");
        }
        assert_eq!(get(c, &mut buf, &mut n, 0), ACH_STALE_FRAMES);
        assert_eq!(ach_close(c), ACH_OK);

        // Closed, zeroed, garbage and NULL handles.
        assert_eq!(get(c, &mut buf, &mut n, 0), ACH_EINVAL);
        let mut garbage = MaybeUninit::<AchChannelT>::uninit();
        std::ptr::write_bytes(garbage.as_mut_ptr(), 0xab, 1);
        let zeroed = MaybeUninit::<AchChannelT>::zeroed();
        for h in [garbage.as_mut_ptr(), zeroed.as_ptr().cast_mut(), std::ptr::null_mut()] {
            assert_eq!(get(h, &mut buf, &mut n, 0), ACH_EINVAL);
            assert_eq!(ach_put(h, b"x".as_ptr().cast::<c_void>(), 1), ACH_EINVAL);
            assert_eq!(ach_cancel(h, std::ptr::null()), ACH_EINVAL);
            assert_eq!(ach_close(h), ACH_EINVAL);
        }
        handles_run_out_at_the_limit_and_come_back(&name);
        assert_eq!(ach_unlink(std::ptr::null()), ACH_INVALID_NAME);
        assert_eq!(ach_unlink(name.as_ptr()), ACH_OK);
        assert_eq!(ach_unlink(name.as_ptr()), ACH_ENOENT);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `MAX_OPEN_HANDLES` handles open, the next `ach_open` refused with a reason, and a closed handle's place reused.
fn handles_run_out_at_the_limit_and_come_back(name: &CString) {
    // Each handle holds a descriptor: lift the soft limit to the hard one (the default soft limit is 1024).
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write one rlimit, a valid local.
    let lifted = unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
        }
    };
    if !lifted || lim.rlim_cur < MAX_OPEN_HANDLES as u64 + 64 {
        eprintln!("skipped: {MAX_OPEN_HANDLES} handles need as many descriptors; the hard limit is {}", lim.rlim_max);
        return;
    }
    let mut handles: Vec<Box<MaybeUninit<AchChannelT>>> = Vec::new();
    // SAFETY: every handle is a writable ach_channel_t that stays put in its Box; the name is NUL-terminated.
    unsafe {
        for _ in 0..MAX_OPEN_HANDLES {
            let mut h = Box::new(MaybeUninit::zeroed());
            assert_eq!(ach_open(h.as_mut_ptr(), name.as_ptr(), std::ptr::null_mut()), ACH_OK);
            handles.push(h);
        }
        let mut one_more = Box::new(MaybeUninit::<AchChannelT>::zeroed());
        assert_eq!(ach_open(one_more.as_mut_ptr(), name.as_ptr(), std::ptr::null_mut()), ACH_FAILED_SYSCALL);
        assert!(text(ach_errstr()).contains("4096 handles are open"), "{}", text(ach_errstr()));
        assert_eq!(ach_close(handles[100].as_mut_ptr()), ACH_OK);
        assert_eq!(ach_open(one_more.as_mut_ptr(), name.as_ptr(), std::ptr::null_mut()), ACH_OK);
        assert_eq!(ach_put(one_more.as_mut_ptr(), b"x".as_ptr().cast(), 1), ACH_OK);
        assert_eq!(ach_put(handles[100].as_mut_ptr(), b"x".as_ptr().cast(), 1), ACH_EINVAL);
        assert_eq!(ach_close(one_more.as_mut_ptr()), ACH_OK);
        for (i, h) in handles.iter_mut().enumerate() {
            assert_eq!(ach_close(h.as_mut_ptr()), if i == 100 { ACH_EINVAL } else { ACH_OK });
        }
    }
}

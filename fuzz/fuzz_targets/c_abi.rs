//! Fuzzes the C ABI entry points of libnerve (`nerve.h`) and libach (`ach.h`) that take bytes from a C caller:
//! channel names and payloads (create, open, put, get, remove; Ach's create, open, put, get, unlink) and log files
//! (the reader on arbitrary file contents, the writer with an arbitrary channel and payload, read back). Every call
//! must return a status, never panic or abort across the boundary; a message put and got back is the same bytes,
//! a log event written is read back as written, and an Ach handle whose `shm` field is forged from the input is
//! refused by every call.
#![no_main]

use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use ach::layout::AchChannelT;
use libfuzzer_sys::fuzz_target;
use nerve::status::*;
use nerve::{NerveLogEvent, NerveMessageInfo};

#[path = "common/scratch.rs"]
mod scratch;

fn dir() -> &'static (PathBuf, CString) {
    static DIR: OnceLock<(PathBuf, CString)> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = scratch::scratch_dir("cabi").clone();
        // Ach's API has no directory argument: it takes the channel directory from the environment. Set once, before
        // any other thread exists in this process.
        std::env::set_var("NERVE_SHM_DIR", &d);
        let c = CString::new(d.to_str().expect("a UTF-8 path")).expect("no NUL");
        (d, c)
    })
}

/// A C string from the input's first bytes (up to a NUL or 40 bytes): any bytes, valid UTF-8 or not.
fn name(bytes: &[u8]) -> CString {
    let end = bytes.iter().take(40).position(|&b| b == 0).unwrap_or(bytes.len().min(40));
    CString::new(&bytes[..end]).expect("no NUL before end")
}

fuzz_target!(|data: &[u8]| {
    let (dir, c_dir) = dir();
    let Some((&op, rest)) = data.split_first() else { return };
    let name = name(rest);
    let payload = rest;
    match op % 4 {
        // SAFETY: every pointer passed is NULL, a live local, or a C string / buffer that outlives the call, as nerve.h
        // asks; handles come from the library and are closed once.
        0 => unsafe {
            let mut ch = null_mut();
            let flags = i32::from(op / 4 % 3); // 2 is no enum value: refused
            let frames = 2 + u64::from(op % 7);
            let frame_size = 1 + (payload.len() as u64 % 512);
            if nerve::nerve_channel_create(name.as_ptr(), frames, frame_size, 0o600, c_dir.as_ptr(), flags, &mut ch)
                != NERVE_OK
            {
                return;
            }
            let mut seq = 0u64;
            let put = nerve::nerve_channel_put(ch, payload.as_ptr().cast(), payload.len(), &mut seq);
            let mut buf = vec![0u8; payload.len()];
            let mut info: NerveMessageInfo = std::mem::zeroed();
            let mode = i32::from(op / 16 % 3);
            let got = nerve::nerve_channel_get(ch, buf.as_mut_ptr().cast(), buf.len(), mode, 0, &mut info);
            if put == NERVE_OK && got == NERVE_OK {
                assert_eq!(&buf[..info.len as usize], payload, "a message came back changed");
            }
            let _ = nerve::nerve_channel_get(ch, null_mut(), 0, mode, 0, &mut info);
            assert_eq!(nerve::nerve_channel_close(ch), NERVE_OK);
            let _ = nerve::nerve_channel_remove(name.as_ptr(), c_dir.as_ptr());
        },
        // SAFETY: as above; the event's data pointer is read only while the reader is open.
        1 => unsafe {
            let path = dir.join("log");
            std::fs::write(&path, payload).expect("writing the log");
            let c_path = CString::new(path.to_str().expect("UTF-8")).expect("no NUL");
            let mut reader = null_mut();
            if nerve::nerve_log_reader_open(c_path.as_ptr(), &mut reader) != NERVE_OK {
                return;
            }
            let mut event: NerveLogEvent = std::mem::zeroed();
            for _ in 0..10_000 {
                if nerve::nerve_log_reader_next(reader, &mut event) != NERVE_OK {
                    break;
                }
            }
            let mut damage = std::mem::zeroed();
            let _ = nerve::nerve_log_reader_damage(reader, &mut damage);
            assert_eq!(nerve::nerve_log_reader_close(reader), NERVE_OK);
        },
        // SAFETY: as above; the event read back points into the open reader, read before it is closed.
        2 => unsafe {
            let path = dir.join("written");
            let c_path = CString::new(path.to_str().expect("UTF-8")).expect("no NUL");
            let mut writer = null_mut();
            if nerve::nerve_log_writer_open(c_path.as_ptr(), NERVE_LOG_OVERWRITE, &mut writer) != NERVE_OK {
                return;
            }
            let wrote = nerve::nerve_log_writer_write(writer, 7, name.as_ptr(), payload.as_ptr().cast(), payload.len());
            assert_eq!(nerve::nerve_log_writer_close(writer), NERVE_OK);
            let mut reader = null_mut();
            assert_eq!(nerve::nerve_log_reader_open(c_path.as_ptr(), &mut reader), NERVE_OK);
            let mut event: NerveLogEvent = std::mem::zeroed();
            let next = nerve::nerve_log_reader_next(reader, &mut event);
            if wrote == NERVE_OK {
                assert_eq!(next, NERVE_OK, "a written event did not read back");
                let data = std::slice::from_raw_parts(event.data.cast::<u8>(), event.data_len as usize);
                assert_eq!(data, payload);
            }
            assert_eq!(nerve::nerve_log_reader_close(reader), NERVE_OK);
        },
        // SAFETY: `chan` is a zeroed ach_channel_t (what ach_open fills), the name and buffers are live for each call.
        _ => unsafe {
            let frame_size = 1 + payload.len() % 256;
            if ach::ach_create(name.as_ptr(), 2 + usize::from(op % 5), frame_size, null_mut()) != ach::status::ACH_OK {
                return;
            }
            let mut chan: AchChannelT = std::mem::zeroed();
            if ach::ach_open(&mut chan, name.as_ptr(), null_mut()) == ach::status::ACH_OK {
                // A copy of the open handle with its shm field (what libach checks a handle by) taken from the input:
                // unless it is the real one, every call on it is refused, and the real handle goes on working.
                if let Some(field) = payload.get(..8) {
                    let mut forged: AchChannelT = std::ptr::read(&chan);
                    forged.shm = usize::from_ne_bytes(field.try_into().expect("8 bytes")) as *mut c_void;
                    if forged.shm != chan.shm {
                        let einval = ach::status::ACH_EINVAL;
                        let mut b = [0u8; 8];
                        let mut n = 0usize;
                        assert_eq!(ach::ach_put(&mut forged, b.as_ptr().cast(), 1), einval, "forged handle put");
                        assert_eq!(ach::ach_get(&mut forged, b.as_mut_ptr().cast(), 8, &mut n, null(), 0), einval);
                        assert_eq!(ach::ach_cancel(&mut forged, null()), einval, "forged handle cancel");
                        assert_eq!(ach::ach_close(&mut forged), einval, "forged handle close");
                    }
                }
                let put = ach::ach_put(&mut chan, payload.as_ptr().cast::<c_void>(), payload.len());
                let mut buf = vec![0u8; payload.len() / 2 + 1];
                let mut got_size = 0usize;
                // Any option bits but ACH_O_WAIT: a wait without a deadline on an empty channel is meant to block.
                let options = i32::from(op) & !ach::ACH_O_WAIT;
                let _ = ach::ach_get(&mut chan, buf.as_mut_ptr().cast(), buf.len(), &mut got_size, null(), options);
                let _ = put;
                assert_eq!(ach::ach_close(&mut chan), ach::status::ACH_OK, "the real handle still closes");
            }
            let _ = ach::ach_unlink(name.as_ptr());
        },
    }
});

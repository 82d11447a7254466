//! Message types shared by the in-process tests: `Counted`, whose `Clone` counts itself (per thread) so a test can
//! tell copies from moves, and `Other`, a different LCM type for type-mismatch tests.
#![allow(dead_code)]

use std::cell::Cell;
use std::time::{Duration, Instant};

use nerve_codec::{Decode, DecodeError, Encode, EncodeError, Message, Reader, Writer};

thread_local! {
    static CLONES: Cell<u64> = const { Cell::new(0) };
}

/// How many `Counted`s this thread has cloned so far.
pub fn clones() -> u64 {
    CLONES.with(|c| c.get())
}

/// `struct counted_t { int32_t n; byte data[n]; }`, written by hand. Its identity is the address of its heap data:
/// a move keeps it, a clone makes a new one.
#[derive(Debug, PartialEq)]
pub struct Counted {
    pub data: Vec<u8>,
}

impl Counted {
    pub fn new(tag: u8, len: usize) -> Counted {
        Counted { data: vec![tag; len] }
    }

    /// Where its data lives.
    pub fn addr(&self) -> usize {
        self.data.as_ptr() as usize
    }
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        CLONES.with(|c| c.set(c.get() + 1));
        Counted { data: self.data.clone() }
    }
}

impl Encode for Counted {
    fn encoded_body_size(&self) -> usize {
        4 + self.data.len()
    }
    fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.put_i32(self.data.len() as i32)?;
        w.put_bytes(&self.data)
    }
}

impl Decode for Counted {
    fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.get_i32()?;
        let n = r.count(n as i64)?;
        Ok(Counted { data: r.get_bytes(n)?.to_vec() })
    }
}

impl Message for Counted {
    const FINGERPRINT: u64 = 0x0c0c_0c0c_1234_0001;
    const TYPE_NAME: &'static str = "test.counted_t";
}

/// Another LCM type: `struct other_t { int64_t v; }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Other {
    pub v: i64,
}

impl Encode for Other {
    fn encoded_body_size(&self) -> usize {
        8
    }
    fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.put_i64(self.v)
    }
}

impl Decode for Other {
    fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Other { v: r.get_i64()? })
    }
}

impl Message for Other {
    const FINGERPRINT: u64 = 0x0707_0707_1234_0002;
    const TYPE_NAME: &'static str = "test.other_t";
}

/// A fresh in-process bus of its own.
pub fn inproc_bus(name: &str) -> nerve_bus::Bus {
    nerve_bus::Bus::new(Some(&format!("inproc://{name}-{}", std::process::id()))).expect("an inproc bus")
}

/// A udpm bus on a port of this test process's own (`slot` < 10 keeps tests apart).
pub fn udpm_url(slot: u16) -> String {
    let port = 24000 + (std::process::id() % 800) as u16 * 10 + slot;
    format!("udpm://239.255.76.69:{port}?ttl=0&recv_buf_size=2097152")
}

/// Waits (bounded) until `f` holds.
pub fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Starts this test binary again as a child process running only the ignored test `test_name`, with `env_key` set
/// to `url`, and returns it with the lines it prints after `CHILD ` (libtest may print its own text on the same line
/// first), read on a thread of their own.
pub fn spawn_child_test(
    test_name: &str,
    env_key: &str,
    url: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test_name, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(env_key, url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starting the child process");
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(at) = line.find("CHILD ") {
                let _ = tx.send(line[at + 6..].to_owned());
            }
        }
    });
    (child, rx)
}

//! A hostile neighbour on the same host: a reader process and a writer process (this test binary, started again in
//! a child role) use a few channels at 1 kHz while the test truncates, shrinks, grows, replaces (a rename over it),
//! unlinks and scribbles over (header, index, data, lock word) their files, and makes them anew now and then. At
//! the end both children must still be alive (a truncated file faults the mapping with `SIGBUS`, which the channel
//! code repairs instead of dying), every message the reader got must be one the writer put (self-checking payloads
//! on channels with checksums, so scribbled bytes are never handed out), and each channel must carry traffic again
//! once it is made anew.
//!
//! Bounded: `NERVE_HOSTILE_SECONDS` of hostility (default 20), at most 1 000 hostile acts a second of it; the children stop when
//! told to, or on their own after a lifetime.
//!
//! `NERVE_SHM_HOSTILE_READERS=LABEL=PROGRAM;...` adds readers in other languages (tests/interop/test_shm_hostile.py
//! passes C readers over libnerve and libach): each is run as `PROGRAM DIR CHANNELS LIFE_SECONDS` with
//! `NERVE_SHM_DIR=DIR`, must stay alive, and must print the Python reader's RESULT line.

#![cfg(not(loom))]

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{check_payload, payload, TestDir};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};

const CHANNELS: u64 = 3;
const FRAMES: u64 = 16;
const FRAME_SIZE: u64 = 256;
const PAYLOAD: usize = 64;
/// At most this many hostile acts per second of hostility (the loop does a few hundred a second), so a long recorded
/// run is bounded in count as well as in time.
const MAX_ACTS_PER_SECOND: f64 = 1_000.0;
/// A child gives up on its own after this long beyond the hostile time, even if the test died without stopping it.
const CHILD_SPARE: Duration = Duration::from_secs(60);
/// The writer id of the messages put after the test made every channel anew at the end.
const FINAL: u64 = 99;

fn hostile_time() -> Duration {
    let secs = std::env::var("NERVE_HOSTILE_SECONDS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(20.0);
    Duration::from_secs_f64(secs)
}

fn config(dir: &Path) -> ChannelConfig {
    ChannelConfig::new(FRAMES, FRAME_SIZE).checksum(true).dir(dir)
}

fn name(ch: u64) -> String {
    format!("hostile{ch}")
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A reader of every channel through the Python binding (`nerve.Channel`, over the same Rust core): it reopens a
/// channel whose get raised or whose path names another file, checks each payload's FNV checksum and channel, and
/// prints the same RESULT line as the Rust reader.
const PYTHON_READER: &str = r#"
import os, sys, time, nerve
d, n, life = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + life
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
open_ = [None] * n; ino = [None] * n; checked = [0.0] * n
got = [0] * n; finals = [0] * n; errors = [0] * n; reopens = [0] * n; after = [False] * n
stop, final = os.path.join(d, "stop"), os.path.join(d, "final")
def path(ch):
    return os.path.join(d, "nerve-hostile%d" % ch)
while time.monotonic() < deadline and not os.path.exists(stop):
    for ch in range(n):
        now = time.monotonic()
        if open_[ch] is not None and now - checked[ch] > 0.05:
            checked[ch] = now
            try:
                if os.stat(path(ch)).st_ino != ino[ch]:
                    open_[ch] = None
            except OSError:
                open_[ch] = None
        if open_[ch] is None:
            try:
                i = os.stat(path(ch)).st_ino
                open_[ch] = nerve.Channel.open("hostile%d" % ch, dir=d)
                ino[ch] = i; reopens[ch] += 1; after[ch] = os.path.exists(final); finals[ch] = 0
            except Exception:
                continue
        try:
            m = open_[ch].get(wait=True, timeout=0.003)
        except Exception:
            errors[ch] += 1; open_[ch] = None; continue
        if m is None:
            continue
        p = m[0]
        if len(p) < 24 or fnv(p[:-8]) != int.from_bytes(p[-8:], "little"):
            print("RESULT BAD channel %d: %d bytes that no writer put" % (ch, len(p)), flush=True); sys.exit(3)
        w = int.from_bytes(p[:8], "little")
        if w // 1000 != ch:
            print("RESULT BAD channel %d: a message of channel %d's writer" % (ch, w // 1000), flush=True); sys.exit(3)
        got[ch] += 1
        if w % 1000 == 99 and after[ch]:
            finals[ch] += 1
print("RESULT " + " ".join("got%d=%d final%d=%d errors%d=%d reopens%d=%d" % (c, got[c], c, finals[c], c, errors[c], c, reopens[c]) for c in range(n)), flush=True)
"#;

/// The project's Python with the `nerve` package (made by scripts/setup), if there is one.
fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let ok = Command::new(&python).args(["-c", "import nerve"]).output().is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

fn spawn(dir: &Path, role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "hostile_child", "--nocapture", "--test-threads=1"])
        .env("NERVE_SHM_HOSTILE_DIR", dir)
        .env("NERVE_SHM_HOSTILE_ROLE", role)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning a child")
}

/// Makes channel `ch` anew: removes whatever is under its name and makes a fresh channel.
fn remake(dir: &Path, ch: u64) {
    let _ = Channel::remove(&name(ch), Some(dir));
    // A writer child may make it first (it makes a missing channel): either way there is a fresh one.
    let _ = Channel::open_or_create(&name(ch), &config(dir));
}

/// One hostile act on channel `ch`'s file; returns what it did.
fn act(dir: &Path, spare: &Path, ch: u64, rng: &mut Rng) -> &'static str {
    let path = nerve_shm::channel_path(&name(ch), Some(dir)).unwrap();
    let open = || OpenOptions::new().read(true).write(true).open(&path);
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    match rng.below(10) {
        0 => {
            let _ = open().and_then(|f| f.set_len(0));
            "truncate"
        }
        1 => {
            let _ = open().and_then(|f| f.set_len(len / (2 + rng.below(6))));
            "shrink"
        }
        2 => {
            let _ = open().and_then(|f| f.set_len(len + 4096 * (1 + rng.below(4))));
            "grow"
        }
        3 => {
            // Another channel (other sizes), or a file of garbage, renamed over this one.
            let tmp = spare.join(format!("replacement{ch}"));
            if rng.below(2) == 0 {
                let _ = Channel::remove(&format!("r{ch}"), Some(spare));
                let other = ChannelConfig::new(4, 128).checksum(true).dir(spare);
                let made = Channel::create(&format!("r{ch}"), &other);
                drop(made);
                let _ = std::fs::rename(nerve_shm::channel_path(&format!("r{ch}"), Some(spare)).unwrap(), &tmp);
            } else {
                let garbage: Vec<u8> = (0..(rng.below(8192) as usize)).map(|_| rng.next() as u8).collect();
                let _ = std::fs::write(&tmp, garbage);
            }
            let _ = std::fs::rename(&tmp, &path);
            "replace"
        }
        4 => {
            let _ = std::fs::remove_file(&path);
            "unlink"
        }
        5..=8 => {
            // Scribble: the header's magic, the rest of the header (with the lock word), the index, the data, or
            // anywhere but the sizes and flags of the header's prefix. A scribble there that clears the checksum flag
            // before a handle opens the file makes a channel without checksums, whose scribbled bytes are messages:
            // only checksums tell a writer's bytes from a neighbour's.
            if let Ok(f) = open() {
                let (at, n) = match rng.below(5) {
                    0 => (rng.below(8), 1),
                    1 => (64 + rng.below(256), 1 + rng.below(16)),
                    2 => (576 + rng.below(FRAMES * 64), 1 + rng.below(64)),
                    3 => (len.saturating_sub(FRAMES * FRAME_SIZE) + rng.below(FRAMES * FRAME_SIZE), 1 + rng.below(64)),
                    _ => (64 + rng.below(len.saturating_sub(64).max(1)), 1 + rng.below(8)),
                };
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                let _ = f.write_all_at(&bytes, at.min(len.saturating_sub(1)));
            }
            "scribble"
        }
        _ => {
            remake(dir, ch);
            "remake"
        }
    }
}

#[test]
fn a_hostile_neighbour_never_takes_a_reader_or_writer_down() {
    let dir = TestDir::new("hostile");
    let spare = TestDir::new("hostile-spare");
    for ch in 0..CHANNELS {
        Channel::create(&name(ch), &config(dir.path())).unwrap();
    }
    let mut reader = spawn(dir.path(), "reader");
    let mut writer = spawn(dir.path(), "writer");
    let py_reader = python().map(|python| {
        let life = (hostile_time() + CHILD_SPARE).as_secs_f64().to_string();
        Command::new(python)
            .args(["-c", PYTHON_READER, &dir.path().display().to_string(), &CHANNELS.to_string(), &life])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawning the Python reader")
    });
    if py_reader.is_none() {
        eprintln!("no .venv/bin/python with the nerve package (scripts/setup makes it): no Python reader");
    }
    let mut others: Vec<(String, Child)> = py_reader.map(|c| ("Python reader".to_owned(), c)).into_iter().collect();
    for entry in std::env::var("NERVE_SHM_HOSTILE_READERS").unwrap_or_default().split(';').filter(|e| !e.is_empty()) {
        let (label, program) = entry.split_once('=').expect("NERVE_SHM_HOSTILE_READERS: LABEL=PROGRAM;...");
        let life = (hostile_time() + CHILD_SPARE).as_secs_f64().to_string();
        let child = Command::new(program)
            .args([&dir.path().display().to_string(), &CHANNELS.to_string(), &life])
            .env("NERVE_SHM_DIR", dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning the {label} ({program}): {e}"));
        others.push((label.to_owned(), child));
    }
    std::thread::sleep(Duration::from_millis(300));

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let start = Instant::now();
    let mut acts = std::collections::BTreeMap::<&str, usize>::new();
    let mut count = 0;
    let max_acts = (hostile_time().as_secs_f64() * MAX_ACTS_PER_SECOND) as usize;
    while start.elapsed() < hostile_time() && count < max_acts {
        let ch = rng.below(CHANNELS);
        *acts.entry(act(dir.path(), spare.path(), ch, &mut rng)).or_default() += 1;
        count += 1;
        std::thread::sleep(Duration::from_micros(500 + rng.below(5000)));
        let more = others.iter_mut().map(|(label, c)| (label.as_str(), c));
        for (role, child) in [("reader", &mut reader), ("writer", &mut writer)].into_iter().chain(more) {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the {role} died during the hostilities ({status:?}, signal {:?})", status.signal());
            }
        }
    }
    eprintln!("{count} hostile acts in {:?}: {acts:?}", start.elapsed());

    // Made anew: every channel must carry traffic again. The mark comes first, so every handle opened on the new
    // files is opened after it.
    std::fs::write(dir.path().join("final"), b"").unwrap();
    for ch in 0..CHANNELS {
        remake(dir.path(), ch);
    }
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(dir.path().join("stop"), b"").unwrap();

    for (role, child) in [("writer".to_owned(), writer), ("reader".to_owned(), reader)].into_iter().chain(others) {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "the {role} failed ({:?}, signal {:?}):\n{text}",
            out.status,
            out.status.signal()
        );
        eprintln!("{role}: {}", text.lines().filter(|l| l.contains("RESULT")).collect::<Vec<_>>().join(" "));
        if role != "writer" {
            let result = text.lines().find(|l| l.contains("RESULT")).expect("the reader's result line");
            for ch in 0..CHANNELS {
                let finals: u64 = result
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("final{ch}=")))
                    .and_then(|v| v.parse().ok())
                    .unwrap();
                assert!(finals > 0, "channel {ch} carried no traffic after it was made anew: {result}");
            }
        }
    }
}

#[test]
fn a_sigbus_outside_the_channels_still_kills_the_process() {
    let dir = TestDir::new("foreign");
    let child = spawn(dir.path(), "foreign").wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&child.stdout);
    assert_eq!(child.status.signal(), Some(libc::SIGBUS), "{:?}:\n{text}", child.status);
    assert!(text.contains("handler installed"), "the child did not get as far as the fault:\n{text}");
}

/// The "foreign" child: with a channel open (so the handler is installed), touches a page of its own mapping of a
/// file it truncated, which must kill it as it would without Nerve.
#[allow(unsafe_code)]
fn child_foreign(dir: &Path) {
    let channel = Channel::create("foreign", &config(dir)).unwrap();
    let mut w = channel.writer();
    w.put(b"the handler is installed").unwrap();
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(dir.join("f")).unwrap();
    file.set_len(4096).unwrap();
    // SAFETY: a fresh shared mapping of one page of a file this process owns; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&file),
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    file.set_len(0).unwrap();
    println!("handler installed, faulting");
    std::io::stdout().flush().unwrap();
    // SAFETY: the page is mapped (the mapping outlives the read); the file under it is gone, so the read faults with
    // SIGBUS, which is what this child is for.
    let byte = unsafe { std::ptr::read_volatile(p.cast::<u8>()) };
    println!("survived a foreign SIGBUS, read {byte}");
    std::process::exit(0);
}

/// A child's handle on one channel: reopened when the file shrank under it, was removed or replaced.
struct Open {
    dir: PathBuf,
    ch: u64,
    channel: Option<Channel>,
    checked: Instant,
    reopens: u64,
}

impl Open {
    fn new(dir: &Path, ch: u64) -> Open {
        Open { dir: dir.to_owned(), ch, channel: None, checked: Instant::now(), reopens: 0 }
    }

    /// The channel, opened (or made, for the writer) if it is not open or not current any more; None while the file
    /// under its name is not a usable channel.
    /// Also says whether it was opened again by this call.
    fn get(&mut self, make: bool) -> (bool, Option<&Channel>) {
        let stale = match &self.channel {
            None => true,
            Some(c) => c.is_damaged() || (self.checked.elapsed() >= Duration::from_millis(50) && !c.is_current()),
        };
        if self.checked.elapsed() >= Duration::from_millis(50) {
            self.checked = Instant::now();
        }
        if stale {
            self.channel = None;
            let n = name(self.ch);
            let opened = match Channel::open(&n, Some(&self.dir)) {
                Err(nerve_shm::ShmError::NotFound { .. }) if make => Channel::open_or_create(&n, &config(&self.dir)),
                other => other,
            };
            self.channel = opened.ok();
            self.reopens += 1;
        }
        (stale, self.channel.as_ref())
    }
}

fn child_reader(dir: &Path, ch: u64, deadline: Instant) -> String {
    let mut open = Open::new(dir, ch);
    let mut reader = None;
    let (mut got, mut finals, mut errors) = (0u64, 0u64, 0u64);
    let mut buf = vec![0u8; FRAME_SIZE as usize];
    let stop = dir.join("stop");
    let final_mark = dir.join("final");
    let mut after_final = false;
    while Instant::now() < deadline && !stop.exists() {
        let (reopened, Some(c)) = open.get(false) else {
            reader = None;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        if reopened || reader.is_none() {
            reader = Some(c.reader_from_oldest());
            after_final = final_mark.exists();
            // Only what the last file opened carried counts as traffic after the channels were made anew.
            finals = 0;
        }
        let r = reader.as_mut().unwrap();
        match r.get(&mut buf, ReadMode::Next, Wait::Timeout(Duration::from_millis(10))) {
            Ok(GetOutcome::Message(info)) => {
                let Some((writer, counter)) = check_payload(&buf[..info.len]) else {
                    return format!("BAD channel {ch}: message {} of {} bytes is not a writer's", info.seq, info.len);
                };
                let (wch, role) = (writer / 1000, writer % 1000);
                if wch != ch {
                    return format!("BAD channel {ch}: message {} came from channel {wch}'s writer", info.seq);
                }
                got += 1;
                if role == FINAL && after_final {
                    finals += 1;
                }
                let _ = counter;
            }
            Ok(_) => {}
            Err(_) => {
                errors += 1;
                if !r.is_damaged() {
                    // A scribbled index entry: move past it.
                    let last = r.last_seq();
                    r.seek(last + 1);
                }
            }
        }
    }
    format!("got{ch}={got} final{ch}={finals} errors{ch}={errors} reopens{ch}={}", open.reopens)
}

fn child_writer(dir: &Path, ch: u64, deadline: Instant) -> String {
    let mut open = Open::new(dir, ch);
    let (mut put, mut failed, mut counter) = (0u64, 0u64, 0u64);
    let stop = dir.join("stop");
    let final_mark = dir.join("final");
    let mut next = Instant::now();
    let mut final_seen = false;
    while Instant::now() < deadline && !stop.exists() {
        next += Duration::from_millis(1);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let (reopened, Some(c)) = open.get(true) else { continue };
        // Messages put on a file opened after the test made the channels anew for the last time carry FINAL.
        final_seen |= reopened && final_mark.exists();
        let role = if final_seen { FINAL } else { 1 };
        counter += 1;
        match c.writer().put(&payload(ch * 1000 + role, counter, PAYLOAD)) {
            Ok(_) => put += 1,
            Err(_) => failed += 1,
        }
    }
    format!("put{ch}={put} failed{ch}={failed} reopens{ch}={}", open.reopens)
}

/// The child roles (not a test when run by `cargo test`: without the environment it returns at once).
#[test]
fn hostile_child() {
    let (Ok(dir), Ok(role)) = (std::env::var("NERVE_SHM_HOSTILE_DIR"), std::env::var("NERVE_SHM_HOSTILE_ROLE")) else {
        return;
    };
    let dir = PathBuf::from(dir);
    if role == "foreign" {
        child_foreign(&dir);
    }
    let deadline = Instant::now() + hostile_time() + CHILD_SPARE;
    let threads: Vec<_> = (0..CHANNELS)
        .map(|ch| {
            let (dir, role) = (dir.clone(), role.clone());
            std::thread::spawn(move || match role.as_str() {
                "reader" => child_reader(&dir, ch, deadline),
                _ => child_writer(&dir, ch, deadline),
            })
        })
        .collect();
    let results: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let line = results.join(" ");
    let mut out = std::io::stdout();
    writeln!(out, "RESULT {line}").unwrap();
    out.flush().unwrap();
    if line.contains("BAD") {
        std::process::exit(3);
    }
}

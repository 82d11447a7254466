//! kill -9 stress: writer and reader processes (this test binary, started again in a child role) share a channel
//! while the test kills them with SIGKILL at random instants - mid-put, mid-loan, mid-get, mid-wait - and starts new
//! ones in their place. Every message a reader gets must be intact (checksummed, with its writer id and counter),
//! sequence numbers and each writer's counters only go forward, the channel keeps working after every kill (a put and
//! a get succeed, recoveries are counted), and at the end the newest message is reachable. Every child the test kills
//! must have been running until the SIGKILL: one that exited on its own (a panic, an error unwrapped) fails the test.
//! Bounded: at most 200 kills and about 25 s of killing; every child is killed or stopped by PID.

#![cfg(not(loom))]

mod common;

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{check_payload, fill_payload, TestDir};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};

const CHANNEL: &str = "crash";
const FRAMES: u64 = 8;
const FRAME_SIZE: u64 = 16 * 1024;
const WRITERS: usize = 3;
const KILLABLE_READERS: usize = 2;
const MAX_KILLS: usize = 200;
const KILLING_TIME: Duration = Duration::from_secs(25);
/// A child gives up on its own after this long, even if the test died without stopping it.
const CHILD_LIFETIME: Duration = Duration::from_secs(120);

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

fn spawn(dir: &Path, role: &str, id: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("NERVE_SHM_CRASH_DIR", dir)
        .env("NERVE_SHM_CRASH_ROLE", role)
        .env("NERVE_SHM_CRASH_ID", id.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning a child")
}

fn kill(child: &mut Child) {
    // std's Child::kill sends SIGKILL to this child's PID.
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills a child that must still be running, and fails the test if it was not: a child that exited on its own
/// (a panic, an `unwrap` on an error, a reader's checker finding a violation) ends with an exit code, not with the
/// SIGKILL this sends, and would otherwise go unseen among the killed.
fn kill_running(child: &mut Child, what: &str, dir: &Path) {
    let _ = child.kill();
    let status = child.wait().expect("waiting for a killed child");
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "{what} (pid {}) exited on its own before it was killed: {status}; violations: {:?}",
        child.id(),
        violations(dir)
    );
}

/// Every child the test started, killed by PID when the test ends, however it ends.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            kill(child);
        }
    }
}

fn violations(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?.to_string();
            name.starts_with("violation-").then(|| std::fs::read_to_string(&p).unwrap_or(name))
        })
        .collect()
}

#[test]
fn processes_killed_at_random_instants_leave_the_channel_usable_and_never_show_a_torn_message() {
    let dir = TestDir::new("crash");
    let ch = Channel::create(CHANNEL, &ChannelConfig::new(FRAMES, FRAME_SIZE).dir(dir.path())).unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(std::process::id()));
    let mut next_id = 1u64;
    let mut id = || {
        next_id += 1;
        next_id
    };
    // children.0: the writers, then the killable readers, then the two persistent readers.
    let mut children = Children(Vec::new());
    for _ in 0..WRITERS {
        children.0.push(spawn(dir.path(), "writer", id()));
    }
    for _ in 0..KILLABLE_READERS {
        children.0.push(spawn(dir.path(), "reader", id()));
    }
    children.0.push(spawn(dir.path(), "persistent-next", id()));
    children.0.push(spawn(dir.path(), "persistent-newest", id()));

    let mut my_writer = ch.writer();
    let mut my_reader = ch.reader();
    let mut buf = vec![0u8; FRAME_SIZE as usize];
    let (mut kills, mut writer_kills, mut counter) = (0usize, 0usize, 0u64);
    let t0 = Instant::now();
    while kills < MAX_KILLS && t0.elapsed() < KILLING_TIME {
        std::thread::sleep(Duration::from_millis(10 + rng.below(60)));
        if rng.below(4) < 3 {
            let victim = rng.below(WRITERS as u64) as usize;
            kill_running(&mut children.0[victim], "a writer", dir.path());
            children.0[victim] = spawn(dir.path(), "writer", id());
            writer_kills += 1;
        } else {
            let victim = WRITERS + rng.below(KILLABLE_READERS as u64) as usize;
            kill_running(&mut children.0[victim], "a reader", dir.path());
            children.0[victim] = spawn(dir.path(), "reader", id());
        }
        kills += 1;
        // The channel keeps working: a put and a get succeed (recovering the lock if the victim held it).
        counter += 1;
        let mut loan = my_writer.loan(64).expect("a put after a kill");
        fill_payload(loan.bytes_mut(), 1, counter);
        loan.commit();
        let info = match my_reader.get(&mut buf, ReadMode::Newest, Wait::Timeout(Duration::from_secs(5))).unwrap() {
            GetOutcome::Message(info) => info,
            other => panic!("no message after kill {kills}: {other:?}"),
        };
        assert!(check_payload(&buf[..info.len]).is_some(), "torn message {} after kill {kills}", info.seq);
        let found = violations(dir.path());
        assert!(found.is_empty(), "after kill {kills}: {found:?}");
    }
    for child in &mut children.0[..WRITERS + KILLABLE_READERS] {
        kill_running(child, "a writer or reader", dir.path());
    }
    // The last word: a put after all kills; the persistent readers must reach it.
    counter += 1;
    let mut loan = my_writer.loan(64).unwrap();
    fill_payload(loan.bytes_mut(), 1, counter);
    let newest = loan.commit();
    std::fs::write(dir.path().join("stop"), b"").unwrap();

    let mut summaries = Vec::new();
    for (k, child) in children.0[WRITERS + KILLABLE_READERS..].iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                kill(child);
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            status.is_some_and(|s| s.success()),
            "persistent reader {k} failed: {status:?}: {:?}",
            violations(dir.path())
        );
        summaries.push(std::fs::read_to_string(dir.path().join(format!("summary-{k}"))).unwrap());
    }
    let found = violations(dir.path());
    assert!(found.is_empty(), "{found:?}");
    let stats = ch.stats();
    eprintln!(
        "{kills} kills ({writer_kills} writers) in {:.1?}; {} messages, {} recoveries; persistent readers (got missed last): {summaries:?}",
        t0.elapsed(),
        stats.messages,
        stats.recoveries
    );
    assert!(kills >= 20, "only {kills} kills happened");
    assert!(stats.recoveries >= 1, "no writer was killed holding the lock in {writer_kills} writer kills");
    for s in &summaries {
        let fields: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert!(fields[0] > 0, "a persistent reader got nothing: {s}");
        assert_eq!(fields[2], newest, "the newest message was not reachable: {s}");
    }
}

#[test]
fn a_lock_held_by_a_live_process_is_waited_for_and_one_held_by_a_killed_process_is_taken_over() {
    let dir = TestDir::new("holder");
    let ch = Channel::create(CHANNEL, &ChannelConfig::new(FRAMES, FRAME_SIZE).dir(dir.path())).unwrap();
    let mut holder = Children(vec![spawn(dir.path(), "loan-holder", 1)]);
    let holding = dir.path().join("holding");
    let t0 = Instant::now();
    while !holding.exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "the child never took its loan");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut writer = ch.writer();
    let start = Instant::now();
    let err = writer.put(b"while it is alive").unwrap_err();
    assert!(matches!(err, nerve_shm::ShmError::Lock { .. }), "{err}");
    assert!(start.elapsed() >= nerve_shm::LOCK_PATIENCE, "gave up after {:?}", start.elapsed());
    // The bound of the docs: the patience and one liveness check interval (64 ms), with room for a loaded machine.
    let bound = nerve_shm::LOCK_PATIENCE + Duration::from_millis(300);
    assert!(start.elapsed() < bound, "a live holder made a writer wait {:?}", start.elapsed());
    assert_eq!(ch.stats().recoveries, 0, "a live holder's lock was taken over");

    kill_running(&mut holder.0[0], "the loan holder", dir.path());
    let start = Instant::now();
    let seq = writer.put(b"after it died").unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(500), "recovering took {took:?}");
    assert_eq!((seq, ch.stats().recoveries), (1, 1));
    let mut buf = [0u8; 64];
    let info = ch.reader_from_oldest().get(&mut buf, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!(&buf[..info.len], b"after it died");
}

/// The child roles (does nothing unless started by the test above).
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os("NERVE_SHM_CRASH_DIR").map(PathBuf::from) else { return };
    let role = std::env::var("NERVE_SHM_CRASH_ROLE").unwrap();
    let id: u64 = std::env::var("NERVE_SHM_CRASH_ID").unwrap().parse().unwrap();
    let ch = Channel::open(CHANNEL, Some(&dir)).unwrap();
    let born = Instant::now();
    let stop = dir.join("stop");
    // Stop when told, when the test's directory is gone (the test ended), or after CHILD_LIFETIME at the latest.
    let done = || born.elapsed() > CHILD_LIFETIME || stop.exists() || !dir.exists();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ id);
    match role.as_str() {
        "writer" => {
            let mut w = ch.writer();
            for counter in 0.. {
                if counter % 64 == 0 && done() {
                    break;
                }
                let len = 24 + rng.below(FRAME_SIZE - 24) as usize;
                if counter % 4 == 0 {
                    let mut p = vec![0u8; len];
                    fill_payload(&mut p, id, counter);
                    w.put(&p).unwrap();
                } else {
                    // Filled in place: a kill during the fill is a kill mid-W5 holding the lock.
                    let mut loan = w.loan(len).unwrap();
                    fill_payload(loan.bytes_mut(), id, counter);
                    loan.commit();
                }
            }
        }
        "loan-holder" => {
            let mut w = ch.writer();
            let _loan = w.loan(64).unwrap();
            std::fs::write(dir.join("holding"), b"").unwrap();
            while !done() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        "reader" => {
            let mut checker = Checker::new(&dir, id);
            let mut r = ch.reader();
            let mut buf = vec![0u8; FRAME_SIZE as usize];
            while !done() {
                let mode = if rng.below(3) == 0 { ReadMode::Newest } else { ReadMode::Next };
                let wait = Wait::Timeout(Duration::from_millis(rng.below(30)));
                if rng.below(2) == 0 {
                    if let GetOutcome::Message(info) = r.get(&mut buf, mode, wait).unwrap() {
                        checker.check(info.seq, check_payload(&buf[..info.len]));
                    }
                } else if let GetOutcome::Message((info, ok)) = r.get_with(mode, wait, check_payload).unwrap() {
                    checker.check(info.seq, ok);
                }
            }
        }
        "persistent-next" | "persistent-newest" => {
            let (k, mode) = if role == "persistent-next" { (0, ReadMode::Next) } else { (1, ReadMode::Newest) };
            let mut checker = Checker::new(&dir, id);
            let mut r = ch.reader();
            let mut buf = vec![0u8; FRAME_SIZE as usize];
            let mut missed = 0;
            let mut get = |r: &mut nerve_shm::Reader, wait| match r.get(&mut buf, mode, wait).unwrap() {
                GetOutcome::Message(info) => {
                    missed += info.missed;
                    checker.check(info.seq, check_payload(&buf[..info.len]));
                    true
                }
                _ => false,
            };
            while !done() {
                get(&mut r, Wait::Timeout(Duration::from_millis(50)));
            }
            // Drain to the newest message (bounded: the writers are all stopped by now).
            for _ in 0..10 * FRAMES {
                if !get(&mut r, Wait::Poll) {
                    break;
                }
            }
            let got = checker.got;
            std::fs::write(dir.join(format!("summary-{k}")), format!("{got} {missed} {}", r.last_seq())).unwrap();
        }
        other => panic!("unknown role {other}"),
    }
}

/// A reader's checks: intact payloads, sequence numbers and each writer's counters only going forward. A failure
/// is written to a `violation-*` file the test looks for, and ends the process.
struct Checker {
    dir: PathBuf,
    id: u64,
    last_seq: u64,
    counters: HashMap<u64, u64>,
    got: u64,
}

impl Checker {
    fn new(dir: &Path, id: u64) -> Checker {
        Checker { dir: dir.to_path_buf(), id, last_seq: 0, counters: HashMap::new(), got: 0 }
    }

    fn check(&mut self, seq: u64, payload: Option<(u64, u64)>) {
        let problem = match payload {
            None => Some(format!("message {seq} is torn")),
            Some(_) if seq <= self.last_seq => Some(format!("sequence went back from {} to {seq}", self.last_seq)),
            Some((writer, counter)) => match self.counters.insert(writer, counter) {
                Some(prev) if prev >= counter => {
                    Some(format!("writer {writer}'s counter went back {prev} -> {counter}"))
                }
                _ => None,
            },
        };
        if let Some(problem) = problem {
            let path = self.dir.join(format!("violation-{}", self.id));
            std::fs::write(path, format!("reader {}: {problem}", self.id)).unwrap();
            std::process::exit(3);
        }
        self.last_seq = seq;
        self.got += 1;
    }
}

//! Wait sets: one thread sleeping on many channels through its doorbell, woken at once by a put on any of them,
//! with no periodic wake-up; a set killed with SIGKILL leaves registrations that are harmless and reclaimed; the
//! fallbacks (a channel whose slots are all taken, a channel in another directory) still wake the set.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::TestDir;
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait, WaitSet};

fn channels(dir: &Path, n: usize) -> Vec<Channel> {
    let config = ChannelConfig::new(4, 64).dir(dir);
    (0..n).map(|i| Channel::open_or_create(&format!("c{i}"), &config).unwrap()).collect()
}

/// Waits once with no deadline on another thread while `put` runs here after a pause; returns the keys and how
/// long after the put they came.
fn woken_by(set: &mut WaitSet, put: impl FnOnce()) -> (Vec<usize>, Duration) {
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut ready = Vec::new();
            set.wait(Some(Duration::from_secs(20)), &mut ready);
            (ready, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(50));
        let at = Instant::now();
        put();
        let (ready, woke) = waiter.join().unwrap();
        (ready, woke.saturating_duration_since(at))
    })
}

fn drain(set: &mut WaitSet) {
    let mut ready = Vec::new();
    set.wait(Some(Duration::ZERO), &mut ready);
}

#[test]
fn a_put_on_any_of_a_thousand_channels_wakes_the_set_at_once_naming_that_channel() {
    let dir = TestDir::new("set1000");
    let chans = channels(dir.path(), 1000);
    let mut set = WaitSet::new(Some(dir.path()));
    assert!(set.doorbell_error().is_none(), "{:?}", set.doorbell_error());
    let keys: Vec<usize> = chans.iter().map(|c| set.add(c)).collect();
    assert_eq!(set.rung_channels(), 1000);
    let mut ready = Vec::new();
    assert_eq!(set.wait(Some(Duration::ZERO), &mut ready), 1000, "new members are handed out once");
    assert_eq!(set.wait(Some(Duration::from_millis(30)), &mut ready), 0, "then nothing until a put");
    let mut writer = chans[737].writer();
    let mut delays = Vec::new();
    for _ in 0..20 {
        let (ready, delay) = woken_by(&mut set, || {
            writer.put(b"x").unwrap();
        });
        assert_eq!(ready, [keys[737]]);
        delays.push(delay);
    }
    delays.sort();
    assert!(delays[10] < Duration::from_millis(5), "median wake-up {:?} after the put", delays[10]);
}

#[test]
fn a_timeout_is_honoured_and_a_waker_ends_a_wait_without_a_deadline() {
    let dir = TestDir::new("setwake");
    let chans = channels(dir.path(), 3);
    let mut set = WaitSet::new(Some(dir.path()));
    for c in &chans {
        set.add(c);
    }
    drain(&mut set);
    let start = Instant::now();
    let mut ready = Vec::new();
    assert_eq!(set.wait(Some(Duration::from_millis(80)), &mut ready), 0);
    assert!((Duration::from_millis(80)..Duration::from_secs(2)).contains(&start.elapsed()), "{:?}", start.elapsed());
    let waker = set.waker();
    let (ready, delay) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut ready = Vec::new();
            set.wait(None, &mut ready);
            (ready, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(50));
        let at = Instant::now();
        waker.wake();
        let (ready, woke) = waiter.join().unwrap();
        (ready, woke.saturating_duration_since(at))
    });
    assert!(ready.is_empty());
    assert!(delay < Duration::from_millis(500), "woken {delay:?} after the waker");
}

#[test]
fn messages_put_before_the_channel_was_added_are_handed_out() {
    let dir = TestDir::new("setbefore");
    let chans = channels(dir.path(), 2);
    let mut reader = chans[1].reader_after_newest();
    chans[1].writer().put(b"early").unwrap();
    let mut set = WaitSet::new(Some(dir.path()));
    let keys: Vec<usize> = chans.iter().map(|c| set.add(c)).collect();
    let mut ready = Vec::new();
    set.wait(Some(Duration::from_secs(1)), &mut ready);
    assert!(ready.contains(&keys[1]));
    let mut buf = [0u8; 64];
    assert!(matches!(reader.get(&mut buf, ReadMode::Next, Wait::Poll), Ok(GetOutcome::Message(_))));
}

#[test]
fn a_channel_whose_slots_are_all_taken_or_in_another_directory_still_wakes_the_set() {
    let dir = TestDir::new("setfull");
    let other = TestDir::new("setother");
    let chans = channels(dir.path(), 1);
    let far = channels(other.path(), 1);
    // Live sets (this process) take every registration slot of the channel.
    let fillers: Vec<WaitSet> = (0..32)
        .map(|_| {
            let mut s = WaitSet::new(Some(dir.path()));
            s.add(&chans[0]);
            s
        })
        .collect();
    let mut set = WaitSet::new(Some(dir.path()));
    let a = set.add(&chans[0]);
    let b = set.add(&far[0]);
    assert_eq!(set.rung_channels(), 0, "no slot left here, and the other directory has another doorbell file");
    drain(&mut set);
    let mut w = chans[0].writer();
    let (ready, delay) = woken_by(&mut set, || {
        w.put(b"x").unwrap();
    });
    assert_eq!(ready, [a]);
    assert!(delay < Duration::from_millis(500), "{delay:?}");
    let mut w = far[0].writer();
    let (ready, _) = woken_by(&mut set, || {
        w.put(b"y").unwrap();
    });
    assert_eq!(ready, [b]);
    drop(fillers);
    // The slots are free again: a new set registers.
    let mut again = WaitSet::new(Some(dir.path()));
    again.add(&chans[0]);
    assert_eq!(again.rung_channels(), 1);
}

fn spawn_child(dir: &Path, role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "waitset_child", "--nocapture", "--test-threads=1"])
        .env("NERVE_SHM_SET_DIR", dir)
        .env("NERVE_SHM_SET_ROLE", role)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning a child")
}

#[test]
fn sets_killed_while_sleeping_leave_registrations_that_are_reclaimed_and_never_block_a_writer() {
    let dir = TestDir::new("setkill");
    let chans = channels(dir.path(), 1);
    // 32 processes register on the channel (every slot) and sleep; all are killed.
    let mut children: Vec<Child> = (0..32).map(|_| spawn_child(dir.path(), "sleeper")).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while chans[0].stats().waiting_readers < 32 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(chans[0].stats().waiting_readers, 32, "the children registered");
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    // A writer rings the dead doorbells and goes on: puts never wait.
    let mut w = chans[0].writer();
    let start = Instant::now();
    for _ in 0..1000 {
        w.put(b"to nobody").unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(2), "1000 puts took {:?}", start.elapsed());
    // A new set reclaims a dead set's slot (all 32 are stale) and is woken through it.
    let mut set = WaitSet::new(Some(dir.path()));
    let key = set.add(&chans[0]);
    assert_eq!(set.rung_channels(), 1, "a stale slot was reclaimed");
    drain(&mut set);
    let (ready, delay) = woken_by(&mut set, || {
        w.put(b"x").unwrap();
    });
    assert_eq!(ready, [key]);
    assert!(delay < Duration::from_millis(500), "{delay:?}");
}

/// The child of the test above: a wait set on the channel that also sleeps on its futex word (so the parent can
/// count it in `waiting_readers`), until killed.
#[test]
fn waitset_child() {
    let Some(dir) = std::env::var_os("NERVE_SHM_SET_DIR").map(PathBuf::from) else { return };
    let ch = Channel::open("c0", Some(&dir)).unwrap();
    let mut set = WaitSet::new(Some(&dir));
    set.add(&ch);
    drain(&mut set);
    // Counted by the parent while it sleeps in the channel's own wait (the set's registration stays meanwhile).
    let last = ch.newest_seq();
    let born = Instant::now();
    while born.elapsed() < Duration::from_secs(60) && dir.exists() {
        ch.wait_for_newer(last + 1_000_000, Duration::from_millis(200));
    }
}

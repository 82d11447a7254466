//! `nerve chan` end to end, as separate processes on a channel directory of each test's own: mk (sizes, mode,
//! existing channels refused or accepted), ls (table and JSON, bus names decoded), chmod (the file's bits), rm,
//! dump (live messages from `nerve pub --url shm://`, decoded with --types; from the oldest; timeouts), and the
//! permission error when another user may not open a channel.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use nerve_shm::Channel;

mod common;
use common::{finish, nerve, running_as_root, text, types_dir, Guard, TestDir};

impl TestDir {
    /// `nerve chan ARGS --dir DIR`, run to completion.
    fn chan(&self, args: &[&str]) -> Output {
        nerve().arg("chan").args(args).args(["--dir", &self.s()]).output().unwrap()
    }
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn ls_json(dir: &TestDir) -> Vec<serde_json::Value> {
    let out = dir.chan(&["ls", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn mk_ls_chmod_rm() {
    let dir = TestDir::new("chan", "mk");
    let out = dir.chan(&["mk", "robot/arm", "--frames", "8", "--frame-size", "2K", "--mode", "640"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("made channel robot/arm: 8 frames of 2048 bytes"), "{}", text(&out.stdout));
    let file = dir.path().join("nerve-robot%2Farm");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o640);
    let out = dir.chan(&["mk", "POSE"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    // The same sizes again: refused, unless --exist-ok.
    let out = dir.chan(&["mk", "robot/arm", "--frames", "8", "--frame-size", "2048"]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("exists already"), "{}", text(&out.stderr));
    let out = dir.chan(&["mk", "robot/arm", "--frames", "8", "--frame-size", "2048", "--exist-ok", "--mode", "640"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("exists already with these sizes"), "{}", text(&out.stdout));
    // Other sizes: refused even with --exist-ok, naming both.
    let out = dir.chan(&["mk", "robot/arm", "--frames", "16", "--frame-size", "2048", "--exist-ok"]);
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert!(err.contains("8 frames of 2048 bytes") && err.contains("16 frames of 2048 bytes"), "{err}");
    // Sizes no channel can have.
    let out = dir.chan(&["mk", "TINY", "--frames", "1"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(!dir.path().join("nerve-TINY").exists());

    // Two messages through a bus on the channel, then the listing.
    let out = nerve()
        .args(["pub", "robot/arm", "--url", &dir.url(), "--hex", "0102030405060708ff", "--count", "2"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let listed = ls_json(&dir);
    assert_eq!(listed.len(), 2);
    let pose = &listed[0];
    assert_eq!(
        (pose["channel"].as_str(), pose["frames"].as_u64(), pose["frame_size"].as_u64()),
        (Some("POSE"), Some(64), Some(65536))
    );
    assert_eq!(pose["mode"], "0600");
    let arm = &listed[1];
    assert_eq!(arm["name"], "robot%2Farm");
    assert_eq!(arm["channel"], "robot/arm");
    assert_eq!(
        (arm["frames"].as_u64(), arm["frame_size"].as_u64(), arm["data_bytes"].as_u64()),
        (Some(8), Some(2048), Some(8 * 2048))
    );
    assert_eq!((arm["messages"].as_u64(), arm["newest_seq"].as_u64()), (Some(2), Some(2)));
    assert_eq!(
        (arm["writers_seen"].as_u64(), arm["readers_seen"].as_u64(), arm["recoveries"].as_u64()),
        (Some(1), Some(0), Some(0))
    );
    assert_eq!(arm["mode"], "0640");

    let out = dir.chan(&["ls"]);
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("FRAME SIZE") && lines[0].ends_with("RECOVERIES"),
        "{table}"
    );
    let cells: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(cells, ["robot/arm", "8", "2048", "16384", "0640", "2", "1", "0", "0", "0"], "{table}");

    let out = dir.chan(&["chmod", "robot/arm", "660"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o660);
    assert_eq!(ls_json(&dir)[1]["mode"], "0660");
    assert_eq!(code(&dir.chan(&["chmod", "NOPE", "600"])), 1);

    let out = dir.chan(&["rm", "robot/arm", "POSE"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(!file.exists());
    assert!(ls_json(&dir).is_empty());
    let out = dir.chan(&["rm", "POSE"]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("no such channel"), "{}", text(&out.stderr));
    assert_eq!(code(&dir.chan(&["rm", "-f", "POSE"])), 0);
}

#[test]
fn ls_shows_files_it_cannot_read_and_raw_names() {
    let dir = TestDir::new("chan", "ls");
    Channel::create("a%zz", &nerve_shm::ChannelConfig::new(4, 64).dir(dir.path())).unwrap();
    std::fs::write(dir.path().join("nerve-junk"), b"not a channel at all, just some bytes, long enough to be read")
        .unwrap();
    let listed = ls_json(&dir);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["name"], "a%zz");
    assert_eq!(listed[0]["channel"], serde_json::Value::Null, "no bus name encodes to it");
    assert_eq!(listed[1]["name"], "junk");
    assert!(listed[1]["error"].as_str().unwrap().contains("not a Nerve channel"), "{listed:?}");
    let out = dir.chan(&["ls"]);
    assert!(text(&out.stdout).contains("unreadable: junk:"), "{}", text(&out.stdout));
}

const SCAN: &str = r#"{"utime": 7, "nranges": 3, "ranges": [1.5, 2.5, 3.5], "rad0": -1, "radstep": 0.5}"#;

#[test]
fn dump_prints_messages_as_they_arrive_decoded() {
    let dir = TestDir::new("chan", "dump");
    assert_eq!(code(&dir.chan(&["mk", "SCAN/front", "--frames", "16", "--frame-size", "1K"])), 0);
    let types = types_dir();
    // Messages already in the channel are not dumped by default.
    let out =
        nerve().args(["pub", "SCAN/front", "--url", &dir.url(), "--hex", "00112233445566778899"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let dump = nerve()
        .args(["chan", "dump", "SCAN/front", "--count", "3", "--timeout-ms", "20000", "--json", "--types", &types])
        .args(["--dir", &dir.s()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dump = Guard(Some(dump));
    // Wait until dump has made its reader (nerve-shm counts the readers made on a channel).
    let ch = Channel::open("SCAN%2Ffront", Some(dir.path())).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while ch.stats().reader_opens < 1 {
        assert!(Instant::now() < end, "dump never opened a reader");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = nerve()
        .args(["pub", "SCAN/front", "--url", &dir.url(), "--type", "exlcm.laser_t", "--json", SCAN, "--types", &types])
        .args(["--count", "3"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = finish(dump, Duration::from_secs(20));
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["seq"].as_u64(), Some(i as u64 + 2), "the first message was there before: {l}");
        assert_eq!(l["missed"], 0);
        assert_eq!(l["type"], "exlcm.laser_t");
        assert_eq!(l["value"]["nranges"], 3);
        assert_eq!(l["value"]["ranges"][1], 2.5);
        assert!(l["put_utime"].as_i64().unwrap() > 1_600_000_000_000_000);
    }

    // From the oldest, as text: every message the channel holds, the undecodable one said so.
    let out =
        dir.chan(&["dump", "SCAN/front", "--from-oldest", "--count", "4", "--timeout-ms", "5000", "--types", &types]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4, "{t}");
    assert!(lines[0].starts_with("seq 1 at ") && lines[0].contains(" 10 bytes missed 0 0x0011223344556677"), "{t}");
    assert!(lines[1].starts_with("seq 2 at ") && lines[1].contains("exlcm.laser_t: {"), "{t}");

    // Nothing more comes: --count not reached within the timeout is status 1.
    let out = dir.chan(&["dump", "SCAN/front", "--count", "1", "--timeout-ms", "300"]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("timed out after 0 of 1"), "{}", text(&out.stderr));
    assert_eq!(code(&dir.chan(&["dump", "NOPE", "--timeout-ms", "100"])), 1);
}

/// A channel another user may not open: `dump` fails with status 2 and says permission denied. As root (which
/// ignores permission bits), the command runs as `nobody` (uid 65534) on a root-owned 0600 channel; otherwise as
/// this user on a channel chmod-ed to 000.
#[test]
fn a_channel_without_permission_is_an_error() {
    let dir = TestDir::new("chan", "perm");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(code(&dir.chan(&["mk", "SECRET", "--mode", "600"])), 0);
    let mut cmd = nerve();
    cmd.args(["chan", "dump", "SECRET", "--timeout-ms", "200", "--dir", &dir.s()]);
    if running_as_root(&dir) {
        cmd.uid(65534).gid(65534);
    } else {
        assert_eq!(code(&dir.chan(&["chmod", "SECRET", "000"])), 0);
    }
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("SECRET") && err.contains("permission denied"), "{err}");
}

#[test]
fn a_scribbled_channel_is_listed_as_damaged_and_rm_mk_recovers_it() {
    use std::os::unix::fs::FileExt;
    let dir = TestDir::new("chan", "damaged");
    let out = dir.chan(&["mk", "ARM", "--frames", "4", "--frame-size", "64", "--checksum"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("checksums"), "{}", text(&out.stdout));
    // Another process overwrites the writer state (next_seq, at byte 136) with a value no put makes.
    let file = std::fs::OpenOptions::new().write(true).open(dir.path().join("nerve-ARM")).unwrap();
    file.write_at(&u64::MAX.to_ne_bytes(), 136).unwrap();
    let out = dir.chan(&["ls"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(listing.contains("damaged: ARM") && listing.contains("nerve chan rm ARM"), "{listing}");
    assert_eq!(code(&dir.chan(&["rm", "ARM"])), 0);
    assert_eq!(code(&dir.chan(&["mk", "ARM", "--frames", "4", "--frame-size", "64", "--checksum"])), 0);
    let listing = text(&dir.chan(&["ls"]).stdout);
    assert!(!listing.contains("damaged") && listing.contains("ARM"), "{listing}");
}

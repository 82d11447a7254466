//! `nerve` as a new user meets it, each case by running the built binary and checking its exit status
//! and message: no silent failure (unreadable shm, a log that ends, a file that is not a log, an export that decodes
//! nothing or would overwrite), no trap that outlives the mistake (a channel made for a message that cannot fit it,
//! an empty log file left by a bad URL), LCM's habits (a udpm address without a port, a broken `.lcm` file beside
//! good ones, JSON with members left out), and help that shows examples, defaults and exit statuses.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nerve_log::LogWriter;
use nerve_types::{Registry, TypeName};

mod common;
use common::{finish, nerve, running_as_root, text, types_dir, Guard, TestDir};

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn run(args: &[&str]) -> Output {
    nerve().args(args).stdin(Stdio::null()).output().unwrap()
}

/// Runs `nerve ARGS` and checks its status and that stderr has every one of `says`; returns stderr.
#[track_caller]
fn expect(args: &[&str], status: i32, says: &[&str]) -> String {
    let out = run(args);
    let err = text(&out.stderr);
    assert_eq!(code(&out), status, "nerve {args:?}\nstderr: {err}\nstdout: {}", text(&out.stdout));
    for s in says {
        assert!(err.contains(s), "nerve {args:?}: stderr lacks {s:?}:\n{err}");
    }
    err
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A message of `ty` (e.g. `exlcm.laser_t`) from JSON, encoded with the example types.
fn encode(ty: &str, json: &str) -> Vec<u8> {
    let (reg, _) = Registry::load_dirs(&[PathBuf::from(types_dir())]);
    let name = TypeName::parse(ty);
    reg.encode(&name, &reg.from_json(&name, json).unwrap()).unwrap()
}

/// A log at `path` with `events` (channel, bytes), one millisecond apart from `t0` on.
fn write_log(path: &Path, events: &[(&str, Vec<u8>)], gap_us: i64) {
    let mut w = LogWriter::create(path, true).unwrap();
    for (i, (ch, data)) in events.iter().enumerate() {
        w.write_event(1_700_000_000_000_000 + i as i64 * gap_us, ch, data).unwrap();
    }
    w.sync().unwrap();
}

const SCAN: &str = r#"{"utime": 7, "nranges": 3, "ranges": [1.5, 2.5, 3.5], "rad0": -1, "radstep": 0.5}"#;

/// `nerve ARGS` as a user without the permissions root would have: as `nobody` when running as root.
fn as_other_user(dir: &TestDir, args: &[&str]) -> Output {
    let mut cmd = nerve();
    cmd.args(args).stdin(Stdio::null());
    if running_as_root(dir) {
        cmd.uid(65534).gid(65534);
    }
    cmd.output().unwrap()
}

#[test]
fn help_shows_examples_defaults_exit_statuses_and_one_meaning_per_short_flag() {
    let top = run(&["--help"]);
    assert_eq!(code(&top), 0);
    let t = text(&top.stdout);
    assert!(t.contains("EXIT STATUS:") && t.contains("1  input rejected or incomplete") && t.contains("2  any other"));
    for cmd in ["gen", "pub", "sub", "spy", "log", "play", "export", "bench", "chan", "demo", "foxglove"] {
        let out = run(&[cmd, "--help"]);
        assert_eq!(code(&out), 0, "{cmd}");
        let h = text(&out.stdout);
        assert!(h.contains("EXAMPLES:\n  nerve "), "nerve {cmd} --help has no examples:\n{h}");
        // -c is lcm-gen's C flag and nothing else; -l is --url wherever there is one.
        assert_eq!(h.contains("-c, "), cmd == "gen", "nerve {cmd} --help:\n{h}");
        if h.contains("--url") {
            assert!(h.contains("-l, --url"), "nerve {cmd} --help:\n{h}");
        }
    }
    for sub in ["mk", "rm", "ls", "dump", "chmod"] {
        assert!(text(&run(&["chan", sub, "--help"]).stdout).contains("EXAMPLES:\n  nerve chan "), "chan {sub}");
    }
    assert!(text(&run(&["spy", "--help"]).stdout).contains("in seconds [default: 2]"));
    // What the parser refuses is rejected input: status 1.
    expect(&["play"], 1, &["FILE"]);
    expect(&["sub", "X", "--no-such-flag"], 1, &["--no-such-flag"]);
}

/// sub and spy on a channel directory this user cannot list, or whose matching channels it cannot open: an error
/// that says what and why (status 2), not silence and status 0.
#[test]
fn unreadable_shm_is_an_error_not_silence() {
    let root = TestDir::new("newuser", "shmperm");
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = root.path().join("channels");
    std::fs::create_dir(&dir).unwrap();
    let url = format!("shm://?dir={}", s(&dir));
    assert_eq!(code(&run(&["chan", "mk", "POSE", "--dir", &s(&dir), "--mode", "600"])), 0);
    let other_root = !running_as_root(&root);

    // The directory cannot be listed.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(if other_root { 0o300 } else { 0o700 })).unwrap();
    for args in [
        vec!["sub", ".*", "--url", &url, "--timeout-ms", "300"],
        vec!["spy", "--once", "--duration", "0.3", "--url", &url],
    ] {
        let out = as_other_user(&root, &args);
        let err = text(&out.stderr);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(err.contains("cannot read the channel directory") && err.contains("permission denied"), "{err}");
        assert!(err.contains(&s(&dir)), "{err}");
    }

    // The directory can be listed, but the only matching channel cannot be opened.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if other_root {
        assert_eq!(code(&run(&["chan", "chmod", "POSE", "000", "--dir", &s(&dir)])), 0);
    }
    for args in [
        vec!["sub", "POSE", "--url", &url, "--timeout-ms", "300"],
        vec!["spy", "--once", "--duration", "0.3", "--url", &url],
    ] {
        let out = as_other_user(&root, &args);
        let err = text(&out.stderr);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(err.contains("no channel in") && err.contains("channel POSE") && err.contains("permission denied"));
    }
    // A pattern that matches no unreadable channel listens as usual.
    let out = as_other_user(&root, &["sub", "OTHER", "--url", &url, "--timeout-ms", "200"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

/// `sub --url file://LOG` ends at the end of the log, and reports damage and foreign files as play does.
#[test]
fn sub_on_a_log_ends_with_it_and_reports_damage() {
    let dir = TestDir::new("newuser", "sublog");
    let log = dir.path().join("run.lcmlog");
    let scan = encode("exlcm.laser_t", SCAN);
    write_log(&log, &[("SCAN", scan.clone()), ("SCAN", scan.clone()), ("RAW", vec![1, 2, 3])], 1000);
    let types = types_dir();
    for speed in ["0", "1"] {
        let url = format!("file://{}?speed={speed}", s(&log));
        let child = nerve().args(["sub", ".*", "--url", &url, "--types", &types]).stdout(Stdio::piped()).spawn();
        let out = finish(Guard(Some(child.unwrap())), Duration::from_secs(20));
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        let t = text(&out.stdout);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(t.starts_with("SCAN ") && t.contains("exlcm.laser_t: {"), "{t}");
    }
    let url = format!("file://{}?speed=0", s(&log));
    expect(&["sub", ".*", "--url", &url, "--count", "5"], 1, &["the log ended after 3 of 5 messages"]);
    expect(&["sub", ".*", "--url", &format!("file://{}?sped=0", s(&log))], 1, &["unknown option 'sped'"]);

    // Junk before the last event (28 bytes of header, "RAW", 3 bytes): every intact event still comes, and the
    // damage is listed.
    let mut bytes = std::fs::read(&log).unwrap();
    let cut = bytes.len() - 34;
    bytes.splice(cut..cut, b"some junk bytes".iter().copied());
    let damaged = dir.path().join("damaged.lcmlog");
    std::fs::write(&damaged, bytes).unwrap();
    let url = format!("file://{}?speed=0", s(&damaged));
    let err = expect(&["sub", ".*", "--url", &url], 1, &["nerve sub: ", "damaged in 1 place(s)", "offset "]);
    assert!(!err.contains("not an LCM event log"), "{err}");

    // Text and random bytes are not logs at all: said so, status 1, at once.
    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, "these are notes, not a log\n").unwrap();
    let random = dir.path().join("random.bin");
    std::fs::write(
        &random,
        (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 & 0x7f).collect::<Vec<_>>(),
    )
    .unwrap();
    for f in [&txt, &random] {
        let url = format!("file://{}?speed=0", s(f));
        let err = expect(&["sub", ".*", "--url", &url], 1, &["not an LCM event log (no sync word in its"]);
        assert!(!err.contains("damaged in"), "{err}");
    }
}

/// play and export call a file with no sync word what it is, and export leaves no empty output behind.
#[test]
fn play_and_export_say_not_an_lcm_event_log() {
    let dir = TestDir::new("newuser", "notalog");
    let txt = dir.path().join("README.txt");
    std::fs::write(&txt, "hello\n").unwrap();
    let err = expect(&["play", &s(&txt), "--url", "memq://", "--speed", "0"], 1, &["not an LCM event log"]);
    assert!(!err.contains("damaged in"), "{err}");
    let out = dir.path().join("out.jsonl");
    let err = expect(&["export", &s(&txt), "--to", "jsonl", "-o", &s(&out)], 1, &["not an LCM event log"]);
    assert!(!err.contains("damaged in"), "{err}");
    assert!(!out.exists(), "an empty export was left behind");
}

/// export refuses to replace an earlier output without --force, and says when nothing decoded.
#[test]
fn export_refuses_to_overwrite_and_says_when_nothing_decodes() {
    let dir = TestDir::new("newuser", "export");
    let log = dir.path().join("run.lcmlog");
    let scan = encode("exlcm.laser_t", SCAN);
    write_log(&log, &[("SCAN", scan.clone()), ("SCAN", scan.clone()), ("SCAN", scan)], 1000);
    let mcap = dir.path().join("run.mcap");
    let types = types_dir();
    let (l, m) = (s(&log), s(&mcap));
    expect(&["export", &l, "--to", "mcap", "-o", &m, "--types", &types], 0, &["3 decoded"]);
    let typed = std::fs::read(&mcap).unwrap();
    // Without --types: refused before anything is written, the typed export kept.
    expect(&["export", &l, "--to", "mcap", "-o", &m], 1, &["run.mcap exists (use --force to replace it)"]);
    assert_eq!(std::fs::read(&mcap).unwrap(), typed);
    // With --force: written, and said to be incomplete.
    expect(&["export", &l, "--to", "mcap", "-o", &m, "--force"], 1, &["0 of 3 messages decoded: pass --types DIR"]);
    // CSV: a directory that is not empty is refused too.
    let csv = dir.path().join("csv");
    expect(&["export", &l, "--to", "csv", "-o", &s(&csv), "--types", &types], 0, &[]);
    expect(&["export", &l, "--to", "csv", "-o", &s(&csv), "--types", &types], 1, &["not empty (use --force"]);
    expect(&["export", &l, "--to", "csv", "-o", &s(&csv), "--types", &types, "-f"], 0, &[]);
}

/// A message too large for the URL's frame size makes no channel, so the retry with a larger one works; a channel
/// that exists with other sizes is named, with the command that removes it.
#[test]
fn pub_too_large_for_shm_leaves_no_channel_behind() {
    let dir = TestDir::new("newuser", "shmbig");
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![7u8; 300_000]).unwrap();
    let (url, b) = (dir.url(), s(&big));
    expect(&["pub", "BIG", "--url", &url, "--file", &b], 1, &["300000 bytes", "65536", "the channel was not made"]);
    assert!(!dir.path().join("nerve-BIG").exists());
    expect(&["pub", "BIG", "--url", &format!("{url}&frame_size=1M"), "--file", &b], 0, &[]);

    assert_eq!(code(&run(&["chan", "mk", "SMALL", "--frame-size", "1K", "--dir", &dir.s()])), 0);
    expect(
        &["pub", "SMALL", "--url", &format!("{url}&frame_size=1M"), "--file", &b],
        1,
        &["channel's frame size of 1024 bytes", "frame_size=1048576", "nerve chan rm SMALL"],
    );
}

/// `nerve log FILE --url BAD` opens the bus first: no empty FILE is left to make the next try refuse.
#[test]
fn log_with_a_bad_url_leaves_no_file() {
    let dir = TestDir::new("newuser", "logurl");
    let file = dir.path().join("run.lcmlog");
    let f = s(&file);
    expect(&["log", &f, "--url", "bogus://x", "--duration", "0.1"], 1, &["unknown provider 'bogus://'"]);
    assert!(!file.exists());
    expect(&["log", &f, "--url", "udpm://10.0.0.1:7667", "--duration", "0.1"], 1, &["address '10.0.0.1'"]);
    assert!(!file.exists());
    expect(&["log", &f, "--channel", "(", "--duration", "0.1", "--url", "memq://"], 1, &["--channel ("]);
    assert!(!file.exists());
    expect(&["log", &f, "--url", "memq://", "--duration", "0.1", "-q"], 0, &["recorded 0 messages"]);
    assert!(file.exists());
}

/// `udpm://ADDR` without a port is LCM's port 7667; the errors name the part of the URL at fault.
#[test]
fn udpm_address_without_a_port_takes_lcms_port() {
    expect(&["pub", "NOPORT", "--url", "udpm://239.255.76.150?ttl=0", "--hex", "00"], 0, &[]);
    expect(&["pub", "X", "--url", "udpm://239.255.76.150:0", "--hex", "00"], 1, &["port '0': must be 1 to 65535"]);
    expect(&["pub", "X", "--url", "udpm://239.255.76.150?ttl=999", "--hex", "00"], 1, &["option ttl '999'"]);
    let err = expect(&["pub", "X", "--url", "udpm://nowhere:7667", "--hex", "00"], 1, &["address 'nowhere'"]);
    assert!(!err.contains("option 'nowhere'"), "{err}");
}

/// One broken `.lcm` file beside good ones: sub, spy and pub warn and go on with the other types; export and gen
/// stay strict.
#[test]
fn a_broken_lcm_file_is_skipped_by_the_watching_commands() {
    let dir = TestDir::new("newuser", "broken");
    for f in std::fs::read_dir(types_dir()).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.path().join("editing.lcm"), "package exlcm;\nstruct half_t {\n  int32_t x\n").unwrap();
    let types = dir.s();
    let out = run(&["pub", "--type", "laser_t", "--template", "--types", &types]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"ranges\": []"));
    assert!(text(&out.stderr).contains("skipped") && text(&out.stderr).contains("editing.lcm"));
    expect(&["sub", "X", "--url", "memq://", "--types", &types, "--timeout-ms", "100"], 0, &["editing.lcm"]);
    expect(&["spy", "--once", "--duration", "0.2", "--url", "memq://", "--types", &types], 0, &["editing.lcm"]);
    let log = dir.path().join("l.lcmlog");
    write_log(&log, &[("SCAN", encode("exlcm.laser_t", SCAN))], 1000);
    expect(&["export", &s(&log), "--to", "jsonl", "-o", "-", "--types", &types], 1, &["editing.lcm"]);
    let lcm = dir.path().join("editing.lcm");
    expect(&["gen", "--print-fingerprints", &s(&lcm)], 1, &["editing.lcm:"]);
}

/// pub --json: members left out are zero, --template prints the skeleton, a short type name resolves when it is
/// unique, and errors say the JSON path or line and column.
#[test]
fn pub_json_fills_members_and_says_where_errors_are() {
    let dir = TestDir::new("newuser", "pubjson");
    let types = types_dir();
    let out = run(&["pub", "--type", "exlcm.laser_t", "--template", "--types", &types]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let template = text(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&template).unwrap();
    assert_eq!(v, serde_json::json!({"utime": 0, "nranges": 0, "ranges": [], "rad0": 0.0, "radstep": 0.0}));
    assert!(template.find("utime") < template.find("radstep"), "declaration order:\n{template}");

    // Only `ranges` given: nranges from its length, the rest zero; the short name finds exlcm.laser_t.
    let log = dir.path().join("pub.lcmlog");
    let url = format!("file://{}?mode=w", s(&log));
    expect(
        &["pub", "SCAN", "--url", &url, "--types", &types, "--type", "laser_t", "--json", r#"{"ranges": [1, 2]}"#],
        0,
        &[],
    );
    let out = run(&["export", &s(&log), "--to", "jsonl", "-o", "-", "--types", &types, "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    let value = &line["value"];
    assert_eq!(
        (value["nranges"].as_i64(), value["utime"].as_i64(), value["rad0"].as_f64()),
        (Some(2), Some(0), Some(0.0))
    );

    // Structs inside arrays are filled too, and numbers arrive as written (not reparsed and rounded).
    let log = dir.path().join("nested.lcmlog");
    let url = format!("file://{}?mode=w", s(&log));
    let path = r#"{"waypoints": [{"id": "a"}, {"id": "b", "position": [1.5, 2]}]}"#;
    expect(&["pub", "P", "--url", &url, "--types", &types, "--type", "path_t", "--json", path], 0, &[]);
    let pose = r#"{"pos": [0.1, 0.30000000000000004, 1e-300]}"#;
    expect(
        &["pub", "Q", "--url", &format!("{url}&mode=a"), "--types", &types, "--type", "pose_t", "--json", pose],
        0,
        &[],
    );
    let out = run(&["sub", ".*", "--url", &format!("file://{}?speed=0", s(&log)), "--types", &types]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains(
            r#""num_waypoints":2,"waypoints":[{"id":"a","position":[0.0,0.0]},{"id":"b","position":[1.5,2.0]}]"#
        ),
        "{t}"
    );
    assert!(t.contains(r#""pos":[0.1,0.30000000000000004,1e-300],"vel":[0.0,0.0,0.0]"#), "{t}");

    let pub_json = |json: &str| -> Vec<String> {
        vec!["pub", "SCAN", "--url", "memq://", "--types", &types, "--type", "laser_t", "--json", json]
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    let args = pub_json(r#"{"ranges": [1, "a"]}"#);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = expect(&args, 1, &["exlcm.laser_t.ranges[1]: expected a number"]);
    assert!(!err.contains("at byte"), "{err}");
    let args = pub_json("{\"utime\": 1,\n \"ranges\": [1, 2}");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect(&args, 1, &["not valid JSON", "line 2 column"]);
    let args = pub_json(r#"{"utim": 1}"#);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect(&args, 1, &["unknown member 'utim'"]);

    // Names: a typo gets a suggestion; a short name two packages share must be qualified.
    expect(&["pub", "X", "--types", &types, "--type", "lasr_t", "--json", "{}"], 1, &["did you mean exlcm.laser_t?"]);
    let two = TestDir::new("newuser", "twopkgs");
    std::fs::write(two.path().join("a.lcm"), "package a;\nstruct point_t { double x; }\n").unwrap();
    std::fs::write(two.path().join("b.lcm"), "package b;\nstruct point_t { float x; }\n").unwrap();
    expect(
        &["pub", "X", "--types", &two.s(), "--type", "point_t", "--template"],
        1,
        &["several packages: a.point_t, b.point_t"],
    );
    expect(&["pub", "--types", &two.s(), "--type", "b.point_t", "--template"], 0, &[]);
}

/// sub summarises long byte arrays in text lines, as the spy does; --full prints them whole.
#[test]
fn sub_summarises_long_byte_arrays() {
    let dir = TestDir::new("newuser", "bytes");
    let data: Vec<String> = (0..10_000).map(|i| (i % 256).to_string()).collect();
    let json = format!(
        r#"{{"utime": 1, "width": 100, "height": 100, "pixelformat": 0, "size": 10000, "data": [{}]}}"#,
        data.join(",")
    );
    let log = dir.path().join("img.lcmlog");
    write_log(&log, &[("IMAGE", encode("exlcm.image_t", &json))], 1000);
    let url = format!("file://{}?speed=0", s(&log));
    let types = types_dir();
    let out = run(&["sub", "IMAGE", "--url", &url, "--types", &types]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert!(line.len() < 300, "{} characters: {line}", line.len());
    assert!(line.contains(r#""data":"<10000 bytes: 00 01 02 03"#), "{line}");
    let out = run(&["sub", "IMAGE", "--url", &url, "--types", &types, "--full"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).len() > 30_000 && text(&out.stdout).contains("253,254,255,0,1"));
}

/// chan mk and rm in a directory this user may not write: the directory is named, not a temporary file, and
/// blamed, not the channel file's mode.
#[test]
fn chan_mk_and_rm_blame_the_directory() {
    let dir = TestDir::new("newuser", "chanperm");
    let d = dir.s();
    assert_eq!(code(&run(&["chan", "mk", "KEEP", "--mode", "666", "--dir", &d])), 0);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    for (args, op) in [
        (vec!["chan", "mk", "NEW", "--dir", &d], "making a channel"),
        (vec!["chan", "rm", "KEEP", "--dir", &d], "removing a channel"),
    ] {
        let out = as_other_user(&dir, &args);
        let err = text(&out.stderr);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!("{d}: permission denied ({op} needs write access to the channel directory")),
            "{err}"
        );
        assert!(!err.contains(".tmp"), "{err}");
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Ctrl-C stops `nerve play` and it still prints its summary.
#[test]
fn play_prints_its_summary_on_ctrl_c() {
    let dir = TestDir::new("newuser", "playint");
    let log = dir.path().join("slow.lcmlog");
    // Two events a minute apart: the player is waiting for the second when interrupted.
    write_log(&log, &[("A", vec![1]), ("A", vec![2])], 60_000_000);
    let child = nerve().args(["play", &s(&log), "--url", "memq://"]).stderr(Stdio::piped()).spawn().unwrap();
    let g = Guard(Some(child));
    std::thread::sleep(Duration::from_millis(700));
    assert!(Command::new("kill").args(["-INT", &g.pid().to_string()]).status().unwrap().success());
    let out = finish(g, Duration::from_secs(10));
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nerve play: interrupted; published 1 messages"), "{}", text(&out.stderr));
}

/// A tmux of this test's own (its own server socket, killed when dropped) running one command in a window of
/// `width` columns.
struct Tmux(String);

impl Tmux {
    fn start(tag: &str, width: u16, cmd: &str) -> Tmux {
        let t = Tmux(format!("nerve-newuser-{tag}-{}", std::process::id()));
        let out = t.run(&["new-session", "-d", "-s", "main", "-x", &width.to_string(), "-y", "24", cmd]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        t
    }
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").args(["-L", &self.0]).args(args).output().unwrap()
    }
    fn screen(&self) -> String {
        text(&self.run(&["capture-pane", "-p", "-t", "main"]).stdout)
    }
    fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(Instant::now() < deadline, "never saw {what:?}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    fn running(&self) -> bool {
        self.run(&["has-session", "-t", "main"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// The spy at 80 columns ends a cut channel name with "…"; Esc on the table does not quit, q does.
#[test]
fn spy_at_80_columns_cuts_names_with_an_ellipsis_and_esc_does_not_quit() {
    assert!(Command::new("tmux").arg("-V").output().is_ok(), "tmux is missing: scripts/setup installs it");
    let dir = TestDir::new("newuser", "spy80");
    let log = dir.path().join("long.lcmlog");
    let name = "A_VERY_LONG_CHANNEL_NAME_THAT_DOES_NOT_FIT";
    write_log(&log, &vec![(name, encode("exlcm.laser_t", SCAN)); 3], 1000);
    let cmd = format!("{} spy --types {} --url 'file://{}?speed=0'", env!("CARGO_BIN_EXE_nerve"), types_dir(), s(&log));
    let tmux = Tmux::start("spy80", 80, &cmd);
    let screen = tmux.wait_for("A_VERY_LONG");
    let row = screen.lines().find(|l| l.contains("A_VERY_LONG")).unwrap();
    assert!(row.contains("…") && !row.contains(name), "{screen}");
    tmux.run(&["send-keys", "-t", "main", "Escape"]);
    std::thread::sleep(Duration::from_millis(800));
    assert!(tmux.running(), "Esc quit the spy");
    assert!(tmux.screen().contains("A_VERY_LONG"));
    tmux.run(&["send-keys", "-t", "main", "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.running() {
        assert!(Instant::now() < deadline, "q did not quit:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// play's progress bar says that it waits for the next event's time.
#[test]
fn play_progress_says_it_is_waiting_for_the_next_message() {
    assert!(Command::new("tmux").arg("-V").output().is_ok(), "tmux is missing: scripts/setup installs it");
    let dir = TestDir::new("newuser", "playbar");
    let log = dir.path().join("slow.lcmlog");
    write_log(&log, &[("A", vec![1]), ("A", vec![2])], 60_000_000);
    let cmd = format!("{} play {} --url memq://", env!("CARGO_BIN_EXE_nerve"), s(&log));
    let tmux = Tmux::start("playbar", 120, &cmd);
    let screen = tmux.wait_for("s for the next one");
    assert!(screen.contains("1 msgs, waiting 60.0 s") || screen.contains("1 msgs, waiting 59."), "{screen}");
    tmux.run(&["send-keys", "-t", "main", "C-c"]);
}

/// A misspelt URL option is refused by the bus, not ignored: the command prints the bus's error (naming the option
/// and the ones the provider knows) and exits 1, and nothing is made.
#[test]
fn a_misspelt_url_option_is_rejected() {
    let dir = TestDir::new("newuser", "option");
    let url = format!("{}&frame=8", dir.url());
    expect(&["pub", "X", "--url", &url, "--hex", "00"], 1, &["unknown option 'frame'", "frame_size"]);
    assert!(!dir.path().join("nerve-X").exists());
    expect(
        &["sub", "X", "--url", "shm://?frame=8", "--timeout-ms", "100"],
        1,
        &["shm://?frame=8: unknown option 'frame'"],
    );
    expect(&["spy", "--once", "--url", "udpm://239.255.76.150?tll=0"], 1, &["unknown option 'tll'"]);
}

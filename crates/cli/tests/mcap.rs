//! MCAP recordings end to end: the same traffic (a log played over udpm on loopback) recorded by `nerve log`
//! to MCAP and to an LCM log plays back through `nerve play` to identical bytes; the recording carries its types,
//! so `nerve export` decodes it with no `--types`, and exports it back to an LCM log, and an LCM log to an MCAP
//! recording, without changing an event; and a recording cut short is refused with an error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nerve_log::{LogReader, LogWriter};
use nerve_types::{Registry, TypeName};

fn nerve(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve"))
        .args(args)
        .env_remove("NERVE_TYPES")
        .env_remove("NERVE_URL")
        .output()
        .unwrap();
    out
}

fn ok(args: &[&str]) -> Output {
    let out = nerve(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nerve {args:?}: {err}");
    out
}

fn types_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/types")
}

/// Laser scans (a type the recording will know), bytes of no known type, and a message of 300 KB.
fn source(path: &Path) -> Vec<(String, Vec<u8>)> {
    let (reg, _) = Registry::load_dirs(&[types_dir()]);
    let laser = TypeName::parse("exlcm.laser_t");
    let mut w = LogWriter::create(path, true).unwrap();
    let mut want = Vec::new();
    for i in 0..60i64 {
        let (channel, data) = match i % 3 {
            0 | 1 => {
                let json = format!(
                    r#"{{"utime": {i}, "nranges": 3, "ranges": [{}, 2.5, -1], "rad0": -1.5, "radstep": 0.25}}"#,
                    i as f64 / 8.0
                );
                let v = reg.from_json(&laser, &json).unwrap();
                ("LASER".to_owned(), reg.encode(&laser, &v).unwrap())
            }
            _ => {
                let len = if i == 32 { 300_000 } else { 12 + i as usize };
                ("RAW".to_owned(), (0..len).map(|k| (k as i64 * 13 + i) as u8).collect())
            }
        };
        w.write_event(1_700_000_000_000_000 + i * 1000, &channel, &data).unwrap();
        want.push((channel, data));
    }
    w.sync().unwrap();
    want
}

fn events(path: &Path) -> Vec<(i64, String, Vec<u8>)> {
    let mut r = nerve_log::mcap::AnyLog::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push((e.utime, e.channel().into_owned(), e.data.to_vec()));
    }
    out
}

fn without_time(v: Vec<(i64, String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    v.into_iter().map(|(_, c, d)| (c, d)).collect()
}

#[test]
fn mcap_recordings_play_back_and_export_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let p = |name: &str| dir.join(name).display().to_string();
    let want = source(Path::new(&p("src.lcmlog")));
    let bus = format!("udpm://239.255.76.87:{}?ttl=0&recv_buf_size=16777216", 27_000 + std::process::id() % 1000);
    let types = types_dir().display().to_string();

    // The same traffic, recorded twice at once.
    let spawn =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_nerve")).args(args).env_remove("NERVE_TYPES").spawn().unwrap();
    let (rec_mcap, rec_lcm) = (p("rec.mcap"), p("rec.lcmlog"));
    let mut loggers = [
        spawn(&["log", &rec_mcap, "--url", &bus, "--types", &types, "--duration", "4", "-q"]),
        spawn(&["log", &rec_lcm, "--url", &bus, "--duration", "4", "-q"]),
    ];
    std::thread::sleep(std::time::Duration::from_millis(1500));
    ok(&["play", &p("src.lcmlog"), "--url", &bus, "-q"]);
    for l in &mut loggers {
        assert!(l.wait().unwrap().success());
    }
    let recorded = events(Path::new(&p("rec.mcap")));
    assert!(without_time(events(Path::new(&p("rec.lcmlog")))) == want, "the LCM log differs from the source");
    assert!(without_time(recorded.clone()) == want, "the MCAP recording differs from the source");

    // Played back, each to a log of its own: identical bytes.
    for (from, to) in [("rec.mcap", "play-mcap.lcmlog"), ("rec.lcmlog", "play-lcm.lcmlog")] {
        ok(&["play", &p(from), "--url", &format!("file://{}?mode=w", p(to)), "--speed", "0", "-q"]);
    }
    let played: Vec<_> = ["play-mcap.lcmlog", "play-lcm.lcmlog"]
        .iter()
        .map(|f| {
            let r = LogReader::open(p(f)).unwrap();
            r.map(|e| e.unwrap()).map(|e| (e.channel, e.data)).collect::<Vec<_>>()
        })
        .collect();
    assert!(
        played[0] == want && played[0] == played[1],
        "played back: {} and {} events",
        played[0].len(),
        played[1].len()
    );

    // The recording carries its types: decoded with no --types.
    let out = ok(&["export", &p("rec.mcap"), "--to", "jsonl", "-o", "-", "-q"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains(r#""type":"exlcm.laser_t""#)).count(), 40, "{text}");
    ok(&["export", &p("rec.mcap"), "--to", "mcap", "-o", &p("view.mcap"), "-q"]);

    // MCAP to an LCM log and back, every event as it was (times included).
    ok(&["export", &p("rec.mcap"), "--to", "lcm", "-o", &p("back.lcmlog"), "-q"]);
    assert!(events(Path::new(&p("back.lcmlog"))) == recorded, "MCAP to LCM changed events");
    let enc = ["--to", "mcap", "--encoding", "lcm", "--compression", "lz4", "--types", &types, "-q"];
    let mut args = vec!["export", &*p("back.lcmlog")].into_iter().map(String::from).collect::<Vec<_>>();
    args.extend(enc.iter().map(|s| s.to_string()));
    args.extend(["-o".to_owned(), p("again.mcap")]);
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(events(Path::new(&p("again.mcap"))) == recorded, "LCM to MCAP changed events");

    // Cut short: what came before is played, then an error.
    let bytes = std::fs::read(p("rec.mcap")).unwrap();
    std::fs::write(p("cut.mcap"), &bytes[..bytes.len() / 2]).unwrap();
    let out = nerve(&["play", &p("cut.mcap"), "--url", &format!("file://{}?mode=w", p("cut.lcmlog")), "--speed", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not readable as MCAP"), "{err}");
    // An export for viewing holds JSON, not LCM bytes: refused, saying so.
    let out = nerve(&["play", &p("view.mcap"), "--url", "memq://", "--speed", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not LCM bytes"), "{err}");
}

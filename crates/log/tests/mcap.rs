//! MCAP recordings: what the writer records reads back byte for byte, split by size and by time; and hostile
//! files (cut short, a chunk whose length runs past the file, a chunk that decompresses far past its claim, a
//! record longer than the reader's limit) are refused with an error, without buffering what they claim.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_log::mcap::{AnyLog, Compression, McapReader, McapWriter, SplitMcap, TypeDef, TypeDefs, MAX_RECORD};
use nerve_log::{Event, LogError};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nerve-mcap-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn events() -> Vec<Event> {
    (0..300)
        .map(|i: i64| {
            let mut data = (0x1234_5678_9abc_def0u64 + (i % 3) as u64).to_be_bytes().to_vec();
            data.extend((0..(i * 37) % 5000).map(|k| (k * 7 + i) as u8));
            Event { number: i, utime: 1_700_000_000_000_000 + i * 1001, channel: format!("CH{}", i % 4), data }
        })
        .collect()
}

fn defs() -> TypeDefs {
    Arc::new(|fp| {
        (fp == 0x1234_5678_9abc_def0)
            .then(|| TypeDef { name: "t.a_t".into(), lcm: "struct t.a_t { byte x; }\n".into() })
    })
}

fn read_all(path: &Path) -> Vec<Event> {
    let mut r = AnyLog::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push(e.to_owned());
    }
    out
}

#[test]
fn recordings_read_back_byte_for_byte_in_every_compression() {
    let dir = tmp("roundtrip");
    for c in [Compression::Zstd, Compression::Lz4, Compression::None] {
        let path = dir.join(format!("{c:?}.mcap"));
        let mut w = McapWriter::create(&path, false, c, defs()).unwrap();
        for e in events() {
            w.write_event(e.utime, &e.channel, &e.data).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(read_all(&path), events(), "{c:?}");
        // The known type's definition is its channel's schema; the others have none.
        let (schemas, _) = nerve_log::mcap::read_schemas(&path).unwrap();
        assert_eq!(schemas.len(), 1);
        assert_eq!((schemas[0].name.as_str(), schemas[0].encoding.as_str()), ("t.a_t", "lcm"));
        assert!(matches!(McapWriter::create(&path, false, c, defs()), Err(LogError::Exists { .. })));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn split_recordings_are_whole_files_that_together_hold_every_event() {
    let dir = tmp("split");
    let cases = [(Some(200_000), None, 4..=8, Compression::None), (None, Some(100_000), 3..=4, Compression::Lz4)];
    for (bytes, micros, want_files, c) in cases {
        let base = dir.join(format!("s{}.mcap", want_files.start()));
        let mut s = SplitMcap::create(&base, bytes, micros, false, c, defs()).unwrap();
        for e in events() {
            s.write_event(e.utime, &e.channel, &e.data).unwrap();
        }
        s.finish().unwrap();
        let files = s.files().to_vec();
        assert!(want_files.contains(&files.len()), "{} files", files.len());
        if let Some(limit) = bytes {
            // Past the size by at most the last event and the summary.
            assert!(files.iter().all(|f| std::fs::metadata(f).unwrap().len() < limit + 40_000));
        }
        assert!(files[0].file_name().unwrap().to_string_lossy().ends_with(".00.mcap"));
        let mut all = Vec::new();
        for f in &files {
            let got = read_all(f);
            if let Some(span) = micros {
                assert!(got.last().unwrap().utime - got[0].utime < span, "{}", f.display());
            }
            all.extend(got.into_iter().map(|e| (e.utime, e.channel, e.data)));
        }
        let want: Vec<_> = events().into_iter().map(|e| (e.utime, e.channel, e.data)).collect();
        assert_eq!(all, want);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reads `bytes` as MCAP to the end: the messages, then the error it ends with (if any).
fn read_bytes(bytes: Vec<u8>) -> (usize, Option<LogError>) {
    let len = bytes.len() as u64;
    let mut r = McapReader::from_reader(std::io::Cursor::new(bytes), len);
    let mut n = 0;
    loop {
        match r.next_event() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, None),
            Err(e) => return (n, Some(e)),
        }
    }
}

fn record(op: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![op];
    r.extend_from_slice(&(body.len() as u64).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// A file's start: magic, header, and a channel (id 1, LCM messages, no schema).
fn preamble() -> Vec<u8> {
    let mut f = b"\x89MCAP0\r\n".to_vec();
    f.extend(record(0x01, &[0; 8]));
    let mut ch = Vec::new();
    ch.extend_from_slice(&1u16.to_le_bytes());
    ch.extend_from_slice(&0u16.to_le_bytes());
    for s in ["CH", "lcm"] {
        ch.extend_from_slice(&(s.len() as u32).to_le_bytes());
        ch.extend_from_slice(s.as_bytes());
    }
    ch.extend_from_slice(&0u32.to_le_bytes());
    f.extend(record(0x04, &ch));
    f
}

/// A chunk record around `records` compressed as `compression` says, claiming `uncompressed` bytes.
fn chunk(compression: &str, compressed: &[u8], uncompressed: u64, crc: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&uncompressed.to_le_bytes());
    body.extend_from_slice(&crc.to_le_bytes());
    body.extend_from_slice(&(compression.len() as u32).to_le_bytes());
    body.extend_from_slice(compression.as_bytes());
    body.extend_from_slice(&(compressed.len() as u64).to_le_bytes());
    body.extend_from_slice(compressed);
    record(0x06, &body)
}

fn message_header(len: u64) -> Vec<u8> {
    let mut m = vec![0x05];
    m.extend_from_slice(&len.to_le_bytes());
    m.extend_from_slice(&1u16.to_le_bytes());
    m.extend_from_slice(&[0; 20]);
    m
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn hostile_files_are_refused_with_bounded_memory() {
    let dir = tmp("hostile");
    let good = dir.join("good.mcap");
    let mut w = McapWriter::create(&good, false, Compression::Zstd, defs()).unwrap();
    for e in events() {
        w.write_event(e.utime, &e.channel, &e.data).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&good).unwrap();

    // Cut short anywhere: the messages before the cut at most, then an error (never a panic, never a clean end).
    for cut in [9, 40, 200, bytes.len() / 3, bytes.len() / 2, bytes.len() - 9] {
        let (n, err) = read_bytes(bytes[..cut].to_vec());
        assert!(n <= 300 && matches!(err, Some(LogError::Mcap { .. }) | Some(LogError::Io { .. })), "cut {cut}: {n}");
    }
    // A chunk whose length field runs past the end of the file.
    let mut f = preamble();
    let mut c = chunk("", &message_header(22), 31, 0);
    c[1..9].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    f.extend(c);
    let (n, err) = read_bytes(f);
    assert_eq!(n, 0);
    assert!(err.is_some());
    // A chunk whose CRC does not match its records.
    let mut body = message_header(22);
    body[9] = 1;
    let mut f = preamble();
    f.extend(chunk("", &body, body.len() as u64, 0xdead_beef));
    let (n, err) = read_bytes(f);
    assert!(n == 0 && err.is_some(), "{err:?}");

    // A decompression bomb: a zstd chunk a few kilobytes long whose records claim 4 GiB, the first a message of
    // 3 GiB. Neither is buffered: the message is past the reader's limit.
    let before = peak_rss_kib();
    let mut z = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    z.write_all(&message_header(3 << 30)).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        z.write_all(&zeros).unwrap();
    }
    let compressed = z.finish().unwrap();
    assert!(compressed.len() < 1 << 16, "{}", compressed.len());
    let mut f = preamble();
    f.extend(chunk("zstd", &compressed, 4 << 30, 0));
    let (n, err) = read_bytes(f);
    assert_eq!(n, 0);
    let err = err.expect("refused").to_string();
    assert!(err.contains("MCAP"), "{err}");
    // A chunk claiming less than it decompresses to: read up to the claim, and refused there.
    let mut z = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    z.write_all(&message_header(64 << 20)).unwrap();
    for _ in 0..128 {
        z.write_all(&zeros).unwrap();
    }
    let compressed = z.finish().unwrap();
    let mut f = preamble();
    f.extend(chunk("zstd", &compressed, 1 << 20, 0));
    let (n, err) = read_bytes(f);
    assert!(n == 0 && err.is_some());
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < (MAX_RECORD as u64 / 1024) + 64 * 1024, "peak memory grew by {grown} KiB");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_mcap_compression_zstd_and_lz4_are_refused_naming_the_feature() {
    // Built without the feature (`cargo test -p nerve-log --no-default-features --features export`), a build asked
    // for zstd or lz4 says which feature it lacks, and leaves no file behind; uncompressed MCAP still works.
    let dir = tmp("not-built");
    for c in [Compression::Zstd, Compression::Lz4] {
        let path = dir.join(format!("{c:?}.mcap"));
        match McapWriter::create(&path, false, c, defs()) {
            Ok(w) => assert!(cfg!(feature = "mcap-compression") && w.finish().is_ok()),
            Err(e) => {
                let text = format!("{e}: {}", std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default());
                assert!(!cfg!(feature = "mcap-compression") && text.contains("`mcap-compression`"), "{text}");
                assert!(!path.exists());
            }
        }
    }
    let path = dir.join("none.mcap");
    let mut w = McapWriter::create(&path, false, Compression::None, defs()).unwrap();
    w.write_event(1, "CH", b"\x12\x34\x56\x78\x9a\xbc\xde\xf0").unwrap();
    w.finish().unwrap();
    assert_eq!(read_all(&path).len(), 1);
    // Reading a zstd chunk: one message of 8 bytes (its record: 22 bytes of header, then the data).
    let mut body = message_header(30);
    body.extend_from_slice(&[0; 8]);
    let mut z = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    z.write_all(&body).unwrap();
    let mut f = preamble();
    f.extend(chunk("zstd", &z.finish().unwrap(), body.len() as u64, 0));
    let (n, err) = read_bytes(f);
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    if cfg!(feature = "mcap-compression") {
        assert_eq!(n, 1, "{text}"); // then an error: the file ends without a footer
    } else {
        assert!(n == 0 && text.contains("`mcap-compression`"), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

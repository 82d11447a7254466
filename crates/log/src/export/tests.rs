//! Export tests: the MCAP file's record structure (walked by a reader written here from the spec), the JSON forms,
//! and the CSV files, over a small schema with nested, multi-dimensional, byte and recursive members.

use std::io::Cursor;

use nerve_types::dynamic::from_json;
use nerve_types::{check, Registry, Source, TypeName};

use super::*;
use crate::mcap::Compression;
use crate::{LogReader, LogWriter};

const TYPES: &str = "package t;
struct vec_t { double v[3]; }
struct pose_t { int64_t utime; vec_t position; float m[2][2]; int32_t n; byte blob[n]; string name; boolean ok; }
struct node_t { int32_t n; node_t children[n]; }";

fn registry() -> Registry {
    let src = Source { path: "t.lcm".into(), text: TYPES.into() };
    Registry::new(check(&[src], &[]).unwrap().schema)
}

fn pose_bytes(reg: &Registry, i: i64, nan: bool) -> Vec<u8> {
    let json = format!(
        r#"{{"utime": {i}, "position": {{"v": [1.5, -2, {}]}}, "m": [[1, 2], [3, {}]], "n": 3, "blob": [0, 255, 7], "name": "p,\"{i}\"", "ok": true}}"#,
        i * 10,
        if nan { "\"NaN\"" } else { "4" }
    );
    let ty = TypeName::parse("t.pose_t");
    reg.encode(&ty, &from_json(reg.schema(), &ty, &json).unwrap()).unwrap()
}

fn node_bytes(reg: &Registry) -> Vec<u8> {
    let ty = TypeName::parse("t.node_t");
    let json = r#"{"n": 2, "children": [{"n": 0, "children": []}, {"n": 1, "children": [{"n": 0, "children": []}]}]}"#;
    reg.encode(&ty, &from_json(reg.schema(), &ty, json).unwrap()).unwrap()
}

fn sample_log(reg: &Registry) -> Vec<u8> {
    let mut w = LogWriter::new(Vec::new());
    for i in 0..5 {
        w.write_event(1_000_000 + i, "POSE", &pose_bytes(reg, i, false)).unwrap();
        w.write_event(1_000_500 + i, "TREE", &node_bytes(reg)).unwrap();
    }
    w.write_event(2_000_000, "RAW", b"\x01\x02\x03\x04\x05\x06\x07\x08xyz").unwrap();
    w.write_event(2_000_001, "POSE", b"short").unwrap();
    w.into_inner()
}

fn export_with(dir: &std::path::Path, reg: Registry, f: impl Fn(&Decoder, &mut LogReader<Cursor<Vec<u8>>>)) {
    let log = sample_log(&reg);
    let dec = Decoder::new(Some(reg));
    let mut r = LogReader::new(Cursor::new(log)).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    f(&dec, &mut r);
}

/// Hands every event of `r` to an exporter.
fn feed(r: &mut LogReader<Cursor<Vec<u8>>>, export: &mut Feed<'_>) -> Result<(), ExportError> {
    while let Some(e) = r.next_event().unwrap() {
        export(&e)?;
    }
    Ok(())
}

/// Hands `events` to an exporter (each event's offset its index).
fn feed_all(events: &[crate::Event], export: &mut Feed<'_>) -> Result<(), ExportError> {
    for (i, e) in events.iter().enumerate() {
        export(&crate::EventRef {
            number: e.number,
            utime: e.utime,
            channel_bytes: e.channel.as_bytes(),
            data: &e.data,
            offset: i as u64,
        })?;
    }
    Ok(())
}

/// A CSV export of the log `log` into `out`: its figures, how many passes it took over the log, and the files it
/// made, sorted.
fn export_csv_counting_passes(dec: &Decoder, log: Vec<u8>, out: &std::path::Path) -> (ExportStats, usize, Vec<String>) {
    let mut r = LogReader::new(Cursor::new(log)).unwrap();
    let mut evs = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        evs.push(e.to_owned());
    }
    let mut passes = 0;
    let stats = CsvExport::create(out, dec)
        .unwrap()
        .run(|export: &mut Feed<'_>| {
            passes += 1;
            feed_all(&evs, export)
        })
        .unwrap();
    let mut files: Vec<String> =
        std::fs::read_dir(out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    (stats, passes, files)
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nerve-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// (opcode, body) of every record between the magics.
fn records(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    assert_eq!(&bytes[..8], b"\x89MCAP0\r\n");
    assert_eq!(&bytes[bytes.len() - 8..], b"\x89MCAP0\r\n");
    let mut out = Vec::new();
    let mut i = 8;
    while i < bytes.len() - 8 {
        let op = bytes[i];
        let len = u64::from_le_bytes(bytes[i + 1..i + 9].try_into().unwrap()) as usize;
        out.push((op, bytes[i + 9..i + 9 + len].to_vec()));
        i += 9 + len;
    }
    assert_eq!(i, bytes.len() - 8, "records end exactly at the trailing magic");
    out
}

#[test]
fn mcap_has_the_spec_structure() {
    let dir = tmp("mcap");
    let path = dir.join("out.mcap");
    export_with(&dir, registry(), |dec, r| {
        let x = McapExport::create_with(&path, dec, Compression::None).unwrap();
        let stats = x.run(|export: &mut Feed<'_>| feed(r, export)).unwrap();
        assert_eq!((stats.messages, stats.decoded, stats.undecoded), (12, 10, 2));
    });
    let bytes = std::fs::read(&path).unwrap();
    let recs = records(&bytes);
    let ops: Vec<u8> = recs.iter().map(|(o, _)| *o).collect();
    assert_eq!(ops[0], 0x01, "header first");
    assert_eq!(*ops.last().unwrap(), 0x02, "footer last");
    let data_end = ops.iter().position(|&o| o == 0x0F).unwrap();
    assert!(ops[..data_end].contains(&0x06) && ops[..data_end].contains(&0x07), "a chunk and message indexes");
    // Summary: schemas (pose, node, raw), channels (POSE, TREE, RAW, and POSE undecoded), statistics, chunk index.
    let summary: Vec<u8> = ops[data_end + 1..ops.len() - 1].to_vec();
    assert_eq!(summary.iter().filter(|&&o| o == 0x03).count(), 3);
    assert_eq!(summary.iter().filter(|&&o| o == 0x04).count(), 4);
    assert_eq!(summary.iter().filter(|&&o| o == 0x0B).count(), 1);
    assert_eq!(summary.iter().filter(|&&o| o == 0x08).count(), 1);
    // The footer points at the summary and the summary offsets, and its CRC covers them.
    let footer = &recs.last().unwrap().1;
    let summary_start = u64::from_le_bytes(footer[0..8].try_into().unwrap()) as usize;
    let offsets_start = u64::from_le_bytes(footer[8..16].try_into().unwrap()) as usize;
    assert_eq!(bytes[summary_start], 0x03);
    assert_eq!(bytes[offsets_start], 0x0E);
    let footer_at = bytes.len() - 8 - 9 - 20;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[summary_start..footer_at + 9 + 16]);
    assert_eq!(crc.finalize(), u32::from_le_bytes(footer[16..20].try_into().unwrap()));
    // The chunk's CRC covers its records.
    let (_, chunk) = recs.iter().find(|(o, _)| *o == 0x06).unwrap();
    let size = u64::from_le_bytes(chunk[16..24].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(chunk[24..28].try_into().unwrap());
    let data = &chunk[chunk.len() - size..];
    assert_eq!(crc32fast::hash(data), crc);
    // One message in JSON: flattened matrix, base64 blob, nested struct written out.
    let text = String::from_utf8_lossy(data);
    assert!(text.contains(r#"{"utime":0,"position":{"v":[1.5,-2.0,0.0]},"m":[1.0,2.0,3.0,4.0],"n":3,"blob":"AP8H","name":"p,\"0\"","ok":true}"#), "{text}");
    assert!(text.contains(r#"{"n":2,"children":[{"n":0,"children":[]},{"n":1,"children":[{"n":0,"children":[]}]}]}"#));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mcap_chunks_compress_with_zstd_and_lz4_and_read_back_with_the_mcap_crate() {
    for (compression, name) in [(Compression::Zstd, "zstd"), (Compression::Lz4, "lz4")] {
        let dir = tmp(&format!("mcap-{name}"));
        let path = dir.join("out.mcap");
        export_with(&dir, registry(), |dec, r| {
            let x = McapExport::create_with(&path, dec, compression).unwrap();
            let stats = x.run(|export: &mut Feed<'_>| feed(r, export)).unwrap();
            assert_eq!(stats.messages, 12);
            assert_eq!(stats.bytes_out, std::fs::metadata(&path).unwrap().len());
        });
        let bytes = std::fs::read(&path).unwrap();
        let summary = ::mcap::Summary::read(&bytes).unwrap().expect("a summary");
        assert_eq!(summary.stats.as_ref().unwrap().message_count, 12);
        assert!(!summary.chunk_indexes.is_empty());
        assert!(summary.chunk_indexes.iter().all(|c| c.compression == name), "{name}");
        let messages: Vec<_> = ::mcap::MessageStream::new(&bytes).unwrap().map(Result::unwrap).collect();
        assert_eq!(messages.len(), 12);
        let first = &messages[0];
        assert_eq!((first.channel.topic.as_str(), first.channel.message_encoding.as_str()), ("POSE", "json"));
        assert_eq!(first.log_time, 1_000_000_000);
        assert!(first.data.starts_with(br#"{"utime":0,"position":{"v":[1.5,-2.0,0.0]}"#));
        // The decoded types' .lcm definitions ride along, and check to the same fingerprints.
        let defs = crate::mcap::read_schemas(&path).unwrap().1;
        let (_, lcm) = defs.iter().find(|(n, _)| n == crate::mcap::LCM_METADATA).expect("nerve.lcm metadata");
        let text = &lcm["t.pose_t"];
        let again = check(&[Source { path: "x.lcm".into(), text: text.clone() }], &[]).unwrap().schema;
        let reg = registry();
        let want = reg.by_name(&TypeName::parse("t.pose_t")).unwrap().fingerprint;
        assert_eq!(again.struct_named(&TypeName::parse("t.pose_t")).unwrap().fingerprint, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn json_schema_is_written_out_in_place_with_refs_only_for_recursion() {
    let reg = registry();
    let pose = reg.by_name(&TypeName::parse("t.pose_t")).unwrap();
    let s = json_schema(reg.schema(), pose);
    assert!(!s.contains("$ref") && !s.contains("$defs"), "{s}");
    assert!(s.contains(r#""m":{"type":"array","items":{"type":"number"},"description":"[2][2], flattened row-major","minItems":4,"maxItems":4}"#), "{s}");
    assert!(s.contains(r#""blob":{"type":"string","contentEncoding":"base64""#));
    assert!(s.contains(r#""position":{"type":"object","title":"t.vec_t""#));
    let node = reg.by_name(&TypeName::parse("t.node_t")).unwrap();
    let s = json_schema(reg.schema(), node);
    assert!(s.contains(r##""items":{"type":"object","properties":{},"$ref":"#/$defs/t.node_t"}"##), "{s}");
    assert!(s.contains(r#""$defs":{"t.node_t":{"type":"object""#), "{s}");
}

#[test]
fn non_finite_floats_are_null_in_mcap_json() {
    let reg = registry();
    let bytes = pose_bytes(&reg, 1, true);
    let (st, v) = reg.decode(&bytes).unwrap();
    let mut out = String::new();
    json::FlatJson::new(reg.schema()).write_struct(&mut out, st, v.as_struct().unwrap());
    assert!(out.contains(r#""m":[1.0,2.0,3.0,null]"#), "{out}");
}

#[test]
fn jsonl_lines_carry_values_or_raw_bytes() {
    let dir = tmp("jsonl");
    let path = dir.join("out.jsonl");
    export_with(&dir, registry(), |dec, r| {
        let x = JsonlExport::create(&path, dec).unwrap();
        x.run(|export: &mut Feed<'_>| feed(r, export)).unwrap();
    });
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12);
    assert!(lines[0].starts_with(r#"{"event":0,"channel":"POSE","size":"#), "{}", lines[0]);
    assert!(lines[0].contains(r#""recv_utime":1000000,"type":"t.pose_t","value":{"utime":0,"position":{"v":[1.5,-2.0,0.0]},"m":[[1.0,2.0],[3.0,4.0]]"#), "{}", lines[0]);
    assert!(
        lines[10].contains(
            r#""data_hex":"010203040506070878797a","error":"no known type has fingerprint 0x0102030405060708""#
        ),
        "{}",
        lines[10]
    );
    assert!(lines[11].contains(r#""fingerprint":null"#) && lines[11].contains("no 8-byte fingerprint"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_has_a_file_per_channel_and_type_with_flattened_columns() {
    let dir = tmp("csv");
    let out = dir.join("csv");
    export_with(&dir, registry(), |dec, r| {
        let mut events = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            events.push(e.to_owned());
        }
        let x = CsvExport::create(&out, dec).unwrap();
        x.run(|export: &mut Feed<'_>| feed_all(&events, export)).unwrap();
        let mut files: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        assert_eq!(files, ["POSE.t.pose_t.csv", "POSE.undecoded.csv", "RAW.csv", "TREE.csv"]);
    });
    let pose = std::fs::read_to_string(out.join("POSE.t.pose_t.csv")).unwrap();
    let mut lines = pose.lines();
    assert_eq!(
        lines.next().unwrap(),
        "recv_utime,event,utime,position.v[0],position.v[1],position.v[2],m[0][0],m[0][1],m[1][0],m[1][1],n,blob,name,ok"
    );
    assert_eq!(lines.next().unwrap(), "1000000,0,0,1.5,-2.0,0.0,1.0,2.0,3.0,4.0,3,00ff07,\"p,\"\"0\"\"\",true");
    let tree = std::fs::read_to_string(out.join("TREE.csv")).unwrap();
    assert_eq!(
        tree.lines().next().unwrap(),
        "recv_utime,event,n,children[0].n,children[1].n,children[1].children[0].n"
    );
    let raw = std::fs::read_to_string(out.join("POSE.undecoded.csv")).unwrap();
    assert_eq!(raw.lines().nth(1).unwrap(), "2000001,11,,73686f7274,message of 5 bytes has no 8-byte fingerprint");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Events enough for several batches (each written while the next is transcoded), with raw messages among them:
/// every format writes every event, in order, as it writes each one alone.
#[test]
fn exports_of_several_batches_keep_every_event_in_order() {
    let reg = registry();
    let ty = TypeName::parse("t.pose_t");
    let blob: Vec<String> = (0..40_000).map(|i| (i % 251).to_string()).collect();
    let json = format!(
        r#"{{"utime": 7, "position": {{"v": [0.1, -2.5, 3e-7]}}, "m": [[1, 2], [3, 4.25]], "n": 40000, "blob": [{}], "name": "big", "ok": false}}"#,
        blob.join(",")
    );
    let big = reg.encode(&ty, &from_json(reg.schema(), &ty, &json).unwrap()).unwrap();
    let mut w = LogWriter::new(Vec::new());
    for i in 0..400 {
        match i % 100 {
            7 => w.write_event(i, "POSE", b"\x01\x02\x03\x04\x05\x06\x07\x08raw").unwrap(),
            9 | 59 => w.write_event(i, "SMALL", &pose_bytes(&reg, i, false)).unwrap(),
            _ => w.write_event(i, "POSE", &big).unwrap(),
        }
    }
    let log = w.into_inner();
    assert!(log.len() > 3 * super::batch::BATCH_BYTES);
    let dec = Decoder::new(Some(reg));
    let events = || {
        let mut r = LogReader::new(Cursor::new(log.clone())).unwrap();
        let mut v = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            v.push(e.to_owned());
        }
        v
    };
    let dir = tmp("batches");
    std::fs::create_dir_all(&dir).unwrap();

    // JSON lines: each line as the exporter makes one event's line.
    let path = dir.join("out.jsonl");
    let x = JsonlExport::create(&path, &dec).unwrap();
    let mut want = Vec::new();
    let mut names = Default::default();
    for (i, e) in events().iter().enumerate() {
        let ev = crate::EventRef {
            number: e.number,
            utime: e.utime,
            channel_bytes: e.channel.as_bytes(),
            data: &e.data,
            offset: i as u64,
        };
        super::jsonl::line(&dec, &ev, &mut want, &mut names);
    }
    let stats = x.run(|export: &mut Feed<'_>| feed_all(&events(), export)).unwrap();
    assert_eq!((stats.messages, stats.undecoded), (400, 4));
    assert!(std::fs::read(&path).unwrap() == want, "the lines differ from the events' own");

    // MCAP: every message, in order, with its JSON.
    let path = dir.join("out.mcap");
    let x = McapExport::create_with(&path, &dec, Compression::None).unwrap();
    assert_eq!(x.run(|export: &mut Feed<'_>| feed_all(&events(), export)).unwrap().messages, 400);
    let bytes = std::fs::read(&path).unwrap();
    let mut seen = Vec::new();
    for (_, chunk) in records(&bytes).iter().filter(|(o, _)| *o == 0x06) {
        let size = u64::from_le_bytes(chunk[16..24].try_into().unwrap()) as usize;
        let data = &chunk[chunk.len() - size..];
        let mut at = 0;
        while at < data.len() {
            let len = u64::from_le_bytes(data[at + 1..at + 9].try_into().unwrap()) as usize;
            if data[at] == 0x05 {
                let body = &data[at + 9..at + 9 + len];
                let seq = u32::from_le_bytes(body[2..6].try_into().unwrap());
                let e = &events()[seq as usize];
                let mut json = Vec::new();
                match dec.json(&e.data, JsonForm::Flat, &mut json) {
                    Ok(_) => assert!(body[22..] == json[..], "message {seq}"),
                    Err(_) => assert!(body[22..].starts_with(b"{\"fingerprint\""), "message {seq}"),
                }
                seen.push(seq);
            }
            at += 9 + len;
        }
    }
    assert_eq!(seen, (0..400).collect::<Vec<u32>>());

    // CSV: each table's rows in order, as `csv_row` makes them.
    let out = dir.join("csv");
    let x = CsvExport::create(&out, &dec).unwrap();
    let evs = events();
    assert_eq!(x.run(|export: &mut Feed<'_>| feed_all(&evs, export)).unwrap().messages, 400);
    let t = dec.transcoder().unwrap();
    let pose = std::fs::read_to_string(out.join("POSE.t.pose_t.csv")).unwrap();
    let mut shape = nerve_types::dynamic::CsvShape::new();
    t.csv_merge(&big, &mut shape).unwrap();
    let mut want = Vec::new();
    for e in evs.iter().filter(|e| e.channel == "POSE" && e.data == big) {
        want.extend_from_slice(format!("{},{}", e.utime, e.number).as_bytes());
        t.csv_row(&e.data, &shape, &mut want).unwrap();
        want.push(b'\n');
    }
    let rows = pose.split_once('\n').unwrap().1;
    assert!(rows.as_bytes() == want, "the POSE rows differ from the events' own");
    assert_eq!(std::fs::read_to_string(out.join("SMALL.csv")).unwrap().lines().count(), 1 + 8);
    assert_eq!(std::fs::read_to_string(out.join("POSE.undecoded.csv")).unwrap().lines().count(), 1 + 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// xorshift64: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random valid body of `st`: small counts, recursion cut off, floats often NaN or infinite, strings with what
/// JSON and CSV escape.
fn random_body(schema: &nerve_types::Schema, st: &nerve_types::Struct, rng: &mut Rng, depth: usize, out: &mut Vec<u8>) {
    use nerve_types::{Dim, MemberType, Primitive};
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for m in &st.members {
        let total: usize = m
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed { len, .. } => *len,
                Dim::Variable { member } => counts.iter().find(|(n, _)| n == member).map_or(0, |(_, c)| *c),
            })
            .product();
        let is_count = m.dims.is_empty()
            && st
                .members
                .iter()
                .any(|o| o.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == m.name)));
        for _ in 0..total {
            match &m.ty {
                MemberType::Primitive(p) if is_count => {
                    let c = if depth > 3 { 0 } else { rng.below(4) as usize };
                    counts.push((&m.name, c));
                    out.extend_from_slice(&(c as u64).to_be_bytes()[8 - p.wire_size().unwrap()..]);
                }
                MemberType::Primitive(Primitive::String) => {
                    const PARTS: [&str; 10] = ["a", ",", "\"", "\n", "\r", "\\", "é", "\u{2028}", "\u{1}", " "];
                    let s: String = (0..rng.below(6)).map(|_| PARTS[rng.below(10) as usize]).collect();
                    out.extend_from_slice(&(s.len() as i32 + 1).to_be_bytes());
                    out.extend_from_slice(s.as_bytes());
                    out.push(0);
                }
                MemberType::Primitive(Primitive::Float) => {
                    let specials = [f32::NAN, f32::INFINITY, -0.0, 1e-7, 0.1, 3341.6562];
                    let r = rng.next();
                    let x = if r.is_multiple_of(3) {
                        specials[rng.below(6) as usize]
                    } else {
                        f32::from_bits((r >> 20) as u32)
                    };
                    out.extend_from_slice(&x.to_be_bytes());
                }
                MemberType::Primitive(p) => out.extend_from_slice(&rng.next().to_be_bytes()[..p.wire_size().unwrap()]),
                MemberType::Enum(_) => out.extend_from_slice(&(rng.next() as i32).to_be_bytes()),
                MemberType::Struct(n) => random_body(schema, schema.struct_named(n).unwrap(), rng, depth + 1, out),
            }
        }
    }
}

fn random_messages(reg: &Registry, st: &nerve_types::Struct, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let mut msg = st.fingerprint.to_be_bytes().to_vec();
            random_body(reg.schema(), st, &mut rng, 0, &mut msg);
            msg
        })
        .collect()
}

/// The transcoder's MCAP JSON and CSV cells against the tree path the exporters used before it, for every type of
/// `reg`: random messages, and damaged copies (which both must refuse).
fn flat_and_csv_agree_with_the_tree_path(reg: Registry) {
    let dec = Decoder::new(Some(reg.clone()));
    let t = dec.transcoder().unwrap();
    let flat = json::FlatJson::new(reg.schema());
    for (i, st) in reg.schema().structs.iter().enumerate() {
        if reg.lookup(st.fingerprint).is_none() {
            continue;
        }
        let mut msgs = random_messages(&reg, st, 40, 0x1234 + i as u64);
        let cut: Vec<Vec<u8>> = msgs.iter().map(|m| m[..m.len() * 2 / 3].to_vec()).collect();
        msgs.extend(cut);
        let mut tree_shape = csv::tree::Shape::Leaf;
        let mut shape = nerve_types::dynamic::CsvShape::new();
        for m in &msgs {
            let tree = reg.decode(m);
            let mut out = Vec::new();
            let fast = dec.json(m, nerve_types::dynamic::JsonForm::Flat, &mut out);
            match (&tree, fast) {
                (Ok((st, v)), Ok(_)) => {
                    let mut want = String::new();
                    flat.write_struct(&mut want, st, v.as_struct().unwrap());
                    assert_eq!(String::from_utf8(out).unwrap(), want);
                    tree_shape.merge(v);
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b),
                (a, b) => panic!("{} {:?} vs {:?}", st.name.full(), a.as_ref().map(|_| ()), b.map(|_| ())),
            }
            assert_eq!(t.csv_merge(m, &mut shape).is_ok(), tree.is_ok());
        }
        let mut cols = Vec::new();
        tree_shape.columns("", &mut cols);
        assert_eq!(shape.columns(), cols, "{}", st.name.full());
        for m in &msgs {
            let mut row = Vec::new();
            match (reg.decode(m), t.csv_row(m, &shape, &mut row)) {
                (Ok((_, v)), Ok(_)) => {
                    let mut want = String::new();
                    tree_shape.row(Some(&v), &mut want);
                    assert_eq!(String::from_utf8(row).unwrap(), want, "{}", st.name.full());
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{} {:?} vs {:?}", st.name.full(), a.map(|_| ()), b.map(|_| ())),
            }
        }
    }
}

#[test]
fn plain_struct_arrays_match_the_tree_path() {
    // Arrays of plain structs (written by their CSV and JSON programs) holding every kind of fixed-size member:
    // scalars, multi-dimensional numbers, booleans, byte arrays of one and more dimensions, enums, a nested struct.
    let text = "package p;
        enum mode_t { OFF=0, ON=1, AUTO=7 }
        struct inner_t { float x; byte b[2]; }
        struct cell_t { int8_t a; int16_t b[2]; int64_t c; float f[2][2]; double d; boolean ok[3]; byte raw[2][3];
                        byte one; mode_t mode; mode_t modes[2]; inner_t in; inner_t ins[2]; }
        struct grid_t { int32_t n; cell_t cells[n]; cell_t fixed[2][2]; int32_t m; cell_t rows[m][2]; }";
    let src = Source { path: "p.lcm".into(), text: text.into() };
    flat_and_csv_agree_with_the_tree_path(Registry::new(check(&[src], &[]).unwrap().schema));
}

#[test]
fn transcoder_matches_the_tree_path_on_the_test_types() {
    flat_and_csv_agree_with_the_tree_path(registry());
}

#[test]
fn transcoder_matches_the_tree_path_on_the_corpus_and_seed_types() {
    for dir in ["tests/corpus", "examples/types", "bench/types"] {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
        let (reg, diags) = Registry::load_dirs(&[path]);
        assert!(!diags.has_errors(), "{}", diags.render());
        flat_and_csv_agree_with_the_tree_path(reg);
    }
}

#[test]
fn csv_table_whose_columns_grow_after_its_rows_are_written_is_written_again() {
    // The longest message of BIG comes after several batches' rows are written: BIG gets no more rows in the first
    // pass, and a second pass writes it again, into a file that replaces the first; its rows, the other tables,
    // the order of the files and a message that does not decode are as if every column had been known from the
    // start.
    let src =
        Source { path: "b.lcm".into(), text: "package b; struct big_t { int32_t n; float r[n]; int8_t k; }".into() };
    let reg = Registry::new(check(&[src], &[]).unwrap().schema);
    let ty = TypeName::parse("b.big_t");
    let enc = |n: usize| {
        let r: Vec<String> = (0..n).map(|i| format!("{}.25", i % 1000)).collect();
        reg.encode(
            &ty,
            &from_json(reg.schema(), &ty, &format!(r#"{{"n": {n}, "r": [{}], "k": 3}}"#, r.join(","))).unwrap(),
        )
        .unwrap()
    };
    let sizes = [20_000usize, 17_000, 31_000, 16_500, 25_000];
    let bigs: Vec<Vec<u8>> = sizes.iter().map(|&n| enc(n)).collect();
    let broken = &bigs[2][..bigs[2].len() - 1];
    let mut w = LogWriter::new(Vec::new());
    let mut valid = Vec::new();
    for i in 0..200usize {
        match i {
            180 => w.write_event(i as i64, "BIG", broken).unwrap(),
            90 | 190 => w.write_event(i as i64, "OTHER", &bigs[0]).unwrap(),
            _ => {
                // (The longest only after the first batches: its columns are learnt on this thread.)
                let b = &bigs[if i < 60 { i % 2 } else { i % 5 }];
                w.write_event(i as i64, "BIG", b).unwrap();
                valid.push((i, b));
            }
        }
    }
    let log = w.into_inner();
    assert!(log.len() > 3 * super::batch::BATCH_BYTES);
    let dec = Decoder::new(Some(reg));
    let dir = tmp("csv-big");
    let out = dir.join("csv");
    let (stats, passes, files) = export_csv_counting_passes(&dec, log, &out);
    assert_eq!(passes, 2);
    assert_eq!((stats.messages, stats.decoded, stats.undecoded), (200, 199, 1));
    assert_eq!(files, ["BIG.b.big_t.csv", "BIG.undecoded.csv", "OTHER.csv"]);
    let on_disk: u64 = files.iter().map(|f| std::fs::metadata(out.join(f)).unwrap().len()).sum();
    assert_eq!(stats.bytes_out, on_disk);
    let t = dec.transcoder().unwrap();
    let mut shape = nerve_types::dynamic::CsvShape::new();
    for b in &bigs {
        t.csv_merge(b, &mut shape).unwrap();
    }
    let text = std::fs::read_to_string(out.join("BIG.b.big_t.csv")).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    assert_eq!(header.split(',').count(), 2 + shape.columns().len());
    assert_eq!(shape.columns().len(), 1 + 31_000 + 1);
    let mut want = Vec::new();
    for (i, b) in valid {
        want.extend_from_slice(format!("{i},{i}").as_bytes());
        t.csv_row(b, &shape, &mut want).unwrap();
        want.push(b'\n');
    }
    assert!(rows.as_bytes() == want, "the BIG rows differ from the events' own");
    assert_eq!(std::fs::read_to_string(out.join("BIG.undecoded.csv")).unwrap().lines().count(), 1 + 1);
    assert_eq!(std::fs::read_to_string(out.join("OTHER.csv")).unwrap().lines().count(), 1 + 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_reads_a_log_whose_columns_stay_once_and_names_files_for_every_table_in_the_end() {
    // Tables whose messages all have one shape are written in one pass. A channel's second type comes late, after
    // the first's file was made as `MIX.csv`: in the end both are named with their types, as if both had been
    // known from the start.
    let src = Source {
        path: "m.lcm".into(),
        text: "package m; struct a_t { int32_t n; float r[n]; } struct b_t { int64_t t; }".into(),
    };
    let reg = Registry::new(check(&[src], &[]).unwrap().schema);
    let enc = |ty: &str, json: &str| {
        let ty = TypeName::parse(ty);
        reg.encode(&ty, &from_json(reg.schema(), &ty, json).unwrap()).unwrap()
    };
    let a = enc("m.a_t", r#"{"n": 3, "r": [1, 2.5, -3]}"#);
    let b = enc("m.b_t", r#"{"t": 7}"#);
    let mut w = LogWriter::new(Vec::new());
    for i in 0..300i64 {
        w.write_event(i, "MIX", &a).unwrap();
        w.write_event(i, "SOLO", &b).unwrap();
    }
    w.write_event(300, "MIX", &b).unwrap();
    let dec = Decoder::new(Some(reg));
    let dir = tmp("csv-one-pass");
    let out = dir.join("csv");
    let (stats, passes, files) = export_csv_counting_passes(&dec, w.into_inner(), &out);
    assert_eq!(passes, 1);
    assert_eq!((stats.messages, stats.decoded, stats.undecoded), (601, 601, 0));
    assert_eq!(files, ["MIX.m.a_t.csv", "MIX.m.b_t.csv", "SOLO.csv"]);
    let mix_a = std::fs::read_to_string(out.join("MIX.m.a_t.csv")).unwrap();
    assert_eq!(mix_a.lines().next().unwrap(), "recv_utime,event,n,r[0],r[1],r[2]");
    assert_eq!(mix_a.lines().nth(1).unwrap(), "0,0,3,1.0,2.5,-3.0");
    assert_eq!(mix_a.lines().count(), 1 + 300);
    assert_eq!(std::fs::read_to_string(out.join("MIX.m.b_t.csv")).unwrap(), "recv_utime,event,t\n300,600,7\n");
    assert_eq!(std::fs::read_to_string(out.join("SOLO.csv")).unwrap().lines().count(), 1 + 300);
    std::fs::remove_dir_all(&dir).unwrap();

    // Channels whose file names clash (`a/b`, `a_b` and `a:b` are all `a_b`): `a_b` gains a second type, which
    // frees the name its first type's file was made under (`a_b~2.csv`), and `a:b` comes after and would be given
    // that name: it gets one no file has had, and each file ends under the name it would have had with every table
    // known from the start.
    let mut w = LogWriter::new(Vec::new());
    for (i, (ch, msg)) in [("a/b", &a), ("a_b", &a), ("a_b", &b), ("a:b", &a), ("a/b", &a)].into_iter().enumerate() {
        w.write_event(i as i64, ch, msg).unwrap();
    }
    let (stats, passes, files) = export_csv_counting_passes(&dec, w.into_inner(), &out);
    assert_eq!((stats.messages, passes), (5, 1));
    assert_eq!(files, ["a_b.csv", "a_b.m.a_t.csv", "a_b.m.b_t.csv", "a_b~2.csv"]);
    let rows = |f: &str| {
        std::fs::read_to_string(out.join(f)).unwrap().lines().skip(1).map(|l| l[..3].to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(rows("a_b.csv"), ["0,0", "4,4"], "channel a/b");
    assert_eq!(rows("a_b.m.a_t.csv"), ["1,1"], "channel a_b, a_t");
    assert_eq!(rows("a_b.m.b_t.csv"), ["2,2"], "channel a_b, b_t");
    assert_eq!(rows("a_b~2.csv"), ["3,3"], "channel a:b");
    std::fs::remove_dir_all(&dir).unwrap();
}

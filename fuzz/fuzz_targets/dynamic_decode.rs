//! Fuzzes the dynamic codec over the corpus types: any bytes, read as any type, must give a value or an error,
//! never a panic, a huge allocation or a stack overflow; a value must encode again and decode to the same JSON.
//! The streaming transcoder must agree with the tree path on every input: the same JSON, or the same error.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nerve_types::dynamic::{CsvShape, JsonForm, Transcoder};
use nerve_types::Registry;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
        let (registry, diags) = Registry::load_dirs(&[corpus]);
        assert!(!diags.has_errors() && !registry.schema().structs.is_empty(), "{}", diags.render());
        registry
    })
}

fn transcoder() -> &'static Transcoder {
    static TRANSCODER: OnceLock<Transcoder> = OnceLock::new();
    TRANSCODER.get_or_init(|| Transcoder::new(registry().clone()))
}

/// The transcoder's JSON (and its CSV and validation verdicts) against the tree path's.
fn transcoder_agrees(msg: &[u8]) {
    let tree = registry().decode(msg);
    let t = transcoder();
    let mut out = Vec::new();
    let fast = t.json(msg, JsonForm::Value, &mut out);
    let mut shape = CsvShape::new();
    let merged = t.csv_merge(msg, &mut shape);
    let mut row = Vec::new();
    let row_ok = t.csv_row(msg, &shape, &mut row);
    match (tree, fast) {
        (Ok((st, v)), Ok(st2)) => {
            assert_eq!(st.name, st2.name);
            assert_eq!(std::str::from_utf8(&out).expect("JSON is UTF-8"), v.to_json());
            assert!(merged.is_ok() && row_ok.is_ok() && t.validate(msg).is_ok());
            let mut flat = Vec::new();
            t.json(msg, JsonForm::Flat, &mut flat).expect("decodes in either form");
            // Merging the message again adds no column, and says so.
            let mut again = shape.clone();
            assert!(!t.csv_merge_grew(msg, &mut again).expect("decodes").1);
            assert!(again == shape && shape.covers(&again));
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b);
            assert!(out.is_empty() && row.is_empty());
            assert_eq!(merged.err(), Some(a.clone()));
            assert_eq!(row_ok.err(), Some(a.clone()));
            assert_eq!(t.validate(msg).err(), Some(a));
        }
        (a, b) => panic!("tree {:?}, transcoder {:?}", a.map(|_| ()), b.map(|_| ())),
    }
}

fuzz_target!(|data: &[u8]| {
    let reg = registry();
    transcoder_agrees(data);
    // Whole messages identified by their fingerprint (mostly unknown ones: that path must be cheap and clean).
    let _ = reg.decode(data);
    // The first byte picks a type; the rest is its body behind the right fingerprint.
    let Some((&pick, body)) = data.split_first() else { return };
    let structs = &reg.schema().structs;
    let st = &structs[usize::from(pick) % structs.len()];
    let mut msg = st.fingerprint.to_be_bytes().to_vec();
    msg.extend_from_slice(body);
    transcoder_agrees(&msg);
    if let Ok(value) = reg.decode_as(&st.name, &msg) {
        // Printed once, not three times: printing values (thousands of numbers for the corpus types with large
        // arrays) was a quarter of this target's time.
        let json = value.to_json();
        let again = reg.encode(&st.name, &value).expect("a decoded value encodes");
        let back = reg.decode_as(&st.name, &again).expect("an encoding decodes");
        assert_eq!(back.to_json(), json);
        // (Through JSON every NaN becomes the same NaN, so compare JSON, not bytes.)
        let from_json = reg.from_json(&st.name, &json).expect("printed JSON reads back");
        reg.encode(&st.name, &from_json).expect("the value read from JSON encodes");
        assert_eq!(from_json.to_json(), json);
    }
});

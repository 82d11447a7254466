//! Fuzzes the dynamic codec over the corpus types: any bytes, read as any type, must give a value or an error,
//! never a panic, a huge allocation or a stack overflow; a value must encode again and decode to the same JSON.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
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

fuzz_target!(|data: &[u8]| {
    let reg = registry();
    // Whole messages identified by their fingerprint (mostly unknown ones: that path must be cheap and clean).
    let _ = reg.decode(data);
    // The first byte picks a type; the rest is its body behind the right fingerprint.
    let Some((&pick, body)) = data.split_first() else { return };
    let structs = &reg.schema().structs;
    let st = &structs[usize::from(pick) % structs.len()];
    let mut msg = st.fingerprint.to_be_bytes().to_vec();
    msg.extend_from_slice(body);
    if let Ok(value) = reg.decode_as(&st.name, &msg) {
        let again = reg.encode(&st.name, &value).expect("a decoded value encodes");
        let back = reg.decode_as(&st.name, &again).expect("an encoding decodes");
        assert_eq!(back.to_json(), value.to_json());
        // (Through JSON every NaN becomes the same NaN, so compare JSON, not bytes.)
        let from_json = reg.from_json(&st.name, &value.to_json()).expect("printed JSON reads back");
        reg.encode(&st.name, &from_json).expect("the value read from JSON encodes");
        assert_eq!(from_json.to_json(), value.to_json());
    }
});

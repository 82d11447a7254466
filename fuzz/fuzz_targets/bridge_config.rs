//! Fuzzes `nerve bridge --config FILE`'s parser (crates/cli/src/cmd/bridge/config.rs) with arbitrary file contents.
//! It never panics; every route of a config it accepts is what `check_route` states (two different URLs that parse,
//! a pattern that compiles, renames with non-empty names, each old and each new name once), and the routes, written
//! back as a config, parse to the same routes.
#![no_main]

// Included by path: it lives in the `nerve` binary crate, which cannot be a dependency. The file is kept free of
// the rest of the CLI (it needs only anyhow, serde_json and nerve_bus) so that it can be.
#[path = "../../crates/cli/src/cmd/bridge/config.rs"]
mod config;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fn written_back(routes: &[config::Route]) -> String {
    let routes: Vec<Value> = routes
        .iter()
        .map(|r| {
            let mut o = Map::new();
            o.insert("from".into(), json!(r.from));
            o.insert("to".into(), json!(r.to));
            if let Some(c) = &r.channel {
                o.insert("channel".into(), json!(c));
            }
            if !r.renames.is_empty() {
                let renames: Map<String, Value> = r.renames.iter().map(|(o, n)| (o.clone(), json!(n))).collect();
                o.insert("rename".into(), Value::Object(renames));
            }
            if r.both_ways {
                o.insert("both_ways".into(), json!(true));
            }
            Value::Object(o)
        })
        .collect();
    json!({ "routes": routes }).to_string()
}

fuzz_target!(|data: &[u8]| {
    // `nerve bridge` refuses a larger file, and reads it as UTF-8 text: other inputs never reach the parser.
    if data.len() as u64 > config::MAX_CONFIG_BYTES {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(routes) = config::parse_config(text) else { return };
    assert!(!routes.is_empty(), "accepted an empty route list: {text:?}");
    for r in &routes {
        config::check_route(r).unwrap_or_else(|e| panic!("accepted {r:?}: {e:#}"));
        assert_ne!(r.from, r.to);
        for url in [&r.from, &r.to] {
            assert!(nerve_bus::Url::parse(url).is_ok(), "{url:?}");
        }
        if let Some(c) = &r.channel {
            assert!(nerve_bus::Pattern::new(c).is_ok(), "{c:?}");
        }
        for (i, (old, new)) in r.renames.iter().enumerate() {
            assert!(!old.is_empty() && !new.is_empty(), "{r:?}");
            assert!(r.renames[i + 1..].iter().all(|(o, n)| o != old && n != new), "{r:?}");
        }
    }
    let again = written_back(&routes);
    let reparsed = config::parse_config(&again).unwrap_or_else(|e| panic!("{again}: {e:#}"));
    assert_eq!(reparsed, routes, "{again}");
});

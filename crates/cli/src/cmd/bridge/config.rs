//! The routes of `nerve bridge`, as a `--config` file gives them or the command line does, and what every route must
//! be ([`check_route`]).
//!
//! Kept apart from the forwarding so that it depends only on `anyhow`, `serde_json` and `nerve_bus`: the fuzz target
//! `bridge_config` includes this file by path, since the binary crate it lives in cannot be a dependency.

use anyhow::{bail, Context};
use nerve_bus::Pattern;

/// One route as given: a pair of buses and what crosses between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The bus forwarded from.
    pub from: String,
    /// The bus forwarded to.
    pub to: String,
    /// The channels forwarded (FROM's names), all when `None`.
    pub channel: Option<String>,
    /// Renames from FROM's names to TO's.
    pub renames: Vec<(String, String)>,
    /// Whether TO is forwarded to FROM as well.
    pub both_ways: bool,
}

/// The largest config file read: a route list, not a data set.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Parses a routes file (see `--config`). Anything unexpected is an error naming where it is.
pub fn parse_config(text: &str) -> anyhow::Result<Vec<Route>> {
    let doc: serde_json::Value = serde_json::from_str(text).context("not valid JSON")?;
    let obj = doc.as_object().context("expected an object with \"routes\"")?;
    if let Some(k) = obj.keys().find(|k| *k != "routes") {
        bail!("unknown key \"{k}\" (expected \"routes\")");
    }
    let routes = obj.get("routes").and_then(|r| r.as_array()).context("\"routes\" must be an array")?;
    if routes.is_empty() {
        bail!("\"routes\" is empty");
    }
    let mut out = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        let at = |what: &str| format!("route {i}: {what}");
        let r = r.as_object().with_context(|| at("expected an object"))?;
        if let Some(k) = r.keys().find(|k| !["from", "to", "channel", "rename", "both_ways"].contains(&k.as_str())) {
            bail!(at(&format!("unknown key \"{k}\"")));
        }
        let string = |k: &str| -> anyhow::Result<Option<String>> {
            match r.get(k) {
                None => Ok(None),
                Some(v) => Ok(Some(v.as_str().with_context(|| at(&format!("\"{k}\" must be a string")))?.to_owned())),
            }
        };
        let from = string("from")?.with_context(|| at("\"from\" is required"))?;
        let to = string("to")?.with_context(|| at("\"to\" is required"))?;
        let channel = string("channel")?;
        let mut renames = Vec::new();
        if let Some(map) = r.get("rename") {
            let map = map.as_object().with_context(|| at("\"rename\" must be an object of OLD: NEW"))?;
            for (old, new) in map {
                let new = new.as_str().with_context(|| at(&format!("rename \"{old}\" must map to a string")))?;
                renames.push((old.clone(), new.to_owned()));
            }
        }
        let both_ways = match r.get("both_ways") {
            None => false,
            Some(v) => v.as_bool().with_context(|| at("\"both_ways\" must be true or false"))?,
        };
        let route = Route { from, to, channel, renames, both_ways };
        check_route(&route).with_context(|| at("invalid"))?;
        out.push(route);
    }
    Ok(out)
}

/// What every route must be, however it was given: two different URLs, a valid pattern, renames one to one.
pub fn check_route(r: &Route) -> anyhow::Result<()> {
    for url in [&r.from, &r.to] {
        nerve_bus::Url::parse(url).with_context(|| format!("URL '{url}'"))?;
    }
    if r.from == r.to {
        bail!("FROM and TO are the same bus ({})", r.from);
    }
    if let Some(c) = &r.channel {
        Pattern::new(c)?;
    }
    for (i, (old, new)) in r.renames.iter().enumerate() {
        if old.is_empty() || new.is_empty() {
            bail!("rename '{old}={new}': both names are needed");
        }
        if r.renames[..i].iter().any(|(o, n)| o == old || n == new) {
            bail!("rename '{old}={new}': each name may be renamed once, and to a name of its own");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_routes_parse() {
        let r = parse_config(
            r#"{"routes": [{"from": "shm://", "to": "zenoh://", "channel": "CAM.*", "rename": {"A": "B"},
                "both_ways": true}, {"from": "udpm://239.255.76.67:7667", "to": "shm://"}]}"#,
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].renames, [("A".to_owned(), "B".to_owned())]);
        assert!(r[0].both_ways && !r[1].both_ways && r[1].channel.is_none());
    }

    #[test]
    fn hostile_configs_are_errors_not_panics() {
        let cases = [
            "",
            "null",
            "[]",
            "{}",
            r#"{"routes": []}"#,
            r#"{"routes": {}}"#,
            r#"{"routes": [1]}"#,
            r#"{"routes": [{"from": "shm://"}]}"#,
            r#"{"routes": [{"from": "shm://", "to": 3}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "shm://"}]}"#,
            r#"{"routes": [{"from": "nourl", "to": "shm://"}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "channel": "("}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "rename": {"A": 1}}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "rename": {"A": "C", "B": "C"}}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "rename": {"": "C"}}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "both_ways": "yes"}]}"#,
            r#"{"routes": [{"from": "shm://", "to": "memq://", "extra": 1}]}"#,
            r#"{"routes": [], "more": 1}"#,
        ];
        for c in cases {
            assert!(parse_config(c).is_err(), "accepted: {c}");
        }
        // Deep nesting and junk bytes: an error, never a stack overflow or a panic.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse_config(&deep).is_err());
        const ALPHABET: &[u8] = b"{}[]\":,routes from to channel rename both_ways true 1 \\ \x00\xff";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let len = (seed % 200) as usize;
            let text: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    ALPHABET[(seed % ALPHABET.len() as u64) as usize] as char
                })
                .collect();
            let _ = parse_config(&text);
        }
    }
}

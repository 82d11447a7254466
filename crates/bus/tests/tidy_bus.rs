//! Tidy checks on nerve-bus's own source: its modules depend on each other one way, {error, pattern, qos, url} <-
//! provider <- hub <- {bus, typed, executor}, with no circle (nor among provider's files: the registry, the
//! built-in table and each provider); no crate of the workspace has modules that use each other in a circle; and
//! nothing in the bus prints (only the CLI prints: a library reports through its API).
//!
//! `cargo test -p nerve-bus --test tidy_bus` checks it all, the module graph of every crate of the workspace
//! included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// The source without its comment lines (doc links name modules without depending on them).
fn code(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// Whether the path at `i` in `code` starts there (is not the tail of a longer path or name).
fn starts_path(code: &str, i: usize) -> bool {
    !(code[..i].ends_with("::") || code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
}

/// The leading identifier of `s` (a path segment).
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first segment of each path `rest` starts with: one for `a::b`, one per item for `{a::b, c, d::{e}}` (to the
/// matching brace, across lines), each with whether a `::` follows it (so that it names a module, not an item).
fn first_segments(rest: &str) -> Vec<(&str, bool)> {
    let Some(group) = rest.strip_prefix('{') else {
        let name = ident(rest);
        return vec![(name, rest[name.len()..].starts_with("::"))];
    };
    let (mut depth, mut from, mut out) = (0, 0, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[from..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.into_iter().map(str::trim).map(|item| (ident(item), item[ident(item).len()..].starts_with("::"))).collect()
}

/// The module graph of the crate whose sources are under `src`: each top-level module is one node, except that each
/// file of a directory module in `split` is a node of its own (`provider::udpm`; its `mod.rs` is `provider`). An
/// edge is a path in code that names another node: `crate::a::b`, and in a split directory also `super::b` and
/// `self::b` (and in its `mod.rs`, a child's name used bare). A `mod.rs` re-exporting a child (`pub use child::X`)
/// adds no edge: that is the module tree's facade, not a dependency of the parent's code on the child. Inside a
/// file's inline module (`mod tests { use super::*; }`), `super::` is that file.
fn module_graph(src: &Path, split: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let node_of = |file: &str| -> String {
        let rel = Path::new(file).strip_prefix(src).unwrap();
        let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
        match parts.as_slice() {
            [dir, sub, ..] if split.contains(&dir.as_str()) && sub != "mod" => format!("{dir}::{sub}"),
            [first, ..] => first.clone(),
            [] => unreachable!(),
        }
    };
    let nodes: BTreeSet<String> = files.iter().map(|(f, _)| node_of(f)).collect();
    // The node a path names: `dir::name` if that is a node of its own, else `dir`.
    let child = |dir: &str, name: &str| {
        let sub = format!("{dir}::{name}");
        if nodes.contains(&sub) {
            sub
        } else {
            dir.to_owned()
        }
    };
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        let node = node_of(file);
        if node == "lib" || node == "main" {
            continue;
        }
        let dir = node.split("::").next().unwrap().to_owned();
        let is_split = split.contains(&dir.as_str());
        let is_mod_rs = is_split && node == dir;
        let deps = uses.entry(node.clone()).or_default();
        let code: String = code(text).collect::<Vec<_>>().join("\n");
        // Where the file's first inline module starts: past it, `super::` is the file itself.
        let inline = code
            .lines()
            .scan(0, |at, line| {
                let start = *at;
                *at += line.len() + 1;
                Some((start, line.trim()))
            })
            .find(|(_, l)| (l.starts_with("mod ") || l.starts_with("pub mod ")) && l.ends_with('{'))
            .map_or(code.len(), |(start, _)| start);
        for (i, _) in code.match_indices("crate::") {
            if !starts_path(&code, i) {
                continue;
            }
            let rest = &code[i + 7..];
            let top = ident(rest);
            if rest.starts_with('{') {
                // `crate::{a::b, C}`: each item names a module, or an item the crate root re-exports (no node).
                for (name, _) in first_segments(rest) {
                    deps.insert(name.to_owned());
                }
            } else if split.contains(&top) {
                let inner = rest[top.len()..].strip_prefix("::").unwrap_or("");
                for (name, _) in first_segments(inner) {
                    deps.insert(child(top, name));
                }
            } else {
                deps.insert(top.to_owned());
            }
        }
        // A split module's file named through the module (`use crate::provider; provider::registry::open(..)`).
        for top in split {
            for (i, _) in code.match_indices(&format!("{top}::")) {
                if starts_path(&code, i) {
                    let name = ident(&code[i + top.len() + 2..]);
                    if code[i + top.len() + 2 + name.len()..].starts_with("::") {
                        deps.insert(child(top, name));
                    }
                }
            }
        }
        if is_split {
            for prefix in ["super::", "self::"] {
                for (i, _) in code.match_indices(prefix) {
                    if !starts_path(&code, i) {
                        continue;
                    }
                    // In `mod.rs` `super::` is the crate root (whose modules `crate::` paths name), and in a child
                    // `self::` is the child itself; past an inline module, `super::` is the file.
                    if (prefix == "super::" && (is_mod_rs || i > inline)) || (prefix == "self::" && !is_mod_rs) {
                        continue;
                    }
                    for (name, _) in first_segments(&code[i + prefix.len()..]) {
                        deps.insert(child(&dir, name));
                    }
                }
            }
            if is_mod_rs {
                for line in code.lines() {
                    let t = line.trim_start();
                    if t.starts_with("pub use ") || t.starts_with("pub mod ") || t.starts_with("mod ") {
                        continue;
                    }
                    for sub in nodes.iter().filter_map(|n| n.strip_prefix(&format!("{dir}::"))) {
                        for (i, _) in t.match_indices(&format!("{sub}::")) {
                            if starts_path(t, i) {
                                deps.insert(format!("{dir}::{sub}"));
                            }
                        }
                    }
                }
            }
        }
        deps.remove(&node);
        deps.retain(|d| nodes.contains(d));
    }
    uses
}

/// A circle in `uses`, if there is one (as the path that closes it).
fn circle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // A depth-first walk that meets a module it is still inside has found a circle; a module walked to the end is
    // in none (`done`), so each is walked once.
    fn walk(
        m: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_owned());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_owned());
        for d in uses.get(m).into_iter().flatten() {
            if let Some(c) = walk(d, uses, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys().find_map(|m| walk(m, uses, &mut Vec::new(), &mut done))
}

fn layer(module: &str) -> u32 {
    match module.split("::").next().unwrap() {
        "error" | "pattern" | "qos" | "url" | "sys" => 0,
        "provider" => 1,
        "hub" => 2,
        "bus" | "typed" | "executor" | "conformance" => 3,
        other => panic!("module {other} has no layer: add it to this test and to ARCHITECTURE.md's map"),
    }
}

#[test]
fn modules_depend_one_way_without_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // provider/ is split file by file: its providers, the registry and the built-in table must not use each other
    // in a circle (the registry lists the providers, so no provider may use the registry).
    let uses = module_graph(&src, &["provider"]);
    for (module, deps) in &uses {
        for d in deps {
            assert!(layer(d) <= layer(module), "{module} (layer {}) uses {d} (layer {})", layer(module), layer(d));
        }
    }
    if let Some(c) = circle(&uses) {
        panic!("modules use each other in a circle: {}", c.join(" -> "));
    }
    // The check sees the real imports, through `crate::`, `super::` and a `mod.rs`'s own names.
    assert!(uses["hub"].contains("provider") && !uses["hub"].contains("bus"), "{:?}", uses["hub"]);
    assert!(uses["bus"].contains("provider::registry"), "{:?}", uses["bus"]);
    assert!(uses["provider::registry"].contains("provider::builtin"), "{:?}", uses["provider::registry"]);
    assert!(uses["provider::builtin"].contains("provider::udpm"), "{:?}", uses["provider::builtin"]);
    assert!(uses["provider::mpudpm"].contains("provider::udpm"), "{:?}", uses["provider::mpudpm"]);
    assert!(uses["provider::udpm"].contains("provider"), "{:?}", uses["provider::udpm"]);
}

#[test]
fn the_circle_check_finds_circles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry((*a).to_owned()).or_default().insert((*b).to_owned());
            g.entry((*b).to_owned()).or_default();
        }
        g
    };
    assert_eq!(circle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let c = circle(&graph(&[("a", "b"), ("b", "c"), ("c", "b")])).expect("b and c use each other");
    assert_eq!(c, ["b", "c", "b"]);
    assert_eq!(
        first_segments("{Incoming, thread::ReceiveThread, own::{A, B}};"),
        [("Incoming", false), ("thread", true), ("own", true)]
    );
}

/// The `src` of every crate of the workspace (bindings, bench, soak and example included), whose module graphs
/// [`module_circles_stay_in_the_crates_known_to_have_them`] checks.
fn workspace_crates() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["crates", "bindings/c", "bindings"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let src = entry.unwrap().path().join("src");
            if src.is_dir() {
                out.push(src);
            }
        }
    }
    out.extend(["bench", "tests/soak", "examples/pubsub/rust"].map(|m| root.join(m).join("src")));
    out
}

/// Crates whose top-level modules still use each other in a circle (shm: layout, sync and sys), to be untangled; a
/// crate leaves the list when it has none, and no crate joins it.
const TANGLED: [&str; 0] = [];

#[test]
fn module_circles_stay_in_the_crates_known_to_have_them() {
    let crates = workspace_crates();
    assert!(crates.len() > 10, "{crates:?}");
    let mut tangled = Vec::new();
    let mut found = Vec::new();
    for src in crates {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        if let Some(c) = circle(&module_graph(&src, &[])) {
            found.push(format!("{}: {}", src.display(), c.join(" -> ")));
            tangled.push(name);
        }
    }
    tangled.sort();
    assert_eq!(
        tangled,
        TANGLED,
        "crates with a circle among their modules (update TANGLED when one is untangled):\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_in_the_bus_prints() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    for (file, text) in &files {
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for mac in ["eprintln!", "println!", "eprint!", "print!", "dbg!"] {
                assert!(!line.contains(mac), "{file}:{}: {mac} (report through the API instead)", n + 1);
            }
        }
    }
}

//! Tidy checks on nerve-bus's own source: its modules depend on each other one way, {error, pattern, qos, url} <-
//! provider <- core <- {bus, inproc, executor}, with no circle; and nothing in it prints (only the CLI prints: a
//! library reports through its API).

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

/// The top-level module a file under `src/` belongs to.
fn module_of(src: &Path, file: &str) -> String {
    let rel = Path::new(file).strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

fn layer(module: &str) -> u32 {
    match module {
        "error" | "pattern" | "qos" | "url" => 0,
        "provider" => 1,
        "core" => 2,
        "bus" | "inproc" | "executor" | "conformance" => 3,
        other => panic!("module {other} has no layer: add it to this test and to ARCHITECTURE.md's map"),
    }
}

#[test]
fn modules_depend_one_way_without_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        let module = module_of(&src, file);
        if module == "lib" {
            continue;
        }
        let deps = uses.entry(module.clone()).or_default();
        for line in code(text) {
            for (i, _) in line.match_indices("crate::") {
                let name: String = line[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                if !name.is_empty() && name != module {
                    deps.insert(name);
                }
            }
        }
    }
    for (module, deps) in &uses {
        for d in deps {
            assert!(layer(d) <= layer(module), "{module} (layer {}) uses {d} (layer {})", layer(module), layer(d));
        }
    }
    // No circle: a depth-first walk never meets a module it is still inside.
    fn walk<'a>(m: &'a str, uses: &'a BTreeMap<String, BTreeSet<String>>, path: &mut Vec<&'a str>) {
        assert!(!path.contains(&m), "modules use each other in a circle: {path:?} -> {m}");
        path.push(m);
        for d in uses.get(m).into_iter().flatten() {
            walk(d, uses, path);
        }
        path.pop();
    }
    for m in uses.keys() {
        walk(m, &uses, &mut Vec::new());
    }
    assert!(uses["core"].contains("provider") && !uses["core"].contains("bus"), "the check sees the real imports");
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

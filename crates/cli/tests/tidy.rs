//! Tidy checks over the whole source tree (in the style of rust-analyzer's `xtask/src/tidy.rs`): every Rust file
//! says what it owns in a `//!` line, every `unsafe` block has a `SAFETY:` comment, and only the binary uses anyhow.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            // Build output too: `target`, and `fuzz/target-none` and the like (scripts/fuzz-soak's per-sanitizer dirs).
            let build_output = name == "target" || name.starts_with("target-");
            if !build_output && !matches!(name.as_str(), "corpus" | "artifacts" | "runs" | "test_data" | "generated") {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = Vec::new();
    // bindings/python is a cargo workspace of its own, but its unsafe blocks and module docs follow the same rules.
    for dir in ["crates", "bench", "fuzz", "bindings/c", "bindings/python/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut missing = Vec::new();
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        if text.starts_with("// @generated") {
            continue;
        }
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            missing.push(f.display().to_string());
        }
    }
    assert!(missing.is_empty(), "files without a `//!` line saying what they own:\n{}", missing.join("\n"));
}

#[test]
fn every_unsafe_block_has_a_safety_comment() {
    // Spelled in two halves so that this file does not match itself.
    let keyword = concat!("un", "safe");
    let block = format!("{keyword} {{");
    let mut bad = Vec::new();
    let files = sources();
    assert!(files.iter().any(|f| f.ends_with("bindings/python/src/codec/mod.rs")), "the walk reaches bindings/python");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let code = l.split("//").next().unwrap_or("");
            if !code.contains(&block) && !code.trim_end().ends_with(keyword) {
                continue;
            }
            // The comment may sit on the same line or in the few lines above (after attributes).
            let window = &lines[i.saturating_sub(6)..=i];
            if !window.iter().any(|w| w.contains("SAFETY:")) {
                bad.push(format!("{}:{}", f.display(), i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "unsafe blocks without a `// SAFETY:` comment:\n{}", bad.join("\n"));
}

#[test]
fn only_the_binary_uses_anyhow() {
    let root = repo_root();
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        if entry.file_name() != "cli" && text.contains("anyhow") {
            bad.push(manifest.display().to_string());
        }
    }
    assert!(bad.is_empty(), "library crates must return typed errors, not anyhow: {bad:?}");
}

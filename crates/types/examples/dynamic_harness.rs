//! Interop harness for the dynamic codec (tests/interop/README.md, "The harness protocol"; run by
//! tests/interop/test_dynamic.py).
//!
//! `dynamic_harness FILES_OR_DIRS...` loads the `.lcm` files into a [`Registry`], then reads `<type> <hex>` lines
//! from stdin and answers each with one JSON line: `{"ok": true, "reencoded": "<hex>", "value": <json>}` after
//! decoding with the dynamic codec and encoding the value again, or `{"ok": false, "error": "<error>"}`. The
//! registry's lookup by fingerprint is checked on the way: a message that decodes must be found among the
//! candidates for its fingerprint.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use nerve_types::dynamic::json_string;
use nerve_types::{Registry, TypeName};

fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    if s.len() & 1 != 0 {
        return Err(format!("odd number of hex digits ({})", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex at character {i}"))
        })
        .collect()
}

fn hex_encode(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(DIGITS[usize::from(x >> 4)] as char);
        s.push(DIGITS[usize::from(x & 15)] as char);
    }
    s
}

/// One input line to one output line.
fn answer(registry: &Registry, line: &str) -> Result<String, String> {
    let (ty, hex) = line.trim().split_once(' ').ok_or("expected `<type> <hex>`")?;
    let bytes = hex_decode(hex.trim())?;
    let name = TypeName::parse(ty);
    let value = registry.decode_as(&name, &bytes).map_err(|e| e.to_string())?;
    let fingerprint = nerve_codec::fingerprint_of(&bytes).ok_or("decoded a message without a fingerprint")?;
    if !registry.candidates(fingerprint).iter().any(|s| s.name == name) {
        return Err(format!("registry: {ty} is not among the types with fingerprint 0x{fingerprint:016x}"));
    }
    if let Some(found) = registry.lookup(fingerprint) {
        if found.name != name {
            return Err(format!("registry: fingerprint 0x{fingerprint:016x} looked up as {}, not {ty}", found.name));
        }
    }
    let reencoded = registry.encode(&name, &value).map_err(|e| format!("re-encoding: {e}"))?;
    Ok(format!(r#"{{"ok": true, "reencoded": "{}", "value": {}}}"#, hex_encode(&reencoded), value.to_json()))
}

fn main() -> ExitCode {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: dynamic_harness FILES_OR_DIRS... < lines of `<type> <hex>`");
        return ExitCode::from(2);
    }
    let (registry, diags) = Registry::load_dirs(&paths);
    if diags.has_errors() {
        eprintln!("{}", diags.render());
        return ExitCode::from(2);
    }
    let stdin = std::io::stdin();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("reading stdin: {e}");
                return ExitCode::from(2);
            }
        };
        let reply =
            answer(&registry, &line).unwrap_or_else(|e| format!(r#"{{"ok": false, "error": {}}}"#, json_string(&e)));
        if writeln!(out, "{reply}").is_err() {
            return ExitCode::from(2);
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

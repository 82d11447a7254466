"""Builds the Rust interop harness: `nerve gen --rust` over the corpus, plus a main.rs speaking the harness protocol.

The harness crate lives in ``target/interop-rust/harness`` and builds into ``target/interop-rust/target`` (both
under the workspace's ignored ``target/``), so rebuilds are incremental. It depends on nothing but nerve-codec.

Protocol (tests/interop/README.md), one JSON line per ``<type> <hex>`` input line, with extra keys the Rust test
uses to check the generated views against the full decode:

    {"ok": true, "reencoded": "<hex>", "value": <json>, "view": <json>, "view_len": <body bytes per the view>}
    {"ok": true, ..., "view_error": "<error>"}      (a view that failed where the decoder succeeded: a bug)
    {"ok": false, "error": "<decoder's error>", "view_ok": <bool>}
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import oracle

HARNESS_DIR = oracle.REPO / "target" / "interop-rust" / "harness"
TARGET_DIR = oracle.REPO / "target" / "interop-rust" / "target"

RUST_KEYWORDS = {
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let",
    "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static", "struct", "trait", "true", "type",
    "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
}


def rust_type_name(short: str) -> str:
    """The generator's naming rule (crates/gen/src/rust/mod.rs): split at `_`, upper-case each part's first letter."""
    return "".join(p[:1].upper() + p[1:] for p in short.split("_") if p)


def rust_path(full_name: str) -> str:
    """`deep.pkg.leaf_t` -> `lcmtypes::deep::pkg::LeafT`; package-less types live in module `root`."""
    pkg, _, short = full_name.rpartition(".")
    mods = pkg.split(".") if pkg else ["root"]
    mods = [f"r#{m}" if m in RUST_KEYWORDS else m for m in mods]
    return "::".join(["lcmtypes", *mods, rust_type_name(short)])


MAIN_RS = r'''//! Interop harness for Nerve's generated Rust (see tests/interop/harness_rust.py).
#![allow(dead_code)]
mod lcmtypes;

use std::io::{BufRead, Write};

use nerve_codec::json::WriteJson;
use nerve_codec::view::StructView;
use nerve_codec::{DecodeError, Message};

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn hex_encode(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn json_str(s: &str) -> String {
    let mut out = String::new();
    nerve_codec::json::write_str(s, &mut out);
    out
}

fn view_json<'a, V: StructView<'a> + WriteJson>(v: Result<V, DecodeError>) -> Result<(String, usize), DecodeError> {
    let v = v?;
    Ok((v.to_json()?, v.body_len()?))
}

fn run<'a, T: Message + WriteJson + Default + PartialEq, V: StructView<'a> + WriteJson>(
    data: &'a [u8],
    view: impl Fn(&'a [u8]) -> Result<V, DecodeError>,
) -> String {
    let viewed = view_json(view(data));
    // The allocation-free decode must give what decode gives: into an empty value, and again into the value it holds.
    let mut into = T::default();
    let into_first = into.decode_into(data);
    let into_again = into.decode_into(data);
    match T::decode(data) {
        Err(e) => {
            if into_first.as_ref().err() != Some(&e) || into_again.as_ref().err() != Some(&e) {
                return format!(r#"{{"ok":false,"error":"decode_into disagrees with decode on a bad buffer"}}"#);
            }
            format!(r#"{{"ok":false,"error":{},"view_ok":{}}}"#, json_str(&e.to_string()), viewed.is_ok())
        }
        Ok(msg) => {
            // (compared encoded, since NaN != NaN)
            if into_first.is_err() || into_again.is_err() || into.encode().ok() != msg.encode().ok() {
                return format!(r#"{{"ok":false,"error":"decode_into disagrees with decode"}}"#);
            }
            let value = match msg.to_json() {
                Ok(v) => v,
                Err(e) => return format!(r#"{{"ok":false,"error":{}}}"#, json_str(&format!("json: {e}"))),
            };
            let size = msg.encoded_size();
            let re = match msg.encode() {
                Ok(b) => b,
                Err(e) => return format!(r#"{{"ok":false,"error":{}}}"#, json_str(&format!("re-encode: {e}"))),
            };
            if re.len() != size {
                return format!(r#"{{"ok":false,"error":"encoded_size {} but encode wrote {}"}}"#, size, re.len());
            }
            let view = match viewed {
                Ok((j, len)) => format!(r#""view":{j},"view_len":{len}"#),
                Err(e) => format!(r#""view_error":{}"#, json_str(&e.to_string())),
            };
            format!(r#"{{"ok":true,"reencoded":"{}","value":{value},{view}}}"#, hex_encode(&re))
        }
    }
}

fn handle(ty: &str, data: &[u8]) -> String {
    match ty {
@ARMS@
        _ => format!(r#"{{"ok":false,"error":{}}}"#, json_str(&format!("unknown type {ty}"))),
    }
}

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let (ty, hex) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let reply = match hex_decode(hex.trim()) {
            Some(data) => handle(ty, &data),
            None => r#"{"ok":false,"error":"bad hex"}"#.to_owned(),
        };
        writeln!(out, "{reply}").expect("stdout");
    }
}
'''

CARGO_TOML = """[package]
name = "nerve-interop-rust-harness"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
nerve-codec = {{ path = "{codec}" }}

[workspace]
"""


def build(nerve_bin: Path, type_names: list) -> Path:
    """Generates the corpus code and the harness, builds it, and returns the binary."""
    src = HARNESS_DIR / "src"
    gen_dir = src / "lcmtypes"
    if gen_dir.exists():
        shutil.rmtree(gen_dir)
    gen_dir.mkdir(parents=True)
    proc = subprocess.run([str(nerve_bin), "gen", "--rust", "--rust-path", str(gen_dir),
                           *map(str, oracle.corpus_files())], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"nerve gen --rust failed:\n{proc.stderr}")
    arms = "\n".join(
        f'        "{n}" => run::<{rust_path(n)}, _>(data, {rust_path(n)}View::new),' for n in sorted(type_names))
    _write_if_changed(src / "main.rs", MAIN_RS.replace("@ARMS@", arms))
    _write_if_changed(HARNESS_DIR / "Cargo.toml", CARGO_TOML.format(codec=oracle.REPO / "crates" / "codec"))
    env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET_DIR))
    proc = subprocess.run(["cargo", "build", "-q", "--manifest-path", str(HARNESS_DIR / "Cargo.toml")],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"the generated Rust does not build:\n{proc.stderr[-8000:]}")
    return TARGET_DIR / "debug" / "nerve-interop-rust-harness"


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)

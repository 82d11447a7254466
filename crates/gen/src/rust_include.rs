//! Rust output as ONE file, for build scripts: `include!` cannot take the module tree `rust::generate` writes
//! (its files start with inner attributes), but it can take that tree inlined into nested `pub mod name { ... }`
//! blocks, where inner attributes are allowed.
//!
//! ```ignore
//! // build.rs: std::fs::write(out_dir.join("lcmtypes.rs"), nerve_gen::rust_include::single_file(&files)?)
//! pub mod lcmtypes {
//!     include!(concat!(env!("OUT_DIR"), "/lcmtypes.rs"));
//! }
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::GeneratedFile;

/// What went wrong putting the files together (a module declared without its file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingModule {
    /// The file that declares it.
    pub declared_in: PathBuf,
    /// The module's name.
    pub module: String,
}

impl std::fmt::Display for MissingModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "module '{}' declared in {} has no generated file", self.module, self.declared_in.display())
    }
}

impl std::error::Error for MissingModule {}

/// Inlines the module tree that starts at `mod.rs` into one text that `include!` accepts.
pub fn single_file(files: &[GeneratedFile]) -> Result<String, MissingModule> {
    let by_path: HashMap<&Path, &str> = files.iter().map(|f| (f.path.as_path(), f.contents.as_str())).collect();
    let root = by_path.get(Path::new("mod.rs")).copied().unwrap_or("");
    // The root's inner doc comment would be an inner attribute at the include site: keep it as a plain comment.
    let root: String = root
        .lines()
        .map(|l| l.strip_prefix("//!").map_or_else(|| l.to_owned(), |rest| format!("//{rest}")))
        .collect::<Vec<_>>()
        .join("\n");
    expand(&root, Path::new(""), Path::new("mod.rs"), &by_path)
}

/// Replaces each `pub mod name;` line of `text` (a file whose children live in `dir`) by the child's text in braces.
fn expand(text: &str, dir: &Path, this: &Path, files: &HashMap<&Path, &str>) -> Result<String, MissingModule> {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim();
        let child = trimmed.strip_prefix("pub mod ").and_then(|r| r.strip_suffix(';'));
        match child {
            Some(name) if !name.contains(' ') => {
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(name).join("mod.rs");
                let (path, body) = match (files.get(flat.as_path()), files.get(nested.as_path())) {
                    (Some(b), _) => (flat, *b),
                    (None, Some(b)) => (nested, *b),
                    (None, None) => {
                        return Err(MissingModule { declared_in: this.to_path_buf(), module: name.to_owned() })
                    }
                };
                let inner = expand(body, &dir.join(name), &path, files)?;
                out.push_str(&format!("pub mod {name} {{\n{inner}}}\n"));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: &str) -> GeneratedFile {
        GeneratedFile { path: path.into(), contents: contents.into() }
    }

    #[test]
    fn inlines_nested_packages() {
        let files = [
            file("mod.rs", "//! Types.\n\npub mod deep;\npub mod flat;\n"),
            file("flat.rs", "//! flat\n#![allow(dead_code)]\npub struct A;\n"),
            file("deep.rs", "pub mod pkg;\n"),
            file("deep/pkg.rs", "pub struct B;\n"),
        ];
        let one = single_file(&files).unwrap();
        assert_eq!(
            one,
            "// Types.\n\npub mod deep {\npub mod pkg {\npub struct B;\n}\n}\npub mod flat {\n//! flat\n#![allow(dead_code)]\npub struct A;\n}\n"
        );
        assert!(single_file(&[file("mod.rs", "pub mod gone;\n")]).is_err());
    }
}

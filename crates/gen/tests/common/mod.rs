//! The golden-file check shared by the generator tests: every language's output over the same input types
//! (`test_data/rust/basic/*.lcm`), compared byte for byte with files kept under `test_data/`.
//!
//! `UPDATE_EXPECT=1` rewrites the golden files instead of comparing, after a deliberate change to a generator.

use std::path::{Path, PathBuf};

use nerve_gen::GeneratedFile;
use nerve_types::{Checked, Source};

/// Where the golden cases live.
pub fn test_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data")
}

/// The input types every language's golden output is generated from, checked.
pub fn basic_input() -> Checked {
    let dir = test_data().join("rust/basic");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lcm"))
        .collect();
    inputs.sort();
    let sources: Vec<Source> = inputs
        .iter()
        .map(|p| Source { path: p.file_name().unwrap().into(), text: std::fs::read_to_string(p).unwrap() })
        .collect();
    nerve_types::check(&sources, &[]).unwrap()
}

/// Asserts that `files` are exactly the files under `out` (names and bytes), or rewrites `out` with them when
/// `UPDATE_EXPECT` is set.
pub fn check_golden(out: &Path, files: &[GeneratedFile]) {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    if update {
        // A file the generator no longer writes must not linger as a stale expectation.
        let _ = std::fs::remove_dir_all(out);
    }
    for f in files {
        let path = out.join(&f.path);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &f.contents).unwrap();
        } else {
            let want = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                want == f.contents,
                "{} differs from the generator's output; run with UPDATE_EXPECT=1 if the change is intended",
                path.display()
            );
        }
    }
    let mut want = Vec::new();
    list_files(out, out, &mut want);
    want.sort();
    let mut got: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    got.sort();
    assert_eq!(got, want, "the generator's files differ from those under {}", out.display());
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            list_files(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

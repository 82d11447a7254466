//! Golden output of the C (`lcm-gen -c`), C++ (`-x`), Python (`-p`) and Java (`-j`) generators over the same input
//! types as the Rust golden test (`test_data/rust/basic/*.lcm`), kept byte for byte under
//! `test_data/<language>/basic/out/`, plus the Rust generator without `unsafe`. These pin every generator's output so
//! that a refactor that must not change it can prove it does not; what the code does is tested in the per-language
//! tests and tests/interop/.
//!
//! `UPDATE_EXPECT=1 cargo test -p nerve-gen --test golden` rewrites the golden files after a deliberate change.

mod common;

use nerve_gen::{c, cpp, go, java, python, rust, Input, Options};

fn check(
    case: &str,
    generate: fn(&Input<'_>, &Options) -> Result<Vec<nerve_gen::GeneratedFile>, nerve_gen::GenError>,
    opts: Options,
) {
    let checked = common::basic_input();
    let files = generate(&Input::new(&checked), &opts).unwrap();
    common::check_golden(&common::test_data().join(case).join("out"), &files);
}

#[test]
fn c_matches_the_golden_files() {
    check("c/basic", c::generate, Options::default());
}

#[test]
fn c_without_pubsub_matches_the_golden_files() {
    check("c/no-pubsub", c::generate, Options { c_pubsub: false, ..Options::default() });
}

#[test]
fn cpp_matches_the_golden_files() {
    check("cpp/basic", cpp::generate, Options::default());
}

#[test]
fn java_matches_the_golden_files() {
    check("java/basic", java::generate, Options::default());
}

#[test]
fn python_matches_the_golden_files() {
    check("python/basic", python::generate, Options::default());
}

#[test]
fn python_numpy_matches_the_golden_files() {
    check("python/numpy", python::generate, Options { python_numpy: true, ..Options::default() });
}

#[test]
fn rust_without_unsafe_matches_the_golden_files() {
    check("rust/no-unsafe", rust::generate, Options { rust_unsafe: false, ..Options::default() });
}

#[test]
fn go_matches_the_golden_files() {
    check("go/basic", go::generate, Options::default());
}

#[test]
fn go_with_lcmgens_fingerprint_names_matches_the_golden_files() {
    let go = go::GoOptions { fingerprint: true, tag_name: "json".to_owned(), ..go::GoOptions::default() };
    check("go/fingerprint", go::generate, Options { go, ..Options::default() });
}

//! Generates Rust for examples/types into OUT_DIR with nerve-gen, as a user's build script would.

use std::path::PathBuf;

fn main() {
    let types = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../types");
    let files: Vec<PathBuf> = std::fs::read_dir(&types)
        .expect("examples/types")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "lcm"))
        .collect();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let checked = nerve_types::load(&files, &[]).unwrap_or_else(|d| panic!("{}", d.render()));
    let input = nerve_gen::Input::new(&checked);
    let generated = nerve_gen::rust::generate(&input, &nerve_gen::Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let one = nerve_gen::rust_include::single_file(&generated).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("lcmtypes.rs"), one).unwrap();
}

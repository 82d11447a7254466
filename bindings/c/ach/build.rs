//! Gives the shared library Ach's soname, so programs linked against Ach's libach.so.1 load this one unchanged.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libach.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}

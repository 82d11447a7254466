//! Gives the shared library its soname, libnerve.so.0 (0: nerve.h's ABI may still change).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnerve.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}

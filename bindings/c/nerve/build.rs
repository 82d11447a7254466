//! Gives the shared library its soname, libnerve.so.0 (0: nerve.h's ABI may still change).

fn main() {
    // An ELF soname; a Windows DLL has none (its name is the file's, and the import library names it).
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnerve.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

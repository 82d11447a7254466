//! Gives the shared library LCM's soname, liblcm.so.1, so programs linked against the real liblcm load this one.

fn main() {
    // An ELF soname; a Windows DLL has none (its name is the file's, and the import library names it).
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblcm.so.1");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

//! Gives the shared library LCM's soname, liblcm.so.1, so programs linked against the real liblcm load this one.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblcm.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}

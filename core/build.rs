//! Gives `libkprof_core.so` its SONAME.

fn main() {
    // Only this file decides what the script prints: without the line, cargo runs
    // the script (and rebuilds the library) after any change in the package.
    println!("cargo:rerun-if-changed=build.rs");
    // A SONAME lets plugins find an already-loaded core by name (RTLD_NOLOAD), and
    // lets applications link it with -lkprof_core.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkprof_core.so");
}

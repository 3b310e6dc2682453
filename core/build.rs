//! Gives `libkprof_core.so` its SONAME.

fn main() {
    // A SONAME lets plugins find an already-loaded core by name (RTLD_NOLOAD), and
    // lets applications link it with -lkprof_core.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkprof_core.so");
}

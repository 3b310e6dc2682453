//! Compiles the C++ half of the plugin (`shim/kprof_raja_shim.cpp`): the RAJA plugin
//! object, laid out as RAJA's `PluginStrategy` (see `ffi-headers/kprof_raja_plugin.hpp`).

fn main() {
    let headers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ffi-headers");
    println!("cargo:rerun-if-changed=shim/kprof_raja_shim.cpp");
    println!(
        "cargo:rerun-if-changed={}",
        headers.join("kprof_raja_plugin.hpp").display()
    );
    cc::Build::new()
        .cpp(true)
        .file("shim/kprof_raja_shim.cpp")
        .include(&headers)
        .std("c++14")
        // RAJA's PluginContext holds a std::string: libstdc++'s C++11 layout.
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .flag("-fno-exceptions")
        // No frame pointer even with debug information (cc forces one then): the
        // callbacks run per kernel, and the unwinder reads .eh_frame.
        .force_frame_pointer(false)
        .flag("-fvisibility=hidden")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("kprof_raja_shim");
}

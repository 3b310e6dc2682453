//! What the plugin tells the user: one line on stderr, and metadata pairs in the
//! profile.

use std::ffi::CString;

use kprof_abi::CoreApi;

/// One line on stderr, prefixed `kprof: `.
pub fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

/// Records a metadata pair.
pub fn metadata(api: &CoreApi, key: &str, value: &str) {
    let (Ok(k), Ok(v)) = (CString::new(key), CString::new(value)) else {
        return;
    };
    // SAFETY: NUL-terminated strings living across the call.
    unsafe { (api.metadata)(k.as_ptr(), v.as_ptr()) };
}

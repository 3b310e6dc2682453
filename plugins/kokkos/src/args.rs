//! kprof options given through Kokkos: `--kokkos-tools-args=...` on the command line
//! or `KOKKOS_TOOLS_ARGS` in the environment.
//!
//! Kokkos asks for tool settings (fencing) before it passes the arguments, so the
//! plugin reads both sources itself at init; `kokkosp_parse_args` (called once or
//! twice, with or without the executable in `argv[0]`) then finds them already applied.

use std::collections::HashSet;
use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

use kprof_abi::CoreApi;

/// Arguments already applied, so repeated calls are idempotent and warn once.
static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Whether `arg` looks like a kprof option (not the executable or a stray word).
fn is_option(arg: &str) -> bool {
    arg.contains('=') && (arg.starts_with('-') || arg.starts_with("KPROF_"))
}

/// Applies each option in `args` not applied before.
pub fn apply<'a>(api: &CoreApi, args: impl IntoIterator<Item = &'a str>) {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashSet::new);
    for arg in args {
        if !is_option(arg) || !seen.insert(arg.to_string()) {
            continue;
        }
        if let Ok(c) = CString::new(arg) {
            // SAFETY: a NUL-terminated string that lives across the call.
            unsafe { (api.configure)(c.as_ptr()) };
        }
    }
}

/// The values of `--kokkos-tools-args=` on the original command line (Kokkos strips
/// them from argv but the process's command line keeps them).
pub fn from_command_line() -> Vec<String> {
    command_line_value("--kokkos-tools-args=")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The value of the last `prefix...` argument of the process's command line.
pub fn command_line_value(prefix: &str) -> Option<String> {
    let raw = std::fs::read("/proc/self/cmdline").ok()?;
    raw.split(|&b| b == 0)
        .filter_map(|a| std::str::from_utf8(a).ok())
        .filter_map(|a| a.strip_prefix(prefix))
        .next_back()
        .map(str::to_string)
}

/// Whether Kokkos was asked for the tool's help (`--kokkos-tools-help` on the
/// process's command line): Kokkos then initializes the tool, calls its
/// `kokkosp_print_help`, finalizes it and exits, running nothing of the program.
pub fn help_requested() -> bool {
    std::fs::read("/proc/self/cmdline").is_ok_and(|raw| {
        raw.split(|&b| b == 0)
            .skip(1)
            .any(|a| a == b"--kokkos-tools-help")
    })
}

/// The words of `KOKKOS_TOOLS_ARGS`.
pub fn from_environment() -> Vec<String> {
    std::env::var("KOKKOS_TOOLS_ARGS")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The arguments of `kokkosp_parse_args`.
///
/// # Safety
/// `argv` is NULL or holds `argc` pointers, each NULL or NUL-terminated.
pub unsafe fn from_argv(argc: i32, argv: *const *const c_char) -> Vec<String> {
    if argv.is_null() || argc <= 0 {
        return Vec::new();
    }
    (0..argc as usize)
        .filter_map(|i| {
            // SAFETY: i < argc, as the caller guarantees.
            let p = unsafe { *argv.add(i) };
            // SAFETY: each entry is NULL or NUL-terminated.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_options_not_the_executable() {
        assert!(is_option("--output-dir=x"));
        assert!(is_option("KPROF_SUMMARY=0"));
        assert!(!is_option("./app"));
        assert!(!is_option("/path/with=equals/app"));
    }
}

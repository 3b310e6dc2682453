//! `kprof --version`: the version and the commit this kprof was built from,
//! the model table's plugins found next to it, and the optional libraries the
//! loader finds now. A site checks an install (or a module it loaded) with
//! this one command; what it prints is what `kprof run` would use, found the
//! way the run finds it: the plugins by [`plugin_dir`], the libraries by the
//! names of [`kprof_tables::libraries`] (or their setting, when set) through
//! the dynamic loader, in this environment.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;

use kprof_tables::libraries::{Library, OPTIONAL};
use kprof_tables::models::MODELS;

use crate::run::plugin_dir;

/// The commit, from git at build time (`cli/build.rs`), or `unknown`.
const COMMIT: &str = env!("KPROF_COMMIT");

/// The text, three lines:
///
/// ```text
/// kprof 0.1.0 (commit 1a2b3c4)
/// plugins: kokkos, openmp, ... (/opt/kprof/lib)
/// optional: otf2 yes (/usr/lib/.../libopen-trace-format2.so.10), papi no, ...
/// ```
pub fn text() -> String {
    format!(
        "kprof {} (commit {COMMIT})\n{}\n{}\n",
        env!("CARGO_PKG_VERSION"),
        plugins_line(plugin_dir()),
        optional_line()
    )
}

/// The models whose plugin library is in `dir`, in the table's order, and
/// those missing (a build without them, or a partial install).
fn plugins_line(dir: Option<PathBuf>) -> String {
    let Some(dir) = dir else {
        return format!(
            "plugins: none ({} is neither in ../lib nor next to kprof)",
            kprof_tables::models::CORE_LIBRARY
        );
    };
    let (found, missing): (Vec<_>, Vec<_>) =
        MODELS.iter().partition(|m| dir.join(m.library).is_file());
    let names = |v: &[&kprof_tables::models::Model]| {
        v.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
    };
    let mut line = format!(
        "plugins: {} ({})",
        if found.is_empty() {
            "none".to_string()
        } else {
            names(&found)
        },
        dir.display()
    );
    if !missing.is_empty() {
        line.push_str(&format!("; not installed: {}", names(&missing)));
    }
    line
}

/// `optional: <name> yes (<file>)` or `<name> no`, for every optional library.
fn optional_line() -> String {
    let parts: Vec<String> = OPTIONAL
        .iter()
        .map(|lib| match find(lib) {
            Some(file) => format!("{} yes ({file})", lib.name),
            None => format!("{} no", lib.name),
        })
        .collect();
    format!("optional: {}", parts.join(", "))
}

/// The file the loader gives for `lib`: its setting's path alone when set (as
/// the run does), else the first of its names the loader finds.
fn find(lib: &Library) -> Option<String> {
    match lib.setting.and_then(|s| s.path()) {
        Some(p) => loaded_file(&p.to_string_lossy()),
        None => lib.names.iter().find_map(|n| loaded_file(n)),
    }
}

/// The beginning of glibc's `struct link_map` (`<link.h>`), which
/// `dlinfo(RTLD_DI_LINKMAP)` gives: the file's path is its second field.
#[repr(C)]
struct LinkMap {
    /// `l_addr`, not read: it places `l_name`.
    _l_addr: usize,
    /// `l_name`: the file's path.
    l_name: *const c_char,
}

/// Loads `name` as the run would (the loader's search: `LD_LIBRARY_PATH`,
/// its cache, the system directories; or a path) and returns the file it
/// loaded. Only the loader can tell which file a name gives, so the library
/// is loaded; it stays loaded, as closing some (MPI libraries) runs their
/// destructors against state they never set up, and kprof exits right after.
fn loaded_file(name: &str) -> Option<String> {
    let c = CString::new(name).ok()?;
    // SAFETY: a NUL-terminated name; loading runs the library's initializers,
    // as the run's own loading of it does.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return None;
    }
    let mut map: *const LinkMap = std::ptr::null();
    // SAFETY: a handle dlopen returned; RTLD_DI_LINKMAP writes a pointer to
    // the library's link_map, which lives while the library is loaded.
    let rc = unsafe {
        libc::dlinfo(
            handle,
            libc::RTLD_DI_LINKMAP,
            (&mut map as *mut *const LinkMap).cast::<c_void>(),
        )
    };
    if rc != 0 || map.is_null() {
        return Some(name.to_string());
    }
    // SAFETY: the link_map of a loaded library, whose l_name is a
    // NUL-terminated path (empty only for the main program).
    let file = unsafe {
        let l_name = (*map).l_name;
        if l_name.is_null() {
            return Some(name.to_string());
        }
        CStr::from_ptr(l_name).to_string_lossy().into_owned()
    };
    Some(if file.is_empty() {
        name.to_string()
    } else {
        file
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_line_names_present_and_missing_plugins() {
        let dir = std::env::temp_dir().join(format!("kprof-version-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for m in &MODELS[..2] {
            std::fs::write(dir.join(m.library), b"").unwrap();
        }
        let line = plugins_line(Some(dir.clone()));
        let rest: Vec<&str> = MODELS[2..].iter().map(|m| m.name).collect();
        assert_eq!(
            line,
            format!(
                "plugins: {}, {} ({}); not installed: {}",
                MODELS[0].name,
                MODELS[1].name,
                dir.display(),
                rest.join(", ")
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(plugins_line(None).starts_with("plugins: none ("));
    }

    #[test]
    fn a_missing_library_is_no() {
        assert_eq!(loaded_file("libkprof-no-such-library.so.0"), None);
        // The C library is always there, and the loader names its file.
        let libc = loaded_file("libc.so.6").expect("libc.so.6");
        assert!(libc.ends_with("libc.so.6"), "{libc}");
    }
}

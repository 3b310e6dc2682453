//! How a plugin reaches the core runtime: find `libkprof_core.so`, load it once, and
//! fetch its function table.

use std::ffi::{c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use libloading::os::unix::{Library, Symbol};

use crate::{CoreApi, CoreApiFn, ABI_VERSION, CORE_API_SYMBOL};

/// File name of the core library.
pub const CORE_LIB_NAME: &str = "libkprof_core.so";

/// Why the core runtime could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The library file could not be loaded.
    #[error("cannot load {path}: {source}")]
    Open {
        /// What was tried.
        path: String,
        /// The loader's message.
        source: libloading::Error,
    },
    /// The library lacks the table symbol (not a kprof core).
    #[error("{path} is not a kprof core library: {source}")]
    Symbol {
        /// What was loaded.
        path: String,
        /// The loader's message.
        source: libloading::Error,
    },
    /// The core does not serve this plugin's ABI version.
    #[error("{path} speaks kprof ABI {found} (size {size}), this plugin needs {ABI_VERSION}: install matching versions")]
    Version {
        /// What was loaded.
        path: String,
        /// The core's version (0 when it returned no table).
        found: u32,
        /// The core's table size.
        size: usize,
    },
}

/// Loads the core runtime and returns its table.
///
/// Order: a core already in the process (an application linked against it, or another
/// plugin loaded it) wins, so there is one runtime per process; then `KPROF_CORE_LIB`;
/// then `libkprof_core.so` in the directory of the library containing `anchor` (pass
/// the address of any function of the calling plugin, as an integer). The library is never unloaded.
pub fn load_core(anchor: usize) -> Result<&'static CoreApi, LoadError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = kprof_tables::settings::core::CORE_LIB.path() {
        candidates.push(PathBuf::from(p));
    }
    if let Some(dir) = library_dir(anchor) {
        candidates.push(dir.join(CORE_LIB_NAME));
    }

    // Already loaded? Then use that instance whatever its directory.
    let flags_noload = libc::RTLD_NOW | libc::RTLD_NOLOAD;
    for name in candidates
        .iter()
        .map(|p| p.as_os_str())
        .chain(std::iter::once(OsStr::new(CORE_LIB_NAME)))
    {
        // SAFETY: RTLD_NOLOAD never runs initialisers; it only returns a handle to a
        // library that is already mapped.
        if let Ok(lib) = unsafe { Library::open(Some(name), flags_noload) } {
            return table(lib, &name.to_string_lossy());
        }
    }

    let mut last = None;
    for path in &candidates {
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NODELETE;
        // SAFETY: loading our own core library, whose initialisers only set up
        // statics; NODELETE keeps it mapped for the life of the process because
        // exit handlers and thread destructors point into it.
        match unsafe { Library::open(Some(path), flags) } {
            Ok(lib) => return table(lib, &path.to_string_lossy()),
            Err(source) => {
                last = Some(LoadError::Open {
                    path: path.display().to_string(),
                    source,
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| LoadError::Open {
        path: CORE_LIB_NAME.into(),
        source: libloading::Error::DlOpenUnknown,
    }))
}

fn table(lib: Library, path: &str) -> Result<&'static CoreApi, LoadError> {
    // SAFETY: the symbol is declared in the core with exactly the CoreApiFn signature.
    let get: Symbol<CoreApiFn> =
        unsafe { lib.get(CORE_API_SYMBOL) }.map_err(|source| LoadError::Symbol {
            path: path.into(),
            source,
        })?;
    // SAFETY: calling the core's exported function with a plain integer; it returns
    // either NULL or a pointer to a static table.
    let ptr = unsafe { get(ABI_VERSION) };
    // The library must stay loaded for as long as the table is used: forever.
    std::mem::forget(lib);
    // SAFETY: non-NULL pointers from kprof_core_api point to a 'static table.
    let api = unsafe { ptr.as_ref() }.ok_or(LoadError::Version {
        path: path.into(),
        found: 0,
        size: 0,
    })?;
    if api.version != ABI_VERSION || api.size < std::mem::size_of::<CoreApi>() {
        return Err(LoadError::Version {
            path: path.into(),
            found: api.version,
            size: api.size,
        });
    }
    Ok(api)
}

/// Directory of the shared object that contains `addr`.
pub fn library_dir(addr: usize) -> Option<PathBuf> {
    library_path(addr).and_then(|p| p.parent().map(Path::to_path_buf))
}

/// Path of the shared object that contains `addr`.
pub fn library_path(addr: usize) -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr never dereferences the address; it only looks it up in the
    // loader's tables and fills `info`.
    let ok = unsafe { libc::dladdr(addr as *const c_void, info.as_mut_ptr()) };
    if ok == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(name.to_bytes())))
}

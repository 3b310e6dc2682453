//! Finding and loading `libcupti.so` at run time (kprof never links it), and
//! CUPTI's results as errors.

use std::ffi::CStr;
use std::path::PathBuf;

use crate::sys::cuda12::{CUptiResult, Cupti, CUPTI_SUCCESS};

/// Why GPU activity is off.
#[derive(Debug, thiserror::Error)]
pub enum CuptiError {
    /// No candidate library could be loaded.
    #[error("cannot load CUPTI (tried {tried}): {last}")]
    Load {
        /// The candidates, comma-separated.
        tried: String,
        /// The loader's last message.
        last: String,
    },
    /// A CUPTI call failed.
    #[error("{text} ({func})")]
    Call {
        /// The function.
        func: &'static str,
        /// Its result code.
        code: CUptiResult,
        /// CUPTI's text for the code.
        text: String,
    },
    /// The library's record layouts are unknown.
    #[error(transparent)]
    Layout(#[from] crate::layout::LayoutError),
}

/// The libraries tried, in order: `KPROF_CUPTI_LIB` alone when set, else the
/// loader's search for `libcupti.so`, `.so.13`, `.so.12`, then the toolkit's
/// `extras/CUPTI/lib64` under `CUDA_HOME` and `/usr/local/cuda`.
pub fn candidates() -> Vec<PathBuf> {
    if let Some(p) = kprof_tables::settings::cuda::CUPTI_LIB.path() {
        return vec![PathBuf::from(p)];
    }
    let mut v: Vec<PathBuf> = kprof_tables::libraries::CUPTI
        .names
        .iter()
        .map(PathBuf::from)
        .collect();
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|p| !p.is_empty()) {
        v.push(PathBuf::from(home).join("extras/CUPTI/lib64/libcupti.so"));
    }
    v.push(PathBuf::from(
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
    ));
    v
}

/// Loads the first candidate that has every function kprof calls.
pub fn load() -> Result<(Cupti, PathBuf), CuptiError> {
    let all = candidates();
    let mut last = String::new();
    for path in &all {
        // SAFETY: loading CUPTI runs its initializers, which only set up its own
        // state; every symbol is then resolved with the generated signature.
        match unsafe { Cupti::new(path) } {
            Ok(c) => return Ok((c, path.clone())),
            Err(e) => {
                last = match std::error::Error::source(&e) {
                    Some(why) => format!("{e}: {why}"),
                    None => e.to_string(),
                }
            }
        }
    }
    Err(CuptiError::Load {
        tried: all
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        last,
    })
}

/// CUPTI's text for `code` (`CUPTI_ERROR_NO_DEVICE` ...).
pub fn result_text(cupti: &Cupti, code: CUptiResult) -> String {
    let mut s: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuptiGetResultString writes a pointer to a static string (or fails).
    let rc = unsafe { (cupti.cuptiGetResultString)(code, &mut s) };
    if rc != CUPTI_SUCCESS || s.is_null() {
        return format!("CUPTI error {code}");
    }
    // SAFETY: a NUL-terminated static string from CUPTI.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// `Ok` for CUPTI_SUCCESS, else the error of `func`.
pub fn check(cupti: &Cupti, func: &'static str, code: CUptiResult) -> Result<(), CuptiError> {
    if code == CUPTI_SUCCESS {
        Ok(())
    } else {
        Err(CuptiError::Call {
            func,
            code,
            text: result_text(cupti, code),
        })
    }
}

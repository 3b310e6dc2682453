//! The policy API of `ffi-headers/kprof.h` (APEX's policy engine, minimal): an
//! application reads kprof's live statistics of a call path to adapt a parameter
//! itself, directly ([`stats_of`]) or through callbacks it registers and triggers
//! ([`register`], [`poll`]).
//!
//! The statistics are those of the calling thread's own call-path tree, which that
//! thread builds in place as it records (the default profile-only mode): reading
//! them is a walk of the thread's own data, no lock on the hot path, nothing
//! shared. With a trace on, trees are built by the writer thread at the end, so
//! there are no live statistics (`None`). kprof runs no thread for policies: a
//! registered callback runs inside [`poll`], on the polling thread, once its
//! period has passed.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::hot::aggregate::tree::ROOT;
use crate::hot::current;

/// Live statistics of one call path (`kprof_stats` in kprof.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathStats {
    /// Completed instances.
    pub count: u64,
    /// Their inclusive time, ns.
    pub total_ns: u64,
    /// `total_ns / count` (0 without instances).
    pub mean_ns: f64,
    /// Shortest, ns (0 without instances).
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
}

/// The calling thread's statistics of `path` (names from the thread's outermost
/// instance, separated by `/`): `Some(None)` when the path is not in its tree
/// (yet), `None` when there are no live statistics (kprof not recording, or a
/// trace on).
pub fn stats_of(path: &str) -> Option<Option<PathStats>> {
    let mut e = current::enter()?;
    let rt = e.rt;
    let profile = e.t().in_place()?;
    let tree = &profile.tree;
    let mut node = ROOT;
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        let found = tree.nodes[node as usize]
            .children
            .iter()
            .copied()
            .find(|&c| rt.names.text(tree.nodes[c as usize].name) == segment);
        match found {
            Some(c) => node = c,
            None => return Some(None),
        }
    }
    if node == ROOT {
        return Some(None);
    }
    let s = &tree.nodes[node as usize].stats;
    Some(Some(PathStats {
        count: s.count,
        total_ns: s.total_ns,
        mean_ns: if s.count > 0 {
            s.total_ns as f64 / s.count as f64
        } else {
            0.0
        },
        min_ns: if s.count > 0 { s.min_ns } else { 0 },
        max_ns: s.max_ns,
    }))
}

/// A policy callback: the path, its statistics on the polling thread (zeroed when
/// absent), the application's pointer.
pub type PolicyFn = unsafe extern "C" fn(
    path: *const std::ffi::c_char,
    stats: *const PathStats,
    user: *mut std::ffi::c_void,
);

/// Policies registered at most.
pub const MAX_POLICIES: usize = 64;

struct Policy {
    path: std::ffi::CString,
    period: Duration,
    callback: PolicyFn,
    user: usize,
    last: Option<Instant>,
}

static POLICIES: Mutex<Vec<Policy>> = Mutex::new(Vec::new());

/// Registers `callback` for `path`, run by [`poll`] at most every `period_ns`
/// (0: at every poll). Returns its handle (from 1), or 0 when [`MAX_POLICIES`]
/// are registered or the path holds a NUL.
pub fn register(path: &str, period_ns: u64, callback: PolicyFn, user: usize) -> i32 {
    let Ok(path) = std::ffi::CString::new(path) else {
        return 0;
    };
    let mut list = POLICIES.lock().unwrap_or_else(|p| p.into_inner());
    if list.len() >= MAX_POLICIES {
        return 0;
    }
    list.push(Policy {
        path,
        period: Duration::from_nanos(period_ns),
        callback,
        user,
        last: None,
    });
    list.len() as i32
}

/// Runs every policy whose period has passed, on the calling thread, with that
/// thread's statistics of its path; returns how many ran. Callbacks run without
/// any kprof lock held (they may register policies or poll).
pub fn poll() -> i32 {
    let now = Instant::now();
    let due: Vec<(std::ffi::CString, PolicyFn, usize)> = {
        let mut list = POLICIES.lock().unwrap_or_else(|p| p.into_inner());
        list.iter_mut()
            .filter(|p| match p.last {
                None => true,
                Some(l) => now.duration_since(l) >= p.period,
            })
            .map(|p| {
                p.last = Some(now);
                (p.path.clone(), p.callback, p.user)
            })
            .collect()
    };
    for (path, callback, user) in &due {
        let stats = stats_of(&path.to_string_lossy())
            .flatten()
            .unwrap_or_default();
        // SAFETY: the application registered this callback with this pointer; the
        // path and the statistics live across the call.
        unsafe { callback(path.as_ptr(), &stats, *user as *mut std::ffi::c_void) };
    }
    due.len() as i32
}

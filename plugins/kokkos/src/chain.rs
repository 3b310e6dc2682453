//! Tool chaining, the kokkos-tools convention: with
//! `KOKKOS_TOOLS_LIBS="libkprof.so;libnext.so"`, Kokkos loads only the first library;
//! that tool loads entry `loadSeq + 1` and forwards every callback to it.
//!
//! The next tool keeps its own ids (kernel ids, fence handles, section ids); they are
//! mapped from ours here. This costs a lock per forwarded call, paid only when a
//! chain is configured.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use libloading::os::unix::Library;

use crate::types::{
    DeviceInfo, OptimizationGoal, SpaceHandle, ToolProgrammingInterface, ToolSettings,
    VariableInfo, VariableValue,
};

macro_rules! next_tool {
    ($($field:ident: $sym:literal => fn($($arg:ty),*);)*) => {
        /// The callbacks the next tool exports (missing ones are never called).
        pub struct Next {
            $(
                #[doc = concat!("`", $sym, "`")]
                pub $field: Option<unsafe extern "C" fn($($arg),*)>,
            )*
        }

        impl Next {
            fn from_library(lib: &Library) -> Next {
                Next {
                    $(
                        // SAFETY: the Kokkos Tools interface fixes this symbol's
                        // signature; a tool exporting it differently is broken for
                        // Kokkos itself too.
                        $field: unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*)>(concat!($sym, "\0").as_bytes())
                        }
                        .ok()
                        .map(|s| *s),
                    )*
                }
            }
        }
    };
}

next_tool! {
    init: "kokkosp_init_library" => fn(c_int, u64, u32, *mut DeviceInfo);
    finalize: "kokkosp_finalize_library" => fn();
    parse_args: "kokkosp_parse_args" => fn(c_int, *mut *mut c_char);
    print_help: "kokkosp_print_help" => fn(*mut c_char);
    request_settings: "kokkosp_request_tool_settings" => fn(u32, *mut ToolSettings);
    provide_tpi: "kokkosp_provide_tool_programming_interface" => fn(u32, ToolProgrammingInterface);
    begin_for: "kokkosp_begin_parallel_for" => fn(*const c_char, u32, *mut u64);
    end_for: "kokkosp_end_parallel_for" => fn(u64);
    begin_reduce: "kokkosp_begin_parallel_reduce" => fn(*const c_char, u32, *mut u64);
    end_reduce: "kokkosp_end_parallel_reduce" => fn(u64);
    begin_scan: "kokkosp_begin_parallel_scan" => fn(*const c_char, u32, *mut u64);
    end_scan: "kokkosp_end_parallel_scan" => fn(u64);
    begin_fence: "kokkosp_begin_fence" => fn(*const c_char, u32, *mut u64);
    end_fence: "kokkosp_end_fence" => fn(u64);
    push_region: "kokkosp_push_profile_region" => fn(*const c_char);
    pop_region: "kokkosp_pop_profile_region" => fn();
    create_section: "kokkosp_create_profile_section" => fn(*const c_char, *mut u32);
    start_section: "kokkosp_start_profile_section" => fn(u32);
    stop_section: "kokkosp_stop_profile_section" => fn(u32);
    destroy_section: "kokkosp_destroy_profile_section" => fn(u32);
    profile_event: "kokkosp_profile_event" => fn(*const c_char);
    declare_metadata: "kokkosp_declare_metadata" => fn(*const c_char, *const c_char);
    allocate: "kokkosp_allocate_data" => fn(SpaceHandle, *const c_char, *const c_void, u64);
    deallocate: "kokkosp_deallocate_data" => fn(SpaceHandle, *const c_char, *const c_void, u64);
    begin_deep_copy: "kokkosp_begin_deep_copy" => fn(SpaceHandle, *const c_char, *const c_void, SpaceHandle, *const c_char, *const c_void, u64);
    end_deep_copy: "kokkosp_end_deep_copy" => fn();
    dual_view_sync: "kokkosp_dual_view_sync" => fn(*const c_char, *const c_void, bool);
    dual_view_modify: "kokkosp_dual_view_modify" => fn(*const c_char, *const c_void, bool);
    declare_output_type: "kokkosp_declare_output_type" => fn(*const c_char, usize, *mut VariableInfo);
    declare_input_type: "kokkosp_declare_input_type" => fn(*const c_char, usize, *mut VariableInfo);
    request_values: "kokkosp_request_values" => fn(usize, usize, *const VariableValue, usize, *mut VariableValue);
    begin_context: "kokkosp_begin_context" => fn(usize);
    end_context: "kokkosp_end_context" => fn(usize, VariableValue);
    declare_optimization_goal: "kokkosp_declare_optimization_goal" => fn(usize, OptimizationGoal);
}

/// The next tool (None when there is none or it failed to load), and the error that
/// kept it from loading.
static NEXT: OnceLock<(Option<Next>, Option<String>)> = OnceLock::new();
static IDS: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

thread_local! {
    /// This thread is loading the next tool (whose relocations may ask for one of
    /// this library's tuning symbols: see `tuning.rs`).
    static LOADING: Cell<bool> = const { Cell::new(false) };
}

/// The next tool, once [`load`] found one.
#[inline]
pub fn next() -> Option<&'static Next> {
    NEXT.get().and_then(|(n, _)| n.as_ref())
}

/// Whether the calling thread is inside [`load`].
pub fn loading() -> bool {
    LOADING.with(Cell::get)
}

/// Loads the next tool of the tool list once (later calls return the first result):
/// the entry after this library's own (`own`, never loaded twice), or entry
/// `load_seq + 1` when this library is not in the list by its path. Kokkos asks for
/// the tuning symbols before it initializes the tool, so this may run before
/// `kokkosp_init_library` (see `tuning.rs`).
pub fn load(load_seq: c_int, own: Option<&Path>) -> Result<Option<&'static Next>, String> {
    let (next, err) = NEXT.get_or_init(|| {
        LOADING.with(|l| l.set(true));
        let loaded = open_next(load_seq, own);
        LOADING.with(|l| l.set(false));
        match loaded {
            Ok(n) => (n, None),
            Err(e) => (None, Some(e)),
        }
    });
    match err {
        Some(e) => Err(e.clone()),
        None => Ok(next.as_ref()),
    }
}

fn open_next(load_seq: c_int, own: Option<&Path>) -> Result<Option<Next>, String> {
    let list = crate::args::command_line_value("--kokkos-tools-libs=")
        .or_else(|| std::env::var("KOKKOS_TOOLS_LIBS").ok())
        .or_else(|| std::env::var("KOKKOS_PROFILE_LIBRARY").ok())
        .unwrap_or_default();
    let entries: Vec<&str> = list.split(';').map(str::trim).collect();
    let same = |p: &Path| std::fs::canonicalize(p).ok();
    let own_canon = own.and_then(same);
    let ours = entries
        .iter()
        .position(|e| !e.is_empty() && own_canon.is_some() && same(Path::new(e)) == own_canon);
    let at = ours.unwrap_or(usize::try_from(load_seq).unwrap_or(0)) + 1;
    let Some(path) = entries.get(at).copied().filter(|e| !e.is_empty()) else {
        return Ok(None);
    };
    if own_canon.is_some() && same(Path::new(path)) == own_canon {
        return Err(format!("{path} is kprof itself; not chaining it twice"));
    }
    // SAFETY: loading a Kokkos tool exactly as Kokkos does (RTLD_NOW | RTLD_GLOBAL);
    // like Kokkos, we never unload it.
    let lib = unsafe { Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_GLOBAL) }
        .map_err(|e| format!("cannot load the next tool {path}: {e}"))?;
    let next = Next::from_library(&lib);
    std::mem::forget(lib);
    Ok(Some(next))
}

thread_local! {
    /// Kernels open on this thread: (our id, the next tool's id), innermost last.
    /// Kokkos begins and ends a kernel on the launching thread, and kernels nest,
    /// so a thread-local stack pairs them without the lock and hash map that
    /// [`map_id`] needs for sections (which may end on another thread).
    static OPEN_KERNELS: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Kernels left open on one thread (ends never called) before new ones stop being
/// remembered: bounds the memory an unbalanced program can make us hold.
const MAX_OPEN_KERNELS: usize = 4096;

/// Remembers the next tool's id for one of our kernels, begun on this thread.
pub fn push_kernel_id(ours: u64, theirs: u64) {
    OPEN_KERNELS.with_borrow_mut(|open| {
        if open.len() < MAX_OPEN_KERNELS {
            open.push((ours, theirs));
        }
    });
}

/// The next tool's id for one of our kernels, ending on this thread (the innermost
/// open kernel with that id; 0 if none).
pub fn pop_kernel_id(ours: u64) -> u64 {
    OPEN_KERNELS.with_borrow_mut(|open| {
        open.iter()
            .rposition(|&(o, _)| o == ours)
            .map_or(0, |i| open.remove(i).1)
    })
}

/// Remembers the next tool's id for one of ours.
pub fn map_id(ours: u64, theirs: u64) {
    let mut ids = IDS.lock().unwrap_or_else(|p| p.into_inner());
    ids.get_or_insert_with(HashMap::new).insert(ours, theirs);
}

/// The next tool's id for one of ours (forgotten unless `keep`).
pub fn their_id(ours: u64, keep: bool) -> u64 {
    let mut ids = IDS.lock().unwrap_or_else(|p| p.into_inner());
    let ids = ids.get_or_insert_with(HashMap::new);
    if keep {
        ids.get(&ours).copied().unwrap_or(0)
    } else {
        ids.remove(&ours).unwrap_or(0)
    }
}

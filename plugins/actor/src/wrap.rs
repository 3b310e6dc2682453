//! Route 2: what the link-time wrappers of Conveyors' entries
//! (`ffi-headers/kprof_actor_wrap.c`) call. They find
//! [`kprof_actor_wrap_hooks_v1`] with `dlsym` once; the table hands them the
//! "current conveyor" word and [`leave`], called after every entry with the
//! clock read before it.

use std::ffi::{c_int, c_long, c_void};
use std::sync::OnceLock;

use kprof_abi::guard::guard;

use crate::{clock, dispatch, state};

/// `struct kprof_actor_wrap_hooks` of `kprof_actor.h`.
#[repr(C)]
pub struct WrapHooks {
    /// `size_of::<WrapHooks>()`.
    pub size: u32,
    /// [`WRAP_VERSION`].
    pub version: u32,
    /// The conveyor whose entry runs now ([`state::current`]).
    pub current: *mut *mut c_void,
    /// After each entry.
    pub leave: unsafe extern "C" fn(
        conveyor: *mut c_void,
        op: c_int,
        rc: c_long,
        pe: i64,
        arg: u64,
        t0: u64,
    ),
    /// 0: no breakdown (`KPROF_ACTOR_BREAKDOWN=0`): the wrappers read no clock.
    pub timing: u32,
    /// Before each entry, after the clock was read (NULL: not needed; only
    /// with segments, [`crate::segments`]): the conveyor and the op.
    pub enter: Option<unsafe extern "C" fn(conveyor: *mut c_void, op: c_int)>,
}

/// `KPROF_ACTOR_WRAP_VERSION`.
pub const WRAP_VERSION: u32 = 1;

struct Shared(WrapHooks);
// SAFETY: the table is immutable once built; `current` points to an atomic word
// (state::current_word) that lives for the whole process.
unsafe impl Sync for Shared {}
// SAFETY: as above.
unsafe impl Send for Shared {}

static TABLE: OnceLock<Shared> = OnceLock::new();

/// The wrappers' table, or NULL while kprof is disabled (the wrappers then
/// only forward).
#[no_mangle]
pub extern "C" fn kprof_actor_wrap_hooks_v1() -> *const WrapHooks {
    guard(std::ptr::null(), || {
        if crate::connect::api_or_connect().is_none() {
            return std::ptr::null();
        }
        &TABLE
            .get_or_init(|| {
                Shared(WrapHooks {
                    size: std::mem::size_of::<WrapHooks>() as u32,
                    version: WRAP_VERSION,
                    current: state::current_word() as *mut *mut c_void,
                    leave,
                    timing: u32::from(state::timing()),
                    enter: if crate::segments::on() {
                        Some(enter)
                    } else {
                        None
                    },
                })
            })
            .0
    })
}

/// A Conveyors entry returned (also called by the load-time hooks).
///
/// # Safety
/// Any values: `conveyor` is only compared, never dereferenced.
pub unsafe extern "C" fn leave(
    conveyor: *mut c_void,
    op: c_int,
    rc: c_long,
    pe: i64,
    arg: u64,
    t0: u64,
) {
    guard((), || {
        let mode = crate::core_table::mode();
        if mode == 0 {
            return;
        }
        // Without the breakdown the wrappers pass t0 = 0 and no clock is read.
        let now = if t0 != 0 { clock::ticks() } else { 0 };
        let call = |op| state::Call {
            key: conveyor as usize,
            op,
            // c_long is i64 on LP64 Linux but 32 bits on other ABIs.
            #[allow(clippy::unnecessary_cast)]
            rc: rc as i64,
            pe,
            arg,
            t0,
            now,
        };
        // One booking per frequent entry, each with its op a constant.
        match op {
            state::op::PUSH => dispatch::booked(mode, call(state::op::PUSH)),
            state::op::PULL => dispatch::booked(mode, call(state::op::PULL)),
            state::op::ADVANCE => dispatch::booked(mode, call(state::op::ADVANCE)),
            _ => dispatch::booked(mode, call(op)),
        }
    })
}

/// A Conveyors entry is about to run (only with segments).
///
/// # Safety
/// Any values: `conveyor` is not used.
pub unsafe extern "C" fn enter(_conveyor: *mut c_void, op: c_int) {
    guard((), || {
        if let Some(api) = crate::core_table::api() {
            crate::segments::enter(api, op == crate::state::op::BEGIN);
        }
    })
}

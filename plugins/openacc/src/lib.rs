//! `libkprof_acc.so`: kprof's OpenACC profiling plugin.
//!
//! Loaded by an OpenACC runtime from `ACC_PROFLIB` (GCC's libgomp, NVIDIA's HPC SDK
//! runtime): the runtime calls [`acc_register_library`] with its registration
//! function, and kprof registers one callback (`callbacks::on_event`) for every
//! event 1..=25. Linked into the program or preloaded instead (where the runtime
//! does not call `acc_register_library`), the library's constructor registers the
//! same callback through the runtime's `acc_prof_register`. A static flag makes the
//! registration happen exactly once either way.
//!
//! The core runtime (`libkprof_core.so`, shared with the other kprof plugins) is
//! loaded at registration and attached at the first event. Each event becomes
//! calls of the core's C table (see `callbacks` for the mapping): no lock, no
//! system call, no allocation on the hot path (names built from runtime strings are
//! cached per thread), and no panic reaches the runtime.
//!
//! Two traps of the interface, avoided here: the exported `acc_register_library`
//! is never called by name from inside the library (under `ACC_PROFLIB` the name
//! binds to libgomp's own dummy, which aborts), and nothing registers or
//! unregisters from inside a callback (libgomp holds its profiling lock there).

pub mod acc;
mod callbacks;
pub mod device;
pub mod names;
pub mod plugin;

use kprof_abi::guard::guard;

use acc::{LookupFn, RegFn};

/// The OpenACC tool entry point: the runtime passes its register, unregister and
/// lookup functions; kprof registers its callback for events 1..=25 (once).
///
/// # Safety
/// `reg` is NULL or the runtime's `acc_prof_reg` function.
#[no_mangle]
pub unsafe extern "C" fn acc_register_library(
    reg: Option<RegFn>,
    _unreg: Option<RegFn>,
    _lookup: Option<LookupFn>,
) {
    guard((), || {
        if let Some(reg) = reg {
            plugin::register_with(reg, plugin::How::Library, callbacks::on_event);
        }
    })
}

/// Constructor: when kprof is linked into the program or preloaded, the runtime
/// never calls `acc_register_library`, so register through its `acc_prof_register`
/// (found with `dlsym(RTLD_DEFAULT)`; absent when the program has no OpenACC
/// runtime). Skipped when `ACC_PROFLIB` names this library: the runtime will call
/// `acc_register_library` (and registering from inside its loading is not safe).
extern "C" fn constructor() {
    guard((), || {
        if plugin::named_in_proflib() {
            return;
        }
        // SAFETY: dlsym with a NUL-terminated name; no library is loaded or run.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"acc_prof_register".as_ptr()) };
        if sym.is_null() {
            return;
        }
        // SAFETY: the OpenACC specification gives acc_prof_register the acc_prof_reg
        // signature.
        let reg: RegFn = unsafe { std::mem::transmute::<*mut libc::c_void, RegFn>(sym) };
        plugin::register_with(reg, plugin::How::Constructor, callbacks::on_event);
    })
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

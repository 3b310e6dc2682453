//! `libkprof_signals.so`: preloaded by `kprof run` into the program it starts, so
//! that a signal reaching the program both directly and through `kprof run` is
//! delivered to the program once.
//!
//! `kprof run` forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to
//! the program. A `kill` of the whole process group, or a batch system signalling
//! every process of a job, gives the program its own copy as well. `kprof run`
//! skips the copy when the program still has its own pending, but a program with
//! its own handler may have taken it already. So this library stands in front of
//! the program's handlers for those six signals:
//! - it defines `sigaction`, `signal`, `bsd_signal`, `sysv_signal` and
//!   `__sysv_signal` (found before the C library's through `LD_PRELOAD`). For
//!   those signals, the program's action is kept here and returned to it as the
//!   old action, exactly as it set it; the kernel gets our handler with the
//!   program's flags and mask (SIG_DFL and SIG_IGN go to the kernel as they are);
//! - `kprof run` forwards with `sigqueue` and a marked value naming the original
//!   sender ([`kprof_abi::forward`]);
//! - our handler pairs a forwarded copy with a direct one from the same sender
//!   within [`WINDOW_MS`], in either order, and drops the second of the pair;
//!   everything else goes to the program's handler, a forwarded copy's
//!   information rewritten to read as the original `kill` (`SI_USER`, the
//!   sender's pid). SA_RESETHAND is kept here rather than by the kernel, so that a
//!   second copy dropped after the reset cannot kill the program.
//!
//! It is active only in the program `kprof run` started (its parent's pid is in
//! [`RUN_PID_VAR`]); anywhere else (the program's own children, which inherit
//! `LD_PRELOAD`) every call goes straight to the C library. The handler only reads
//! the clock, swaps one atomic word and takes the table's lock for one copy: it
//! is async-signal-safe and never waits on its own thread.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use kprof_abi::forward::{self, NO_ORIGIN, RUN_PID_VAR, WINDOW_MS};
use kprof_abi::guard::guard;

mod pairing;
mod sys;
mod table;

use pairing::{Arrival, Last};
use sys::Next;

/// Whether this process is the program `kprof run` started.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The pid of `kprof run`: the sender of forwarded copies.
static RUN_PID: AtomicI32 = AtomicI32::new(0);
/// The last unpaired arrival of each managed signal.
static LAST: [Last; table::MANAGED.len()] = [const { Last::new() }; table::MANAGED.len()];

/// Runs when the library is loaded, before the program's own constructors.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    guard((), || {
        let Some(run_pid) = std::env::var(RUN_PID_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<i32>().ok())
        else {
            return;
        };
        // SAFETY: getppid has no preconditions.
        if run_pid != unsafe { libc::getppid() } {
            return;
        }
        let Some(real) = sys::real_sigaction() else {
            return;
        };
        let held = table::lock();
        // A handler set before we were loaded (another library's constructor) is
        // the program's: take it over.
        for (i, &sig) in table::MANAGED.iter().enumerate() {
            // SAFETY: a zeroed sigaction is valid for the kernel to fill.
            let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: querying into our own storage.
            if unsafe { real(sig, std::ptr::null(), &mut cur) } != 0 {
                continue;
            }
            held.set(i, cur);
            if is_handler(cur.sa_sigaction) {
                install(real, sig, &cur);
            }
        }
        RUN_PID.store(run_pid, Ordering::Release);
        ACTIVE.store(true, Ordering::Release);
    });
}

fn is_handler(h: libc::sighandler_t) -> bool {
    h != libc::SIG_DFL && h != libc::SIG_IGN
}

/// Gives the kernel the program's action for `sig`, with our handler in front of
/// the program's.
fn install(real: sys::SigactionFn, sig: c_int, act: &libc::sigaction) -> c_int {
    let mut kernel = *act;
    if is_handler(act.sa_sigaction) {
        kernel.sa_sigaction = in_front as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)
            as libc::sighandler_t;
        kernel.sa_flags = (act.sa_flags | libc::SA_SIGINFO) & !libc::SA_RESETHAND;
    }
    // SAFETY: a valid action of our own.
    unsafe { real(sig, &kernel, std::ptr::null_mut()) }
}

/// The handler in front of the program's for the managed signals.
extern "C" fn in_front(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // No guard here: nothing below can panic, and a guard's panic path allocates.
    let saved = sys::errno();
    let Some(i) = table::index(sig) else {
        return;
    };
    let run_pid = RUN_PID.load(Ordering::Acquire);
    let (forwarded, origin) = match sys::sender(info) {
        Some((code, pid, value)) if code == libc::SI_QUEUE && pid == run_pid => {
            match forward::decode(value) {
                Some(origin) => (true, origin),
                None => (false, pid as u32),
            }
        }
        Some((libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL, pid, _)) => (false, pid as u32),
        _ => (false, NO_ORIGIN),
    };
    let arrival = Arrival {
        forwarded,
        origin,
        ms: sys::now_ms(),
    };
    if LAST
        .get(i)
        .is_some_and(|l| l.is_second_copy(arrival, WINDOW_MS))
    {
        sys::set_errno(saved);
        return;
    }
    let act = {
        let held = table::lock();
        let act = held.get(i);
        if is_handler(act.sa_sigaction) && act.sa_flags & libc::SA_RESETHAND != 0 {
            // As the kernel would: the program's next copy finds SIG_DFL.
            let mut reset = act;
            reset.sa_sigaction = libc::SIG_DFL;
            held.set(i, reset);
        }
        act
    };
    match act.sa_sigaction {
        libc::SIG_IGN => {}
        libc::SIG_DFL => die_by(sig),
        handler => {
            if forwarded && origin != NO_ORIGIN {
                sys::show_as_sent_by(info, origin as libc::pid_t);
            }
            sys::set_errno(saved);
            // SAFETY: the program installed this handler with these flags.
            unsafe {
                sys::call_handler(
                    handler,
                    act.sa_flags & libc::SA_SIGINFO != 0,
                    sig,
                    info,
                    ctx,
                )
            };
            return;
        }
    }
    sys::set_errno(saved);
}

/// The program's action is SIG_DFL (reset after SA_RESETHAND, or set while this
/// signal arrived): the default action, from the kernel.
fn die_by(sig: c_int) {
    let Some(real) = sys::real_sigaction() else {
        return;
    };
    // SAFETY: an all-zero sigaction is SIG_DFL.
    let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: restoring the default disposition, then raising: the signal is
    // delivered with it when this handler returns (at once under SA_NODEFER).
    unsafe {
        real(sig, &dfl, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// `sigaction(2)`, for the program: the managed signals' actions are kept here.
///
/// # Safety
/// As the C library's `sigaction`: `act` and `old` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    guard(-1, || {
        let Some(real) = sys::real_sigaction() else {
            sys::set_errno(libc::ENOSYS);
            return -1;
        };
        let i = match table::index(sig) {
            Some(i) if ACTIVE.load(Ordering::Acquire) => i,
            // SAFETY: the caller's arguments, passed on unchanged.
            _ => return unsafe { real(sig, act, old) },
        };
        let held = table::lock();
        let prev = held.get(i);
        if !act.is_null() {
            // SAFETY: the caller gives a valid action.
            let new = unsafe { *act };
            let rc = install(real, sig, &new);
            if rc != 0 {
                return rc;
            }
            held.set(i, new);
        }
        if !old.is_null() {
            // SAFETY: the caller gives valid storage.
            unsafe { *old = prev };
        }
        0
    })
}

/// `signal` and its variants for a managed signal, through our `sigaction` with
/// the C library's flags for each; other signals go to the C library's `which`.
fn set_handler(
    which: Next,
    sig: c_int,
    handler: libc::sighandler_t,
    flags: c_int,
    mask_itself: bool,
) -> libc::sighandler_t {
    if table::index(sig).is_none() || !ACTIVE.load(Ordering::Acquire) {
        return match sys::real_signal(which) {
            // SAFETY: the caller's arguments, passed on unchanged.
            Some(f) => unsafe { f(sig, handler) },
            None => {
                sys::set_errno(libc::ENOSYS);
                libc::SIG_ERR
            }
        };
    }
    if handler == libc::SIG_ERR {
        sys::set_errno(libc::EINVAL);
        return libc::SIG_ERR;
    }
    // SAFETY: a zeroed sigaction, filled as the C library fills it.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    // SAFETY: operating on our own signal set.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        if mask_itself {
            libc::sigaddset(&mut act.sa_mask, sig);
        }
    }
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: valid action and storage of our own.
    if unsafe { sigaction(sig, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// `signal(3)` (BSD semantics, as the C library's).
///
/// # Safety
/// As the C library's `signal`.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    guard(libc::SIG_ERR, || {
        set_handler(Next::Signal, sig, handler, libc::SA_RESTART, true)
    })
}

/// `bsd_signal(3)`.
///
/// # Safety
/// As the C library's `bsd_signal`.
#[no_mangle]
pub unsafe extern "C" fn bsd_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    guard(libc::SIG_ERR, || {
        set_handler(Next::BsdSignal, sig, handler, libc::SA_RESTART, true)
    })
}

/// `sysv_signal(3)`: reset on delivery, not masked while it runs.
///
/// # Safety
/// As the C library's `sysv_signal`.
#[no_mangle]
pub unsafe extern "C" fn sysv_signal(
    sig: c_int,
    handler: libc::sighandler_t,
) -> libc::sighandler_t {
    guard(libc::SIG_ERR, || {
        set_handler(
            Next::SysvSignal,
            sig,
            handler,
            libc::SA_RESETHAND | libc::SA_NODEFER,
            false,
        )
    })
}

/// `__sysv_signal`: what `signal` is in a program built for strict ISO C
/// (`-std=c11`).
///
/// # Safety
/// As the C library's `__sysv_signal`.
#[no_mangle]
pub unsafe extern "C" fn __sysv_signal(
    sig: c_int,
    handler: libc::sighandler_t,
) -> libc::sighandler_t {
    guard(libc::SIG_ERR, || {
        set_handler(
            Next::UnderSysvSignal,
            sig,
            handler,
            libc::SA_RESETHAND | libc::SA_NODEFER,
            false,
        )
    })
}

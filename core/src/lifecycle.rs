//! Ending a run however the process ends: exit hooks, SIGINT/SIGTERM and fork.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use kprof_abi::Anomaly;

use crate::runtime;

const SIGNALS: [c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// The dispositions we replaced, to restore before re-raising.
static PREVIOUS: OnceLock<[Option<libc::sigaction>; 2]> = OnceLock::new();
static IN_HANDLER: AtomicBool = AtomicBool::new(false);

/// Registers the exit handler, the fork handler and (if `signals`) the signal
/// handlers. Called once, when the runtime starts.
pub fn install_exit_hooks(signals: bool) {
    // SAFETY: registering plain extern "C" functions with libc; they never unwind.
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(None, None, Some(in_child));
    }
    if signals {
        install_signal_handlers();
    }
}

extern "C" fn at_exit() {
    kprof_abi::guard::guard((), || {
        runtime::shutdown();
        if let Some(rt) = runtime::get() {
            let late = rt.anomalies.get(Anomaly::CallAfterFinalize);
            if late > 0 {
                runtime::warn(&format!(
                    "{late} call(s) after finalize were ignored (not in the profile)"
                ));
            }
        }
    });
}

extern "C" fn in_child() {
    runtime::disable_in_child();
}

fn install_signal_handlers() {
    let mut previous = [None, None];
    for (i, &sig) in SIGNALS.iter().enumerate() {
        let mut old = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: querying the current disposition into our own storage.
        if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
            continue;
        }
        // SAFETY: sigaction succeeded and filled `old`.
        let old = unsafe { old.assume_init() };
        // Only where the signal would kill the process: a program that ignores or
        // handles it itself may go on running, and must keep measuring.
        if old.sa_sigaction != libc::SIG_DFL {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid starting point; we fill handler,
        // flags and an empty mask.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: initialising the mask we own, then installing the handler.
        unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(sig, &act, std::ptr::null_mut()) == 0 {
                previous[i] = Some(old);
            }
        }
    }
    let _ = PREVIOUS.set(previous);
}

/// Flushes everything, restores the previous (default) disposition and re-raises,
/// so the process ends exactly as it would have without kprof.
extern "C" fn on_signal(sig: c_int) {
    if !IN_HANDLER.swap(true, Ordering::AcqRel) {
        // Only atomics, sleeps and the writer thread's work happen here: the writer
        // blocks these signals and does the allocating and the file I/O.
        runtime::shutdown();
    }
    if let Some(prev) = PREVIOUS.get() {
        if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
            if let Some(old) = prev[i] {
                // SAFETY: restoring a disposition the kernel gave us.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            }
        }
    }
    // SAFETY: raise is async-signal-safe. The signal is blocked until this handler
    // returns, then delivered with the restored disposition.
    unsafe { libc::raise(sig) };
}

/// Blocks every signal in the calling thread (the writer), so asynchronous signals
/// are always delivered to application threads.
pub fn block_all_signals() {
    // SAFETY: operating on a signal set we own.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigfillset(set.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
    }
}

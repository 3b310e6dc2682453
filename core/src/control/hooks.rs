//! Ending a run however the process ends: exit hooks, signals and fork.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP (asynchronous) and SIGSEGV, SIGBUS, SIGABRT,
//! SIGFPE and SIGILL (a crash) get a handler where their disposition is still the
//! default (a program's own handler is left alone). The handler has the writer
//! thread write every output, says which signal ended the run, restores the
//! default disposition and re-raises, so the process ends as it would have. A
//! second signal arriving while the output is written (a group signal and its
//! copy forwarded by a launcher, on another thread) waits for the same output
//! instead of cutting it off. An asynchronous signal that lands on a thread in the
//! middle of a kprof event is handled when that event completes (nanoseconds
//! later): the writer reads no thread's data while it is being written, and a
//! half-written thread would otherwise be left out.
//!
//! Fork: the writer thread does not survive a fork. The child handler leaves the
//! parent's runtime behind; the child starts one of its own at its first event
//! (`KPROF_FORK=1`) or records nothing (`KPROF_FORK=0`). Locks the child's new
//! runtime needs (the settings, the buffer memory) are held across the fork, so
//! the child never inherits them locked by a thread it does not have.

use std::cell::RefCell;
use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{MutexGuard, OnceLock};

use kprof_abi::Anomaly;

use crate::base::config::Config;
use crate::base::signals::restore_signals;
use crate::control::start;
use crate::hot::arena::ArenaHold;
use crate::hot::runtime;

/// Signals handled, with their names for the line that says which one ended the run.
const SIGNALS: [(c_int, &str); 8] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
];

/// The first entries of [`SIGNALS`] are asynchronous (the rest are crashes).
const ASYNC_SIGNALS: usize = 3;

/// The dispositions we replace (the defaults), to restore before re-raising; set
/// before any of our handlers is installed.
static PREVIOUS: OnceLock<[Option<libc::sigaction>; SIGNALS.len()]> = OnceLock::new();
/// Whether the exit and fork handlers are registered (once per process image: a
/// forked child inherits them).
static HOOKED: AtomicBool = AtomicBool::new(false);
/// Handlers running now; the first one says which signal ended the run.
static HANDLING: AtomicUsize = AtomicUsize::new(0);

/// Registers the exit handler, the fork handlers and (if `signals`) the signal
/// handlers. Called when the runtime starts; effective once per process.
pub fn install_exit_hooks(signals: bool) {
    if HOOKED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: registering plain extern "C" functions with libc; they never unwind.
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(Some(before_fork), Some(after_fork_parent), Some(in_child));
    }
    if signals {
        install_signal_handlers();
    }
}

extern "C" fn at_exit() {
    kprof_abi::guard::guard((), || {
        start::shutdown();
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

/// What the forking thread holds from `before_fork` until the fork returned.
struct ForkHold {
    config: MutexGuard<'static, Config>,
    _arena: ArenaHold<'static>,
    plugins: Option<Vec<String>>,
}

thread_local! {
    static FORK_HOLD: RefCell<Option<ForkHold>> = const { RefCell::new(None) };
}

extern "C" fn before_fork() {
    kprof_abi::guard::guard((), || {
        let plugins =
            runtime::get().map(|rt| rt.plugins.lock().unwrap_or_else(|p| p.into_inner()).clone());
        // The settings first, then the buffer memory: the order every other taker
        // of both follows (start reads the settings, then allocates).
        let config = runtime::config();
        let arena = crate::hot::buffer::hold_for_fork();
        let hold = ForkHold {
            config,
            _arena: arena,
            plugins,
        };
        FORK_HOLD.with(|h| *h.borrow_mut() = Some(hold));
    });
}

extern "C" fn after_fork_parent() {
    kprof_abi::guard::guard((), || {
        FORK_HOLD.with(|h| h.borrow_mut().take());
    });
}

extern "C" fn in_child() {
    kprof_abi::guard::guard((), || {
        let hold = FORK_HOLD.with(|h| h.borrow_mut().take());
        let (fork, plugins) = match &hold {
            Some(h) => (h.config.fork, h.plugins.clone()),
            None => (true, None),
        };
        // Unlocks the settings and the buffer memory: this thread locked them
        // before the fork, and is the child's only thread.
        drop(hold);
        start::reset_in_child(fork, plugins);
    });
}

fn install_signal_handlers() {
    let mut previous = [None; SIGNALS.len()];
    let mut ours = [false; SIGNALS.len()];
    for (i, &(sig, _)) in SIGNALS.iter().enumerate() {
        let mut old = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: querying the current disposition into our own storage.
        if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
            continue;
        }
        // SAFETY: sigaction succeeded and filled `old`.
        let old = unsafe { old.assume_init() };
        // Only where the signal would kill the process: a program that ignores or
        // handles it itself may go on running, and must keep measuring.
        if old.sa_sigaction == libc::SIG_DFL {
            previous[i] = Some(old);
            ours[i] = true;
        }
    }
    if PREVIOUS.set(previous).is_err() {
        return;
    }
    crate::hot::current::on_deferred_signal(deferred_signal);
    for (i, &(sig, _)) in SIGNALS.iter().enumerate() {
        if !ours[i] {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid starting point; we fill handler,
        // flags and an empty mask, then install it.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            // While one handler writes, the other asynchronous signals wait on
            // this thread (a crash signal cannot wait: it is the thread's own).
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut act.sa_mask, s);
            }
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// Writes `parts` to stderr in one `write` (async-signal-safe: no allocation).
fn say_raw(parts: &[&[u8]]) {
    let mut buf = [0u8; 256];
    let mut n = 0;
    for p in parts {
        let take = p.len().min(buf.len() - n);
        buf[n..n + take].copy_from_slice(&p[..take]);
        n += take;
    }
    // SAFETY: writing our own stack buffer to fd 2.
    unsafe { libc::write(2, buf.as_ptr().cast(), n) };
}

/// Flushes everything, restores the previous (default) disposition and re-raises,
/// so the process ends exactly as it would have without kprof.
extern "C" fn on_signal(sig: c_int) {
    let Some(i) = SIGNALS.iter().position(|&(s, _)| s == sig) else {
        return;
    };
    // This thread is inside an event: finish it first (a crash cannot wait).
    if i < ASYNC_SIGNALS && crate::hot::current::defer_signal(sig) {
        return;
    }
    let first = HANDLING.fetch_add(1, Ordering::AcqRel) == 0;
    let recording = matches!(
        runtime::phase(),
        runtime::Phase::Running | runtime::Phase::Starting | runtime::Phase::Finalizing
    );
    // The writer itself crashing: nobody is left to write; end at once.
    if !crate::collect::writer::is_writer_thread() && recording {
        if first {
            say_raw(&[
                b"kprof: ",
                SIGNALS[i].1.as_bytes(),
                b" ends the program; writing what was recorded up to it\n",
            ]);
        }
        // Only atomics, sleeps and the writer thread's work happen here: the writer
        // blocks every signal and does the allocating and the file I/O. A second
        // signal (on another thread) waits here for the same output.
        start::flush_devices_from_signal();
        start::shutdown_now();
    }
    if let Some(old) = PREVIOUS.get().and_then(|p| p[i]) {
        // SAFETY: restoring a disposition the kernel gave us.
        unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
    }
    // SAFETY: raise is async-signal-safe. The signal is blocked until this handler
    // returns, then delivered with the restored disposition.
    unsafe { libc::raise(sig) };
}

/// A signal deferred until the event it interrupted completed: handled now, on
/// the thread that completed an event, as if it had just arrived. Its own
/// asynchronous signals wait while it runs, as in a handler.
fn deferred_signal(sig: c_int) {
    // SAFETY: operating on signal sets we own.
    let previous = unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(set.as_mut_ptr());
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(set.as_mut_ptr(), s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), old.as_mut_ptr());
        old.assume_init()
    };
    on_signal(sig);
    restore_signals(&previous);
}

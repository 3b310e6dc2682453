//! GPU plugins' flush callbacks (`CoreApi::on_flush`): run once at the end, before
//! the output, so that activities a vendor library still buffers are delivered
//! while the runtime records. At a normal end the ending thread runs them; at a
//! terminating signal the writer thread does (a vendor's flush takes locks, which
//! a signal handler must not), and the handler waits for it, bounded.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

/// Registered callbacks (function addresses; 0: free slot).
static FLUSHERS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
/// A flush asked of the writer thread: 0 none, 1 asked, 2 done.
static ASKED: AtomicU8 = AtomicU8::new(0);

/// Registers `flush`; false when every slot is taken.
pub fn register(flush: unsafe extern "C" fn()) -> bool {
    let f = flush as usize;
    FLUSHERS.iter().any(|slot| {
        slot.load(Ordering::Acquire) == f
            || slot
                .compare_exchange(0, f, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    })
}

/// Whether any callback is waiting to run.
pub fn pending() -> bool {
    FLUSHERS.iter().any(|s| s.load(Ordering::Acquire) != 0)
}

/// Runs every registered callback, each once (a callback that runs again later
/// finds its slot empty).
pub fn run() {
    for slot in &FLUSHERS {
        let f = slot.swap(0, Ordering::AcqRel);
        if f != 0 {
            // SAFETY: `f` was registered as an `unsafe extern "C" fn()` by
            // `register`, and the plugin that gave it stays loaded.
            let f: unsafe extern "C" fn() = unsafe { std::mem::transmute(f) };
            // SAFETY: a plugin's flush takes no arguments and runs once.
            unsafe { f() };
        }
    }
}

/// Asks the writer thread to run the callbacks (from a signal handler: only an
/// atomic store; the caller wakes the writer).
pub fn ask() {
    let _ = ASKED.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
}

/// On the writer thread: runs the callbacks if asked.
pub fn serve() {
    if ASKED.load(Ordering::Acquire) == 1 {
        run();
        ASKED.store(2, Ordering::Release);
    }
}

/// Waits (sleeping: async-signal-safe) until the writer ran the callbacks, at
/// most `limit`.
pub fn wait_served(limit: Duration) {
    let step = Duration::from_millis(1);
    let mut waited = Duration::ZERO;
    while ASKED.load(Ordering::Acquire) == 1 && waited < limit {
        std::thread::sleep(step);
        waited += step;
    }
}

//! The calling thread: each event enters it ([`enter`], which registers the
//! thread on its first event) and leaves it; its exit hands its last chunk over;
//! a signal that arrives inside an event waits for the event to complete. The
//! one module that joins the runtime to a thread's state.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::counters::ThreadCounters;
use crate::hot::intern::NameCache;
use crate::hot::runtime::Runtime;
use crate::hot::thread::ThreadState;
use crate::hot::tls;

/// Chunks added to the pool when a thread registers, so a burst of new threads
/// does not drop records before the writer tops the pool up.
const CHUNKS_PER_NEW_THREAD: usize = 2;

thread_local! {
    static EXIT: ExitGuard = const { ExitGuard };
}

/// Hands the thread's last chunk to the writer when the thread exits.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let p = tls::get();
        if p.is_null() {
            return;
        }
        // SAFETY: the state belongs to this exiting thread and is never freed.
        let state = unsafe { &mut *p };
        crate::hot::stack_samples::disarm_current();
        state.exit();
    }
}

/// An event in progress on the calling thread: the runtime and the thread's
/// state. Dropping it marks the event complete (see [`crate::hot::thread::ThreadSlot::busy`]).
pub struct Entered {
    /// The runtime that records the event.
    pub rt: &'static Runtime,
    state: *mut ThreadState,
}

impl Entered {
    /// The calling thread's state.
    #[inline(always)]
    pub fn t(&mut self) -> &mut ThreadState {
        // SAFETY: the pointer is this thread's own leaked state; the only
        // reference to it is this one, borrowed from the guard of the event.
        unsafe { &mut *self.state }
    }
}

impl Drop for Entered {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: as in t(); the slot is leaked and never freed.
        let slot = unsafe { (*self.state).slot() };
        slot.busy.leave();
        if DEFERRED_SIGNAL.load(Ordering::Relaxed) != 0 {
            run_deferred_signal();
        }
    }
}

/// An asynchronous signal that arrived while its thread was inside an event (0:
/// none), handled once an event completes.
static DEFERRED_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// What handles a deferred signal (a `fn(c_int)`; 0 until signal handlers are
/// installed).
static DEFERRED_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Sets what handles a deferred signal (the signal handlers' owner).
pub fn on_deferred_signal(handler: fn(c_int)) {
    DEFERRED_HANDLER.store(handler as usize, Ordering::Release);
}

/// Called by a signal handler: when the calling thread is inside an event,
/// keeps `sig` for when the event completes and returns true. Async-signal-safe
/// (a thread-local load and atomics).
pub fn defer_signal(sig: c_int) -> bool {
    let p = tls::get();
    // SAFETY: this thread's own leaked state, only read.
    let busy = unsafe { p.as_ref() }.is_some_and(|t| t.slot().busy.is_raised_here());
    if busy && DEFERRED_HANDLER.load(Ordering::Acquire) != 0 {
        DEFERRED_SIGNAL.store(sig, Ordering::Release);
    }
    busy && DEFERRED_HANDLER.load(Ordering::Acquire) != 0
}

#[cold]
#[inline(never)]
fn run_deferred_signal() {
    let sig = DEFERRED_SIGNAL.swap(0, Ordering::AcqRel);
    let handler = DEFERRED_HANDLER.load(Ordering::Acquire);
    if sig != 0 && handler != 0 {
        // SAFETY: only on_deferred_signal stores here, always a fn(c_int).
        let handler: fn(c_int) = unsafe { std::mem::transmute::<usize, fn(c_int)>(handler) };
        handler(sig);
    }
}

/// Starts an event on the calling thread (registering the thread on first use):
/// `None` when the runtime does not record. Marks the thread busy before it looks
/// whether the runtime records, so the shutdown, which stops recording first and
/// then waits for busy threads, never reads a thread's data while an event that
/// saw the runtime recording is still writing it. No locked instruction: the
/// shutdown makes the order visible with a process-wide barrier
/// ([`crate::hot::quiesce`]).
#[inline(always)]
pub fn enter() -> Option<Entered> {
    let p = tls::get();
    if p.is_null() {
        return enter_slow();
    }
    // SAFETY: this thread's own leaked state.
    let slot = unsafe { (*p).slot() };
    match slot.busy.enter(crate::hot::runtime::active) {
        Some(rt) => Some(Entered { rt, state: p }),
        None => enter_slow(),
    }
}

/// A thread's first event, or one that found the runtime not recording (after
/// the end, which is counted, or a forked child's first event, which starts it).
#[cold]
#[inline(never)]
fn enter_slow() -> Option<Entered> {
    let rt = crate::hot::runtime::active().or_else(crate::hot::runtime::inactive_call)?;
    let mut p = tls::get();
    if p.is_null() {
        p = register(rt)?;
    }
    // SAFETY: this thread's own leaked state.
    let slot = unsafe { (*p).slot() };
    slot.busy.enter(crate::hot::runtime::active)?;
    Some(Entered { rt, state: p })
}

/// The calling thread's own counters, when the runtime reads any; a thread PAPI
/// refuses is said once and goes uncounted.
fn thread_counters(rt: &'static Runtime) -> Option<ThreadCounters> {
    let c = rt.counters.as_ref()?;
    match c.for_thread(&rt.anomalies) {
        Ok(t) => Some(t),
        Err(e) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                crate::hot::runtime::warn(&format!("counters: a thread is not counted: {e}"));
            }
            rt.anomalies.count(kprof_abi::Anomaly::CountersUnavailable);
            None
        }
    }
}

#[cold]
#[inline(never)]
fn register(rt: &'static Runtime) -> Option<*mut ThreadState> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default();
    let Some(slot) = rt.threads.add(tid, name) else {
        // The run is ending: this thread's first event comes too late.
        rt.anomalies.count(kprof_abi::Anomaly::CallAfterFinalize);
        return None;
    };
    let in_place = if rt.in_place {
        let max_depth = rt.threads.depth();
        let thread = (slot.index, &slot.open);
        let p = Box::into_raw(Box::new(ThreadProfile::new(rt.shared(), thread, max_depth)));
        slot.in_place.store(p, Ordering::Release);
        p
    } else {
        std::ptr::null_mut()
    };
    if !rt.in_place {
        rt.pool.top_up(rt.pool.free_len() + CHUNKS_PER_NEW_THREAD);
    }
    let fresh = |mut names: NameCache| {
        names.time_with(&rt.clock);
        ThreadState::new(slot, rt.sink(), names, in_place, thread_counters(rt))
    };
    let state: *mut ThreadState = match rt.threads.reusable() {
        // (The gone thread's counters went with it: see ExitGuard.)
        Some(old) => {
            // SAFETY: a retired state whose thread is gone: nothing else uses it.
            let s = unsafe { &mut *old };
            // What the gone thread recorded after its exit guard stays its own.
            s.retire();
            // Its in-place profile stays for the merge; only the scratch goes.
            if let Some(p) = s.in_place() {
                p.release_scratch();
            }
            // The name cache maps pointers to process-wide ids: still valid. The
            // old value is moved out whole (no destructor runs on a half state).
            // SAFETY: `s` is valid and exclusively ours; it is written back below.
            let taken = unsafe { std::ptr::read(s) };
            // SAFETY: as above; the old value was moved out, nothing is dropped twice.
            unsafe { std::ptr::write(s, fresh(taken.into_names())) };
            old
        }
        None => Box::leak(Box::new(fresh(NameCache::new()))),
    };
    tls::set(state);
    // Call-stack samples need the thread's in-place profile: the node the
    // thread publishes is where a sample goes.
    if rt.in_place {
        crate::hot::stack_samples::arm(slot.index, &slot.open);
    }
    // Registers the exit destructor; fails harmlessly if the thread is already
    // tearing down its thread-locals.
    let _ = EXIT.try_with(|_| ());
    Some(state)
}

//! The first call starting the runtime on several threads at once
//! ([`Lifecycle::start_once`], what every plugin's attach and a forked child's
//! first event run): exactly one caller runs the start, and every caller returns
//! only once the runtime it made is complete and visible to it.

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use kprof_core::base::sync::order::Site;
use kprof_core::base::sync::Ordering;
use kprof_core::hot::lifecycle::{Lifecycle, Phase};

/// What the start makes: the runtime, written before it is published.
struct Runtime {
    clock: UnsafeCell<u64>,
}

/// Callers racing: two threads (the model's main thread and one more).
const CALLERS: usize = 2;

fn model() {
    let life: &'static Lifecycle<Runtime> = Box::leak(Box::new(Lifecycle::new()));
    let starts = Arc::new(AtomicUsize::new(0));
    let first_call = {
        let starts = starts.clone();
        move || {
            life.start_once(|| {
                starts.fetch_add(1, Ordering::Relaxed);
                let rt: &'static Runtime = Box::leak(Box::new(Runtime {
                    clock: UnsafeCell::new(0),
                }));
                // SAFETY: the runtime is this caller's until it is published.
                rt.clock.with_mut(|c| unsafe { *c = 42 });
                Some(rt)
            });
            // Every caller records at once: the runtime is there, complete.
            let rt = life.active().expect("recording once start_once returned");
            // SAFETY: written before publication, never written again.
            let clock = rt.clock.with(|c| unsafe { *c });
            assert_eq!(clock, 42, "a caller saw the runtime before it was complete");
        }
    };
    let others: Vec<_> = (1..CALLERS)
        .map(|_| thread::spawn(first_call.clone()))
        .collect();
    first_call();
    for t in others {
        t.join().unwrap();
    }
    assert_eq!(
        starts.load(Ordering::Relaxed),
        1,
        "the start ran more than once"
    );
    assert_eq!(life.phase(), Phase::Running);
}

/// Exhaustive with two callers (the waiter's spin yields, so loom bounds it). A
/// third caller is a second waiter, spinning on the same phase: two spinning
/// waiters multiply the interleavings past what CI can explore (not done in
/// ten minutes even at two preemptions), and add no new pairing: every waiter
/// synchronizes with the starter alone.
#[test]
fn start_once_on_two_threads() {
    crate::explore("start: first call on 2 threads", None, model);
}

/// With the start's last store (the phase says Running) relaxed, a waiter can
/// return before the runtime is visible to it.
#[test]
fn start_fails_when_the_phase_store_is_relaxed() {
    let msg = crate::fails_weakened("start", Site::Started, None, model);
    assert!(
        msg.contains("Causality violation") || msg.contains("recording once start_once returned"),
        "{msg}"
    );
}

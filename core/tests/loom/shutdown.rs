//! Shutdown racing a late event: a plugin's finalize and the exit handler end
//! the run at the same time ([`Lifecycle::stop`]), while a thread's first event
//! registers it ([`Registry::add`] against the end's [`Registry::seal`]) and
//! records. One caller ends the run; the late event is either refused (the
//! registry is sealed or the runtime no longer records) or complete and seen by
//! the end's read, never half.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::sync::Arc;
use loom::thread;

use kprof_core::base::sync::order::Site;
use kprof_core::base::sync::Ordering;
use kprof_core::hot::lifecycle::{Lifecycle, Stop};
use kprof_core::hot::quiesce::quiesce_with;
use kprof_core::hot::thread::Registry;

/// The recording runtime (what the hot path checks).
struct Runtime;

fn model() {
    let life: &'static Lifecycle<Runtime> = Box::leak(Box::new(Lifecycle::new()));
    life.start_once(|| Some(&Runtime));
    let threads: &'static Registry = Box::leak(Box::new(Registry::new(4)));
    // The late thread's in-place profile: events it counted.
    let profile: &'static UnsafeCell<u64> = Box::leak(Box::new(UnsafeCell::new(0)));
    let owners = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(AtomicBool::new(false));
    // The two ends: the owner writes the output (reads the profiles); the other
    // waits for it, as `shutdown_now` waits for the writer.
    let end = {
        let (owners, written) = (owners.clone(), written.clone());
        move || match life.stop() {
            Stop::Mine => {
                owners.fetch_add(1, Ordering::Relaxed);
                let slots = threads.seal();
                let busy = quiesce_with(slots.iter().map(|s| &s.busy), || {
                    thread::yield_now();
                    true
                });
                assert!(busy.iter().all(|b| !b), "a model thread never stays busy");
                // SAFETY: no thread is inside an event, and none records any more.
                let n = if slots.is_empty() {
                    0
                } else {
                    profile.with(|n| unsafe { *n })
                };
                written.store(true, Ordering::Release);
                Some(n)
            }
            Stop::Other => {
                while !written.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                None
            }
            Stop::NotRunning => panic!("the run was recording"),
        }
    };
    let finalize = thread::spawn(end.clone());
    let exit = thread::spawn(end);
    // The late thread's first event: registration, then the event.
    let mut recorded = 0;
    if let Some(slot) = threads.add(1, String::new()) {
        if slot.busy.enter(|| life.active()).is_some() {
            // SAFETY: the thread's own profile, inside its event.
            profile.with_mut(|n| unsafe { *n += 1 });
            recorded = 1;
            slot.busy.leave();
        }
    }
    let read: Vec<u64> = [finalize, exit]
        .into_iter()
        .filter_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(owners.load(Ordering::Relaxed), 1, "one caller ends the run");
    assert_eq!(
        read,
        [recorded],
        "the end's read disagrees with the late event"
    );
}

/// Exhaustive: three threads (two ends, one late event).
#[test]
fn shutdown_racing_a_late_event() {
    crate::explore(
        "shutdown: finalize and exit vs a late first event",
        None,
        model,
    );
}

/// With the late thread's barrier gone, its event can pass the end's wait.
#[test]
fn shutdown_fails_without_the_threads_barrier() {
    let msg = crate::fails_weakened("shutdown", Site::BusyEnter, None, model);
    assert!(
        msg.contains("Causality violation") || msg.contains("disagrees with the late event"),
        "{msg}"
    );
}

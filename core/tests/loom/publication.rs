//! The busy-flag publication of a thread's in-place profile and its one reader
//! (`kprof_core::hot::quiesce`): the application thread never waits; the end of
//! the run stops the recording, barriers, waits for the busy flags to fall, then
//! reads each profile. Every event that saw the runtime recording is complete
//! and visible to that read, and no event writes after it.

use loom::cell::UnsafeCell;
use loom::thread;

use kprof_core::base::sync::order::Site;
use kprof_core::hot::lifecycle::{Lifecycle, Stop};
use kprof_core::hot::quiesce::quiesce_with;
use kprof_core::hot::thread::Registry;

/// The recording runtime (what the hot path checks).
struct Runtime;

/// Application threads, and events each records.
const THREADS: usize = 2;
const EVENTS: u64 = 1;

fn model() {
    let life: &'static Lifecycle<Runtime> = Box::leak(Box::new(Lifecycle::new()));
    life.start_once(|| Some(&Runtime));
    let threads: &'static Registry = Box::leak(Box::new(Registry::new(4)));
    // Each thread's in-place profile: the events it counted (a profile's every
    // field is written the same way: by its thread, inside an event).
    let profiles: &'static [UnsafeCell<u64>] =
        Box::leak((0..THREADS).map(|_| UnsafeCell::new(0)).collect());
    let apps: Vec<_> = (0..THREADS)
        .map(|i| {
            let slot = threads.add(i as i32, String::new()).unwrap();
            thread::spawn(move || {
                let mut recorded = 0;
                for _ in 0..EVENTS {
                    // What `hot::current::enter` and the drop of its guard do.
                    if slot.busy.enter(|| life.active()).is_some() {
                        // SAFETY: the thread's own profile, inside its event.
                        profiles[i].with_mut(|n| unsafe { *n += 1 });
                        recorded += 1;
                        slot.busy.leave();
                    }
                }
                recorded
            })
        })
        .collect();
    // The end of the run, as `control::start::shutdown_now` and the writer's
    // end do it.
    assert_eq!(life.stop(), Stop::Mine);
    let slots = threads.seal();
    let busy = quiesce_with(slots.iter().map(|s| &s.busy), || {
        thread::yield_now();
        true
    });
    assert!(busy.iter().all(|b| !b), "a model thread never stays busy");
    // SAFETY: no thread is inside an event, and none records any more.
    let read: Vec<u64> = profiles.iter().map(|p| p.with(|n| unsafe { *n })).collect();
    let recorded: Vec<u64> = apps.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        read, recorded,
        "the end read a profile without all its events"
    );
}

/// Exhaustive: two threads of one event each, against the end of the run (two
/// events each did not finish in 100 s: every extra event doubles each thread's
/// raise-look-lower steps; one event per thread already pairs every step of
/// each thread with every step of the end).
#[test]
fn in_place_profiles_read_at_the_end() {
    crate::explore("publication: 2 threads x 1 event vs the end", None, model);
}

/// A thread that leaves its event with a relaxed store: the end can see the flag
/// down before the event's writes.
#[test]
fn publication_fails_when_leave_is_relaxed() {
    let msg = crate::fails_weakened("publication", Site::BusyLeave, None, model);
    assert!(msg.contains("Causality violation"), "{msg}");
}

/// A thread whose look at the runtime may pass its flag's store (no barrier on
/// its side): the end sees the flag down while the thread records.
#[test]
fn publication_fails_without_the_threads_barrier() {
    let msg = crate::fails_weakened("publication", Site::BusyEnter, None, model);
    assert!(
        msg.contains("Causality violation") || msg.contains("without all its events"),
        "{msg}"
    );
}

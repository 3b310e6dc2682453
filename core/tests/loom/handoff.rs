//! The hand-off of records between an application thread and the writer: the
//! thread appends events to its chunk ([`ThreadState::push`]), publishing each;
//! a full chunk goes to the writer's queue and a fresh one is taken; at exit the
//! last chunk goes too ([`ThreadState::retire`]). The writer gathers as
//! `collect::writer` does: the full chunks in queue order, then the published
//! part of the chunk the thread is still filling ([`ThreadSlot::filling`],
//! [`Chunk::follows`]), and recycles full chunks only after the gather. Every
//! word reaches the writer once, in order, and is read only once it is written.
//! (Under `cfg(loom)` a chunk holds 4 words, and crossbeam's queue is replaced by
//! a mutex-guarded one with the same happens-before contract.)

use std::sync::OnceLock;

use loom::thread;

use kprof_core::base::sync::order::Site;
use kprof_core::hot::buffer::{Chunk, Pool, CHUNK_WORDS};
use kprof_core::hot::clock::Clock;
use kprof_core::hot::intern::NameCache;
use kprof_core::hot::thread::{Registry, Sink, ThreadSlot, ThreadState};

/// Events the thread records (2 words each: 2 chunks, the first full).
const EVENTS: u64 = 3;
/// Writer rounds while the thread records (one more after it exits).
const ROUNDS: usize = 2;

/// The clock (plain memory, no part of the protocol): made once.
fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(Clock::new)
}

/// The words of event `i`.
fn event(i: u64) -> [u64; 2] {
    [100 + i, 200 + i]
}

/// The writer's reading of one thread's chunks.
struct Gather {
    expected: u64,
    words: Vec<u64>,
}

impl Gather {
    /// One round of `collect::writer::Writer::gather` for one thread, then the
    /// recycling its merge does.
    fn round(&mut self, pool: &Pool, slot: &ThreadSlot) {
        let mut done: Vec<&'static Chunk> = Vec::new();
        while let Some(c) = pool.next_full() {
            assert_eq!(c.owner(), slot.index);
            self.expected = c.seq() + 1;
            self.words.extend_from_slice(c.take_new());
            done.push(c);
        }
        if let Some(c) = slot.filling() {
            if c.follows(slot.index, self.expected) {
                self.words.extend_from_slice(c.take_new());
            }
        }
        for c in done {
            pool.recycle(c);
        }
    }
}

fn model() {
    assert_eq!(CHUNK_WORDS, 4, "the model's chunks");
    // At most 4 chunks, 2 made now: the thread takes a recycled one or makes one.
    let pool: &'static Pool = Box::leak(Box::new(Pool::new(0, 2)));
    let threads: &'static Registry = Box::leak(Box::new(Registry::new(4)));
    let writer: &'static OnceLock<std::thread::Thread> = Box::leak(Box::new(OnceLock::new()));
    let slot = threads.add(1, String::new()).unwrap();
    let sink = Sink {
        pool,
        clock: clock(),
        threads,
        writer,
    };
    let app = thread::spawn(move || {
        let mut t = ThreadState::new(slot, sink, NameCache::new(), std::ptr::null_mut(), None);
        for i in 0..EVENTS {
            t.push(event(i), i);
        }
        // The thread exits: its last chunk goes to the writer.
        t.retire();
    });
    let mut g = Gather {
        expected: 1,
        words: Vec::new(),
    };
    for _ in 0..ROUNDS {
        g.round(pool, slot);
    }
    app.join().unwrap();
    g.round(pool, slot);
    let all: Vec<u64> = (0..EVENTS).flat_map(event).collect();
    assert_eq!(
        g.words, all,
        "the writer did not get every word once, in order"
    );
}

/// Exhaustive: three events (a full chunk handed over, a chunk in progress, the
/// exit's hand-off) against three writer rounds.
#[test]
fn records_handed_to_the_writer() {
    crate::explore(
        "handoff: 3 events in 4-word chunks vs 3 writer rounds",
        None,
        model,
    );
}

/// With the publication of records relaxed, the writer can read words before
/// they are written.
#[test]
fn handoff_fails_when_publish_is_relaxed() {
    let msg = crate::fails_weakened("handoff", Site::ChunkPublish, None, model);
    assert!(msg.contains("Causality violation"), "{msg}");
}

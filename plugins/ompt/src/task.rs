//! What kprof keeps per explicit task, in the task's `ompt_data_t`.
//!
//! An explicit task needs three words (its creation GUID, to name dependence edges;
//! its code address, to name every execution slice; the GUID of the slice running
//! now) but `ompt_data_t` holds one. So explicit tasks get a small heap block and the
//! word holds its address with [`TAG`] set. Everything else kprof stores in task
//! words (implicit tasks' GUIDs, 0) has that bit clear: GUIDs carry the thread
//! index in their top 24 bits, which would need 2^23 threads to reach it. Words
//! without the tag are never dereferenced.
//!
//! Freeing: a runtime may report a task's completion (`task_schedule`) before it
//! unlinks the task from its dependence graph (libomp releases dependences after
//! the callback), so for a moment another thread that creates a task may still
//! report a dependence on the completed one and hand its word back. The block is therefore freed only after the completing thread has
//! completed [`DEFER`] more tasks: by then it has long left the runtime code of the
//! first completion, so nothing can point to the block any more.

use std::cell::Cell;

/// Bit of a task word marking a pointer to a [`TaskInfo`].
pub const TAG: u64 = 1 << 63;

/// Completions a thread goes through before freeing a completed task's block.
pub const DEFER: usize = 8;

/// The block of one explicit task.
#[derive(Debug)]
pub struct TaskInfo {
    /// GUID of the task's creation marker: identifies the task in the task graph.
    pub creation: u64,
    /// The `codeptr_ra` of the task construct, naming its execution slices.
    pub codeptr: u64,
    /// GUID of the execution slice open now, 0 when none.
    pub exec: u64,
}

/// Allocates the block of a new task and returns the tagged word to store.
pub fn new_word(creation: u64, codeptr: u64) -> u64 {
    let p = Box::into_raw(Box::new(TaskInfo {
        creation,
        codeptr,
        exec: 0,
    }));
    p as u64 | TAG
}

/// The block a task word points to, if it is one of ours.
///
/// # Safety
/// `word` is a value kprof stored in a task's `ompt_data_t` whose task has not been
/// [`retire`]d more than [`DEFER`] completions ago.
#[inline]
pub unsafe fn info<'a>(word: u64) -> Option<&'a mut TaskInfo> {
    if word & TAG == 0 {
        return None;
    }
    // SAFETY: tagged words are only made by new_word from a live Box (caller's
    // contract for its lifetime).
    unsafe { ((word & !TAG) as *mut TaskInfo).as_mut() }
}

/// The GUID identifying a task in the task graph: its creation marker for explicit
/// tasks, the word itself otherwise (a task kprof did not give a block).
///
/// # Safety
/// As [`info`].
#[inline]
pub unsafe fn graph_id(word: u64) -> u64 {
    // SAFETY: forwarded.
    match unsafe { info(word) } {
        Some(t) => t.creation,
        None => word,
    }
}

thread_local! {
    /// Completed tasks' blocks waiting to be freed, a ring per thread.
    static RETIRED: Cell<([u64; DEFER], usize)> = const { Cell::new(([0; DEFER], 0)) };
}

/// Hands a completed task's block over for freeing after [`DEFER`] more
/// completions on this thread (see the module documentation). A thread that exits
/// leaves at most [`DEFER`] blocks unfreed.
pub fn retire(word: u64) {
    if word & TAG == 0 {
        return;
    }
    let old = RETIRED
        .try_with(|r| {
            let (mut ring, i) = r.get();
            let old = std::mem::replace(&mut ring[i % DEFER], word);
            r.set((ring, (i + 1) % DEFER));
            old
        })
        // Thread-local storage already torn down (a task completing during thread
        // exit): leak the block rather than free it early.
        .unwrap_or(0);
    if old & TAG != 0 {
        // SAFETY: `old` was made by new_word and retired DEFER completions ago on
        // this thread; no one refers to it any more.
        drop(unsafe { Box::from_raw((old & !TAG) as *mut TaskInfo) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_untagged_words_are_not_ours() {
        let w = new_word(42, 0x1234);
        assert_ne!(w & TAG, 0);
        // SAFETY: w is live.
        let t = unsafe { info(w) }.unwrap();
        assert_eq!((t.creation, t.codeptr, t.exec), (42, 0x1234, 0));
        t.exec = 7;
        // SAFETY: w is live.
        assert_eq!(unsafe { graph_id(w) }, 42);
        // SAFETY: untagged words are never dereferenced.
        unsafe {
            assert!(info(0).is_none());
            assert!(info(5 << 40 | 17).is_none());
            assert_eq!(graph_id(5 << 40 | 17), 5 << 40 | 17);
        }
        for _ in 0..=DEFER {
            retire(new_word(1, 2));
        }
        retire(w);
        retire(0);
        retire(123);
    }
}

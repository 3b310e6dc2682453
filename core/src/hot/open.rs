//! GUIDs and the open instances a thread publishes for other threads: an
//! instance whose explicit parent runs on another thread finds the node of that
//! parent here, as data, without reaching the other thread's state.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Bits of a GUID below the thread index.
pub const GUID_SEQ_BITS: u32 = 40;
/// Mask of a GUID's per-thread counter.
pub const GUID_SEQ_MASK: u64 = (1 << GUID_SEQ_BITS) - 1;

/// Open instances published by depth: one word each, the GUID's counter bits
/// above the profile node below, so a reader never sees half of an entry; 0
/// above the innermost (each end clears its entry).
pub struct OpenFrames {
    words: Box<[AtomicU64]>,
}

/// Bits of a published entry below the GUID counter: the node.
const OPEN_NODE_BITS: u32 = 64 - GUID_SEQ_BITS;
/// Deepest instance published: an instance whose explicit parent on another
/// thread is deeper nests where it runs. Parents across threads (parallel
/// regions, target regions) sit near the root; the entries cost 8 bytes per
/// thread each, threads that exited included.
const MAX_PUBLISHED: usize = 64;

impl OpenFrames {
    /// Room for the instances open up to `depth`.
    pub fn new(depth: usize) -> OpenFrames {
        OpenFrames {
            words: (0..depth.min(MAX_PUBLISHED))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Publishes the instance `guid` at `depth` (0-based), placed at `node`. Nodes
    /// beyond what an entry holds are not published (their children then nest
    /// where they run).
    #[inline(always)]
    pub fn publish(&self, depth: usize, guid: u64, node: u32) {
        if let Some(w) = self.words.get(depth) {
            if u64::from(node) >> OPEN_NODE_BITS == 0 {
                let entry = (guid & GUID_SEQ_MASK) << OPEN_NODE_BITS | u64::from(node);
                w.store(entry, Ordering::Release);
            }
        }
    }

    /// Clears the entry at `depth` (its instance ended).
    #[inline(always)]
    pub fn close(&self, depth: usize) {
        if let Some(w) = self.words.get(depth) {
            w.store(0, Ordering::Release);
        }
    }

    /// The node of the innermost instance published (`None`: none open). Read
    /// by the thread's own sampling signal handler, which may interrupt an
    /// open or a close: each entry is one word, so it sees the stack before or
    /// after the change, never half of it. Async-signal-safe.
    #[inline]
    pub fn innermost_node(&self) -> Option<u32> {
        let mut node = None;
        for w in self.words.iter() {
            let e = w.load(Ordering::Relaxed);
            if e == 0 {
                break;
            }
            node = Some((e & ((1 << OPEN_NODE_BITS) - 1)) as u32);
        }
        node
    }

    /// The node of this thread's open instance `guid`, if it is published.
    pub fn find(&self, guid: u64) -> Option<u32> {
        let seq = guid & GUID_SEQ_MASK;
        for w in self.words.iter() {
            let e = w.load(Ordering::Acquire);
            if e == 0 {
                return None;
            }
            if e >> OPEN_NODE_BITS == seq {
                return Some((e & ((1 << OPEN_NODE_BITS) - 1)) as u32);
            }
        }
        None
    }
}

/// Entries found by index without a lock: pages of [`PAGE_SLOTS`].
const PAGE_SLOTS: usize = 1024;
/// Pages of [`PAGE_SLOTS`]: a million threads (later ones are registered but not
/// found by index: their instances are no explicit parents).
const PAGES: usize = 1024;

/// Leaked, never freed entries by thread index (1-based), read without a lock;
/// only one writer at a time adds (the registry, under its lock).
pub struct ByIndex<T: 'static> {
    pages: Box<[AtomicPtr<[AtomicPtr<T>; PAGE_SLOTS]>]>,
}

impl<T: 'static> Default for ByIndex<T> {
    fn default() -> Self {
        ByIndex {
            pages: (0..PAGES)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }
}

impl<T: 'static> ByIndex<T> {
    /// Sets entry `index` (callers hold the one lock that adds entries).
    pub fn set(&self, index: u32, entry: &'static T) {
        let i = index as usize;
        let Some(page) = self.pages.get(i / PAGE_SLOTS) else {
            return;
        };
        if page.load(Ordering::Acquire).is_null() {
            let fresh: Box<[AtomicPtr<T>; PAGE_SLOTS]> =
                Box::new(std::array::from_fn(
                    |_| AtomicPtr::new(std::ptr::null_mut()),
                ));
            page.store(Box::into_raw(fresh), Ordering::Release);
        }
        // SAFETY: pages are leaked once set and never freed.
        let p = unsafe { &*page.load(Ordering::Acquire) };
        p[i % PAGE_SLOTS].store(entry as *const T as *mut T, Ordering::Release);
    }

    /// Entry `index`, without a lock.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&'static T> {
        let i = index as usize;
        let page = self.pages.get(i / PAGE_SLOTS)?.load(Ordering::Acquire);
        // SAFETY: pages and entries are leaked once published and never freed.
        unsafe {
            page.as_ref()?[i % PAGE_SLOTS]
                .load(Ordering::Acquire)
                .as_ref()
        }
    }
}

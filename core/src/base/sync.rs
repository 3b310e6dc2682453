//! The atomics, cells, fences, locks and queues the runtime's concurrent protocols
//! use: the standard library's (and crossbeam's queue) in every build, loom's under
//! `cfg(loom)`, where the models in `core/tests/loom_*.rs` run the same code through
//! every interleaving the C++ memory model allows (docs/concurrency-models.md).
//!
//! Only the types re-exported here switch; a module that is no part of a modelled
//! protocol keeps `std::sync::atomic` directly. Nothing here costs anything in the
//! normal build: re-exports, and `#[inline(always)]` wrappers that compile to the
//! call or the constant they wrap.

#[cfg(not(loom))]
pub use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
#[cfg(not(loom))]
pub use std::sync::Mutex;

#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
#[cfg(loom)]
pub use loom::sync::Mutex;

pub use std::sync::atomic::Ordering;

/// A cell written without a lock under a protocol that keeps readers and the
/// writer apart; accessed through `with`/`with_mut` (loom's interface, so that
/// under `cfg(loom)` every access is checked against the protocol's
/// happens-before order, and a race is a model failure).
#[cfg(not(loom))]
#[repr(transparent)]
pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// A cell holding `v`.
    pub const fn new(v: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }

    /// The same cells, seen through this interface.
    #[inline(always)]
    pub fn from_std(cells: &[std::cell::UnsafeCell<T>]) -> &[UnsafeCell<T>] {
        // SAFETY: UnsafeCell is `repr(transparent)` over std's: same layout, and
        // the borrow keeps the slice's lifetime.
        unsafe { std::slice::from_raw_parts(cells.as_ptr().cast(), cells.len()) }
    }

    /// Runs `f` on a pointer to read the value through.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` on a pointer to write the value through.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub use loom::cell::UnsafeCell;

/// A bounded lock-free queue: crossbeam's `ArrayQueue` (its `push` happens before
/// the `pop` that returns the item). Under `cfg(loom)`, a mutex-guarded queue with
/// the same interface and the same happens-before contract: the models check
/// kprof's protocols on top of the queue, not crossbeam's own atomics (which
/// loom cannot see).
#[cfg(not(loom))]
pub use crossbeam_queue::ArrayQueue;

#[cfg(loom)]
pub use model_queue::ArrayQueue;

#[cfg(loom)]
mod model_queue {
    use std::collections::VecDeque;

    /// A bounded queue over loom's mutex (see [`super::ArrayQueue`]).
    pub struct ArrayQueue<T> {
        items: loom::sync::Mutex<VecDeque<T>>,
        cap: usize,
    }

    impl<T> ArrayQueue<T> {
        /// An empty queue of `cap` items.
        pub fn new(cap: usize) -> ArrayQueue<T> {
            ArrayQueue {
                items: loom::sync::Mutex::new(VecDeque::new()),
                cap,
            }
        }

        /// Appends `v`, or gives it back when full.
        pub fn push(&self, v: T) -> Result<(), T> {
            let mut q = self.items.lock().unwrap_or_else(|p| p.into_inner());
            if q.len() >= self.cap {
                return Err(v);
            }
            q.push_back(v);
            Ok(())
        }

        /// The oldest item.
        pub fn pop(&self) -> Option<T> {
            self.items
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
        }

        /// Items queued now.
        pub fn len(&self) -> usize {
            self.items.lock().unwrap_or_else(|p| p.into_inner()).len()
        }

        /// Whether nothing is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }
}

/// The busy wait of a thread that waits for another (a start, an event in
/// progress): the CPU's spin hint. Under `cfg(loom)`, a yield to the other threads
/// (loom explores a loop without one forever).
#[inline(always)]
pub fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// A short sleep of a thread that waits for another; under `cfg(loom)`, a yield.
#[inline]
pub fn nap(d: std::time::Duration) {
    #[cfg(not(loom))]
    std::thread::sleep(d);
    #[cfg(loom)]
    {
        let _ = d;
        loom::thread::yield_now();
    }
}

/// The orderings of the protocols' synchronizing accesses, each named for the site
/// that needs it. In the normal build each is a constant. Under `cfg(loom)` a
/// model may weaken one site to `Relaxed` (`weaken`, only in that build) to show that the model
/// then fails: that it checks the order the site is there for.
pub mod order {
    use super::Ordering;

    /// A release or acquire access that a model can weaken.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Site {
        /// A chunk's owner publishes its complete records (Release).
        ChunkPublish,
        /// A thread leaves its event (Release on the busy flag).
        BusyLeave,
        /// A thread entering an event orders its busy flag before its look at
        /// whether the runtime records (the light half of the asymmetric barrier).
        BusyEnter,
        /// The starting thread says the runtime is complete (Release on the phase).
        Started,
    }

    /// `ordering` at `site` (a constant in the normal build).
    #[cfg(not(loom))]
    #[inline(always)]
    pub const fn at(_site: Site, ordering: Ordering) -> Ordering {
        ordering
    }

    /// Whether `site` keeps its order (always, in the normal build).
    #[cfg(not(loom))]
    #[inline(always)]
    pub const fn kept(_site: Site) -> bool {
        true
    }

    #[cfg(loom)]
    std::thread_local! {
        static WEAK: std::cell::Cell<Option<Site>> = const { std::cell::Cell::new(None) };
    }

    /// `ordering` at `site`, `Relaxed` while a model weakens it.
    #[cfg(loom)]
    pub fn at(site: Site, ordering: Ordering) -> Ordering {
        if kept(site) {
            ordering
        } else {
            Ordering::Relaxed
        }
    }

    /// Whether `site` keeps its order (false while a model weakens it).
    #[cfg(loom)]
    pub fn kept(site: Site) -> bool {
        WEAK.with(|w| w.get()) != Some(site)
    }

    /// Weakens `site` on the calling thread (loom runs a model's threads on the
    /// thread that checks it) until the guard is dropped.
    #[cfg(loom)]
    pub fn weaken(site: Site) -> Weakened {
        WEAK.with(|w| w.set(Some(site)));
        Weakened
    }

    /// Restores the weakened site when dropped.
    #[cfg(loom)]
    pub struct Weakened;

    #[cfg(loom)]
    impl Drop for Weakened {
        fn drop(&mut self) {
            WEAK.with(|w| w.set(None));
        }
    }
}

/// Declares statics of the protocols' types: plain statics in the normal build;
/// under `cfg(loom)`, loom's lazily made statics (loom's atomics are made at run
/// time, per explored execution).
macro_rules! protocol_statics {
    ($($(#[$m:meta])* pub(crate) static $n:ident: $t:ty = $e:expr;)*) => {$(
        #[cfg(not(loom))]
        $(#[$m])* pub(crate) static $n: $t = $e;
        #[cfg(loom)]
        ::loom::lazy_static! { $(#[$m])* pub(crate) static ref $n: $t = $e; }
    )*};
}
pub(crate) use protocol_statics;

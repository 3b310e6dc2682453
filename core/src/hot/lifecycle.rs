//! The life cycle of the one runtime as a protocol of two words: the phase, and
//! the pointer the hot path checks (non-null exactly while recording). The first
//! caller on any thread starts the runtime while every other caller waits for it;
//! the first of several racing shutdowns ends it. Generic over what runs, so the
//! models in `core/tests/loom_*.rs` run this very code (docs/concurrency-models.md).

use crate::base::sync::order::{self, Site};
use crate::base::sync::{spin_hint, AtomicPtr, AtomicU8, Ordering};

/// Life cycle of the runtime.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No plugin attached yet.
    NotStarted = 0,
    /// Recording.
    Running = 1,
    /// Shutdown requested; the writer is flushing.
    Finalizing = 2,
    /// Output written (or given up on).
    Done = 3,
    /// `KPROF_ENABLE=0`, a forked child with `KPROF_FORK=0`, or a writer that could
    /// not start: nothing is recorded.
    Disabled = 4,
    /// One caller is starting the runtime; every other caller waits for it.
    Starting = 5,
    /// A forked child of a recording process: the runtime starts anew (fresh
    /// buffers, threads and writer) at the child's first event.
    Forked = 6,
}

impl Phase {
    fn from_u8(p: u8) -> Phase {
        match p {
            0 => Phase::NotStarted,
            1 => Phase::Running,
            2 => Phase::Finalizing,
            3 => Phase::Done,
            5 => Phase::Starting,
            6 => Phase::Forked,
            _ => Phase::Disabled,
        }
    }
}

/// What a caller of [`Lifecycle::stop`] is to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// This caller stopped the recording: it has the output written.
    Mine,
    /// Another caller stopped it: wait for the same output.
    Other,
    /// Not recording (never started, disabled, done, or a child that never
    /// recorded): nothing to do.
    NotRunning,
}

/// The phase and the recording runtime (`T`), as one protocol.
pub struct Lifecycle<T: 'static> {
    phase: AtomicU8,
    /// Non-null exactly while recording: the hot path's one check. Only ever
    /// null or a `&'static T`.
    active: AtomicPtr<T>,
}

impl<T: 'static> Lifecycle<T> {
    /// Not started.
    #[cfg(not(loom))]
    pub const fn new() -> Lifecycle<T> {
        Lifecycle {
            phase: AtomicU8::new(Phase::NotStarted as u8),
            active: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Not started.
    #[cfg(loom)]
    pub fn new() -> Lifecycle<T> {
        Lifecycle {
            phase: AtomicU8::new(Phase::NotStarted as u8),
            active: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The runtime while it records. Relaxed: a thread that finds it here was
    /// started after its start completed (it waited in [`Lifecycle::start_once`]),
    /// or reads it through a start it already synchronized with.
    #[inline(always)]
    pub fn active(&self) -> Option<&'static T> {
        let p = self.active.load(Ordering::Relaxed);
        // SAFETY: `active` only ever holds null or a `&'static T` (stored by
        // start_once from what the start returned).
        unsafe { p.as_ref() }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// Sets the phase (the end of a shutdown; a forked child's fresh state).
    pub fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Release);
    }

    /// Stops the hot path from recording, without a phase change (a forked
    /// child, on its only thread).
    pub fn deactivate(&self) {
        self.active.store(std::ptr::null_mut(), Ordering::Release);
    }

    /// Starts the runtime if nobody has: exactly one caller runs `start` (which
    /// returns the runtime, or `None` when it does not record), and every caller
    /// returns only once the start is complete (recording, or disabled).
    pub fn start_once(&self, start: impl FnOnce() -> Option<&'static T>) {
        // A failed exchange goes on from the phase it found (the newest), not
        // from a new load, which may still return the old one.
        let mut now = self.phase.load(Ordering::Acquire);
        loop {
            if now == Phase::NotStarted as u8 || now == Phase::Forked as u8 {
                match self.phase.compare_exchange(
                    now,
                    Phase::Starting as u8,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(found) => now = found,
                }
            } else {
                if now == Phase::Starting as u8 {
                    self.wait_started();
                }
                return;
            }
        }
        match start() {
            Some(rt) => {
                self.active
                    .store(rt as *const T as *mut T, Ordering::Release);
                // Every waiter reads the runtime after this.
                self.phase.store(
                    Phase::Running as u8,
                    order::at(Site::Started, Ordering::Release),
                );
            }
            None => self.phase.store(Phase::Disabled as u8, Ordering::Release),
        }
    }

    /// Waits while another thread starts the runtime (a few milliseconds).
    pub fn wait_started(&self) {
        let mut spins = 0u32;
        while self.phase.load(Ordering::Acquire) == Phase::Starting as u8 {
            spins += 1;
            if spins < 64 {
                spin_hint();
            } else {
                // nanosleep is async-signal-safe (shutdown may come from a handler).
                crate::base::sync::nap(std::time::Duration::from_micros(50));
            }
        }
    }

    /// Stops the recording, once: the first of racing callers (a plugin's
    /// finalize, the exit handler, a signal) gets [`Stop::Mine`]; the hot path
    /// records nothing from then on. A stop racing the start (a worker's `exit()`
    /// while main starts kprof) waits for the start to complete.
    pub fn stop(&self) -> Stop {
        self.wait_started();
        match self.phase.compare_exchange(
            Phase::Running as u8,
            Phase::Finalizing as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.active.store(std::ptr::null_mut(), Ordering::Release);
                Stop::Mine
            }
            Err(p) if p == Phase::Finalizing as u8 => Stop::Other,
            Err(_) => Stop::NotRunning,
        }
    }
}

impl<T: 'static> Default for Lifecycle<T> {
    fn default() -> Self {
        Lifecycle::new()
    }
}

//! Whether a GPU plugin measures: started (callbacks and activities on), and
//! not yet past the core's final flush, after which nothing more is delivered.

use std::sync::atomic::{AtomicBool, Ordering};

/// A plugin's two flags, read on every vendor callback (two loads, no lock).
#[derive(Debug, Default)]
pub struct Lifecycle {
    active: AtomicBool,
    done: AtomicBool,
}

impl Lifecycle {
    /// Not started.
    pub const fn new() -> Self {
        Self {
            active: AtomicBool::new(false),
            done: AtomicBool::new(false),
        }
    }

    /// Callbacks and activities are on from now (`false`: off again, a start
    /// that failed half-way).
    pub fn set_active(&self, on: bool) {
        self.active.store(on, Ordering::Release);
    }

    /// The final flush happened: nothing more is delivered.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Whether the final flush happened.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Started and not finished.
    #[inline(always)]
    pub fn measuring(&self) -> bool {
        self.active.load(Ordering::Acquire) && !self.is_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_from_start_to_finish_only() {
        let l = Lifecycle::new();
        assert!(!l.measuring() && !l.is_done());
        l.set_active(true);
        assert!(l.measuring());
        l.finish();
        assert!(!l.measuring() && l.is_done());
        let l = Lifecycle::new();
        l.set_active(true);
        l.set_active(false);
        assert!(!l.measuring());
    }
}

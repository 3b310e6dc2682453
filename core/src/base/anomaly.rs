//! Counters of anomalies: misuse of a tool interface by the host, or faults inside
//! kprof, counted and reported instead of being fatal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kprof_abi::Anomaly;

/// One counter per [`Anomaly`].
#[derive(Default)]
pub struct Anomalies {
    counts: [AtomicU64; Anomaly::ALL.len()],
    /// What the first few noted anomalies were, in words ([`Anomalies::note`]).
    notes: Mutex<Vec<String>>,
}

/// Notes kept at most ([`Anomalies::note`]): the first ones say what went
/// wrong; the counts say how often.
pub const MAX_NOTES: usize = 16;

impl Anomalies {
    /// Counts one occurrence (rare paths only: this is an atomic add).
    pub fn count(&self, a: Anomaly) {
        self.add(a, 1);
    }

    /// Counts `n` occurrences.
    pub fn add(&self, a: Anomaly, n: u64) {
        self.counts[a as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one occurrence of `a` and keeps `text` (made only when kept) as
    /// one of the first [`MAX_NOTES`] notes that say what happened.
    pub fn note(&self, a: Anomaly, text: impl FnOnce() -> String) {
        self.count(a);
        let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        if notes.len() < MAX_NOTES {
            notes.push(text());
        }
    }

    /// The notes kept, in the order they came.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }

    /// The current count of `a`.
    pub fn get(&self, a: Anomaly) -> u64 {
        self.counts[a as usize].load(Ordering::Relaxed)
    }

    /// Every anomaly with its count.
    pub fn snapshot(&self) -> Vec<(Anomaly, u64)> {
        Anomaly::ALL.iter().map(|&a| (a, self.get(a))).collect()
    }
}

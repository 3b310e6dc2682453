//! Counters of anomalies: misuse of a tool interface by the host, or faults inside
//! kprof, counted and reported instead of being fatal.

use std::sync::atomic::{AtomicU64, Ordering};

use kprof_abi::Anomaly;

/// One counter per [`Anomaly`].
#[derive(Default)]
pub struct Anomalies {
    counts: [AtomicU64; Anomaly::ALL.len()],
}

impl Anomalies {
    /// Counts one occurrence (rare paths only: this is an atomic add).
    pub fn count(&self, a: Anomaly) {
        self.add(a, 1);
    }

    /// Counts `n` occurrences.
    pub fn add(&self, a: Anomaly, n: u64) {
        self.counts[a as usize].fetch_add(n, Ordering::Relaxed);
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

//! How long each device was busy: the union of its activities' intervals (streams
//! overlap), from activities that arrive in any order (a vendor delivers buffers
//! late, and rocprofiler-sdk's dispatch records in any order).
//!
//! The latest [`WINDOW`] disjoint intervals are kept, merged as activities arrive
//! (one that starts after all of them, the usual order, is one push); past that the
//! earliest are sealed into a total. An activity that arrives after
//! intervals later than it were sealed counts only where it ends after them: exact
//! for reorderings within the window, never counting time twice.

use std::collections::VecDeque;

use crate::hot::clock::Clock;

/// Disjoint intervals kept open to merging.
pub const WINDOW: usize = 4096;

/// One device's activities and the time it was busy.
#[derive(Debug, Default, Clone)]
pub struct DeviceBusy {
    /// Activities.
    pub activities: u64,
    /// Busy time of the intervals sealed so far.
    sealed_ns: u64,
    /// Raw end of the last sealed interval.
    sealed_until: u64,
    /// The open intervals (raw start, raw end, busy ns), disjoint, by start: an
    /// activity after all of them (the usual order) is one push at the back.
    open: VecDeque<(u64, u64, u64)>,
}

impl DeviceBusy {
    /// Adds an activity from raw `begin` to `end`, `dur_ns` long (exact: an
    /// interval that overlaps no other keeps its own duration).
    pub fn add(&mut self, clock: &Clock, begin: u64, end: u64, dur_ns: u64) {
        self.activities += 1;
        let (mut begin, mut ns) = (begin, dur_ns);
        if begin < self.sealed_until {
            if end <= self.sealed_until {
                return;
            }
            begin = self.sealed_until;
            ns = clock.delta_ns(begin, end);
        }
        match self.open.back() {
            Some(&(_, e, _)) if begin < e => self.merge_in(clock, begin, end, ns),
            _ => self.open.push_back((begin, end, ns)),
        }
        while self.open.len() > WINDOW {
            if let Some((_, e, n)) = self.open.pop_front() {
                self.sealed_ns += n;
                self.sealed_until = self.sealed_until.max(e);
            }
        }
    }

    /// Inserts [begin, end) among the open intervals, joining those it overlaps.
    #[cold]
    fn merge_in(&mut self, clock: &Clock, mut begin: u64, mut end: u64, mut ns: u64) {
        // The first interval that ends after `begin`, then every one that starts
        // before `end`: the ones it overlaps.
        let from = self.open.partition_point(|&(_, e, _)| e <= begin);
        let to = from
            + self
                .open
                .range(from..)
                .take_while(|&&(s, _, _)| s < end)
                .count();
        if to > from {
            for (s, e, _) in self.open.drain(from..to) {
                begin = begin.min(s);
                end = end.max(e);
            }
            ns = clock.delta_ns(begin, end);
        }
        self.open.insert(from, (begin, end, ns));
    }

    /// Time with at least one activity running, in ns.
    pub fn busy_ns(&self) -> u64 {
        self.sealed_ns + self.open.iter().map(|&(_, _, n)| n).sum::<u64>()
    }

    /// Adds another thread's account of the same device: its open intervals
    /// merge with these; its sealed time adds.
    pub fn merge(&mut self, clock: &Clock, o: &DeviceBusy) {
        if o.activities == 0 {
            return;
        }
        let activities = self.activities;
        for &(s, e, n) in &o.open {
            self.add(clock, s, e, n);
        }
        self.sealed_ns += o.sealed_ns;
        self.sealed_until = self.sealed_until.max(o.sealed_until);
        self.activities = activities + o.activities;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw ticks of `ns` after the clock's base (the conversion both ways).
    fn at(c: &Clock, base: u64, ns: u64) -> u64 {
        c.from_ns(c.to_ns(base) + ns)
    }

    #[test]
    fn union_of_intervals_in_any_order() {
        let c = Clock::new();
        let base = c.now();
        let mut d = DeviceBusy::default();
        // [0, 100] [50, 150] [300, 400] [140, 200] [90, 95], out of order: busy
        // 200 + 100.
        for (b, e) in [(300, 400), (0, 100), (140, 200), (50, 150), (90, 95)] {
            d.add(&c, at(&c, base, b), at(&c, base, e), e - b);
        }
        assert_eq!(d.activities, 5);
        assert!(d.busy_ns().abs_diff(300) <= 2, "{}", d.busy_ns());
        // Disjoint ones (back to back too) keep their exact durations.
        let mut d = DeviceBusy::default();
        for (b, e) in [(500, 507), (0, 3), (100, 111), (111, 112)] {
            d.add(&c, at(&c, base, b), at(&c, base, e), e - b);
        }
        assert_eq!(d.busy_ns(), 22);
    }

    #[test]
    fn sealed_intervals_are_never_counted_twice() {
        let c = Clock::new();
        let base = c.now();
        let mut d = DeviceBusy::default();
        for i in 0..(WINDOW as u64 + 10) {
            let b = 1000 * i;
            d.add(&c, at(&c, base, b), at(&c, base, b + 10), 10);
        }
        let before = d.busy_ns();
        assert_eq!(before, 10 * (WINDOW as u64 + 10));
        // Late, inside the sealed part: nothing new.
        d.add(&c, at(&c, base, 2), at(&c, base, 8), 6);
        assert_eq!(d.busy_ns(), before);
        // Two accounts of one device merge as one union.
        let mut other = DeviceBusy::default();
        let b = 1000 * (WINDOW as u64 + 9);
        other.add(&c, at(&c, base, b + 5), at(&c, base, b + 15), 10);
        d.merge(&c, &other);
        assert!(d.busy_ns().abs_diff(before + 5) <= 2, "{}", d.busy_ns());
        assert_eq!(d.activities, WINDOW as u64 + 12);
    }
}

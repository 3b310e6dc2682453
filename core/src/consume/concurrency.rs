//! The concurrency view: how many threads are inside which kind of work (kernels,
//! parallel regions, waits, ...) and how many are idle, computed from the events
//! kprof records anyway (no sampling of the application's threads).
//!
//! A thread is in the [`Category`] of its innermost open instance's [`Kind`](kprof_abi::Kind), and
//! idle while it is inside no instance. Two views:
//!
//! - the profile's `concurrency` section ([`tally`], [`section`]), with or without
//!   a trace: each thread's call-path tree gives its exclusive time per node, summed
//!   by the category of the node's kind; the thread's observed span (first begin to
//!   last end, [`ThreadProfile::first_ts`], less kprof's own work on it,
//!   [`ThreadProfile::own`]) less that busy time is its idle time.
//!   Shares are of the threads' spans together.
//! - with a trace, the [`Timeline`] consumer follows each thread's stack of open
//!   instances in the writer's nested event stream and produces [`Point`]s: the
//!   number of threads in each category from a time on. The trace writers draw them
//!   as counter tracks ([`crate::consume::trace::TraceWriter::concurrency`]); no
//!   category logic lives in the writers. Points are made only on changes, and the
//!   changes within [`COALESCE_NS`] of a point are folded into it, so a trace of a
//!   million tiny instances does not get a million counter values per category.

pub use crate::base::category::{Category, CATEGORIES};
use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::aggregate::series::{Grid, BUCKETS};
use crate::hot::aggregate::tree::ROOT;
use crate::hot::clock::Clock;
use crate::hot::nesting::{Consumer, Event, Global};
use crate::output::report;

/// Changes closer than this to the last point are folded into it (ns).
pub const COALESCE_NS: u64 = 1_000;

/// One thread's time by category (idle included) over its observed span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTimes {
    /// kprof's thread index.
    pub index: u32,
    /// From its first begin to its last end, less kprof's own work on the
    /// thread, in ns.
    pub span_ns: u64,
    /// Time per category, by [`Category`] index; they add up to `span_ns`.
    pub ns: [u64; CATEGORIES],
}

/// The time by category of the thread whose profile is `p` (once every instance
/// is closed, before the merge empties its tree); `None` for a thread that never
/// opened an instance.
pub fn tally(p: &ThreadProfile, clock: &Clock) -> Option<ThreadTimes> {
    if p.first_ts == 0 {
        return None;
    }
    let mut ns = [0u64; CATEGORIES];
    // Anchors and the root have no instances: their self time is 0.
    for (i, n) in p.tree.nodes.iter().enumerate() {
        if i == ROOT as usize {
            continue;
        }
        if let Some(c) = Category::of(n.kind) {
            ns[c as usize] = ns[c as usize].saturating_add(n.stats.self_ns);
        }
    }
    let busy: u64 = ns.iter().sum();
    // kprof's own work on the thread is in no instance's time: it is not the
    // program's, busy or idle. Conversions round each duration on its own:
    // never below the busy time.
    let span_ns = clock
        .delta_ns(p.first_ts, p.last_ts)
        .saturating_sub(p.own_ns())
        .max(busy);
    ns[Category::Idle as usize] = span_ns - busy;
    Some(ThreadTimes {
        index: p.index(),
        span_ns,
        ns,
    })
}

/// The tally of every thread in `threads` that opened an instance.
pub fn tally_all(threads: &[&mut ThreadProfile], clock: &Clock) -> Vec<ThreadTimes> {
    let mut all: Vec<ThreadTimes> = threads.iter().filter_map(|p| tally(p, clock)).collect();
    all.sort_by_key(|t| t.index);
    all
}

/// The threads' time per category over the run, summed bucket by bucket
/// (each thread's own series, [`crate::hot::aggregate::series::ThreadSeries`],
/// kept by the same moves between categories as [`tally`] adds up): the grid of
/// the widest thread's series, and its ticks per bucket and category.
pub fn series(threads: &[&mut ThreadProfile]) -> (Grid, Vec<[u64; CATEGORIES]>) {
    let grid = threads
        .iter()
        .map(|p| p.series.grid())
        .max_by_key(|g| g.shift);
    let Some(grid) = grid else {
        return (
            Grid {
                origin: 0,
                shift: 0,
            },
            Vec::new(),
        );
    };
    let mut sum = vec![[0u64; CATEGORIES]; BUCKETS];
    for p in threads {
        p.series.add_to(grid, &mut sum);
    }
    (grid, sum)
}

fn shares(ns: &[u64; CATEGORIES], of: u64) -> Vec<report::CategoryTime> {
    Category::ALL
        .iter()
        .map(|&c| report::CategoryTime {
            category: c.as_str().into(),
            ns: ns[c as usize],
            pct: if of == 0 {
                0.0
            } else {
                100.0 * ns[c as usize] as f64 / of as f64
            },
        })
        .collect()
}

/// The profile's `concurrency` section from the threads' tallies (`names`: the
/// report's threads, for their names); `None` when no thread opened an instance.
pub fn section(
    times: &[ThreadTimes],
    names: &[report::ThreadInfo],
    wall_ns: u64,
) -> Option<report::Concurrency> {
    if times.is_empty() {
        return None;
    }
    let mut total = [0u64; CATEGORIES];
    for t in times {
        for (a, b) in total.iter_mut().zip(t.ns) {
            *a = a.saturating_add(b);
        }
    }
    let thread_ns = times.iter().map(|t| t.span_ns).sum();
    Some(report::Concurrency {
        threads: times.len() as u32,
        wall_ns,
        thread_ns,
        categories: shares(&total, thread_ns),
        per_thread: times
            .iter()
            .map(|t| report::ThreadConcurrency {
                index: t.index,
                name: names
                    .iter()
                    .find(|n| n.index == t.index)
                    .map(|n| n.name.clone())
                    .unwrap_or_default(),
                span_ns: t.span_ns,
                categories: shares(&t.ns, t.span_ns),
            })
            .collect(),
    })
}

/// The number of threads in each category from raw time `ts` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Raw time.
    pub ts: u64,
    /// Threads per category, by [`Category`] index.
    pub counts: [u32; CATEGORIES],
}

/// Follows each thread's innermost category through the nested event stream and
/// makes a [`Point`] whenever the counts change (coalesced within
/// [`COALESCE_NS`]). Threads count from their first event on.
pub struct Timeline {
    clock: &'static Clock,
    /// Per thread index: its stack of open instances' categories (`None`: not
    /// seen yet).
    stacks: Vec<Option<Vec<Category>>>,
    counts: [u32; CATEGORIES],
    /// Raw time of the first change not yet written out (the point it will make).
    window: Option<u64>,
    /// The counts of the last point made.
    last: [u32; CATEGORIES],
    /// The latest change's time: points never go back in time.
    latest: u64,
    /// A point made and not taken yet.
    ready: Option<Point>,
}

impl Timeline {
    /// A timeline measuring coalescing windows with `clock`.
    pub fn new(clock: &'static Clock) -> Timeline {
        Timeline {
            clock,
            stacks: Vec::new(),
            counts: [0; CATEGORIES],
            window: None,
            last: [0; CATEGORIES],
            latest: 0,
            ready: None,
        }
    }

    /// The point made by the last event, if any (each event makes at most one).
    pub fn take(&mut self) -> Option<Point> {
        self.ready.take()
    }

    /// Ends the pending window (the end of a round, or of the run): the point of
    /// the latest changes, if they changed anything.
    pub fn flush(&mut self) -> Option<Point> {
        if let Some(w) = self.window.take() {
            self.emit(w);
        }
        self.ready.take()
    }

    fn stack(&mut self, thread: u32) -> (&mut Vec<Category>, bool) {
        let i = thread as usize;
        if self.stacks.len() <= i {
            self.stacks.resize_with(i + 1, || None);
        }
        let new = self.stacks[i].is_none();
        (self.stacks[i].get_or_insert_with(Vec::new), new)
    }

    fn emit(&mut self, at: u64) {
        if self.counts != self.last {
            self.last = self.counts;
            self.ready = Some(Point {
                ts: at,
                counts: self.counts,
            });
        }
    }

    /// A thread moves from `from` (`None`: first seen) to `to` at raw time `ts`.
    fn change(&mut self, ts: u64, from: Option<Category>, to: Category) {
        if from == Some(to) {
            return;
        }
        let ts = ts.max(self.latest);
        self.latest = ts;
        match self.window {
            Some(w) if self.clock.delta_ns(w, ts) < COALESCE_NS => {}
            Some(w) => {
                self.emit(w);
                self.window = Some(ts);
            }
            None => self.window = Some(ts),
        }
        if let Some(f) = from {
            self.counts[f as usize] = self.counts[f as usize].saturating_sub(1);
        }
        self.counts[to as usize] += 1;
    }
}

impl Consumer for Timeline {
    fn event(&mut self, ev: &Event<'_>) {
        match *ev {
            Event::Begin(s) => {
                let (stack, new) = self.stack(s.thread);
                let from = stack.last().copied().unwrap_or(Category::Idle);
                let to = Category::of(s.kind).unwrap_or(from);
                stack.push(to);
                self.change(s.begin, (!new).then_some(from), to);
            }
            Event::End(s, end) => {
                let (stack, new) = self.stack(s.thread);
                let from = stack.pop().unwrap_or(Category::Idle);
                let to = stack.last().copied().unwrap_or(Category::Idle);
                self.change(end, (!new).then_some(from), to);
            }
            Event::Instant { thread, ts, .. } => {
                // A thread known only by instants is idle from then on.
                if let (_, true) = self.stack(thread) {
                    self.change(ts, None, Category::Idle);
                }
            }
            Event::Edge { .. } | Event::Activity(_) | Event::Site { .. } => {}
        }
    }

    fn global(&mut self, _ts: u64, _ev: &Global) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use kprof_abi::Kind;

    #[test]
    fn every_host_kind_has_a_category() {
        for k in Kind::ALL {
            assert_eq!(Category::of(k).is_none(), k.is_device_activity(), "{k:?}");
        }
        assert_eq!(Category::of(Kind::OmpSyncWait), Some(Category::Wait));
        assert_eq!(Category::of(Kind::ParallelFor), Some(Category::Kernel));
        assert_eq!(
            Category::of(Kind::OmpImplicitTask),
            Some(Category::Parallel)
        );
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
    }

    #[test]
    fn section_shares_are_of_the_threads_spans() {
        let mut a = [0; CATEGORIES];
        a[Category::Wait as usize] = 60;
        a[Category::Parallel as usize] = 30;
        a[Category::Idle as usize] = 10;
        let mut b = [0; CATEGORIES];
        b[Category::Parallel as usize] = 100;
        let times = [
            ThreadTimes {
                index: 1,
                span_ns: 100,
                ns: a,
            },
            ThreadTimes {
                index: 2,
                span_ns: 100,
                ns: b,
            },
        ];
        let s = section(&times, &[], 120).unwrap();
        assert_eq!((s.threads, s.thread_ns, s.wall_ns), (2, 200, 120));
        let get = |c: &str| s.categories.iter().find(|x| x.category == c).unwrap();
        assert_eq!((get("wait").ns, get("wait").pct), (60, 30.0));
        assert_eq!((get("parallel").ns, get("parallel").pct), (130, 65.0));
        assert_eq!(get("idle").pct, 5.0);
        assert_eq!(
            s.per_thread[0].categories[Category::Wait as usize].pct,
            60.0
        );
        assert!(section(&[], &[], 1).is_none());
    }

    fn slice(thread: u32, kind: Kind, begin: u64) -> crate::hot::nesting::Slice {
        crate::hot::nesting::Slice::plain(thread, 0, kind, 0, begin)
    }

    fn counts(pairs: &[(Category, u32)]) -> [u32; CATEGORIES] {
        let mut c = [0; CATEGORIES];
        for &(k, n) in pairs {
            c[k as usize] = n;
        }
        c
    }

    /// Innermost categories through nesting, points only on changes, and the
    /// changes within a microsecond of a point folded into it.
    #[test]
    fn timeline_follows_the_innermost_instance_and_coalesces() {
        let clock: &'static Clock = Box::leak(Box::new(Clock::new()));
        let t0 = crate::hot::clock::monotonic_ns();
        let at = |us_x10: u64| clock.from_ns(t0 + us_x10 * 100);
        let mut tl = Timeline::new(clock);
        let mut points = Vec::new();
        let mut feed = |tl: &mut Timeline, ev: Event<'_>| {
            tl.event(&ev);
            points.extend(tl.take());
        };
        let region = slice(1, Kind::OmpImplicitTask, at(0));
        let barrier = slice(1, Kind::OmpBarrier, at(100));
        let wait = slice(1, Kind::OmpSyncWait, at(102));
        let other = slice(2, Kind::ParallelFor, at(200));
        feed(&mut tl, Event::Begin(&region)); // 1: parallel at 0
        feed(&mut tl, Event::Begin(&barrier)); // 1: wait at 10 us
        feed(&mut tl, Event::Begin(&wait)); // 1: still wait (no change)
        feed(&mut tl, Event::Begin(&other)); // 2: kernel at 20 us
        feed(&mut tl, Event::End(&other, at(203))); // 2: idle 0.3 us later: folded
        feed(&mut tl, Event::End(&wait, at(300)));
        feed(&mut tl, Event::End(&barrier, at(300)));
        feed(&mut tl, Event::End(&region, at(400))); // 1: idle at 40 us
        points.extend(tl.flush());
        assert!(tl.flush().is_none());
        let got: Vec<(u64, [u32; CATEGORIES])> = points
            .iter()
            .map(|p| ((clock.delta_ns(at(0), p.ts) + 50) / 100, p.counts))
            .collect();
        use Category::*;
        assert_eq!(
            got,
            vec![
                (0, counts(&[(Parallel, 1)])),
                (100, counts(&[(Wait, 1)])),
                // Thread 2 appears, kernel for 0.3 us: the point holds it idle.
                (200, counts(&[(Wait, 1), (Idle, 1)])),
                (300, counts(&[(Parallel, 1), (Idle, 1)])),
                (400, counts(&[(Idle, 2)])),
            ]
        );
    }
}

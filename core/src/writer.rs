//! The background writer thread: takes full chunks from the pool, resolves each
//! thread's records in order, feeds the consumers, and at shutdown writes every
//! output. Application threads never wait for it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kprof_abi::guard::guard;
use rustc_hash::FxHashMap;

use crate::buffer::Chunk;
use crate::config::Config;
use crate::lifecycle::block_all_signals;
use crate::output;
use crate::profile::Profile;
use crate::resolve::{Consumer, Event, Global, ThreadStream};
use crate::runtime::{self, warn, Runtime};
use crate::trace::{self, TraceWriter};

/// Longest sleep between checks of the pool and the shutdown flag.
const NAP: Duration = Duration::from_millis(16);

/// Starts the writer thread.
pub fn spawn(rt: &'static Runtime) -> std::io::Result<std::thread::Thread> {
    let handle = std::thread::Builder::new()
        .name("kprof-writer".into())
        .spawn(move || {
            block_all_signals();
            guard((), || run(rt));
            rt.mark_done();
        })?;
    Ok(handle.thread().clone())
}

/// The writer works in rounds: every `KPROF_FLUSH_MS` (or when the buffer budget is
/// nearly used up) it processes everything recorded so far. In between it only keeps
/// the free pool stocked, so during a burst the budget is a buffer and the writer
/// stays off the cores the application runs on.
fn run(rt: &'static Runtime) {
    let cfg = runtime::config().clone();
    let mut w = Writer::new(rt, &cfg);
    let period = Duration::from_millis(cfg.flush_ms);
    let mut last_round = Instant::now();
    while !rt.shutdown_requested() {
        w.top_up();
        let pressure = rt.pool.free_len() < w.low_water();
        if pressure || last_round.elapsed() >= period {
            w.drain_full();
            w.peek_all();
            w.sinks.flush();
            last_round = Instant::now();
        }
        let next_round = period.saturating_sub(last_round.elapsed());
        std::thread::park_timeout(next_round.min(NAP));
    }
    w.drain_full();
    w.peek_all();
    w.drain_full();
    w.finish();
}

/// Per-thread writer state.
struct Stream {
    resolver: ThreadStream,
    /// Sequence number of the chunk to consume next (or being consumed).
    expected: u64,
    /// Everything the thread published has been consumed (as of the last peek).
    caught_up: bool,
}

/// Everything that consumes the resolved events: the profile, and the trace writers.
struct Sinks {
    profile: Profile,
    traces: Vec<Box<dyn TraceWriter>>,
}

impl Consumer for Sinks {
    #[inline]
    fn event(&mut self, ev: &Event<'_>) {
        self.profile.event(ev);
        for t in &mut self.traces {
            t.event(ev);
        }
    }

    fn global(&mut self, ts: u64, ev: &Global) {
        self.profile.global(ts, ev);
        for t in &mut self.traces {
            t.global(ts, ev);
        }
    }
}

impl Sinks {
    /// Ends a round: every trace writer writes what it has. A writer that fails
    /// (a full disk) says so once and is dropped; the profile and the program go on.
    fn flush(&mut self) {
        self.traces.retain_mut(|t| match t.flush() {
            Ok(()) => true,
            Err(e) => {
                warn(&format!("{e}; that trace stops here"));
                false
            }
        });
    }
}

struct Writer {
    rt: &'static Runtime,
    streams: FxHashMap<u32, Stream>,
    sinks: Sinks,
    /// The output directory, created at start when traces stream into it.
    dir: Option<std::path::PathBuf>,
    /// Cross-thread events waiting for every thread to pass their time.
    pending: BinaryHeap<Reverse<(u64, u64, Global)>>,
    pending_seq: u64,
}

impl Writer {
    fn new(rt: &'static Runtime, cfg: &Config) -> Writer {
        let dir = if cfg.trace.is_empty() {
            None
        } else {
            output::prepare_dir(rt, cfg)
        };
        let traces = match &dir {
            Some(d) => cfg
                .trace
                .iter()
                .filter_map(|&f| match trace::open(f, d, rt) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        warn(&format!("{e}; no {} trace", f.file_name()));
                        None
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        Writer {
            rt,
            streams: FxHashMap::default(),
            sinks: Sinks {
                profile: Profile::new(rt),
                traces,
            },
            dir,
            pending: BinaryHeap::new(),
            pending_seq: 0,
        }
    }

    fn stream(&mut self, index: u32) -> Option<&mut Stream> {
        if !self.streams.contains_key(&index) {
            // Only registered threads own chunks.
            self.rt
                .threads
                .snapshot()
                .iter()
                .find(|s| s.index == index)?;
            self.streams.insert(
                index,
                Stream {
                    resolver: ThreadStream::new(index),
                    expected: 1,
                    caught_up: false,
                },
            );
        }
        self.streams.get_mut(&index)
    }

    /// Free chunks below which the writer processes now instead of waiting for
    /// its next round.
    fn low_water(&self) -> usize {
        4 + 2 * self.rt.threads.len()
    }

    /// Keeps enough free chunks that threads do not run dry: a few per thread, and
    /// half of what is allocated, so the pool doubles with the demand up to the
    /// budget (allocating a chunk costs far less than processing one).
    fn top_up(&self) {
        let pool = &self.rt.pool;
        let want = (8 + 4 * self.rt.threads.len()).max(pool.allocated() / 2);
        pool.top_up(want);
    }

    /// Consumes every full chunk; returns how many.
    fn drain_full(&mut self) -> usize {
        let mut n = 0;
        self.top_up();
        while let Some(c) = self.rt.pool.next_full() {
            self.top_up();
            self.consume(c);
            if let Some(s) = self.stream(c.owner()) {
                s.expected = c.seq() + 1;
                s.caught_up = false;
            }
            self.rt.pool.recycle(c);
            n += 1;
        }
        n
    }

    /// Consumes the unread records of `c`.
    fn consume(&mut self, c: &'static Chunk) {
        let rt = self.rt;
        if self.stream(c.owner()).is_none() {
            return;
        }
        let Some(s) = self.streams.get_mut(&c.owner()) else {
            return;
        };
        let pending = &mut self.pending;
        let seq = &mut self.pending_seq;
        s.resolver.feed(
            c.take_new(),
            &mut self.sinks,
            &mut |ts, g| {
                *seq += 1;
                pending.push(Reverse((ts, *seq, g)));
            },
            &rt.anomalies,
        );
    }

    /// Reads the chunks threads are still filling, then releases the cross-thread
    /// events every thread has passed.
    fn peek_all(&mut self) {
        let now = self.rt.clock.now();
        for slot in self.rt.threads.snapshot() {
            let Some(expected) = self.stream(slot.index).map(|s| s.expected) else {
                continue;
            };
            let current = slot.current.load(Ordering::Acquire);
            // SAFETY: chunks are leaked and never freed, so a published pointer
            // stays valid; only this thread recycles chunks.
            let chunk = unsafe { current.as_ref() };
            let caught_up = match chunk {
                Some(c) if c.owner() == slot.index && c.seq() == expected => {
                    self.consume(c);
                    true
                }
                Some(_) => false,
                None => slot.exited.load(Ordering::Acquire),
            };
            if let Some(s) = self.streams.get_mut(&slot.index) {
                s.caught_up = caught_up;
            }
        }
        let watermark = self
            .streams
            .values()
            .map(|s| if s.caught_up { now } else { s.resolver.last_ts })
            .min()
            .unwrap_or(now);
        self.release(watermark);
    }

    fn release(&mut self, upto: u64) {
        while let Some(Reverse((ts, _, _))) = self.pending.peek() {
            if *ts > upto {
                break;
            }
            if let Some(Reverse((ts, _, g))) = self.pending.pop() {
                self.sinks.global(ts, &g);
            }
        }
    }

    fn finish(mut self) {
        let rt = self.rt;
        self.release(u64::MAX);
        let end = rt.end();
        let mut records = FxHashMap::default();
        for (&index, s) in self.streams.iter_mut() {
            s.resolver.close_all(end, &mut self.sinks, &rt.anomalies);
            records.insert(index, s.resolver.records);
        }
        let Sinks { profile, traces } = self.sinks;
        let traces: Vec<_> = traces
            .into_iter()
            .filter_map(|t| match t.finish() {
                Ok(path) => Some(path),
                Err(e) => {
                    warn(&e.to_string());
                    None
                }
            })
            .collect();
        let report = profile.report(&records);
        let cfg = runtime::config().clone();
        let dir = self.dir.or_else(|| output::prepare_dir(rt, &cfg));
        output::write_all(&report, &cfg, dir.as_deref(), &traces);
    }
}

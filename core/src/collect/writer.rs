//! The background writer thread: takes the records of every thread, resolves
//! them, feeds the consumers (profile, traces) in timestamp order across threads,
//! and at shutdown writes every output. Application threads never wait for it.
//!
//! Work happens in rounds. A round gathers what each thread recorded since the last
//! one — full chunks from the queue and the published part of the chunks still being
//! filled — then merges the threads by time, so a parent on one thread (an OpenMP
//! parallel region) is always seen before its children on others (the implicit
//! tasks), and cross-thread state (memory in use, sections) evolves in time order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use kprof_abi::guard::guard;
use rustc_hash::FxHashMap;

use crate::base::config::Config;
use crate::base::signals::{block_all_signals, restore_signals};
use crate::collect::resolve::ThreadStream;
use crate::collect::sampler::Sampler;
use crate::collect::symbolize::Symbolizer;
use crate::consume::concurrency::{self, Timeline};
use crate::consume::profile::tree_view::MergedTree;
use crate::consume::profile::{merge, stacks, Profile};
use crate::consume::trace::{self, TraceWriter};
use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::buffer::{self, Chunk};
use crate::hot::clock;
use crate::hot::nesting::{Consumer, Event, Global};
use crate::hot::runtime::{self, warn, Runtime};
use crate::hot::thread::ThreadSlot;
use crate::output;
use crate::output::report::SelfCost;

/// Stack of the writer thread (virtual; pages are touched only if used).
const WRITER_STACK: usize = 64 << 20;

/// Longest sleep between checks of the pool and the shutdown flag.
const NAP: Duration = Duration::from_millis(16);
/// The same when threads aggregate in place: nothing to do but wait.
const IDLE_NAP: Duration = Duration::from_millis(500);
/// How long the shutdown waits for threads still inside an event (descheduled
/// in the middle of one) before it leaves them out.
const QUIESCE_WAIT: Duration = Duration::from_millis(200);

/// How long the start waits for the writer thread to run, when threads are
/// sampled (see [`spawn`]).
const WRITER_START_WAIT: Duration = Duration::from_secs(1);

/// The shortest interval since the previous sample for a last one at the end.
const LAST_SAMPLE_MIN_NS: u64 = 1_000_000;

/// OS thread id of the writer thread (0 before it runs).
static WRITER_TID: AtomicI32 = AtomicI32::new(0);

/// Whether the calling thread is the writer (async-signal-safe: a crash handler
/// asks, and must not wait for itself).
pub fn is_writer_thread() -> bool {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    WRITER_TID.load(Ordering::Acquire) == tid
}

/// Starts the writer thread, with every signal blocked from its first instruction:
/// a signal that arrived before it blocked them itself would run a handler that
/// waits for the writer on the writer.
pub fn spawn(rt: &'static Runtime) -> std::io::Result<std::thread::Thread> {
    let previous = block_all_signals();
    let spawned = std::thread::Builder::new()
        .name("kprof-writer".into())
        // Reports walk the call-path tree recursively; address space is cheap.
        .stack_size(WRITER_STACK)
        .spawn(move || {
            // Never sampled (see stack_samples::scan): claimed before the
            // thread is made known.
            crate::hot::stack_samples::own_thread();
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            WRITER_TID.store(tid, Ordering::Release);
            guard((), || run(rt));
            rt.mark_done();
        });
    restore_signals(&previous);
    let thread = spawned?.thread().clone();
    // The first scan for threads to sample (the first thread's arm) must find
    // the writer claimed: it waits for its first instruction, bounded.
    if crate::hot::stack_samples::hz() > 0 {
        let deadline = Instant::now() + WRITER_START_WAIT;
        while WRITER_TID.load(Ordering::Acquire) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(thread)
}

/// The writer works in rounds, each processing everything recorded so far. With a
/// trace, a round runs every `KPROF_FLUSH_MS`, so the files on disk stay current.
/// A profile alone is only written at exit, so while threads keep filling chunks
/// the records wait in the buffers, until half the budget holds them (or threads
/// are about to run out): a burst of events then never shares the cores with the
/// writer's processing, which costs more per event than recording it. Once threads
/// pause (no chunk taken since the last look), the writer processes the backlog,
/// so the next burst writes into recycled, already-faulted chunks instead of fresh
/// memory. In between rounds the writer only keeps the free pool stocked; first of
/// all it faults in the start reserve (`KPROF_PREFAULT_MB`), a block per pass.
fn run(rt: &'static Runtime) {
    let cfg = runtime::config().clone();
    let mut w = Writer::new(rt, &cfg);
    let period = Duration::from_millis(cfg.flush_ms);
    let mut last_round = Instant::now();
    // Call-stack samples: threads that never reach kprof are looked for now and
    // then (see stack_samples::scan).
    let scanning =
        crate::hot::stack_samples::signal().is_some() && crate::hot::stack_samples::hz() > 0;
    let mut last_scan: Option<Instant> = None;
    while !rt.shutdown_requested() {
        // A terminating signal's GPU flush (see base::flush).
        crate::base::flush::serve();
        if scanning
            && last_scan.is_none_or(|t| t.elapsed() >= crate::hot::stack_samples::SCAN_PERIOD)
        {
            crate::hot::stack_samples::scan();
            last_scan = Some(Instant::now());
        }
        if w.sampler.as_ref().is_some_and(|s| s.until_next().is_zero()) {
            w.sample();
        }
        let stocking = w.stock_reserve();
        let quiet = !stocking && w.top_up();
        // After the first look at the pool: opening the sampler's files (and
        // NVML, whose start can take long) never keeps the first chunks waiting.
        w.start_sampler();
        let streaming = !w.sinks.traces.is_empty();
        let due = last_round.elapsed() >= period;
        // In place, records are only memory and section events: processed when
        // chunks are full (or at the end), not every period.
        let idle_work = quiet && ((due && !rt.in_place) || rt.pool.full_len() > 0);
        if w.pressure() || if streaming { due } else { idle_work } {
            w.round();
            w.sinks.flush();
            last_round = Instant::now();
        }
        let nap = if streaming {
            period.saturating_sub(last_round.elapsed()).min(NAP)
        } else if rt.in_place {
            // Only memory and section events are records: the threads wake the
            // writer should their chunks run short, and so does the shutdown.
            IDLE_NAP
        } else {
            NAP
        };
        // Sampling wakes the writer at its period, whatever else it waits for.
        let nap = match &w.sampler {
            Some(s) => nap.min(s.until_next()),
            None => nap,
        };
        let nap = match last_scan {
            Some(t) if scanning => {
                nap.min(crate::hot::stack_samples::SCAN_PERIOD.saturating_sub(t.elapsed()))
            }
            _ => nap,
        };
        // While stocking, no nap: the next block at once (one block per pass, so
        // shutdown, pressure and trace rounds wait for one block at most).
        if !stocking {
            std::thread::park_timeout(nap);
        }
    }
    let run_cpu = clock::thread_cpu_ns();
    // The last sample, at the end of the run (unless one was just taken: rates
    // over a sliver of time say little; a run too short for any still gets one).
    w.start_sampler();
    if let Some(s) = &w.sampler {
        if s.samples() == 0 || s.since_last(&rt.clock, rt.clock.now()) >= LAST_SAMPLE_MIN_NS {
            w.sample();
        }
    }
    // Recording stopped; every event that saw it still recording completes
    // before anything is read (see ThreadSlot::busy), and no thread joins now.
    let slots = rt.threads.seal();
    let busy = crate::hot::quiesce::quiesce(slots.iter().map(|s| &s.busy), QUIESCE_WAIT);
    w.round();
    w.finish(&slots, &busy, run_cpu);
}

/// Records of one thread waiting to be processed.
struct Batch {
    units: &'static [u64],
    /// The chunk to recycle once `units` are processed (a full chunk), or None
    /// (the chunk is still being filled by its thread).
    recycle: Option<&'static Chunk>,
}

/// Per-thread writer state.
struct Stream {
    resolver: ThreadStream,
    /// Sequence number of the chunk to consume next (or being consumed).
    expected: u64,
    /// What this round gathered, in the thread's order.
    batches: VecDeque<Batch>,
}

/// Everything that consumes the resolved events: the profile, and the trace writers.
struct Sinks {
    profile: Profile,
    traces: Vec<Box<dyn TraceWriter>>,
    /// Threads per kind of work over time, for the traces' counter tracks (only
    /// with a trace).
    concurrency: Option<Timeline>,
    /// Traces completed early, at their size limit.
    stopped: Vec<std::path::PathBuf>,
    /// Bytes after which a trace stops (0: none).
    trace_max: u64,
    /// Events consumed, to look at the traces' sizes now and then.
    events: u64,
}

impl Consumer for Sinks {
    #[inline]
    fn event(&mut self, ev: &Event<'_>) {
        self.profile.event(ev);
        for t in &mut self.traces {
            t.event(ev);
        }
        if let Some(c) = &mut self.concurrency {
            c.event(ev);
            if let Some(p) = c.take() {
                for t in &mut self.traces {
                    t.concurrency(&p);
                }
            }
        }
        // A round can hold millions of events: the size limit is also looked at
        // within it (a file's size, once per 64Ki events).
        self.events = self.events.wrapping_add(1);
        if self.events & 0xffff == 0 && !self.traces.is_empty() {
            self.stop_full_traces();
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
        self.flush_concurrency();
        self.traces.retain_mut(|t| match t.flush() {
            Ok(()) => true,
            Err(e) => {
                warn(&format!("{e}; that trace stops here"));
                false
            }
        });
        self.stop_full_traces();
    }

    /// Hands the traces the concurrency counts changed since their last point.
    fn flush_concurrency(&mut self) {
        if let Some(p) = self.concurrency.as_mut().and_then(Timeline::flush) {
            for t in &mut self.traces {
                t.concurrency(&p);
            }
        }
    }

    /// Completes and stops every trace that passed the size limit: its file is
    /// valid up to there, and the profile goes on.
    fn stop_full_traces(&mut self) {
        if self.trace_max == 0 {
            return;
        }
        let mut i = 0;
        while i < self.traces.len() {
            if output::bytes_on_disk(self.traces[i].path()) < self.trace_max {
                i += 1;
                continue;
            }
            let t = self.traces.remove(i);
            match trace::finish(t) {
                Ok(p) => {
                    // An OTF2 archive is the directory around its anchor file.
                    let shown = match p.extension().is_some_and(|e| e == "otf2") {
                        true => p.parent().unwrap_or(&p),
                        false => &p,
                    };
                    warn(&format!(
                        "{} reached KPROF_TRACE_MAX_MB ({} MiB): the trace is complete up \
                         to here and stops (the profile covers the whole run)",
                        shown.display(),
                        self.trace_max >> 20
                    ));
                    self.stopped.push(p);
                }
                Err(e) => warn(&format!("{e}; that trace stops here")),
            }
        }
    }
}

struct Writer {
    rt: &'static Runtime,
    streams: FxHashMap<u32, Stream>,
    sinks: Sinks,
    symbols: Symbolizer,
    /// The output directory, created at start when traces stream into it.
    dir: Option<std::path::PathBuf>,
    /// Space held there for the profile while the traces fill the disk.
    profile_space: Option<output::Reserve>,
    /// How fast threads take chunks.
    demand: Demand,
    /// Chunks to have allocated before the writer settles into its rhythm
    /// (`KPROF_PREFAULT_MB`); 0 once stocked.
    reserve: usize,
    /// The system sampler (`KPROF_SAMPLE_MS`), when sampling is on.
    sampler: Option<Sampler>,
    /// `KPROF_SAMPLE_MS` until the sampler is started (then 0).
    sample_ms: u64,
}

/// The rate at which threads take chunks, in chunks per [`NAP`]: the highest rate
/// seen lately, decaying by a quarter per look, so one quiet nap inside a busy
/// phase does not shrink the pool's stock.
struct Demand {
    taken: u64,
    at: Instant,
    per_nap: usize,
}

impl Demand {
    fn new() -> Demand {
        Demand {
            taken: 0,
            at: Instant::now(),
            per_nap: 0,
        }
    }

    /// Takes the pool's count of chunks taken so far; returns the demand per nap,
    /// and whether no chunk was taken since the last update.
    fn update(&mut self, taken: u64) -> (usize, bool) {
        let now = Instant::now();
        // A wake-up by a thread comes early: scale what it took to a whole nap.
        let elapsed = now.duration_since(self.at).max(Duration::from_millis(1));
        let recent =
            taken.saturating_sub(self.taken) as f64 * NAP.as_secs_f64() / elapsed.as_secs_f64();
        self.per_nap = (recent.ceil() as usize).max(self.per_nap - self.per_nap / 4);
        let quiet = taken == self.taken;
        self.taken = taken;
        self.at = now;
        (self.per_nap, quiet)
    }
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
        let profile_space = match (&dir, traces.is_empty()) {
            (Some(d), false) => output::Reserve::take(d, output::PROFILE_RESERVE_BYTES),
            _ => None,
        };
        Writer {
            rt,
            profile_space,
            streams: FxHashMap::default(),
            sinks: Sinks {
                profile: Profile::new(rt),
                concurrency: (!traces.is_empty()).then(|| Timeline::new(&rt.clock)),
                traces,
                stopped: Vec::new(),
                trace_max: cfg.trace_max_mb.saturating_mul(1 << 20),
                events: 0,
            },
            symbols: Symbolizer::new(&rt.names, &rt.anomalies),
            dir,
            demand: Demand::new(),
            reserve: (cfg.prefault_mb as usize)
                .saturating_mul(1 << 20)
                .div_ceil(buffer::CHUNK_BYTES),
            sampler: None,
            sample_ms: cfg.sample_ms,
        }
    }

    /// Starts the system sampler, if sampling is on and it has not started yet.
    fn start_sampler(&mut self) {
        if self.sample_ms > 0 {
            self.sampler = Some(Sampler::new(self.sample_ms, &self.rt.clock));
            self.sample_ms = 0;
        }
    }

    /// Takes a sample of the process and the node now and hands it to every
    /// trace (the profile's ranges are in the sampler).
    fn sample(&mut self) {
        let Some(s) = &mut self.sampler else {
            return;
        };
        let (raw, metrics, values) = s.sample(&self.rt.clock);
        for t in &mut self.sinks.traces {
            t.sample(raw, metrics, values);
        }
    }

    fn stream(&mut self, index: u32) -> Option<&mut Stream> {
        if !self.streams.contains_key(&index) {
            // Only registered threads own chunks.
            self.rt.threads.by_index(index)?;
            self.streams.insert(
                index,
                Stream {
                    resolver: ThreadStream::new(index),
                    expected: 1,
                    batches: VecDeque::new(),
                },
            );
        }
        self.streams.get_mut(&index)
    }

    /// Whether to process now rather than wait: half the budget is waiting in full
    /// chunks, or the chunks threads can still get (free ones and the budget not
    /// yet allocated) run short.
    fn pressure(&self) -> bool {
        let pool = &self.rt.pool;
        let room = pool.free_len() + (pool.max_chunks() - pool.allocated());
        2 * pool.full_len() >= pool.max_chunks() || room < 4 + self.chunks_per_thread(2)
    }

    /// `n` chunks per thread, when every event is a record; with the profile
    /// aggregated in place, threads rarely take a chunk (memory and section
    /// events only), and what they take shows in the measured demand.
    fn chunks_per_thread(&self, n: usize) -> usize {
        if self.rt.in_place {
            0
        } else {
            n * self.rt.threads.len()
        }
    }

    /// Keeps enough free chunks that threads do not run dry before the writer's
    /// next look: twice what they took during the last nap, and a few per thread.
    /// Threads that run dry allocate for themselves, which stalls them (and, in an
    /// OpenMP team, everyone waiting for them) while the kernel zeroes the memory.
    /// Returns whether threads took no chunk since the last look.
    fn top_up(&mut self) -> bool {
        let pool = &self.rt.pool;
        let (demand, quiet) = self.demand.update(pool.taken());
        let want = (8 + self.chunks_per_thread(4)).max(2 * demand);
        pool.top_up(want);
        quiet
    }

    /// Faults in one more block of the start reserve (`KPROF_PREFAULT_MB`, off by
    /// default), if it is not complete; returns whether more remains. The first
    /// burst after a setup phase then writes into memory that is ready: fresh
    /// memory can cost more than the recording itself (measured on a VM: 0.3-3 ns
    /// per byte of records, against ~1 ns per byte to record). Threads' demand is
    /// not sampled meanwhile, so the first look after stocking measures it over
    /// the whole stocking time (a quick look would find no chunk taken and process
    /// the backlog in the middle of a burst).
    fn stock_reserve(&mut self) -> bool {
        if self.reserve > 0 && !self.rt.pool.stock(self.reserve) {
            self.reserve = 0;
        }
        self.reserve > 0
    }

    /// One round: gather, merge by time, process.
    fn round(&mut self) {
        self.gather();
        self.merge();
    }

    /// Collects every thread's new records: full chunks in queue order (each
    /// thread's in its own order), then the published part of the chunks threads are
    /// still filling.
    fn gather(&mut self) {
        while let Some(c) = self.rt.pool.next_full() {
            let Some(s) = self.stream(c.owner()) else {
                self.rt.pool.recycle(c);
                continue;
            };
            s.expected = c.seq() + 1;
            s.batches.push_back(Batch {
                units: c.take_new(),
                recycle: Some(c),
            });
        }
        for slot in self.rt.threads.snapshot() {
            // Only this thread recycles chunks, and not during gather.
            let Some(c) = slot.filling() else {
                continue;
            };
            // A stream only for threads with records (in place, most have none).
            let Some(s) = self.stream(slot.index) else {
                continue;
            };
            // A chunk of another owner, or one this thread handed over after the
            // queue was read, waits for the next round.
            if c.follows(slot.index, s.expected) {
                s.batches.push_back(Batch {
                    units: c.take_new(),
                    recycle: None,
                });
            }
        }
    }

    /// Processes the gathered batches of all threads in timestamp order: always the
    /// thread with the earliest next event, up to the next thread's time.
    fn merge(&mut self) {
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = self
            .streams
            .iter()
            .filter_map(|(&i, s)| {
                s.batches
                    .front()
                    .map(|b| Reverse((s.resolver.next_time(b.units), i)))
            })
            .collect();
        while let Some(Reverse((_, index))) = heap.pop() {
            let limit = heap.peek().map_or(u64::MAX, |Reverse((t, _))| *t);
            let Some(s) = self.streams.get_mut(&index) else {
                continue;
            };
            while let Some(b) = s.batches.front_mut() {
                let n = s.resolver.feed(
                    b.units,
                    limit,
                    &mut self.sinks,
                    &mut self.symbols,
                    &self.rt.anomalies,
                );
                b.units = &b.units[n..];
                if !b.units.is_empty() {
                    heap.push(Reverse((s.resolver.next_time(b.units), index)));
                    break;
                }
                if let Some(done) = s.batches.pop_front() {
                    if let Some(c) = done.recycle {
                        self.rt.pool.recycle(c);
                    }
                }
                match s.batches.front() {
                    Some(next) if s.resolver.next_time(next.units) <= limit => continue,
                    Some(next) => {
                        heap.push(Reverse((s.resolver.next_time(next.units), index)));
                        break;
                    }
                    None => break,
                }
            }
        }
    }

    /// Writes every output. `slots` are all the threads; `busy[i]` says that
    /// `slots[i]` was still inside an event, so its in-place profile cannot be read.
    /// `run_cpu`: the writer's CPU time until the end.
    fn finish(mut self, slots: &[&'static ThreadSlot], busy: &[bool], run_cpu: u64) {
        let rt = self.rt;
        let end = rt.end();
        // Ends other threads reported for threads parked where they could not.
        let late = std::mem::take(&mut *rt.late_ends.lock().unwrap_or_else(|p| p.into_inner()));
        let system = self.sampler.take().map(|s| s.report());
        // No sample is added once this returns: the buffers are read below.
        let stack_buffers = crate::hot::stack_samples::signal()
            .map(|_| crate::hot::stack_samples::stop(std::time::Duration::from_millis(200)));
        let mut records = FxHashMap::default();
        let mut words = 0;
        for (&index, s) in self.streams.iter_mut() {
            s.resolver
                .close_all(end, &late, &mut self.sinks, &rt.anomalies);
            records.insert(index, s.resolver.records);
            words += s.resolver.words;
        }
        let mut in_place: Vec<&mut ThreadProfile> = Vec::new();
        let mut events_in_place = 0;
        for (slot, &busy) in slots.iter().zip(busy) {
            let p = slot.in_place.load(Ordering::Acquire);
            // SAFETY: the box is leaked at registration; the thread is not inside
            // an event and cannot start one (the runtime stopped recording), so
            // the writer is the only one using it now.
            let Some(tp) = (unsafe { p.as_mut() }) else {
                continue;
            };
            if busy {
                warn(&format!(
                    "thread {} was still inside an event when the run ended: its {} events \
                     are left out of the profile (counted as dropped)",
                    slot.index, tp.events
                ));
                slot.dropped.fetch_add(tp.events, Ordering::Relaxed);
                continue;
            }
            tp.close_all(end, &late);
            *records.entry(slot.index).or_insert(0) += tp.events;
            events_in_place += tp.events;
            in_place.push(tp);
        }
        self.sinks.flush_concurrency();
        let Sinks {
            mut profile,
            traces,
            stopped,
            ..
        } = self.sinks;
        let traces: Vec<_> = stopped
            .into_iter()
            .map(Ok)
            .chain(traces.into_iter().map(trace::finish))
            .filter_map(|t| match t {
                Ok(path) => Some(path),
                Err(e) => {
                    warn(&e.to_string());
                    None
                }
            })
            .collect();
        let mut threads: Vec<&mut ThreadProfile> =
            profile.thread_profiles().chain(in_place).collect();
        let profile_bytes = threads.iter().map(|t| t.bytes()).sum();
        let own_ns = threads.iter().map(|t| t.own_ns()).sum();
        let times = concurrency::tally_all(&threads, &rt.clock);
        let busy_series = concurrency::series(&threads);
        let merged = merge::merge(&mut threads, &mut self.symbols);
        let call_paths = merged.thread_nodes;
        drop(threads);
        let stacks = stack_buffers.map(|b| {
            let how = (
                crate::hot::stack_samples::hz(),
                crate::hot::stack_samples::signal().unwrap_or(0),
            );
            stacks::collect(&b, &merged, &mut self.symbols, &rt.clock, how)
        });
        let mut report = profile.report(&merged, &records);
        report.system = system;
        report.stack_samples = stacks.as_ref().map(|s| s.info.clone());
        report.concurrency =
            concurrency::section(&times, &report.threads, report.clock.duration_ns);
        report.over_time = profile.over_time(busy_series);
        // The outputs read the call-path tree from `merged`, node by node; what
        // else the profile kept goes now (the threads' trees went in the merge).
        drop(profile);
        let record_count = records.values().sum::<u64>() - events_in_place;
        report.kprof = SelfCost {
            events_in_place,
            writer_run_cpu_ns: run_cpu,
            call_paths,
            profile_bytes,
            own_ns,
            device_tool_ns: rt.device_cost_ns.load(Ordering::Relaxed),
            ..self_cost(rt, record_count, words)
        };
        let cfg = runtime::config().clone();
        let dir = self.dir.or_else(|| output::prepare_dir(rt, &cfg));
        // The traces are complete: the profile takes the space held for it.
        drop(self.profile_space.take());
        let tree = MergedTree::new(&merged, rt).with_stacks(stacks.as_ref().map(|s| &s.by_node));
        output::write_all(&report, &tree, &cfg, dir.as_deref(), &traces);
    }
}

/// kprof's own cost so far; called on the writer thread.
fn self_cost(rt: &Runtime, records: u64, words: u64) -> SelfCost {
    let mem = buffer::memory_stats();
    SelfCost {
        records,
        record_bytes: words * 8,
        buffer_bytes: mem.bytes(),
        buffer_budget_bytes: (rt.pool.max_chunks() * buffer::CHUNK_BYTES) as u64,
        huge_page_blocks: mem.huge_blocks,
        small_page_blocks: mem.small_blocks,
        buffer_fault_ns: mem.fault_ns,
        writer_cpu_ns: clock::thread_cpu_ns(),
        ..SelfCost::default()
    }
}

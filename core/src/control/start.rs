//! Starting and ending the one runtime of the process: the first attach starts it
//! (clock, buffers, the writer thread); it shuts down exactly once (by a plugin's
//! finalize, at process exit, or on SIGINT/SIGTERM); a forked child leaves its
//! parent's behind.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::base::anomaly::Anomalies;
use crate::base::devices::Devices;
use crate::base::flush;
use crate::base::process::ProcessInfo;
use crate::hot::buffer::Pool;
use crate::hot::clock::Clock;
use crate::hot::counters::{Counters, Setup};
use crate::hot::intern::Interner;
use crate::hot::lifecycle::Stop;
use crate::hot::runtime::{
    active, config, get, phase, set_starter, warn, Phase, Runtime, FORK_OFF_NOTE, LIFE, RUNTIME,
};
use crate::hot::thread::Registry;

/// Chunks allocated at start, before the writer tops the pool up: one block of the
/// arena (2 MiB), which is mapped and touched whole anyway.
const INITIAL_CHUNKS: usize = 32;
/// Plugins attached that will call finalize; the runtime shuts down when the last
/// of them does (or at exit), so one runtime's finalize (Kokkos') does not cut off
/// another's events (OpenMP's, which end at exit).
static FINALIZERS: AtomicUsize = AtomicUsize::new(0);
/// What the annotation API does ([`annotations`]): [`UNDECIDED`] until its first
/// call decides, and again after a plugin attached to an inert API or a fork;
/// then [`MEASURE`] (set once attach returned, so a racing first call never skips
/// the start) or [`INERT`].
static ANNOTATIONS: AtomicU8 = AtomicU8::new(UNDECIDED);
/// [`ANNOTATIONS`]: the next annotation call decides.
const UNDECIDED: u8 = 0;
/// [`ANNOTATIONS`]: attached to the runtime; every call records.
const MEASURE: u8 = 1;
/// [`ANNOTATIONS`]: nobody asked for measurement; every call returns at once.
const INERT: u8 = 2;
/// Whether a plugin attached in this process (or in its parent before a fork): a
/// runtime loading a kprof tool library asks for measurement, annotations included.
static PLUGIN_ASKED: AtomicBool = AtomicBool::new(false);
/// Whether the environment asks for measurement (read once, on the first decision).
static ENV_ASKED: OnceLock<bool> = OnceLock::new();
/// Plugins the parent of a forked child had attached: the child's new runtime
/// lists them too (leaked; null when none).
static INHERITED_PLUGINS: AtomicPtr<Vec<String>> = AtomicPtr::new(std::ptr::null_mut());
/// Whether a GPU activity plugin is active ([`gpu_activity`]).
static GPU_ACTIVITY: AtomicBool = AtomicBool::new(false);
/// How long a terminating signal waits for the GPU plugins' flushes.
const SIGNAL_FLUSH_WAIT: Duration = Duration::from_secs(2);
/// The annotation API attaches but never finalizes by itself.
pub const ANNOTATION: &str = "annotation";

/// Starts the runtime once, recording `plugin` as attached. Returns the runtime when
/// it records.
pub fn attach(plugin: &str) -> Option<&'static Runtime> {
    if plugin != ANNOTATION {
        ask_for_annotations();
    }
    ensure_started();
    let rt = active()?;
    let mut plugins = rt.plugins.lock().unwrap_or_else(|p| p.into_inner());
    if !plugins.iter().any(|p| p == plugin) {
        plugins.push(plugin.to_string());
        if plugin != ANNOTATION {
            FINALIZERS.fetch_add(1, Ordering::AcqRel);
        }
    }
    Some(rt)
}

/// What an annotation call does, by [`annotations`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Annotations {
    /// Record the call.
    Measure,
    /// Return at once: nobody asked for measurement.
    Inert,
    /// Decide first ([`decide_annotations`]).
    Undecided,
}

/// The annotation API's state, on each of its calls: one load, then a branch.
#[inline(always)]
pub fn annotations() -> Annotations {
    match ANNOTATIONS.load(Ordering::Acquire) {
        MEASURE => Annotations::Measure,
        INERT => Annotations::Inert,
        _ => Annotations::Undecided,
    }
}

/// Decides, on an annotation call that found the API undecided, whether it
/// measures: only when asked, by a `KPROF_*` setting in the environment (`kprof run`
/// always sets `KPROF_OUTPUT_DIR`) or by a plugin that attached. Measuring attaches
/// the API to the runtime, starting it; a library's annotations in a program run
/// plainly record and write nothing. Returns (measure, whether this call attached
/// a recording runtime).
#[cold]
#[inline(never)]
pub fn decide_annotations() -> (bool, bool) {
    loop {
        if PLUGIN_ASKED.load(Ordering::SeqCst)
            || *ENV_ASKED.get_or_init(crate::base::config::asked_in_env)
        {
            // Every racing first caller attaches (attach waits for the one start),
            // and only then is the state set: no caller records before the runtime
            // does.
            let recording = attach(ANNOTATION).is_some();
            ANNOTATIONS.store(MEASURE, Ordering::SeqCst);
            return (true, recording);
        }
        ANNOTATIONS.store(INERT, Ordering::SeqCst);
        // A plugin attaching meanwhile marks PLUGIN_ASKED before it undoes INERT:
        // either that undo follows the store above, or the mark is seen here.
        if !PLUGIN_ASKED.load(Ordering::SeqCst) {
            return (false, false);
        }
    }
}

/// A plugin attaches: annotations measure from now on (an inert API decides again
/// at its next call).
fn ask_for_annotations() {
    PLUGIN_ASKED.store(true, Ordering::SeqCst);
    let _ = ANNOTATIONS.compare_exchange(INERT, UNDECIDED, Ordering::SeqCst, Ordering::SeqCst);
}

/// A plugin's finalize: shuts the runtime down when no other attached plugin is
/// still running (the last one, or the exit handler, writes the output).
pub fn plugin_finalize() {
    let left = FINALIZERS
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            Some(n.saturating_sub(1))
        })
        .map_or(0, |n| n.saturating_sub(1));
    if left == 0 {
        shutdown();
    }
}

/// Starts the runtime if nobody has: exactly one caller runs the start, and every
/// caller returns only once it is complete (recording, or disabled).
fn ensure_started() {
    // A forked child's first event starts its own runtime through this.
    set_starter(ensure_started);
    // A start that panicked must not leave the others waiting forever: it ends
    // disabled.
    LIFE.start_once(|| std::panic::catch_unwind(start).ok().flatten());
}

/// Runs with the phase at Starting, owned by this caller; returns the runtime that
/// records, or `None` when nothing is to be recorded (the phase becomes Running or
/// Disabled).
fn start() -> Option<&'static Runtime> {
    let cfg = config().clone();
    if !cfg.enable {
        return None;
    }
    let clock = Clock::new();
    let start_raw = clock.now();
    let inherited = INHERITED_PLUGINS.swap(std::ptr::null_mut(), Ordering::AcqRel);
    let plugins = if inherited.is_null() {
        Vec::new()
    } else {
        // SAFETY: a box leaked by the fork handler, taken exactly once (swapped out).
        *unsafe { Box::from_raw(inherited) }
    };
    // A forked child inherits PAPI's state but not its threads' event sets.
    let setup = if !inherited.is_null() && !cfg.counters.is_empty() {
        Setup {
            counters: None,
            problems: vec!["counters: not read in a forked child".into()],
        }
    } else {
        let lib = kprof_tables::settings::core::PAPI_LIB
            .get()
            .filter(|l| !l.is_empty());
        Counters::setup(&cfg.counters, &cfg.counter_kinds, lib.as_deref())
    };
    for line in &setup.problems {
        warn(line);
    }
    let rt: &'static Runtime = Box::leak(Box::new(Runtime {
        clock,
        pool: Pool::new(cfg.buffer_mb, INITIAL_CHUNKS),
        names: Interner::new(),
        threads: Registry::new(cfg.max_depth as usize),
        in_place: cfg.in_place && cfg.trace.is_empty(),
        anomalies: Anomalies::default(),
        devices: Devices::default(),
        sections: Mutex::new(Vec::new()),
        metadata: Mutex::new(Vec::new()),
        plugins: Mutex::new(plugins),
        process: ProcessInfo::current(),
        start_raw,
        end_raw: AtomicU64::new(0),
        counters: setup.counters,
        counter_problems: setup.problems,
        device_cost_ns: AtomicU64::new(0),
        late_ends: Mutex::new(Vec::new()),
        shutdown: AtomicBool::new(false),
        done: AtomicBool::new(false),
        writer: OnceLock::new(),
        samples: cfg.samples as u32,
    }));
    RUNTIME.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    crate::hot::quiesce::prepare_barrier();
    start_stack_samples(&cfg, rt);
    match crate::collect::writer::spawn(rt) {
        Ok(handle) => {
            let _ = rt.writer.set(handle);
        }
        Err(e) => {
            warn(&format!(
                "cannot start the writer thread ({e}); not measuring"
            ));
            return None;
        }
    }
    Some(rt)
}

/// Starts the call-stack samples (`KPROF_SAMPLE_HZ`), which need the in-place
/// profile: each thread is armed when kprof first sees it.
fn start_stack_samples(cfg: &crate::base::config::Config, rt: &'static Runtime) {
    if cfg.sample_hz == 0 {
        return;
    }
    if !rt.in_place {
        warn("call-stack samples (KPROF_SAMPLE_HZ) are taken only without a trace and with KPROF_IN_PLACE=1: not sampling");
        return;
    }
    if let Err(e) = crate::hot::stack_samples::install(cfg.sample_hz, &rt.clock) {
        warn(&format!("call-stack samples: {e}; not sampling"));
    }
}

/// Marks a GPU activity plugin active (`set`); whether one is.
pub fn gpu_activity(set: bool) -> bool {
    if set {
        GPU_ACTIVITY.store(true, Ordering::Release);
    }
    GPU_ACTIVITY.load(Ordering::Acquire)
}

/// Has every GPU plugin deliver the device activities its vendor library still
/// buffers, while the runtime still records them.
fn flush_devices() {
    if get().is_some_and(|rt| !rt.shutdown.load(Ordering::Acquire)) {
        flush::run();
    }
}

/// At a terminating signal: the writer thread runs the GPU plugins' flushes
/// (they take locks the interrupted thread may hold, so not this handler), and
/// this waits for them, at most [`SIGNAL_FLUSH_WAIT`].
pub fn flush_devices_from_signal() {
    let Some(rt) = get() else { return };
    if rt.shutdown.load(Ordering::Acquire) || !flush::pending() {
        return;
    }
    flush::ask();
    rt.wake_writer();
    flush::wait_served(SIGNAL_FLUSH_WAIT);
}

/// Stops recording, has the writer write every output, and waits for it (bounded).
/// Safe to call from several places and threads; output is written once. GPU
/// plugins flush their device activities first.
pub fn shutdown() {
    flush_devices();
    shutdown_now();
}

/// [`shutdown`] without flushing GPU plugins: what a signal handler calls, since a
/// vendor's flush takes locks the interrupted thread may hold. Does not allocate
/// or lock.
pub fn shutdown_now() {
    // An exit racing the start (a worker's exit() while main starts kprof) ends
    // the runtime once it is complete.
    let stop = LIFE.stop();
    let Some(rt) = get() else { return };
    match stop {
        Stop::Mine => {
            rt.end_raw.store(rt.clock.now(), Ordering::Release);
            rt.shutdown.store(true, Ordering::Release);
            rt.wake_writer();
        }
        // Another caller ends it: wait for the same output.
        Stop::Other => {}
        // Done already, never started, disabled, or a child that never recorded.
        Stop::NotRunning => return,
    }
    rt.wait_done();
    LIFE.set_phase(Phase::Done);
}

/// What a forked child does with the runtime it inherited (called in the child
/// right after fork, on its only thread): the writer thread did not survive the
/// fork, so the parent's runtime is left behind. With `fork` (KPROF_FORK=1) a
/// recording parent's child starts a runtime of its own at its first event
/// (`plugins`: the parent's); otherwise it records nothing and says so then.
pub fn reset_in_child(fork: bool, plugins: Option<Vec<String>>) {
    LIFE.deactivate();
    // The forking thread's state belongs to the parent's runtime.
    crate::hot::tls::set(std::ptr::null_mut());
    // So do its call-stack sample buffers (the child has no timer).
    crate::hot::stack_samples::forget_in_child();
    ANNOTATIONS.store(UNDECIDED, Ordering::SeqCst);
    let was = phase();
    RUNTIME.store(std::ptr::null_mut(), Ordering::Release);
    let next = match was {
        Phase::NotStarted => Phase::NotStarted,
        Phase::Running | Phase::Starting if fork => {
            if let Some(p) = plugins {
                INHERITED_PLUGINS.store(Box::into_raw(Box::new(p)), Ordering::Release);
            }
            Phase::Forked
        }
        Phase::Running | Phase::Starting => {
            FORK_OFF_NOTE.store(true, Ordering::Release);
            Phase::Disabled
        }
        // The parent was ending or had ended: the child has nothing to write.
        _ => Phase::Disabled,
    };
    LIFE.set_phase(next);
}

//! The one runtime of the process: created on first attach, shut down exactly once
//! (by a plugin's finalize, at process exit, or on SIGINT/SIGTERM).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use kprof_abi::Anomaly;

use crate::anomaly::Anomalies;
use crate::buffer::Pool;
use crate::clock::Clock;
use crate::config::Config;
use crate::devices::Devices;
use crate::intern::Interner;
use crate::process::ProcessInfo;
use crate::thread::Registry;

/// Chunks allocated at start, before the writer tops the pool up: one block of the
/// arena (2 MiB), which is mapped and touched whole anyway.
const INITIAL_CHUNKS: usize = 32;
/// How long a shutdown waits for the writer before giving up (never hang the host).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

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

/// The measurement runtime of this process.
pub struct Runtime {
    /// The clock of every timestamp.
    pub clock: Clock,
    /// Event buffers.
    pub pool: Pool,
    /// Name table.
    pub names: Interner,
    /// Threads that recorded.
    pub threads: Registry,
    /// Threads aggregate their nested events in place (no trace, see
    /// [`crate::in_place`]); otherwise every event is a record.
    pub in_place: bool,
    /// Anomaly counters.
    pub anomalies: Anomalies,
    /// Devices seen.
    pub devices: Devices,
    /// Section names by id - 1.
    pub sections: Mutex<Vec<u32>>,
    /// Metadata pairs in arrival order.
    pub metadata: Mutex<Vec<(String, String)>>,
    /// Plugins attached, in order.
    pub plugins: Mutex<Vec<String>>,
    /// Who we are.
    pub process: ProcessInfo,
    /// Raw clock at start.
    pub start_raw: u64,
    /// Raw clock when shutdown began.
    pub end_raw: AtomicU64,
    shutdown: AtomicBool,
    done: AtomicBool,
    writer: OnceLock<std::thread::Thread>,
}

/// The runtime of this process (null before start). A leaked box, never freed: a
/// forked child starts a new one and leaves its parent's copy unused.
static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// Non-null exactly while recording: the hot path's one check.
static ACTIVE: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static PHASE: AtomicU8 = AtomicU8::new(Phase::NotStarted as u8);
/// Plugins attached that will call finalize; the runtime shuts down when the last
/// of them does (or at exit), so one runtime's finalize (Kokkos') does not cut off
/// another's events (OpenMP's, which end at exit).
static FINALIZERS: AtomicUsize = AtomicUsize::new(0);
/// Whether the annotation API attached to the current runtime (set once attach
/// returned, so a racing first call never skips the start; cleared in a forked
/// child, whose runtime starts anew).
static ANNOTATIONS_ATTACHED: AtomicBool = AtomicBool::new(false);
/// Plugins the parent of a forked child had attached: the child's new runtime
/// lists them too (leaked; null when none).
static INHERITED_PLUGINS: AtomicPtr<Vec<String>> = AtomicPtr::new(std::ptr::null_mut());
/// A forked child with `KPROF_FORK=0` says once that it is not measured.
static FORK_OFF_NOTE: AtomicBool = AtomicBool::new(false);
/// The annotation API attaches but never finalizes by itself.
pub const ANNOTATION: &str = "annotation";
static CONFIG: OnceLock<Mutex<Config>> = OnceLock::new();

/// The settings, read from the environment on first use.
pub fn config() -> MutexGuard<'static, Config> {
    CONFIG
        .get_or_init(|| Mutex::new(Config::from_env(|e| warn(&e.to_string()))))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Prints one `kprof:` line on stderr, in one `write` (no lock is taken: a forked
/// child or a signal handler may call it while another thread held stderr's).
pub fn warn(msg: &str) {
    let line = format!("kprof: {msg}\n");
    let mut rest = line.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writing our own buffer to fd 2.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// The runtime while it records.
#[inline(always)]
pub fn active() -> Option<&'static Runtime> {
    let p = ACTIVE.load(Ordering::Relaxed);
    // SAFETY: ACTIVE only ever holds null or a leaked runtime (see RUNTIME), which
    // lives for the rest of the process.
    unsafe { p.as_ref() }
}

/// The runtime, if it was ever started (in this process: a forked child's is its
/// own, once it recorded).
pub fn get() -> Option<&'static Runtime> {
    // SAFETY: RUNTIME only ever holds null or a leaked, never freed runtime.
    unsafe { RUNTIME.load(Ordering::Acquire).as_ref() }
}

/// The current phase.
pub fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::NotStarted,
        1 => Phase::Running,
        2 => Phase::Finalizing,
        3 => Phase::Done,
        5 => Phase::Starting,
        6 => Phase::Forked,
        _ => Phase::Disabled,
    }
}

/// A call that found nothing recording: counted when it came after finalize,
/// and the runtime started anew when it is a forked child's first event. Returns
/// the runtime when the call can be recorded after all.
#[cold]
#[inline(never)]
pub fn inactive_call() -> Option<&'static Runtime> {
    match phase() {
        Phase::Finalizing | Phase::Done => {
            if let Some(rt) = get() {
                rt.anomalies.count(Anomaly::CallAfterFinalize);
            }
            None
        }
        Phase::Forked | Phase::Starting => {
            ensure_started();
            active()
        }
        Phase::Disabled => {
            if FORK_OFF_NOTE.swap(false, Ordering::AcqRel) {
                warn(&format!(
                    "process {} is a fork of a measured process and records nothing (KPROF_FORK=0)",
                    std::process::id()
                ));
            }
            None
        }
        // Racing the start's last store: the runtime is there now.
        Phase::Running => active(),
        Phase::NotStarted => None,
    }
}

/// Starts the runtime once, recording `plugin` as attached. Returns the runtime when
/// it records.
pub fn attach(plugin: &str) -> Option<&'static Runtime> {
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

/// The annotation API's attach, on each of its calls: one load once attached.
#[inline(always)]
pub fn attach_annotations() {
    if !ANNOTATIONS_ATTACHED.load(Ordering::Acquire) {
        attach_annotations_slow();
    }
}

#[cold]
#[inline(never)]
fn attach_annotations_slow() {
    // Every racing first caller attaches (attach waits for the one start), and only
    // then is the flag set: no caller proceeds before the runtime records.
    attach(ANNOTATION);
    ANNOTATIONS_ATTACHED.store(true, Ordering::Release);
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
    loop {
        let now = PHASE.load(Ordering::Acquire);
        if now == Phase::NotStarted as u8 || now == Phase::Forked as u8 {
            if PHASE
                .compare_exchange(
                    now,
                    Phase::Starting as u8,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                // A start that panicked must not leave the others waiting forever.
                if std::panic::catch_unwind(start).is_err() {
                    PHASE.store(Phase::Disabled as u8, Ordering::Release);
                }
                return;
            }
        } else if now == Phase::Starting as u8 {
            wait_started();
            return;
        } else {
            return;
        }
    }
}

/// Waits while another thread starts the runtime (a few milliseconds).
fn wait_started() {
    let mut spins = 0u32;
    while PHASE.load(Ordering::Acquire) == Phase::Starting as u8 {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            // nanosleep is async-signal-safe (shutdown may come from a handler).
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Runs with the phase at Starting, owned by this caller; leaves it at Running or
/// Disabled.
fn start() {
    let cfg = config().clone();
    if !cfg.enable {
        PHASE.store(Phase::Disabled as u8, Ordering::Release);
        return;
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
        shutdown: AtomicBool::new(false),
        done: AtomicBool::new(false),
        writer: OnceLock::new(),
    }));
    RUNTIME.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    crate::thread::prepare_barrier();
    match crate::writer::spawn(rt) {
        Ok(handle) => {
            let _ = rt.writer.set(handle);
        }
        Err(e) => {
            warn(&format!(
                "cannot start the writer thread ({e}); not measuring"
            ));
            PHASE.store(Phase::Disabled as u8, Ordering::Release);
            return;
        }
    }
    ACTIVE.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    PHASE.store(Phase::Running as u8, Ordering::Release);
    // After Running: a signal handled on this thread while it still started would
    // wait for the start forever.
    crate::lifecycle::install_exit_hooks(cfg.signals);
}

/// Stops recording, has the writer write every output, and waits for it (bounded).
/// Safe to call from several places and threads; output is written once. Does not
/// allocate or lock, so the signal handler may call it.
pub fn shutdown() {
    // An exit racing the start (a worker's exit() while main starts kprof) ends
    // the runtime once it is complete.
    wait_started();
    let Some(rt) = get() else { return };
    match PHASE.compare_exchange(
        Phase::Running as u8,
        Phase::Finalizing as u8,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
            rt.end_raw.store(rt.clock.now(), Ordering::Release);
            rt.shutdown.store(true, Ordering::Release);
            rt.wake_writer();
        }
        // Another caller ends it: wait for the same output.
        Err(p) if p == Phase::Finalizing as u8 => {}
        // Done already, never started, disabled, or a child that never recorded.
        Err(_) => return,
    }
    rt.wait_done();
    PHASE.store(Phase::Done as u8, Ordering::Release);
}

/// What a forked child does with the runtime it inherited (called in the child
/// right after fork, on its only thread): the writer thread did not survive the
/// fork, so the parent's runtime is left behind. With `fork` (KPROF_FORK=1) a
/// recording parent's child starts a runtime of its own at its first event
/// (`plugins`: the parent's); otherwise it records nothing and says so then.
pub fn reset_in_child(fork: bool, plugins: Option<Vec<String>>) {
    ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
    // The forking thread's state belongs to the parent's runtime.
    crate::tls::set(std::ptr::null_mut());
    ANNOTATIONS_ATTACHED.store(false, Ordering::Release);
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
    PHASE.store(next as u8, Ordering::Release);
}

impl Runtime {
    /// Whether shutdown was requested (writer side).
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Wakes the writer if it sleeps (it also polls every few milliseconds).
    pub fn wake_writer(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }

    /// Marks the output as written (writer side).
    pub fn mark_done(&self) {
        self.done.store(true, Ordering::Release);
    }

    fn wait_done(&self) {
        let step = Duration::from_millis(1);
        let mut waited = Duration::ZERO;
        while !self.done.load(Ordering::Acquire) {
            if waited >= SHUTDOWN_WAIT {
                warn("the writer did not finish within 30 s; output may be incomplete");
                return;
            }
            // nanosleep is async-signal-safe.
            std::thread::sleep(step);
            waited += step;
        }
    }

    /// Raw clock when the run ended (now, if it has not).
    pub fn end(&self) -> u64 {
        match self.end_raw.load(Ordering::Acquire) {
            0 => self.clock.now(),
            t => t,
        }
    }
}

//! The one runtime of the process: created on first attach, shut down exactly once
//! (by a plugin's finalize, at process exit, or on SIGINT/SIGTERM).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// No plugin attached yet.
    NotStarted = 0,
    /// Recording.
    Running = 1,
    /// Shutdown requested; the writer is flushing.
    Finalizing = 2,
    /// Output written (or given up on).
    Done = 3,
    /// `KPROF_ENABLE=0`, or a forked child: nothing is recorded.
    Disabled = 4,
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

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
/// Non-null exactly while recording: the hot path's one check.
static ACTIVE: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static PHASE: AtomicU8 = AtomicU8::new(Phase::NotStarted as u8);
static START: Once = Once::new();
/// Plugins attached that will call finalize; the runtime shuts down when the last
/// of them does (or at exit), so one runtime's finalize (Kokkos') does not cut off
/// another's events (OpenMP's, which end at exit).
static FINALIZERS: AtomicUsize = AtomicUsize::new(0);
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

/// Prints one `kprof:` line on stderr.
pub fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

/// The runtime while it records.
#[inline(always)]
pub fn active() -> Option<&'static Runtime> {
    let p = ACTIVE.load(Ordering::Relaxed);
    // SAFETY: ACTIVE only ever holds null or a pointer into the RUNTIME OnceLock,
    // which lives for the rest of the process.
    unsafe { p.as_ref() }
}

/// The runtime, if it was ever started.
pub fn get() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// The current phase.
pub fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::NotStarted,
        1 => Phase::Running,
        2 => Phase::Finalizing,
        3 => Phase::Done,
        _ => Phase::Disabled,
    }
}

/// Counts a call that arrived when nothing records (after finalize: an anomaly).
#[cold]
pub fn inactive_call() {
    if phase() >= Phase::Finalizing && phase() != Phase::Disabled {
        if let Some(rt) = get() {
            rt.anomalies.count(Anomaly::CallAfterFinalize);
        }
    }
}

/// Starts the runtime once, recording `plugin` as attached. Returns the runtime when
/// it records.
pub fn attach(plugin: &str) -> Option<&'static Runtime> {
    START.call_once(start);
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

fn start() {
    let cfg = config().clone();
    if !cfg.enable {
        PHASE.store(Phase::Disabled as u8, Ordering::Release);
        return;
    }
    let clock = Clock::new();
    let start_raw = clock.now();
    let rt = RUNTIME.get_or_init(|| Runtime {
        clock,
        pool: Pool::new(cfg.buffer_mb, INITIAL_CHUNKS),
        names: Interner::new(),
        threads: Registry::default(),
        anomalies: Anomalies::default(),
        devices: Devices::default(),
        sections: Mutex::new(Vec::new()),
        metadata: Mutex::new(Vec::new()),
        plugins: Mutex::new(Vec::new()),
        process: ProcessInfo::current(),
        start_raw,
        end_raw: AtomicU64::new(0),
        shutdown: AtomicBool::new(false),
        done: AtomicBool::new(false),
        writer: OnceLock::new(),
    });
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
    crate::lifecycle::install_exit_hooks(cfg.signals);
    PHASE.store(Phase::Running as u8, Ordering::Release);
    ACTIVE.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
}

/// Stops recording, has the writer write every output, and waits for it (bounded).
/// Safe to call from several places and threads; output is written once. Does not
/// allocate or lock, so the signal handler may call it.
pub fn shutdown() {
    let Some(rt) = get() else { return };
    let won = PHASE
        .compare_exchange(
            Phase::Running as u8,
            Phase::Finalizing as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok();
    if won {
        ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
        rt.end_raw.store(rt.clock.now(), Ordering::Release);
        rt.shutdown.store(true, Ordering::Release);
        rt.wake_writer();
    }
    rt.wait_done();
    PHASE.store(Phase::Done as u8, Ordering::Release);
}

/// Makes this process record nothing more and write nothing (a forked child: its
/// parent owns the output, and the writer thread did not survive the fork).
pub fn disable_in_child() {
    ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
    PHASE.store(Phase::Disabled as u8, Ordering::Release);
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

//! The one runtime of the process: created on first attach, shut down exactly once
//! (by a plugin's finalize, at process exit, or on SIGINT/SIGTERM).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use kprof_abi::Anomaly;

use crate::base::anomaly::Anomalies;
use crate::base::config::Config;
use crate::base::devices::Devices;
use crate::base::process::ProcessInfo;
use crate::base::sync::protocol_statics;
use crate::hot::aggregate::local::Shared;
use crate::hot::buffer::Pool;
use crate::hot::clock::Clock;
use crate::hot::counters::Counters;
use crate::hot::intern::Interner;
use crate::hot::lifecycle::Lifecycle;
use crate::hot::thread::{Registry, Sink};

/// How long a shutdown waits for the writer before giving up (never hang the host).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

pub use crate::hot::lifecycle::Phase;

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
    /// [`crate::hot::aggregate`]); otherwise every event is a record.
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
    /// The PAPI counters read on counted instances, if any.
    pub counters: Option<Counters>,
    /// What kept counters asked for from being counted, one line each.
    pub counter_problems: Vec<String>,
    /// The GPU tool library's own overhead reported by GPU plugins, in ns.
    pub device_cost_ns: AtomicU64,
    /// Ends reported for another thread's instances (GUID, raw time; see
    /// [`crate::hot::events::end_at`]): applied to those still open when the
    /// run ends.
    pub late_ends: Mutex<Vec<(u64, u64)>>,
    /// Shutdown was requested (the writer finishes).
    pub(crate) shutdown: AtomicBool,
    /// The writer has written everything.
    pub(crate) done: AtomicBool,
    /// The writer thread, to wake it.
    pub(crate) writer: OnceLock<std::thread::Thread>,
    /// Instances sampled per node for scatterplots (`KPROF_SAMPLES`; 0: none).
    pub samples: u32,
}

/// The runtime of this process (null before start). A leaked box, never freed: a
/// forked child starts a new one and leaves its parent's copy unused.
pub(crate) static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
protocol_statics! {
    /// The phase, and the runtime while it records (the hot path's one check).
    pub(crate) static LIFE: Lifecycle<Runtime> = Lifecycle::new();
}
/// A forked child with `KPROF_FORK=0` says once that it is not measured.
pub(crate) static FORK_OFF_NOTE: AtomicBool = AtomicBool::new(false);
/// What starts the runtime (a `fn()`, set by the first start; 0 before): a
/// forked child's first event starts its own runtime through it.
static STARTER: AtomicUsize = AtomicUsize::new(0);

/// Sets what starts the runtime (see [`inactive_call`]).
pub(crate) fn set_starter(start: fn()) {
    STARTER.store(start as usize, Ordering::Release);
}
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
    LIFE.active()
}

/// The runtime, if it was ever started (in this process: a forked child's is its
/// own, once it recorded).
pub fn get() -> Option<&'static Runtime> {
    // SAFETY: RUNTIME only ever holds null or a leaked, never freed runtime.
    unsafe { RUNTIME.load(Ordering::Acquire).as_ref() }
}

/// The current phase.
pub fn phase() -> Phase {
    LIFE.phase()
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
            let starter = STARTER.load(Ordering::Acquire);
            if starter != 0 {
                // SAFETY: only set_starter stores here, always a fn().
                let start: fn() = unsafe { std::mem::transmute::<usize, fn()>(starter) };
                start();
            }
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

impl Runtime {
    /// Whether shutdown was requested (writer side).
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Wakes the writer if it sleeps (it also polls every few milliseconds).
    pub fn wake_writer(&self) {
        crate::hot::thread::wake(&self.writer);
    }

    /// What a thread's full chunks go to (given to each thread as it registers).
    pub fn sink(&'static self) -> Sink {
        Sink {
            pool: &self.pool,
            clock: &self.clock,
            threads: &self.threads,
            writer: &self.writer,
        }
    }

    /// What a thread's profile reads of the runtime (given to each profile as
    /// it is made).
    pub fn shared(&'static self) -> Shared {
        Shared {
            clock: &self.clock,
            names: &self.names,
            anomalies: &self.anomalies,
            devices: &self.devices,
            open: self.threads.open_frames(),
            start_raw: self.start_raw,
            counter_events: self.counters.as_ref().map_or(0, |c| c.names.len()),
            samples: self.samples,
        }
    }

    /// Marks the output as written (writer side).
    pub fn mark_done(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Waits (bounded) until the writer has written everything.
    pub(crate) fn wait_done(&self) {
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

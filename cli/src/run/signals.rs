//! `kprof run`'s signals: those sent to kprof go on to the program, once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};

use kprof_abi::forward::FORWARDED;
/// The library `kprof run` preloads into the program so that a signal reaching
/// it both directly and forwarded is delivered once (see `plugins/signals`).
pub use kprof_tables::models::SIGNALS_LIBRARY as SIGNALS_LIB;

/// The forwarded signals as a set.
fn forwarded_set() -> libc::sigset_t {
    // SAFETY: initialising a signal set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks (`true`) or unblocks the forwarded signals in the calling thread. kprof
/// keeps them blocked from before the program starts to the end, and takes them
/// with `sigwaitinfo` on its forwarding thread; the program unblocks them before
/// it starts (`pre_exec`).
pub fn block_forwarded(block: bool) {
    let set = forwarded_set();
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: signal-mask manipulation of this thread with a valid set.
    unsafe {
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Whether `sig` is pending in any thread of process `pid`, or for the whole
/// process: it received the signal already (sent to the process group, which
/// kprof and the program share), and must not get it a second time.
fn already_pending(pid: i32, sig: libc::c_int) -> bool {
    let bit = 1u64 << (sig - 1);
    let has = |path: PathBuf| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines().any(|l| {
                let Some((key, hex)) = l.split_once(':') else {
                    return false;
                };
                matches!(key, "SigPnd" | "ShdPnd")
                    && u64::from_str_radix(hex.trim(), 16).is_ok_and(|v| v & bit != 0)
            })
        })
    };
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    has(PathBuf::from(format!("/proc/{pid}/status")))
        || std::fs::read_dir(task_dir)
            .is_ok_and(|d| d.flatten().any(|t| has(t.path().join("status"))))
}

/// The program's pid while it runs (not yet reaped), 0 after.
pub static CHILD: AtomicI32 = AtomicI32::new(0);

/// Whether process `pid` has [`SIGNALS_LIB`] mapped: it tells a marked forwarded
/// copy from a direct one. A program without it (a static program, or one that
/// cleared `LD_PRELOAD`) gets a plain `kill`, as it always has.
fn pairs_copies(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
        maps.split(|&b| b == b'\n')
            .any(|l| l.ends_with(SIGNALS_LIB.as_bytes()))
    })
}

/// Sends `sig`, which `origin` sent to kprof, on to the program: queued with a
/// value that marks it as forwarded and names `origin` where the program pairs
/// copies, so a copy it also received directly from `origin` is delivered once.
fn forward(child: i32, sig: libc::c_int, origin: u32) {
    if pairs_copies(child) {
        let value = libc::sigval {
            sival_ptr: kprof_abi::forward::encode(origin) as usize as *mut libc::c_void,
        };
        // SAFETY: sigqueue has no memory preconditions.
        if unsafe { libc::sigqueue(child, sig, value) } == 0 {
            return;
        }
    }
    // SAFETY: kill has no memory preconditions.
    unsafe {
        libc::kill(child, sig);
    }
}

/// Takes the forwarded signals (blocked in every kprof thread) and sends each to
/// the program, unless it has it already: from the terminal (the foreground group,
/// `SI_KERNEL`), or from a `kill` of the whole process group (still pending in the
/// program when kprof looks).
pub fn forward_signals(child: i32) {
    let set = forwarded_set();
    loop {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: waiting on a valid set; the kernel fills `info`.
        let sig = unsafe { libc::sigwaitinfo(&set, info.as_mut_ptr()) };
        if sig <= 0 {
            continue;
        }
        // SAFETY: sigwaitinfo returned a signal, so `info` is filled.
        let info = unsafe { info.assume_init() };
        let code = info.si_code;
        if code == libc::SI_KERNEL || already_pending(child, sig) {
            continue;
        }
        // Not once the program has ended: its pid may be reused.
        if CHILD.load(Ordering::SeqCst) != child {
            continue;
        }
        let origin = if matches!(code, libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL) {
            // SAFETY: these codes fill the sender's pid.
            unsafe { info.si_pid() as u32 }
        } else {
            kprof_abi::forward::NO_ORIGIN
        };
        forward(child, sig, origin);
    }
}

/// Name of a signal for the end-of-run lines.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    format!("signal {sig} ({name})")
}

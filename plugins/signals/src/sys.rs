//! The C library's own functions behind ours (found with `dlsym(RTLD_NEXT)`), the
//! layout of a signal's information, and the async-signal-safe calls the handler
//! makes.
//!
//! This library defines `sigaction` and `signal` itself, so nothing in it may call
//! `libc::sigaction` or `libc::signal`: those names bind to our own definitions.

use std::ffi::{c_int, c_void, CStr};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `sigaction`'s type.
pub type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
/// The type of `signal` and its variants.
pub type SignalFn = unsafe extern "C" fn(c_int, libc::sighandler_t) -> libc::sighandler_t;

/// The C library's functions we stand in front of.
#[derive(Clone, Copy)]
pub enum Next {
    Sigaction,
    Signal,
    BsdSignal,
    SysvSignal,
    UnderSysvSignal,
}

const NAMES: [&CStr; 5] = [
    c"sigaction",
    c"signal",
    c"bsd_signal",
    c"sysv_signal",
    c"__sysv_signal",
];

/// Their addresses, found on first use (0: not yet).
static FOUND: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// The address of the next definition of `which` after this library; 0 if none.
fn next(which: Next) -> usize {
    let i = which as usize;
    let cell = &FOUND[i];
    let known = cell.load(Ordering::Acquire);
    if known != 0 {
        return known;
    }
    // SAFETY: dlsym with a NUL-terminated name. Done once, at the library's start
    // (before the program runs) for sigaction.
    let addr = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[i].as_ptr()) } as usize;
    cell.store(addr, Ordering::Release);
    addr
}

/// The C library's `sigaction`.
pub fn real_sigaction() -> Option<SigactionFn> {
    let addr = next(Next::Sigaction);
    // SAFETY: dlsym found the C library's sigaction, which has this type.
    (addr != 0).then(|| unsafe { std::mem::transmute::<usize, SigactionFn>(addr) })
}

/// The C library's `signal` (or a variant).
pub fn real_signal(which: Next) -> Option<SignalFn> {
    let addr = next(which);
    // SAFETY: dlsym found the C library's function of that name, of this type.
    (addr != 0).then(|| unsafe { std::mem::transmute::<usize, SignalFn>(addr) })
}

/// The part of Linux's `siginfo_t` that `kill` and `sigqueue` fill.
#[repr(C)]
struct SentInfo {
    signo: c_int,
    errno: c_int,
    code: c_int,
    /// The union that follows is pointer-aligned.
    #[cfg(target_pointer_width = "64")]
    _pad: c_int,
    pid: libc::pid_t,
    uid: libc::uid_t,
    value: usize,
}

const _: () = assert!(std::mem::size_of::<SentInfo>() <= std::mem::size_of::<libc::siginfo_t>());

/// Who sent a signal and how: `(code, pid, value)`; `None` without information.
pub fn sender(info: *const libc::siginfo_t) -> Option<(c_int, libc::pid_t, u64)> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel's siginfo for this delivery; SentInfo is a prefix of it.
    let s = unsafe { &*info.cast::<SentInfo>() };
    Some((s.code, s.pid, s.value as u64))
}

/// Makes a forwarded copy's information read as the original: sent with `kill` by
/// `origin`.
pub fn show_as_sent_by(info: *mut libc::siginfo_t, origin: libc::pid_t) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel's siginfo for this delivery, on this handler's frame.
    let s = unsafe { &mut *info.cast::<SentInfo>() };
    s.code = libc::SI_USER;
    s.pid = origin;
    s.value = 0;
}

/// Monotonic milliseconds, wrapping (clock_gettime is async-signal-safe).
pub fn now_ms() -> u32 {
    let mut ts = MaybeUninit::<libc::timespec>::zeroed();
    // SAFETY: filling our own timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, ts.as_mut_ptr()) };
    // SAFETY: zeroed, then filled by the kernel.
    let ts = unsafe { ts.assume_init() };
    (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000) as u32
}

/// This thread's errno.
pub fn errno() -> c_int {
    // SAFETY: the C library's per-thread errno.
    unsafe { *libc::__errno_location() }
}

/// Sets this thread's errno.
pub fn set_errno(e: c_int) {
    // SAFETY: the C library's per-thread errno.
    unsafe { *libc::__errno_location() = e };
}

/// Blocks every signal in this thread; returns the mask it had.
pub fn block_all() -> libc::sigset_t {
    // SAFETY: operating on signal sets we own (pthread_sigmask is async-signal-safe).
    unsafe {
        let mut all = MaybeUninit::<libc::sigset_t>::zeroed();
        let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, all.as_ptr(), old.as_mut_ptr());
        old.assume_init()
    }
}

/// Restores a mask [`block_all`] returned.
pub fn restore(mask: &libc::sigset_t) {
    // SAFETY: a mask the kernel gave us.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
}

/// Calls a program's handler as its flags say.
///
/// # Safety
/// `handler` is the address of a signal handler of the kind `siginfo` says.
pub unsafe fn call_handler(
    handler: usize,
    siginfo: bool,
    sig: c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut c_void,
) {
    if siginfo {
        // SAFETY: the program installed it with SA_SIGINFO: a three-argument handler.
        let f = unsafe {
            std::mem::transmute::<usize, extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)>(
                handler,
            )
        };
        f(sig, info, ctx);
    } else {
        // SAFETY: installed without SA_SIGINFO: a one-argument handler.
        let f = unsafe { std::mem::transmute::<usize, extern "C" fn(c_int)>(handler) };
        f(sig);
    }
}

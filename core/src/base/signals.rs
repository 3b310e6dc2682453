//! Signal masks: the writer thread starts with every signal blocked, and a
//! deferred signal is handled with the asynchronous ones held.

use std::mem::MaybeUninit;

/// Blocks every signal in the calling thread; returns the mask it had. A thread
/// created meanwhile (the writer) inherits the full mask, so asynchronous signals
/// are always delivered to application threads.
pub fn block_all_signals() -> libc::sigset_t {
    // SAFETY: operating on signal sets we own.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigfillset(set.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), old.as_mut_ptr());
        old.assume_init()
    }
}

/// Restores a mask [`block_all_signals`] returned.
pub fn restore_signals(mask: &libc::sigset_t) {
    // SAFETY: a mask the kernel gave us.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
    }
}

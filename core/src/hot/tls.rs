//! The calling thread's [`ThreadState`] pointer, in one word of thread-local storage
//! reached without a function call.
//!
//! `libkprof_core.so` is loaded with `dlopen`, so Rust's `thread_local!` compiles to
//! the general-dynamic TLS model: a call to `__tls_get_addr` on every event (about
//! 15 instructions, a fifth of an event's cost). On x86-64 this word uses the
//! initial-exec model instead (`%fs`-relative, two instructions): the library is
//! marked `STATIC_TLS` and glibc places the word in the static TLS surplus it keeps
//! for exactly this (a `dlopen`ed library may use up to `glibc.rtld.optional_static_tls`,
//! 512 bytes by default; this takes 16: the two words below). Should that space ever be exhausted, `dlopen`
//! of the core fails, the plugin says so on stderr and the program runs unmeasured.
//! Other architectures use `thread_local!`.
//!
//! A second word holds the thread's call-stack sample buffer
//! ([`crate::hot::stack_samples`]) for the sampling signal's handler: an
//! initial-exec word is a fixed offset from the thread pointer, so reading it in
//! a signal handler takes no lock and allocates nothing (a general-dynamic
//! access may call `__tls_get_addr`, which can allocate on a thread's first
//! access). Elsewhere the thread sets its word before its timer is armed, so the
//! handler's access is never the first one.

use crate::hot::thread::ThreadState;

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::ThreadState;

    // One 8-byte word in the thread-local BSS, zero (null) in every new thread.
    // Global (so every codegen unit's reference resolves at link time) but hidden
    // (not exported: each library that links this crate has its own word).
    std::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl kprof_thread_state",
        ".hidden kprof_thread_state",
        ".type kprof_thread_state, @object",
        ".size kprof_thread_state, 8",
        "kprof_thread_state:",
        ".zero 8",
        ".globl kprof_stack_samples",
        ".hidden kprof_stack_samples",
        ".type kprof_stack_samples, @object",
        ".size kprof_stack_samples, 8",
        "kprof_stack_samples:",
        ".zero 8",
        ".popsection",
    );

    /// Address of the calling thread's stack-sample word.
    #[inline(always)]
    fn stack_slot() -> *mut usize {
        let p: usize;
        // SAFETY: as in slot(), for the second word.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:0",
                "add {p}, qword ptr [rip + kprof_stack_samples@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack, preserves_flags)
            );
        }
        p as *mut usize
    }

    /// The calling thread's stack-sample buffer (an address; 0: none).
    /// Async-signal-safe.
    #[inline(always)]
    pub fn stack_get() -> usize {
        // SAFETY: this thread's own aligned word, zero in every new thread.
        unsafe { std::ptr::read_volatile(stack_slot()) }
    }

    /// Sets the calling thread's stack-sample buffer.
    pub fn stack_set(buffer: usize) {
        // SAFETY: as in stack_get; only this thread writes its word.
        unsafe { std::ptr::write_volatile(stack_slot(), buffer) }
    }

    /// Address of the calling thread's word.
    #[inline(always)]
    fn slot() -> *mut *mut ThreadState {
        let p: usize;
        // SAFETY: reads the thread pointer and the linker-resolved TLS offset of a
        // symbol defined above; no memory is written, the stack is not touched.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:0",
                "add {p}, qword ptr [rip + kprof_thread_state@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack, preserves_flags)
            );
        }
        p as *mut *mut ThreadState
    }

    /// The calling thread's state, null before it registered.
    #[inline(always)]
    pub fn get() -> *mut ThreadState {
        // SAFETY: the slot is this thread's own, aligned, always initialized word.
        unsafe { *slot() }
    }

    /// Sets the calling thread's state.
    pub fn set(state: *mut ThreadState) {
        // SAFETY: as in get; only this thread writes its word.
        unsafe { *slot() = state }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::ThreadState;
    use std::cell::Cell;

    thread_local! {
        static STATE: Cell<*mut ThreadState> = const { Cell::new(std::ptr::null_mut()) };
        static STACK: Cell<usize> = const { Cell::new(0) };
    }

    /// The calling thread's stack-sample buffer (an address; 0: none). Called
    /// by the sampling handler only once the thread set it (its TLS block is
    /// then allocated: the access takes no lock and allocates nothing).
    #[inline(always)]
    pub fn stack_get() -> usize {
        STACK.with(Cell::get)
    }

    /// Sets the calling thread's stack-sample buffer.
    pub fn stack_set(buffer: usize) {
        STACK.with(|s| s.set(buffer))
    }

    /// The calling thread's state, null before it registered.
    #[inline(always)]
    pub fn get() -> *mut ThreadState {
        STATE.with(Cell::get)
    }

    /// Sets the calling thread's state.
    pub fn set(state: *mut ThreadState) {
        STATE.with(|s| s.set(state))
    }
}

pub use imp::{get, set, stack_get, stack_set};

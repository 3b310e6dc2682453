//! Call-stack samples (`KPROF_SAMPLE_HZ`): every thread of the process gets a
//! timer on its own CPU time (delivered to that thread with `SIGEV_THREAD_ID`, so
//! an idle thread costs nothing) whose signal, a free real-time signal picked at
//! start, runs [`on_sample`]: it unwinds the interrupted stack
//! ([`crate::hot::unwind`]) and adds it, tagged with the node of the innermost
//! kprof instance the thread had open ([`OpenFrames::innermost_node`]: the
//! in-place profile's own node, no lookup), to the thread's own buffer.
//!
//! A thread that reaches kprof arms its own timer ([`arm`]). A thread that never
//! does (a runtime's worker kprof gets no event from, a program's helper) is
//! found by [`scan`], which lists `/proc/self/task` at the first [`arm`] and then
//! periodically from the writer thread, and gets a timer on its CPU clock made
//! by the scanning thread, carrying its buffer's address in the signal's value;
//! its samples have no kprof node ([`OUTSIDE`]) and their unwind is bounded by
//! the mapping around the interrupted stack pointer ([`crate::hot::mappings`]).
//!
//! The handler is async-signal-safe: it reads two initial-exec thread-local words
//! ([`crate::hot::tls`]) or the timer signal's value, takes no lock, allocates
//! nothing (the buffer, the unwinder's cache and the modules' unwind data are
//! made before the timer is armed) and makes no system call. A buffer is a table of distinct stacks with
//! their counts, so a compute loop's thousands of samples take a few entries; a
//! sample that finds the buffer full is counted as lost. The writer reads the
//! buffers only after [`stop`]: timers deleted, and every handler in progress
//! finished.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::hot::clock::Clock;
use crate::hot::mappings;
use crate::hot::open::OpenFrames;
use crate::hot::tls;

/// Deepest stack kept (deeper ones keep their innermost frames, counted as
/// truncated).
pub const MAX_FRAMES: usize = 128;
/// Words of a thread's buffer of distinct stacks (2 MiB, touched only as used).
const ARENA_WORDS: usize = 1 << 18;
/// Slots of a thread's table of distinct stacks.
const TABLE_SLOTS: usize = 1 << 15;
/// Slots looked at before a new stack is counted as lost (the table is full).
const MAX_PROBES: usize = 64;
/// Words before an entry's frames: its count, then node | frames << 32.
const HEADER: usize = 2;
/// Node of a sample taken outside every instance (the tree's root).
pub const OUTSIDE: u32 = 0;
/// How often the writer looks for threads that never reached kprof ([`scan`]).
pub const SCAN_PERIOD: Duration = Duration::from_millis(100);
/// The first word of every buffer: the handler checks it before it trusts an
/// address that came with a timer signal.
const MAGIC: u64 = 0x6b70_726f_665f_7373;
/// `si_code` of a POSIX timer's signal.
const SI_TIMER: c_int = -2;

/// The signal the samples come with (0: not installed).
static SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// Samples per second of thread CPU time (0: off).
static HZ: AtomicU64 = AtomicU64::new(0);
/// Whether handlers record (cleared by [`stop`]).
static TAKING: AtomicBool = AtomicBool::new(false);
/// The clock the handler's own cost is measured with.
static CLOCK: AtomicPtr<Clock> = AtomicPtr::new(std::ptr::null_mut());
/// Every buffer made, newest first (a lock-free list: a forked child drops it
/// whole, whatever another thread was doing at the fork).
static ALL: AtomicPtr<StackSamples> = AtomicPtr::new(std::ptr::null_mut());
/// The threads whose timers kprof made (a `Mutex<Tids>`, leaked; null until the
/// first is armed: a forked child drops it whole, lock and all).
static TIDS: AtomicPtr<Mutex<Tids>> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the first [`arm`] of this process ran its [`scan`].
static SCANNED: AtomicBool = AtomicBool::new(false);

/// One thread's samples.
pub struct StackSamples {
    /// [`MAGIC`].
    magic: u64,
    /// The thread's index (its slot in the thread registry); None for a thread
    /// that never reached kprof when its timer was made (its samples are the
    /// root's).
    pub thread: Option<u32>,
    /// The thread's OS id.
    pub tid: i32,
    /// The thread's published open instances (None: never reached kprof).
    open: Option<&'static OpenFrames>,
    /// The thread's stack, [low, high); None: the readable and writable mapping
    /// around the interrupted stack pointer ([`mappings::containing`]).
    stack: Option<(u64, u64)>,
    /// The thread's timer (a `timer_t`) while `armed`.
    timer: AtomicUsize,
    armed: AtomicBool,
    /// A handler is running on the thread.
    busy: AtomicBool,
    inner: UnsafeCell<Inner>,
    next: *const StackSamples,
    /// Samples taken (timer periods: a signal that stood for several
    /// expirations counts each).
    pub taken: AtomicU64,
    /// Samples lost: the buffer was full.
    pub lost: AtomicU64,
    /// Samples whose unwind stopped before the stack's outermost frame (kept
    /// with the frames found).
    pub truncated: AtomicU64,
    /// Raw clock ticks the handler took, over all samples.
    pub handler_ticks: AtomicU64,
    /// Signals handled (a signal stands for 1 + its overruns samples).
    pub signals: AtomicU64,
}

// SAFETY: `inner` is written only by the thread's own signal handler (not
// reentrant: the signal is blocked while it runs) and read by the writer only
// after `stop` saw the handler idle with recording off; everything else is atomic.
unsafe impl Sync for StackSamples {}
// SAFETY: as above; the raw `next` pointer is to a leaked, immutable-link buffer.
unsafe impl Send for StackSamples {}

struct Inner {
    arena: Box<[u64]>,
    used: usize,
    /// Arena offset + 1 of each distinct stack (0: empty slot).
    table: Box<[u32]>,
    #[cfg(target_arch = "x86_64")]
    cache: Box<crate::hot::unwind::Cache>,
}

/// One distinct stack and how many samples saw it.
pub struct Entry<'a> {
    /// Samples.
    pub count: u64,
    /// The thread's profile node it was in ([`OUTSIDE`]: none).
    pub node: u32,
    /// Code addresses, innermost first: the interrupted instruction, then return
    /// addresses.
    pub frames: &'a [u64],
}

fn hash(node: u32, frames: &[u64]) -> u64 {
    let mut h = u64::from(node) ^ 0x9e37_79b9_7f4a_7c15;
    for &f in frames {
        h = (h ^ f).wrapping_mul(0x100_0000_01b3).rotate_left(29);
    }
    h ^ (h >> 31)
}

/// Adds one to a counter only its own thread's handler writes (no locked
/// instruction).
fn bump(c: &AtomicU64, by: u64) {
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

impl StackSamples {
    /// A thread's empty buffer of `arena_words` words of stacks (its table and,
    /// on x86-64, its unwinder cache allocated now, not in the handler):
    /// `thread` is its registry index and open instances, None for a thread that
    /// never reached kprof.
    fn new(
        thread: Option<(u32, &'static OpenFrames)>,
        tid: i32,
        stack: Option<(u64, u64)>,
        arena_words: usize,
    ) -> StackSamples {
        StackSamples {
            magic: MAGIC,
            thread: thread.map(|(index, _)| index),
            tid,
            open: thread.map(|(_, open)| open),
            stack,
            timer: AtomicUsize::new(0),
            armed: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            inner: UnsafeCell::new(Inner {
                arena: vec![0u64; arena_words].into_boxed_slice(),
                used: 0,
                table: vec![0u32; TABLE_SLOTS].into_boxed_slice(),
                #[cfg(target_arch = "x86_64")]
                cache: crate::hot::unwind::new_cache(),
            }),
            next: std::ptr::null(),
            taken: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            handler_ticks: AtomicU64::new(0),
            signals: AtomicU64::new(0),
        }
    }

    /// Counts `weight` samples of `frames` in node `node`; false when the buffer
    /// is full.
    fn record(&self, node: u32, frames: &[u64], weight: u64) -> bool {
        // SAFETY: see the Sync impl: only this thread's handler is here.
        let inner = unsafe { &mut *self.inner.get() };
        let head = u64::from(node) | (frames.len() as u64) << 32;
        let h = hash(node, frames) as usize;
        for probe in 0..MAX_PROBES {
            let i = (h.wrapping_add(probe)) % TABLE_SLOTS;
            let Some(&at) = inner.table.get(i) else {
                return false;
            };
            if at == 0 {
                let need = HEADER + frames.len();
                let Some(slot) = inner.arena.get_mut(inner.used..inner.used + need) else {
                    return false;
                };
                slot[0] = weight;
                slot[1] = head;
                slot[HEADER..].copy_from_slice(frames);
                inner.table[i] = inner.used as u32 + 1;
                inner.used += need;
                return true;
            }
            let off = at as usize - 1;
            let same = inner.arena.get(off + 1) == Some(&head)
                && inner.arena.get(off + HEADER..off + HEADER + frames.len()) == Some(frames);
            if same {
                inner.arena[off] += weight;
                return true;
            }
        }
        false
    }

    /// Takes one sample of the interrupted context `ctx`, worth `weight` periods
    /// (1 + the timer's overruns: the kernel checks CPU-time timers at its
    /// ticks, so a period shorter than a tick expires several times at once).
    fn take(&self, ctx: *mut c_void, weight: u64) {
        let mut frames = [0u64; MAX_FRAMES];
        let (n, complete) = self.unwind(ctx, &mut frames);
        if n == 0 {
            bump(&self.lost, 1);
            return;
        }
        if !complete {
            bump(&self.truncated, 1);
        }
        let node = self
            .open
            .and_then(OpenFrames::innermost_node)
            .unwrap_or(OUTSIDE);
        if self.record(node, &frames[..n], weight) {
            bump(&self.taken, weight);
        } else {
            bump(&self.lost, weight);
        }
    }

    /// Unwinds `ctx` into `frames`: how many, and whether the unwind reached
    /// the stack's outermost frame.
    #[cfg(target_arch = "x86_64")]
    fn unwind(&self, ctx: *mut c_void, frames: &mut [u64; MAX_FRAMES]) -> (usize, bool) {
        use framehop::x86_64::UnwindRegsX86_64;
        use framehop::Unwinder as _;
        if ctx.is_null() {
            return (0, false);
        }
        // SAFETY: the kernel passes the interrupted context of this thread.
        let g = unsafe { &(*(ctx as *const libc::ucontext_t)).uc_mcontext.gregs };
        let ip = g[libc::REG_RIP as usize] as u64;
        let sp = g[libc::REG_RSP as usize] as u64;
        let bp = g[libc::REG_RBP as usize] as u64;
        frames[0] = ip;
        let Some((lo, hi)) = self.stack.or_else(|| mappings::containing(sp)) else {
            return (1, false);
        };
        let Some(unwinder) = crate::hot::unwind::current().filter(|_| lo <= sp && sp < hi) else {
            return (1, false);
        };
        // Only the interrupted stack, above its stack pointer, is read.
        let mut read = |addr: u64| {
            if addr >= sp && addr.checked_add(8).is_some_and(|end| end <= hi) {
                // SAFETY: inside this thread's mapped stack (or the mapping
                // around its stack pointer), above its pointer.
                Ok(unsafe { std::ptr::read_unaligned(addr as *const u64) })
            } else {
                Err(())
            }
        };
        // SAFETY: see the Sync impl: only this thread's handler is here.
        let inner = unsafe { &mut *self.inner.get() };
        let mut it = unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            &mut inner.cache,
            &mut read,
        );
        let mut n = 0;
        loop {
            match it.next() {
                Ok(Some(f)) => {
                    if n == MAX_FRAMES {
                        return (n, false);
                    }
                    frames[n] = f.address();
                    n += 1;
                }
                Ok(None) => return (n.max(1), true),
                Err(_) => return (n.max(1), false),
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn unwind(&self, _ctx: *mut c_void, _frames: &mut [u64; MAX_FRAMES]) -> (usize, bool) {
        (0, false)
    }

    /// The distinct stacks taken (call only after [`stop`]).
    pub fn entries(&self) -> Vec<Entry<'_>> {
        // SAFETY: stop() saw this buffer's handler idle with recording off: no
        // writer is left.
        let inner = unsafe { &*self.inner.get() };
        let a = &inner.arena[..inner.used];
        let mut out = Vec::new();
        let mut off = 0;
        while off + HEADER <= a.len() {
            let head = a[off + 1];
            let n = (head >> 32) as usize;
            let Some(frames) = a.get(off + HEADER..off + HEADER + n) else {
                break;
            };
            out.push(Entry {
                count: a[off],
                node: head as u32,
                frames,
            });
            off += HEADER + n;
        }
        out
    }
}

/// The sampling signal's handler: one sample of the interrupted thread, into
/// the buffer its thread-local word names, or, for a thread that never reached
/// kprof, the one its timer's signal carries.
extern "C" fn on_sample(_sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the word holds null or this thread's leaked buffer.
    let own = unsafe { (tls::stack_get() as *const StackSamples).as_ref() };
    let Some(b) = own.or_else(|| carried(info)) else {
        return;
    };
    b.busy.store(true, Ordering::SeqCst);
    if TAKING.load(Ordering::SeqCst) {
        // SAFETY: null or the runtime's leaked clock.
        let clock = unsafe { CLOCK.load(Ordering::Acquire).as_ref() };
        let t0 = clock.map_or(0, Clock::now);
        b.take(ctx, 1 + overruns(info));
        let t1 = clock.map_or(0, Clock::now);
        bump(&b.handler_ticks, t1.wrapping_sub(t0));
        bump(&b.signals, 1);
    }
    b.busy.store(false, Ordering::Release);
}

/// The buffer a timer signal carries in its value (see [`scan`]): only one of
/// this process's buffers, known by its address in [`ALL`] and its magic word.
/// Async-signal-safe (loads only).
fn carried(info: *const libc::siginfo_t) -> Option<&'static StackSamples> {
    // SAFETY: the kernel's siginfo for this signal; for SI_TIMER the union
    // holds (timer id, overrun, value): the value, a pointer-sized word, is 8
    // bytes into it, which starts 16 bytes in on 64-bit Linux.
    let value = unsafe {
        match info.as_ref() {
            Some(i) if i.si_code == SI_TIMER => {
                std::ptr::read_unaligned((info as *const u8).add(24) as *const usize)
            }
            _ => return None,
        }
    };
    let mut p = ALL.load(Ordering::Acquire);
    // SAFETY: the list holds leaked buffers, linked once and never unlinked.
    while let Some(b) = unsafe { p.as_ref() } {
        if p as usize == value {
            return (b.magic == MAGIC).then_some(b);
        }
        p = b.next as *mut StackSamples;
    }
    None
}

/// A timer signal's overrun count: the expirations merged into this one.
fn overruns(info: *const libc::siginfo_t) -> u64 {
    // SAFETY: the kernel's siginfo for this signal; for SI_TIMER the union
    // holds (timer id, overrun, value): the overrun is the int 4 bytes into it,
    // which starts 16 bytes in on 64-bit Linux.
    unsafe {
        match info.as_ref() {
            Some(i) if i.si_code == SI_TIMER => {
                let overrun = std::ptr::read_unaligned((info as *const u8).add(20) as *const c_int);
                u64::try_from(overrun).unwrap_or(0).min(1_000_000)
            }
            _ => 0,
        }
    }
}

/// The signal samples come with, when installed.
pub fn signal() -> Option<c_int> {
    match SIGNAL.load(Ordering::Acquire) {
        0 => None,
        s => Some(s as c_int),
    }
}

/// Samples per second of each thread's CPU time (0: off).
pub fn hz() -> u64 {
    HZ.load(Ordering::Acquire)
}

/// Starts sampling at `hz` (threads are armed as kprof first sees them, see
/// [`arm`]): picks the highest real-time signal that has no handler and
/// installs the handler on it. Returns the signal.
pub fn install(hz: u64, clock: &'static Clock) -> Result<c_int, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("call-stack samples are taken on x86-64 only".into());
    }
    CLOCK.store(clock as *const Clock as *mut Clock, Ordering::Release);
    let sig = match signal() {
        Some(s) => s,
        None => {
            let sig = free_signal().ok_or("no free real-time signal for the samples")?;
            // SAFETY: a zeroed sigaction is valid; the handler is an extern "C"
            // function of the SA_SIGINFO form.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sample as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    return Err(format!(
                        "cannot install the sampling handler: {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            SIGNAL.store(sig as usize, Ordering::Release);
            sig
        }
    };
    #[cfg(target_arch = "x86_64")]
    crate::hot::unwind::prepare();
    HZ.store(hz, Ordering::Release);
    TAKING.store(true, Ordering::SeqCst);
    Ok(sig)
}

/// The highest real-time signal whose disposition is the default (no handler,
/// not ignored), leaving the lowest ones to the C library and MPI stacks.
fn free_signal() -> Option<c_int> {
    let (low, high) = (libc::SIGRTMIN() + 2, libc::SIGRTMAX() - 1);
    (low..=high).rev().find(|&sig| {
        // SAFETY: querying a disposition into a zeroed struct we own.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
        }
    })
}

/// The calling thread's stack bounds.
fn stack_bounds() -> (u64, u64) {
    // SAFETY: a zeroed attr filled by pthread_getattr_np, then destroyed.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: usize = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            (addr as u64, addr as u64 + size as u64)
        } else {
            (0, 0)
        }
    }
}

/// The program loaded libraries (see `CoreApi::libraries_loaded`): when
/// sampling, reads their unwind information now rather than when the next
/// thread registers. Not for a signal handler.
pub fn libraries_loaded() {
    if hz() > 0 && signal().is_some() {
        #[cfg(target_arch = "x86_64")]
        crate::hot::unwind::prepare();
    }
}

/// Arms sampling on the calling thread (index `thread`, publishing its open
/// instances in `open`), when sampling is on: its buffer, then its timer. A
/// timer [`scan`] made for the thread before it reached kprof is deleted first
/// (its samples stay, the root's). The process's first arm also scans for the
/// threads that will never reach kprof. Not for a signal handler (allocates,
/// locks, reads the loader's module list).
pub fn arm(thread: u32, open: &'static OpenFrames) {
    let hz = hz();
    let Some(sig) = signal().filter(|_| hz > 0 && TAKING.load(Ordering::Acquire)) else {
        return;
    };
    // A library loaded since the last thread registered.
    #[cfg(target_arch = "x86_64")]
    crate::hot::unwind::prepare();
    let tid = gettid();
    claim(tid);
    let b = Box::new(StackSamples::new(
        Some((thread, open)),
        tid,
        Some(stack_bounds()),
        ARENA_WORDS,
    ));
    // Set before the timer exists: the handler's first access to the word is
    // never the thread's first.
    let b = start_timer(b, libc::CLOCK_THREAD_CPUTIME_ID, sig, hz, |b| {
        tls::stack_set(b as *const StackSamples as usize)
    });
    if b.is_none() {
        tls::stack_set(0);
    }
    if !SCANNED.swap(true, Ordering::AcqRel) {
        scan();
    }
}

/// The calling thread's OS id.
fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Makes the timer of buffer `b` on clock `clock`, delivering `sig` to thread
/// `b.tid` every 1/`hz` s of that clock, with `b`'s address as the signal's
/// value; `before_start` runs once the buffer is published in [`ALL`], before
/// the timer starts. The buffer is leaked once the timer exists (a handler may
/// read it until the end); None when the kernel refused a timer.
fn start_timer(
    b: Box<StackSamples>,
    clock: libc::clockid_t,
    sig: c_int,
    hz: u64,
    before_start: impl FnOnce(&'static StackSamples),
) -> Option<&'static StackSamples> {
    let addr = &*b as *const StackSamples as *mut c_void;
    // SAFETY: sigevent is a plain struct we own; the timer id is written by the
    // kernel.
    let id = unsafe {
        let mut sev: libc::sigevent = std::mem::zeroed();
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = sig;
        sev.sigev_notify_thread_id = b.tid;
        sev.sigev_value = libc::sigval { sival_ptr: addr };
        let mut id: libc::timer_t = std::mem::zeroed();
        if libc::timer_create(clock, &mut sev, &mut id) != 0 {
            return None;
        }
        id
    };
    b.timer.store(id as usize, Ordering::Relaxed);
    b.armed.store(true, Ordering::SeqCst);
    let b = push(Box::leak(b));
    before_start(b);
    let period_ns = 1_000_000_000 / hz.max(1);
    let period = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: a timer made above and not deleted (only disarm deletes it).
    if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
        disarm(b);
    }
    // A stop that ran meanwhile may have missed this timer: delete it here.
    if !TAKING.load(Ordering::SeqCst) {
        disarm(b);
    }
    Some(b)
}

/// Links `b` at the head of [`ALL`].
fn push(b: &'static mut StackSamples) -> &'static StackSamples {
    let mut head = ALL.load(Ordering::Acquire);
    loop {
        b.next = head;
        match ALL.compare_exchange_weak(
            head,
            b as *mut StackSamples,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    b
}

/// What kprof knows of a thread of the process.
enum Seen {
    /// Reached kprof ([`arm`]), or is kprof's own ([`own_thread`]): no timer from
    /// [`scan`].
    Own,
    /// Found by [`scan`]: its buffer (and timer).
    Foreign(&'static StackSamples),
    /// Found by [`scan`], and the kernel refused it a timer (it was ending):
    /// not tried again while its id is listed.
    Refused,
}

/// The threads kprof knows, by OS id.
#[derive(Default)]
struct Tids {
    seen: FxHashMap<i32, Seen>,
}

/// The threads kprof knows (made on first use).
fn tids() -> &'static Mutex<Tids> {
    let p = TIDS.load(Ordering::Acquire);
    // SAFETY: published maps are leaked and never freed.
    if let Some(t) = unsafe { p.as_ref() } {
        return t;
    }
    let fresh = Box::into_raw(Box::new(Mutex::new(Tids::default())));
    match TIDS.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just leaked.
        Ok(_) => unsafe { &*fresh },
        Err(other) => {
            // SAFETY: ours, never published; `other` is leaked like the rest.
            unsafe {
                drop(Box::from_raw(fresh));
                &*other
            }
        }
    }
}

/// Marks thread `tid` as one [`scan`] leaves alone, deleting the timer it made
/// for it if any (its samples so far stay).
fn claim(tid: i32) {
    let mut t = tids().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Seen::Foreign(b)) = t.seen.insert(tid, Seen::Own) {
        disarm(b);
    }
}

/// The calling thread is one of kprof's own (the writer): never sampled.
pub fn own_thread() {
    claim(gettid());
}

/// The CPU clock of thread `tid` of this process (the kernel's
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`).
fn thread_clock(tid: i32) -> libc::clockid_t {
    /// `CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED`.
    const PER_THREAD_SCHED: libc::clockid_t = 4 | 2;
    ((!tid) << 3) | PER_THREAD_SCHED
}

/// The ids of the process's threads (`/proc/self/task`).
fn list_threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Gives every thread of the process that has no timer and is not kprof's own
/// (one that never reached kprof: a runtime's worker kprof gets no event from, a
/// program's helper) a buffer and a timer on its CPU clock, delivered to it and
/// carrying the buffer's address; forgets the threads gone since the last scan
/// (their timers deleted), so that a reused id is sampled again. Publishes the
/// mappings first when threads came or went (the new threads' stacks among
/// them). Returns the number of threads armed. Not for a signal handler, and
/// off the application's hot path: the first [`arm`] and the writer (every
/// [`SCAN_PERIOD`]) call it.
pub fn scan() -> usize {
    let hz = hz();
    let Some(sig) = signal().filter(|_| hz > 0 && TAKING.load(Ordering::Acquire)) else {
        return 0;
    };
    let mut now = list_threads();
    if now.is_empty() {
        return 0;
    }
    now.sort_unstable();
    // A thread registering holds the map for a moment: this scan is then left
    // to the next one (the writer never waits on an application thread).
    let mut t = match tids().try_lock() {
        Ok(t) => t,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return 0,
    };
    let before = t.seen.len();
    t.seen.retain(|tid, seen| {
        let alive = now.binary_search(tid).is_ok();
        if let (false, Seen::Foreign(b)) = (alive, &seen) {
            disarm(b);
        }
        alive
    });
    let new: Vec<i32> = now
        .into_iter()
        .filter(|tid| !t.seen.contains_key(tid))
        .collect();
    if new.is_empty() {
        if t.seen.len() != before {
            mappings::publish();
        }
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    crate::hot::unwind::prepare();
    mappings::publish();
    let mut armed = 0;
    for tid in new {
        let b = Box::new(StackSamples::new(None, tid, None, ARENA_WORDS));
        // A thread gone since the listing gets no timer (the kernel refuses).
        let seen = match start_timer(b, thread_clock(tid), sig, hz, |_| ()) {
            Some(b) => {
                armed += 1;
                Seen::Foreign(b)
            }
            None => Seen::Refused,
        };
        t.seen.insert(tid, seen);
    }
    armed
}

/// Deletes `b`'s timer if it has one (once, whoever calls).
fn disarm(b: &StackSamples) {
    if b.armed.swap(false, Ordering::AcqRel) {
        let id = b.timer.load(Ordering::Relaxed) as libc::timer_t;
        // SAFETY: a timer this process created and has not deleted (the swap
        // above lets one caller through).
        unsafe { libc::timer_delete(id) };
    }
}

/// The calling thread exits: its timer goes (its samples stay for the end).
pub fn disarm_current() {
    // SAFETY: the word holds null or this thread's leaked buffer.
    if let Some(b) = unsafe { (tls::stack_get() as *const StackSamples).as_ref() } {
        tls::stack_set(0);
        disarm(b);
    }
}

/// Every buffer made in this process (this runtime's threads, and those
/// [`scan`] found).
fn all() -> Vec<&'static StackSamples> {
    let mut out = Vec::new();
    let mut p = ALL.load(Ordering::Acquire);
    // SAFETY: the list holds leaked buffers, linked once and never unlinked.
    while let Some(b) = unsafe { p.as_ref() } {
        out.push(b);
        p = b.next as *mut StackSamples;
    }
    out
}

/// Stops sampling at the end of the run: every timer deleted, then waits (up to
/// `wait` in all) for the handlers in progress. Returns every buffer, oldest
/// first; a buffer whose handler did not finish in time is left out.
pub fn stop(wait: std::time::Duration) -> Vec<&'static StackSamples> {
    TAKING.store(false, Ordering::SeqCst);
    let mut list = all();
    list.reverse();
    for b in &list {
        disarm(b);
    }
    let deadline = std::time::Instant::now() + wait;
    list.retain(|b| {
        while b.busy.load(Ordering::SeqCst) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        true
    });
    list
}

/// In a forked child: the parent's buffers belong to the parent's threads (the
/// child has no timer: POSIX timers are not inherited), and the forking
/// thread's word no longer names one of this process's threads; nor do the
/// thread ids kprof knew (their map is dropped whole, with its lock, which
/// another of the parent's threads may have held) and the parent's mappings.
/// The child's first [`arm`] scans its own threads.
pub fn forget_in_child() {
    ALL.store(std::ptr::null_mut(), Ordering::Release);
    TIDS.store(std::ptr::null_mut(), Ordering::Release);
    SCANNED.store(false, Ordering::Release);
    mappings::forget();
    tls::stack_set(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer() -> StackSamples {
        let open: &'static OpenFrames = Box::leak(Box::new(OpenFrames::new(4)));
        StackSamples::new(Some((1, open)), 1, Some((0, 0)), 64)
    }

    #[test]
    fn same_stacks_are_counted_once_and_a_full_buffer_refuses() {
        let b = buffer();
        assert!(b.record(3, &[10, 20, 30], 1));
        assert!(b.record(3, &[10, 20, 30], 1));
        assert!(b.record(4, &[10, 20, 30], 1));
        assert!(b.record(3, &[10, 20], 1));
        let e = b.entries();
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].count, e[0].node, e[0].frames),
            (2, 3, &[10, 20, 30][..])
        );
        assert_eq!((e[1].count, e[1].node), (1, 4));
        assert_eq!(e[2].frames, &[10, 20]);
        // 64 words: 5 + 5 + 4 used; a stack of 60 frames does not fit.
        assert!(!b.record(5, &[7; 60], 1));
        assert_eq!(b.entries().len(), 3);
    }

    #[test]
    fn the_innermost_published_node_tags_a_sample() {
        let open = OpenFrames::new(4);
        assert_eq!(open.innermost_node(), None);
        open.publish(0, 1, 5);
        open.publish(1, 2, 9);
        assert_eq!(open.innermost_node(), Some(9));
        open.close(1);
        assert_eq!(open.innermost_node(), Some(5));
    }
}

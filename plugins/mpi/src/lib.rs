//! `libkprof_mpi.so`: kprof's MPI plugin, through the MPI standard's profiling
//! interface (PMPI).
//!
//! The library defines the C functions `MPI_Init`, `MPI_Send`, `MPI_Waitall`, ...
//! Preloaded (`kprof run` sets `LD_PRELOAD`) or linked before the MPI library, the
//! program's calls bind to them; each records the call and forwards to the MPI
//! library's `PMPI_*` function of the same name, found at run time with `dlsym`
//! (the plugin never links `libmpi`). Results and return codes are MPI's own.
//!
//! Per call: a node of kind `mpi` named by the function, under the caller's call
//! path, with the arguments `bytes_sent`, `bytes_received`, `peer` (one message,
//! in `MPI_COMM_WORLD` ranks) and `comm_size` (collectives). Point-to-point
//! messages go to the profile's message matrix (channel `MPI p2p`): sends when
//! posted, receives when completed (`MPI_Recv`, `MPI_Sendrecv`, or the wait or test
//! that completes an `MPI_Irecv`: source and bytes from the status, which holds
//! the bytes received in both families), peers translated to `MPI_COMM_WORLD` ranks
//! with `PMPI_Group_translate_ranks` once per communicator. Datatype sizes
//! (`PMPI_Type_size`) are asked once per datatype and kept until a datatype is
//! freed (`MPI_Type_free`, whose handle MPI may give the next datatype).
//!
//! Open MPI and MPICH (and the libraries sharing its ABI), told apart at
//! `MPI_Init` ([`sys::Abi`]); under another MPI the plugin says so in one line
//! and only forwards. Each call is one call into the core once MPI returned
//! ([`kprof_abi::CoreApi::call`], the clock read before it). No lock, allocation or system call on a call, except the first use
//! of a communicator (its translation) and a wait or test that completes more than
//! 64 tracked receives, or ignores the statuses of more than 64 requests (a heap
//! buffer then); no panic reaches the program ([`kprof_abi::guard`]).

// The exported names are the MPI standard's.
#![allow(non_snake_case)]

pub mod fortran;
// Private, with `pub` items: the crate's own, as their `pub(crate)` items were,
// without a `pub(crate)` (which reads as a use of the crate's root, and the root
// uses them: a module circle).
mod job;
mod say;
pub mod state;
pub mod sys;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::MaybeUninit;

use kprof_abi::guard::guard;
use kprof_abi::message;

use state::{active, pmpi, Active, CommView, Pending, Rec};
use sys::{Comm, Datatype, Op, Pmpi, Request, Status};

/// Records a call: takes the core clock, forwards (`fwd`), lets `after` add
/// what the result tells to the call's record, and hands the record to the
/// core whole (one call into it). Not measuring: only forwards.
#[inline(always)]
fn measured(
    name: &'static CStr,
    fwd: impl FnOnce(&'static Pmpi) -> c_int,
    after: impl FnOnce(&'static Active, &'static Pmpi, c_int, &mut Rec),
) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    let Some(a) = active() else {
        return fwd(p);
    };
    // No guard: opening only calls the core's `extern "C"` functions.
    let mut r = a.open(name);
    let rc = fwd(p);
    guard((), || {
        after(a, p, rc, &mut r);
        a.record(&r);
    });
    rc
}

fn nonneg(v: c_int) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Bytes of `count` elements of `ty` (0 for a negative count).
fn bytes(a: &Active, p: &sys::Pmpi, count: c_int, ty: Datatype) -> u64 {
    nonneg(count) * state::type_size(&a.abi, p, ty)
}

/// Bytes of the buffer `buf` (`count` of `ty`), or `in_place` when the program
/// passed `MPI_IN_PLACE` (the data is the other buffer's block).
fn unless_in_place(
    a: &Active,
    p: &sys::Pmpi,
    buf: *const c_void,
    count: c_int,
    ty: Datatype,
    in_place: u64,
) -> u64 {
    if a.abi.in_place(buf) {
        in_place
    } else {
        bytes(a, p, count, ty)
    }
}

/// Sum of `n` counts at `counts` (0 when NULL).
///
/// # Safety
/// `counts` is NULL or holds `n` integers.
unsafe fn sum(counts: *const c_int, n: c_int) -> u64 {
    if counts.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(counts, n as usize) }
        .iter()
        .map(|&c| nonneg(c))
        .sum()
}

/// The count at index `i` of `counts` (0 when NULL or out of range).
///
/// # Safety
/// `counts` is NULL or holds more than `i` integers when `0 <= i < n`.
unsafe fn at(counts: *const c_int, i: c_int, n: c_int) -> u64 {
    if counts.is_null() || i < 0 || i >= n {
        return 0;
    }
    // SAFETY: the caller's contract.
    nonneg(unsafe { *counts.add(i as usize) })
}

// ---- start and end ----

/// `MPI_Init`: attaches kprof (Open MPI or MPICH), then initializes MPI.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: forwarded as received.
    init(c"MPI_Init", None, |p| unsafe { (p.init)(argc, argv) })
}

/// `MPI_Init_thread`: as [`MPI_Init`]; the level provided goes to the metadata.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    init(c"MPI_Init_thread", Some(provided), |p| {
        // SAFETY: forwarded as received.
        unsafe { (p.init_thread)(argc, argv, required, provided) }
    })
}

fn init(
    name: &'static CStr,
    provided: Option<*mut c_int>,
    fwd: impl FnOnce(&'static Pmpi) -> c_int,
) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    let started = guard(None, || state::start(p));
    if let Some((api, _)) = started {
        // SAFETY: a static NUL-terminated name.
        guard((), || unsafe {
            (api.begin_static)(kprof_abi::Kind::Mpi as u8, name.as_ptr(), 0, 0);
        });
    }
    let rc = fwd(p);
    if let Some((api, abi)) = started {
        guard((), || {
            if rc == sys::SUCCESS {
                // Open MPI loads its components (the collectives' code) inside
                // the call: samples in them unwind past them from now on. Read
                // before the call's end, so that this work is the call's.
                // SAFETY: no arguments.
                unsafe { (api.libraries_loaded)() };
            }
            // SAFETY: plain values.
            unsafe { (api.end)(kprof_abi::Kind::Mpi as u8, 0) };
            if rc == sys::SUCCESS {
                // SAFETY: MPI wrote the level it provides.
                let level = provided.filter(|q| !q.is_null()).map(|q| unsafe { *q });
                state::activate(api, abi, p, level);
            }
        });
    }
    rc
}

/// `MPI_Finalize`: records it, reduces the job's profile over kprof's
/// communicator ([`job::reduce`]: this rank's profile ends here, before the real
/// finalize), then finalizes MPI and kprof's part.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    // SAFETY: no arguments.
    finalize(|p| unsafe { (p.finalize)() })
}

/// [`MPI_Finalize`] with the real finalize `fwd` (C's or Fortran's).
fn finalize(fwd: impl FnOnce(&'static Pmpi) -> c_int) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    let Some(a) = active() else {
        return fwd(p);
    };
    guard((), || {
        // The call is counted; its time is the real finalize's, after the
        // profile ends.
        a.record(&a.open(c"MPI_Finalize"));
        state::deactivate(a);
        if let Some(j) = &a.job {
            job::reduce(a.api, a.world_rank, a.world_size, p, j);
        }
    });
    let rc = fwd(p);
    guard((), || {
        // SAFETY: no arguments; called once (ACTIVE is now null).
        unsafe { (a.api.finalize)() };
    });
    rc
}

/// `MPI_Abort`: this rank's profile is written (its own directory) before MPI
/// ends the job.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: Comm, errorcode: c_int) -> c_int {
    // SAFETY: forwarded as received.
    abort(errorcode, |p| unsafe { (p.abort)(comm, errorcode) })
}

/// [`MPI_Abort`] with the real abort `fwd` (C's or Fortran's).
fn abort(errorcode: c_int, fwd: impl FnOnce(&'static Pmpi) -> c_int) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    if let Some(a) = active() {
        guard((), || {
            a.record(&a.open(c"MPI_Abort"));
            state::deactivate(a);
            say::metadata(a.api, "MPI_Abort error code", &errorcode.to_string());
            let mut len = 0usize;
            // SAFETY: an out-pointer to a local; the form is given back at once.
            unsafe {
                let f = (a.api.job_profile)(u64::try_from(a.world_rank).unwrap_or(0), &mut len);
                (a.api.job_free)(f, len);
                (a.api.job_done)(0);
            }
        });
    }
    fwd(p)
}

// ---- point to point ----

/// Records a send of `count` x `dtype` to `dest` of `comm`: arguments (`peer`
/// when `with_peer`: the nonblocking posts leave it to the matrix, which has it)
/// and the message.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sent(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    dtype: Datatype,
    count: c_int,
    dest: c_int,
    comm: Comm,
    with_peer: bool,
) {
    let bytes = bytes(a, p, count, dtype);
    r.arg(c"bytes_sent", bytes);
    if dest < 0 {
        return; // MPI_PROC_NULL
    }
    let view = a.view(p, comm);
    if let Some(peer) = Active::world_rank_of(view, dest) {
        if with_peer {
            r.arg(c"peer", u64::from(peer));
        }
        r.message(a, peer, message::SEND, bytes);
    }
}

/// `MPI_Send`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    dtype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Send",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.send)(buf, count, dtype, dest, tag, comm) },
        |a, p, rc, r| {
            if rc == sys::SUCCESS {
                sent(a, p, r, dtype, count, dest, comm, true);
            }
        },
    )
}

/// `MPI_Isend`: the message counts when posted.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    dtype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    req: *mut Request,
) -> c_int {
    measured(
        c"MPI_Isend",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.isend)(buf, count, dtype, dest, tag, comm, req) },
        |a, p, rc, r| {
            if rc == sys::SUCCESS && !req.is_null() {
                // SAFETY: MPI wrote the new request.
                state::untrack(unsafe { a.abi.handle(req, 0) });
                sent(a, p, r, dtype, count, dest, comm, false);
            }
        },
    )
}

/// `MPI_Recv`: the message counts from the status (kprof's own when the program
/// ignores it).
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dtype: Datatype,
    source: c_int,
    tag: c_int,
    comm: Comm,
    status: *mut Status,
) -> c_int {
    let mut own = Status::default();
    let st = match active() {
        Some(a) if a.abi.ignores(status) => &mut own as *mut Status,
        _ => status,
    };
    measured(
        c"MPI_Recv",
        // SAFETY: forwarded, with a status of kprof's own in place of
        // MPI_STATUS_IGNORE.
        |p| unsafe { (p.recv)(buf, count, dtype, source, tag, comm, st) },
        |a, p, rc, r| {
            if rc == sys::SUCCESS && !st.is_null() && !a.abi.ignores(st) {
                let view = a.view(p, comm);
                // SAFETY: MPI filled the status.
                let st = unsafe { a.abi.status(st, 0) };
                let got = a.received(view, st, r);
                received_args(r, got, true);
            }
        },
    )
}

/// Arguments of a call that completed one receive (`peer` when `one`).
#[inline]
fn received_args(r: &mut Rec, got: Option<(u32, u64)>, one: bool) {
    if let Some((peer, bytes)) = got {
        r.arg(c"bytes_received", bytes);
        if one {
            r.arg(c"peer", u64::from(peer));
        }
    }
}

/// `MPI_Irecv`: remembered until a wait or test completes it.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    dtype: Datatype,
    source: c_int,
    tag: c_int,
    comm: Comm,
    req: *mut Request,
) -> c_int {
    measured(
        c"MPI_Irecv",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.irecv)(buf, count, dtype, source, tag, comm, req) },
        |a, p, rc, _| {
            if rc == sys::SUCCESS && !req.is_null() {
                let view = a.view(p, comm);
                // SAFETY: MPI wrote the new request.
                state::track(unsafe { a.abi.handle(req, 0) }, view, dtype);
            }
        },
    )
}

/// `MPI_Sendrecv`: a send and a receive.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    status: *mut Status,
) -> c_int {
    let mut own = Status::default();
    let st = match active() {
        Some(a) if a.abi.ignores(status) => &mut own as *mut Status,
        _ => status,
    };
    measured(
        c"MPI_Sendrecv",
        |p| {
            // SAFETY: forwarded, with a status of kprof's own in place of
            // MPI_STATUS_IGNORE.
            unsafe {
                (p.sendrecv)(
                    sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                    source, recvtag, comm, st,
                )
            }
        },
        |a, p, rc, r| {
            if rc != sys::SUCCESS {
                return;
            }
            sent(a, p, r, sendtype, sendcount, dest, comm, false);
            if !st.is_null() && !a.abi.ignores(st) {
                let view = a.view(p, comm);
                // SAFETY: MPI filled the status.
                let got = a.received(view, unsafe { a.abi.status(st, 0) }, r);
                received_args(r, got, false);
            }
        },
    )
}

/// `MPI_Request_free`: a freed receive is no longer tracked.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(req: *mut Request) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    if let Some(a) = active().filter(|_| !req.is_null()) {
        // SAFETY: the program's request.
        let r = unsafe { a.abi.handle(req, 0) };
        guard((), || state::untrack(r));
    }
    // SAFETY: forwarded as received.
    unsafe { (p.request_free)(req) }
}

// ---- completion ----

/// Tracked receives a wait or test can complete, by request index.
const INLINE: usize = 64;

#[derive(Clone, Copy)]
struct Tracked {
    index: c_int,
    /// Where the receive is tracked.
    claim: state::Claim,
    pending: Pending,
}

/// The tracked receives among the requests of one wait or test, in index order
/// (taken before the call: MPI resets completed handles).
struct Scan {
    inline: [MaybeUninit<Tracked>; INLINE],
    n: usize,
    spill: Vec<Tracked>,
}

impl Scan {
    /// An empty scan (nothing written: the arrays stay uninitialized).
    #[inline(always)]
    fn new() -> Scan {
        Scan {
            inline: [const { MaybeUninit::uninit() }; INLINE],
            n: 0,
            spill: Vec::new(),
        }
    }

    /// Finds the tracked receives among `count` requests at `reqs`.
    ///
    /// # Safety
    /// `reqs` holds `count` requests of `abi` (or is NULL).
    #[inline]
    unsafe fn fill(&mut self, abi: &sys::Abi, reqs: *const Request, count: c_int) {
        if reqs.is_null() || count <= 0 {
            return;
        }
        for i in 0..count as usize {
            // SAFETY: the caller's contract.
            let req = unsafe { abi.handle(reqs, i) };
            if let Some((claim, pending)) = state::lookup(req) {
                let t = Tracked {
                    index: i as c_int,
                    claim,
                    pending,
                };
                if self.n < INLINE {
                    self.inline[self.n] = MaybeUninit::new(t);
                    self.n += 1;
                } else {
                    self.spill.push(t);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The tracked receives in index order: the inline ones, then the spilled.
    fn parts(&self) -> [&[Tracked]; 2] {
        // SAFETY: the first `n` are initialized.
        let inline =
            unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast::<Tracked>(), self.n) };
        [inline, self.spill.as_slice()]
    }

    /// The tracked receive of request `index`.
    fn find(&self, index: c_int) -> Option<&Tracked> {
        for part in self.parts() {
            if let Ok(k) = part.binary_search_by_key(&index, |t| t.index) {
                return Some(&part[k]);
            }
        }
        None
    }
}

/// Statuses for a wait or test: the program's, or kprof's own when it passed
/// `MPI_STATUSES_IGNORE` and a tracked receive needs one. Not moved once
/// [`Statuses::set`] handed out a pointer into it.
struct Statuses {
    inline: [MaybeUninit<Status>; INLINE],
    heap: Vec<Status>,
    ptr: *mut Status,
}

impl Statuses {
    #[inline(always)]
    fn new() -> Statuses {
        Statuses {
            inline: [const { MaybeUninit::uninit() }; INLINE],
            heap: Vec::new(),
            ptr: std::ptr::null_mut(),
        }
    }

    /// The statuses to pass to MPI for `count` requests (kprof's own are
    /// Open MPI's size, larger than MPICH's: enough for either).
    #[inline]
    fn set(&mut self, abi: &sys::Abi, given: *mut Status, count: c_int, need: bool) -> *mut Status {
        self.ptr = given;
        if abi.ignores(given) && need && count > 0 {
            if count as usize <= INLINE {
                self.ptr = self.inline.as_mut_ptr().cast();
            } else {
                self.heap = vec![Status::default(); count as usize];
                self.ptr = self.heap.as_mut_ptr();
            }
        }
        self.ptr
    }

    /// Status `i`, which MPI filled (None when the program ignores them and
    /// kprof needed none).
    ///
    /// # Safety
    /// `i` is below the count and MPI filled that status.
    unsafe fn get(&self, abi: &sys::Abi, i: c_int) -> Option<sys::StatusView> {
        if self.ptr.is_null() || abi.ignores(self.ptr) || i < 0 {
            return None;
        }
        // SAFETY: the caller's contract.
        Some(unsafe { abi.status(self.ptr, i as usize) })
    }
}

/// Records the completion of tracked receive `t` with status `st`; returns its
/// (peer, bytes).
#[inline]
fn completed(
    a: &Active,
    r: &mut Rec,
    t: &Tracked,
    st: Option<sys::StatusView>,
) -> Option<(u32, u64)> {
    state::release(t.claim);
    a.received(t.pending.view, st?, r)
}

/// Adds the arguments of a call that completed `got` receives.
#[inline]
fn completion_args(r: &mut Rec, n: u32, bytes: u64, peer: Option<u32>) {
    if n == 0 {
        return;
    }
    r.arg(c"bytes_received", bytes);
    if let (1, Some(peer)) = (n, peer) {
        r.arg(c"peer", u64::from(peer));
    }
}

/// Which requests a successful wait or test completed.
#[derive(Clone, Copy)]
pub(crate) enum Done {
    /// None.
    Nothing,
    /// Every request, each with the status of its index (`MPI_Waitall`, an
    /// `MPI_Testall` that set its flag).
    All,
    /// Request `index` (from 0), with status 0.
    One(c_int),
    /// `n` requests whose indices MPI wrote at `indices` (counting from
    /// `first`), the j-th with status j (`MPI_Waitsome`, `MPI_Testsome`).
    Some {
        /// MPI's array of indices.
        indices: *const c_int,
        /// Indices it wrote.
        n: c_int,
        /// The index of the first request (1 in Fortran).
        first: c_int,
    },
}

/// A wait or test: scan, forward with statuses, record what completed.
/// `fwd` gets the statuses pointer; `done` tells what completed after a
/// successful call.
fn completion(
    name: &'static CStr,
    reqs: *const Request,
    count: c_int,
    statuses: *mut Status,
    fwd: impl FnOnce(&'static Pmpi, *mut Status) -> c_int,
    done: impl FnOnce() -> Done,
) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    let Some(a) = active() else {
        return fwd(p, statuses);
    };
    let mut r = a.open(name);
    // Built in place and never moved: they are arrays of a few KiB.
    let mut scan = Scan::new();
    // SAFETY: the program passes `count` requests.
    guard((), || unsafe { scan.fill(&a.abi, reqs, count) });
    let mut st = Statuses::new();
    let ptr = st.set(&a.abi, statuses, count, !scan.is_empty());
    let rc = fwd(p, ptr);
    guard((), || {
        // SAFETY: MPI filled the status of each completed request.
        record_completion(a, &mut r, &scan, rc, done, |s| unsafe { st.get(&a.abi, s) });
    });
    rc
}

/// Records a wait or test whose call returned `rc`: when it succeeded, with the
/// tracked receives of `scan` it completed (`done` says which; `status` reads
/// one status). Shared by the C and Fortran entries.
pub(crate) fn record_completion(
    a: &Active,
    r: &mut Rec,
    scan: &Scan,
    rc: c_int,
    done: impl FnOnce() -> Done,
    status: impl Fn(c_int) -> Option<sys::StatusView>,
) {
    if scan.is_empty() || rc != sys::SUCCESS {
        a.record(r);
        return;
    }
    let (mut n, mut bytes, mut peer) = (0u32, 0u64, None);
    let mut one = |t: &Tracked, s: c_int| {
        if let Some((w, b)) = completed(a, r, t, status(s)) {
            n += 1;
            bytes += b;
            peer = Some(w);
        }
    };
    match done() {
        Done::Nothing => {}
        Done::All => {
            for t in scan.parts().into_iter().flatten() {
                one(t, t.index);
            }
        }
        Done::One(index) => {
            if let Some(t) = scan.find(index) {
                one(t, 0);
            }
        }
        Done::Some { indices, n, first } => {
            for j in 0..n {
                // SAFETY: MPI wrote `n` indices.
                let index = unsafe { *indices.add(j as usize) } - first;
                if let Some(t) = scan.find(index) {
                    one(t, j);
                }
            }
        }
    }
    completion_args(r, n, bytes, peer);
    a.record(r);
}

/// `MPI_Wait`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut Request, status: *mut Status) -> c_int {
    completion(
        c"MPI_Wait",
        req,
        1,
        status,
        // SAFETY: forwarded, statuses possibly kprof's own.
        |p, st| unsafe { (p.wait)(req, st) },
        || Done::One(0),
    )
}

/// `MPI_Waitall`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    reqs: *mut Request,
    statuses: *mut Status,
) -> c_int {
    completion(
        c"MPI_Waitall",
        reqs,
        count,
        statuses,
        // SAFETY: forwarded, statuses possibly kprof's own.
        |p, st| unsafe { (p.waitall)(count, reqs, st) },
        || Done::All,
    )
}

/// `MPI_Waitany`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut Request,
    index: *mut c_int,
    status: *mut Status,
) -> c_int {
    completion(
        c"MPI_Waitany",
        reqs,
        count,
        status,
        // SAFETY: forwarded, status possibly kprof's own.
        |p, st| unsafe { (p.waitany)(count, reqs, index, st) },
        || {
            let i = if index.is_null() {
                sys::UNDEFINED
            } else {
                // SAFETY: MPI wrote the index.
                unsafe { *index }
            };
            if i >= 0 {
                Done::One(i)
            } else {
                Done::Nothing
            }
        },
    )
}

/// `MPI_Waitsome`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    reqs: *mut Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    completion(
        c"MPI_Waitsome",
        reqs,
        incount,
        statuses,
        // SAFETY: forwarded, statuses possibly kprof's own.
        |p, st| unsafe { (p.waitsome)(incount, reqs, outcount, indices, st) },
        // SAFETY: MPI wrote `outcount` indices.
        || unsafe { some(outcount, indices, incount, 0) },
    )
}

/// What a `Waitsome`/`Testsome` completed (its indices counting from `first`).
///
/// # Safety
/// `outcount` and `indices` as MPI filled them.
pub(crate) unsafe fn some(
    outcount: *const c_int,
    indices: *const c_int,
    incount: c_int,
    first: c_int,
) -> Done {
    if outcount.is_null() || indices.is_null() {
        return Done::Nothing;
    }
    // SAFETY: the caller's contract.
    let n = unsafe { *outcount };
    if n == sys::UNDEFINED || n <= 0 {
        return Done::Nothing;
    }
    Done::Some {
        indices,
        n: n.min(incount),
        first,
    }
}

/// `MPI_Test`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    req: *mut Request,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    completion(
        c"MPI_Test",
        req,
        1,
        status,
        // SAFETY: forwarded, status possibly kprof's own.
        |p, st| unsafe { (p.test)(req, flag, st) },
        || {
            // SAFETY: MPI wrote the flag.
            if !flag.is_null() && unsafe { *flag } != 0 {
                Done::One(0)
            } else {
                Done::Nothing
            }
        },
    )
}

/// `MPI_Testall`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    reqs: *mut Request,
    flag: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    completion(
        c"MPI_Testall",
        reqs,
        count,
        statuses,
        // SAFETY: forwarded, statuses possibly kprof's own.
        |p, st| unsafe { (p.testall)(count, reqs, flag, st) },
        || {
            // SAFETY: MPI wrote the flag.
            if !flag.is_null() && unsafe { *flag } != 0 {
                Done::All
            } else {
                Done::Nothing
            }
        },
    )
}

/// `MPI_Testsome`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    reqs: *mut Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    completion(
        c"MPI_Testsome",
        reqs,
        incount,
        statuses,
        // SAFETY: forwarded, statuses possibly kprof's own.
        |p, st| unsafe { (p.testsome)(incount, reqs, outcount, indices, st) },
        // SAFETY: MPI wrote `outcount` indices.
        || unsafe { some(outcount, indices, incount, 0) },
    )
}

// ---- collectives ----

/// Arguments of a collective: bytes this rank sent and received, and the
/// communicator's size.
#[inline(always)]
fn collective(r: &mut Rec, size: c_int, sent: u64, received: u64) {
    r.args([
        (c"bytes_sent", sent),
        (c"bytes_received", received),
        (c"comm_size", nonneg(size)),
    ]);
}

/// `MPI_Barrier`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: Comm) -> c_int {
    measured(
        c"MPI_Barrier",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.barrier)(comm) },
        |a, p, _, r| barrier_done(a, p, r, comm),
    )
}

/// `MPI_Bcast`: the root sends, the others receive.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dtype: Datatype,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Bcast",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.bcast)(buf, count, dtype, root, comm) },
        |a, p, _, r| bcast_done(a, p, r, count, dtype, root, comm),
    )
}

/// `MPI_Reduce`: every rank sends its vector, the root receives the result.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dtype: Datatype,
    op: Op,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Reduce",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.reduce)(sendbuf, recvbuf, count, dtype, op, root, comm) },
        |a, p, _, r| reduce_done(a, p, r, count, dtype, root, comm),
    )
}

/// `MPI_Allreduce`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dtype: Datatype,
    op: Op,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Allreduce",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.allreduce)(sendbuf, recvbuf, count, dtype, op, comm) },
        |a, p, _, r| allreduce_done(a, p, r, count, dtype, comm),
    )
}

/// `MPI_Allgather`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Allgather",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.allgather)(
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
            )
        },
        |a, p, _, r| {
            allgather_done(
                a,
                p,
                r,
                sendbuf,
                (sendcount, sendtype),
                (recvcount, recvtype),
                comm,
            )
        },
    )
}

/// `MPI_Allgatherv`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Allgatherv",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.allgatherv)(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
            )
        },
        // SAFETY: as MPI received them.
        |a, p, _, r| unsafe {
            let (s, v) = ((sendcount, sendtype), (recvcounts, recvtype));
            allgatherv_done(a, p, r, sendbuf, s, v, comm)
        },
    )
}

/// `MPI_Alltoall`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Alltoall",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.alltoall)(
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
            )
        },
        |a, p, _, r| {
            alltoall_done(
                a,
                p,
                r,
                sendbuf,
                (sendcount, sendtype),
                (recvcount, recvtype),
                comm,
            )
        },
    )
}

/// `MPI_Alltoallv`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Alltoallv",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.alltoallv)(
                sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                comm,
            )
        },
        // SAFETY: as MPI received them.
        |a, p, _, r| unsafe {
            let (s, v) = ((sendcounts, sendtype), (recvcounts, recvtype));
            alltoallv_done(a, p, r, sendbuf, s, v, comm)
        },
    )
}

/// `MPI_Gather`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Gather",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.gather)(
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
            )
        },
        |a, p, _, r| {
            let (s, v) = ((sendcount, sendtype), (recvcount, recvtype));
            gather_done(a, p, r, sendbuf, s, v, root, comm)
        },
    )
}

/// `MPI_Gatherv`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Gatherv",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.gatherv)(
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
            )
        },
        // SAFETY: as MPI received them.
        |a, p, _, r| unsafe {
            let (s, v) = ((sendcount, sendtype), (recvcounts, recvtype));
            gatherv_done(a, p, r, sendbuf, s, v, root, comm)
        },
    )
}

/// `MPI_Scatter`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Scatter",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.scatter)(
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
            )
        },
        |a, p, _, r| {
            let (s, v) = ((sendcount, sendtype), (recvcount, recvtype));
            scatter_done(a, p, r, recvbuf.cast_const(), s, v, root, comm)
        },
    )
}

/// `MPI_Scatterv`.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
) -> c_int {
    measured(
        c"MPI_Scatterv",
        // SAFETY: forwarded as received.
        |p| unsafe {
            (p.scatterv)(
                sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
            )
        },
        // SAFETY: as MPI received them.
        |a, p, _, r| unsafe {
            let (s, v) = ((sendcounts, sendtype), (recvcount, recvtype));
            scatterv_done(a, p, r, recvbuf.cast_const(), s, v, root, comm)
        },
    )
}

/// The arguments of an `MPI_Barrier` on `comm`.
#[inline]
fn barrier_done(a: &Active, p: &Pmpi, r: &mut Rec, comm: Comm) {
    let (size, _) = a.size_and_rank(a.view(p, comm));
    r.arg(c"comm_size", nonneg(size));
}

/// The arguments of an `MPI_Bcast`.
#[inline]
fn bcast_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    count: c_int,
    dtype: Datatype,
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let bytes = bytes(a, p, count, dtype);
    let (sent, received) = if me == root { (bytes, 0) } else { (0, bytes) };
    collective(r, size, sent, received);
}

/// The arguments of an `MPI_Reduce`.
#[inline]
fn reduce_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    count: c_int,
    dtype: Datatype,
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let bytes = bytes(a, p, count, dtype);
    collective(r, size, bytes, if me == root { bytes } else { 0 });
}

/// The arguments of an `MPI_Allreduce`.
#[inline]
fn allreduce_done(a: &Active, p: &Pmpi, r: &mut Rec, count: c_int, dtype: Datatype, comm: Comm) {
    let (size, _) = a.size_and_rank(a.view(p, comm));
    let bytes = bytes(a, p, count, dtype);
    collective(r, size, bytes, bytes);
}

/// The arguments of an `MPI_Allgather` (counts and types: send, receive).
#[allow(clippy::too_many_arguments)]
#[inline]
fn allgather_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcount, recvtype): (c_int, Datatype),
    comm: Comm,
) {
    let (size, _) = a.size_and_rank(a.view(p, comm));
    let block = bytes(a, p, recvcount, recvtype);
    let sent = unless_in_place(a, p, sendbuf, sendcount, sendtype, block);
    collective(r, size, sent, block * nonneg(size));
}

/// The arguments of an `MPI_Alltoall` (counts and types: send, receive).
#[inline]
fn alltoall_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcount, recvtype): (c_int, Datatype),
    comm: Comm,
) {
    let (size, _) = a.size_and_rank(a.view(p, comm));
    let received = bytes(a, p, recvcount, recvtype) * nonneg(size);
    let sent = if a.abi.in_place(sendbuf) {
        received
    } else {
        bytes(a, p, sendcount, sendtype) * nonneg(size)
    };
    collective(r, size, sent, received);
}

/// The arguments of an `MPI_Gather` (counts and types: send, receive).
#[allow(clippy::too_many_arguments)]
#[inline]
fn gather_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcount, recvtype): (c_int, Datatype),
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let block = if me == root {
        bytes(a, p, recvcount, recvtype)
    } else {
        0
    };
    let sent = unless_in_place(a, p, sendbuf, sendcount, sendtype, block);
    collective(r, size, sent, block * nonneg(size));
}

/// The arguments of an `MPI_Scatter` (counts and types: send, receive).
#[allow(clippy::too_many_arguments)]
#[inline]
fn scatter_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    recvbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcount, recvtype): (c_int, Datatype),
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let block = if me == root {
        bytes(a, p, sendcount, sendtype)
    } else {
        0
    };
    let received = unless_in_place(a, p, recvbuf, recvcount, recvtype, block);
    collective(r, size, block * nonneg(size), received);
}

/// The arguments of an `MPI_Allgatherv` (count and type sent; counts and type
/// received).
///
/// # Safety
/// `recvcounts` holds the communicator's size of counts (or is NULL).
#[inline]
unsafe fn allgatherv_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcounts, recvtype): (*const c_int, Datatype),
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let ts = state::type_size(&a.abi, p, recvtype);
    // SAFETY: recvcounts holds `size` counts at every rank.
    let (all, mine) = unsafe { (sum(recvcounts, size), at(recvcounts, me, size)) };
    let sent = unless_in_place(a, p, sendbuf, sendcount, sendtype, mine * ts);
    collective(r, size, sent, all * ts);
}

/// The arguments of an `MPI_Alltoallv` (counts and types: send, receive).
///
/// # Safety
/// Both count arrays hold the communicator's size of counts (sendcounts unless
/// in place), or are NULL.
#[inline]
unsafe fn alltoallv_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcounts, sendtype): (*const c_int, Datatype),
    (recvcounts, recvtype): (*const c_int, Datatype),
    comm: Comm,
) {
    let (size, _) = a.size_and_rank(a.view(p, comm));
    // SAFETY: both count arrays hold `size` counts (sendcounts unless in place).
    let received = unsafe { sum(recvcounts, size) } * state::type_size(&a.abi, p, recvtype);
    let sent = if a.abi.in_place(sendbuf) {
        received
    } else {
        // SAFETY: as above.
        let n = unsafe { sum(sendcounts, size) };
        n * state::type_size(&a.abi, p, sendtype)
    };
    collective(r, size, sent, received);
}

/// The arguments of an `MPI_Gatherv` (count and type sent; counts and type
/// received).
///
/// # Safety
/// `recvcounts` holds the communicator's size of counts at the root (or is NULL).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn gatherv_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    sendbuf: *const c_void,
    (sendcount, sendtype): (c_int, Datatype),
    (recvcounts, recvtype): (*const c_int, Datatype),
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let (received, mine) = if me == root {
        let ts = state::type_size(&a.abi, p, recvtype);
        // SAFETY: recvcounts holds `size` counts at the root.
        unsafe { (sum(recvcounts, size) * ts, at(recvcounts, me, size) * ts) }
    } else {
        (0, 0)
    };
    let sent = unless_in_place(a, p, sendbuf, sendcount, sendtype, mine);
    collective(r, size, sent, received);
}

/// The arguments of an `MPI_Scatterv` (counts and type sent; count and type
/// received).
///
/// # Safety
/// `sendcounts` holds the communicator's size of counts at the root (or is NULL).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn scatterv_done(
    a: &Active,
    p: &Pmpi,
    r: &mut Rec,
    recvbuf: *const c_void,
    (sendcounts, sendtype): (*const c_int, Datatype),
    (recvcount, recvtype): (c_int, Datatype),
    root: c_int,
    comm: Comm,
) {
    let (size, me) = a.size_and_rank(a.view(p, comm));
    let (sent, mine) = if me == root {
        let ts = state::type_size(&a.abi, p, sendtype);
        // SAFETY: sendcounts holds `size` counts at the root.
        unsafe { (sum(sendcounts, size) * ts, at(sendcounts, me, size) * ts) }
    } else {
        (0, 0)
    };
    let received = unless_in_place(a, p, recvbuf, recvcount, recvtype, mine);
    collective(r, size, sent, received);
}

// ---- communicators ----

/// `MPI_Comm_split`: the new communicator's translation is built now.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut Comm,
) -> c_int {
    measured(
        c"MPI_Comm_split",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.comm_split)(comm, color, key, newcomm) },
        // SAFETY: MPI wrote the new communicator.
        |a, p, rc, _| learn_new(a, p, rc, newcomm),
    )
}

/// `MPI_Comm_dup`: the new communicator's translation is built now.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: Comm, newcomm: *mut Comm) -> c_int {
    measured(
        c"MPI_Comm_dup",
        // SAFETY: forwarded as received.
        |p| unsafe { (p.comm_dup)(comm, newcomm) },
        |a, p, rc, _| learn_new(a, p, rc, newcomm),
    )
}

fn learn_new(a: &Active, p: &Pmpi, rc: c_int, newcomm: *mut Comm) {
    if rc != sys::SUCCESS || newcomm.is_null() {
        return;
    }
    // SAFETY: MPI wrote the new communicator (MPI_COMM_NULL for MPI_UNDEFINED).
    let c = unsafe { a.abi.handle(newcomm, 0) };
    if c != a.abi.comm_null && c != a.abi.comm_world {
        // A handle reused from a freed communicator is translated afresh.
        a.forget(c);
        let _: CommView = a.learn(p, c as Comm);
    }
}

/// `MPI_Comm_free`: the handle may name another communicator later.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut Comm) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    if let Some(a) = active() {
        if !comm.is_null() {
            // SAFETY: the program's communicator.
            let c = unsafe { a.abi.handle(comm, 0) };
            guard((), || a.forget(c));
        }
    }
    // SAFETY: forwarded as received.
    unsafe { (p.comm_free)(comm) }
}

// ---- datatypes ----

/// `MPI_Type_free`: the datatype's handle may name another datatype later, so
/// the sizes kprof caches are dropped.
///
/// # Safety
/// The MPI standard's C binding.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(dtype: *mut Datatype) -> c_int {
    let Some(p) = pmpi() else {
        return sys::ERR_OTHER;
    };
    guard((), state::forget_type_sizes);
    // SAFETY: forwarded as received.
    unsafe { (p.type_free)(dtype) }
}

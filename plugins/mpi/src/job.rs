//! The job's profile, reduced over MPI itself, and the ranks' clocks.
//!
//! At `MPI_Init` kprof duplicates `MPI_COMM_WORLD` ([`Job::start`]): all its
//! traffic goes over that communicator, never the program's. There, each rank
//! measures its clock's offset to rank 0's ([`clock_offsets`]).
//!
//! At `MPI_Finalize`, before the real one ([`reduce`]): the core ends this
//! rank's profile (its own files are written, so nothing is lost whatever
//! happens next) and hands its reducible form; the forms go up a binomial tree
//! (log2 P steps: rank r receives from r+1, r+2, r+4, ... while those bits of r
//! are 0, then sends to r with its lowest bit cleared), each rank folding its
//! children's into its own through the core; rank 0 has the core write the
//! job's profile, and the outcome goes back down the tree: a rank whose profile
//! is in the job's removes its own files (unless `KPROF_PER_RANK=1`).
//!
//! No step blocks a rank whose peers did not arrive: every exchange is
//! nonblocking and waited for with a bound (`KPROF_MPI_WAIT_S`, default 10 s, for
//! a peer to arrive; its subtree gets more). A rank that gives up keeps its own
//! files, says so in one line, and the job's profile lists the ranks it holds.

use std::ffi::c_int;
use std::ptr;
use std::time::{Duration, Instant};

use kprof_abi::CoreApi;

use crate::say::{metadata, warn};
use crate::sys::{self, Abi, Comm, Datatype, Pmpi, Request, Status};

/// Tags on kprof's communicator.
const TAG_ARRIVED: c_int = 1;
const TAG_LEN: c_int = 2;
const TAG_DATA: c_int = 3;
const TAG_RESULT: c_int = 4;
const TAG_PING: c_int = 5;
const TAG_PONG: c_int = 6;
const TAG_OFFSET: c_int = 7;

/// Ping-pongs per rank for the clock offset (the smallest round trip wins).
const PINGS: usize = 8;

/// kprof's communicator and what it needs.
#[derive(Clone, Copy)]
pub struct Job {
    /// The duplicate of `MPI_COMM_WORLD`.
    pub comm: Comm,
    /// `MPI_BYTE`.
    pub byte: Datatype,
}

impl Job {
    /// Duplicates `world` (collective: every rank is in `MPI_Init`). None when
    /// that fails (the job then ends with per-rank files, as without it).
    pub fn start(p: &Pmpi, abi: &Abi) -> Option<Job> {
        let (world, byte) = (abi.comm_world as Comm, abi.byte);
        // Zeroed: MPICH writes only the low 4 bytes of the handle.
        let mut comm: Comm = ptr::null_mut();
        // SAFETY: MPI is initialized; an out-pointer to a local.
        let rc = unsafe { (p.comm_dup)(world, &mut comm) };
        (rc == sys::SUCCESS && !comm.is_null()).then_some(Job { comm, byte })
    }
}

/// The bound on waiting for a peer to arrive.
fn wait_bound() -> Duration {
    let s = kprof_tables::settings::mpi::MPI_WAIT_S
        .get()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(10.0);
    Duration::from_secs_f64(s)
}

/// Waits for `req` until `bound` has passed; true when it completed. A request
/// that did not complete is cancelled and freed (it never completes later into
/// memory that is gone).
fn wait(p: &Pmpi, req: &mut Request, bound: Duration) -> bool {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let mut done: c_int = 0;
        let mut st = Status::default();
        // SAFETY: a request this module started; out-pointers to locals.
        let rc = unsafe { (p.test)(req, &mut done, &mut st) };
        if rc != sys::SUCCESS {
            return false;
        }
        if done != 0 {
            return true;
        }
        if start.elapsed() >= bound {
            // SAFETY: as above; cancelling then freeing an unfinished request.
            unsafe {
                (p.cancel)(req);
                (p.request_free)(req);
            }
            return false;
        }
        spins += 1;
        if spins < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn isend(p: &Pmpi, j: &Job, buf: &[u8], to: c_int, tag: c_int) -> Option<Request> {
    let n = c_int::try_from(buf.len()).ok()?;
    let mut req: Request = ptr::null_mut();
    // SAFETY: `buf` outlives the request (every caller waits for it or frees it
    // before returning, and the bytes are not freed before).
    let rc = unsafe { (p.isend)(buf.as_ptr().cast(), n, j.byte, to, tag, j.comm, &mut req) };
    (rc == sys::SUCCESS).then_some(req)
}

fn irecv(p: &Pmpi, j: &Job, buf: &mut [u8], from: c_int, tag: c_int) -> Option<Request> {
    let n = c_int::try_from(buf.len()).ok()?;
    let mut req: Request = ptr::null_mut();
    // SAFETY: as for isend.
    let rc = unsafe {
        (p.irecv)(
            buf.as_mut_ptr().cast(),
            n,
            j.byte,
            from,
            tag,
            j.comm,
            &mut req,
        )
    };
    (rc == sys::SUCCESS).then_some(req)
}

/// Sends `buf` and waits for it (bounded).
fn send(p: &Pmpi, j: &Job, buf: &[u8], to: c_int, tag: c_int, bound: Duration) -> bool {
    isend(p, j, buf, to, tag).is_some_and(|mut r| wait(p, &mut r, bound))
}

/// Receives exactly `buf.len()` bytes (bounded).
fn recv(p: &Pmpi, j: &Job, buf: &mut [u8], from: c_int, tag: c_int, bound: Duration) -> bool {
    irecv(p, j, buf, from, tag).is_some_and(|mut r| wait(p, &mut r, bound))
}

/// A form the core handed out, freed through it.
struct Form<'a> {
    api: &'a CoreApi,
    ptr: *mut u8,
    len: usize,
}

impl Form<'_> {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the core's buffer of `len` bytes, alive until dropped.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Form<'_> {
    fn drop(&mut self) {
        // SAFETY: a form from job_profile/job_fold, freed once.
        unsafe { (self.api.job_free)(self.ptr, self.len) };
    }
}

/// Receives child `c`'s form (it first says it arrived, within `arrive`; its
/// form follows within `subtree`).
fn from_child(p: &Pmpi, j: &Job, c: c_int, arrive: Duration, subtree: Duration) -> Option<Vec<u8>> {
    let mut one = [0u8; 1];
    if !recv(p, j, &mut one, c, TAG_ARRIVED, arrive) {
        return None;
    }
    let mut len = [0u8; 8];
    if !recv(p, j, &mut len, c, TAG_LEN, subtree) {
        return None;
    }
    let n = usize::try_from(u64::from_le_bytes(len)).ok()?;
    let mut data = vec![0u8; n];
    recv(p, j, &mut data, c, TAG_DATA, subtree).then_some(data)
}

/// The job's reduction at `MPI_Finalize` (see the module's documentation).
/// Returns once this rank's part is done; never waits unboundedly.
pub fn reduce(api: &'static CoreApi, rank: c_int, size: c_int, p: &Pmpi, j: &Job) {
    if size < 2 {
        // One rank: its own profile is the job's.
        return;
    }
    let mut len = 0usize;
    // SAFETY: an out-pointer to a local.
    let ptr = unsafe { (api.job_profile)(u64::try_from(rank).unwrap_or(0), &mut len) };
    if ptr.is_null() {
        return;
    }
    let mut mine = Form { api, ptr, len };
    let arrive = wait_bound();
    // Say we arrived, first: the parent then knows to wait for our subtree.
    let parent = (rank > 0).then(|| rank & (rank - 1));
    let mut arrived_req = parent.and_then(|q| isend(p, j, &[1], q, TAG_ARRIVED));
    // Up: fold the children's forms into ours.
    let mut folded: Vec<c_int> = Vec::new();
    let mut missing: Vec<c_int> = Vec::new();
    let mut mask: c_int = 1;
    let mut level = 0u32;
    while mask < size && rank & mask == 0 {
        let c = rank + mask;
        if c < size {
            // The child's subtree has `level` levels of its own waits.
            let subtree = arrive * (2 * level + 2);
            match from_child(p, j, c, arrive, subtree) {
                Some(data) => {
                    let mut n = 0usize;
                    // SAFETY: two byte buffers with their lengths; an out-pointer.
                    let f = unsafe {
                        (api.job_fold)(mine.ptr, mine.len, data.as_ptr(), data.len(), &mut n)
                    };
                    if f.is_null() {
                        missing.push(c);
                    } else {
                        mine = Form {
                            api,
                            ptr: f,
                            len: n,
                        };
                        folded.push(c);
                    }
                }
                None => missing.push(c),
            }
        }
        mask <<= 1;
        level += 1;
    }
    let depth = usize::BITS - (size.max(1) as usize).leading_zeros();
    // Up: our subtree's form to the parent; then the outcome from it.
    let included = match parent {
        None => {
            // SAFETY: the form's bytes and length.
            let ok = unsafe { (api.job_write)(mine.ptr, mine.len) } == 0;
            if ok && !missing.is_empty() {
                warn(&format!(
                    "the job's profile leaves out the ranks below rank(s) {missing:?}, which did not reach MPI_Finalize within {} s; they keep their own directories",
                    arrive.as_secs_f64()
                ));
            }
            ok
        }
        Some(q) => {
            let bound = arrive * (2 * depth + 2);
            let arrived = arrived_req.as_mut().is_some_and(|r| wait(p, r, bound));
            arrived_req = None;
            let len = (mine.len as u64).to_le_bytes();
            let sent = arrived
                && send(p, j, &len, q, TAG_LEN, bound)
                && send(p, j, mine.bytes(), q, TAG_DATA, bound);
            let mut flag = [0u8; 1];
            let told = sent && recv(p, j, &mut flag, q, TAG_RESULT, bound * (depth + 1));
            if !told {
                warn(&format!(
                    "MPI rank {rank}: the job's reduction did not reach rank {q} within its bound; this rank keeps its own directory"
                ));
            }
            told && flag[0] == 1
        }
    };
    if let Some(r) = arrived_req.as_mut() {
        wait(p, r, Duration::ZERO);
    }
    drop(mine);
    // Down: tell the children whose forms we folded.
    let flag = [u8::from(included)];
    for c in folded {
        send(p, j, &flag, c, TAG_RESULT, arrive);
    }
    // SAFETY: plain value.
    unsafe { (api.job_done)(i32::from(included)) };
}

/// Each rank's clock offset to rank 0's, measured at `MPI_Init` over kprof's
/// communicator: rank 0 ping-pongs with each rank in turn ([`PINGS`] times);
/// for each round trip, the rank's clock read at the pong against the midpoint
/// of rank 0's send and receive gives an offset, within half the round trip;
/// the shortest round trip wins (its offset is the most certain). Rank 0 sends
/// each rank its result, which goes to the profile's metadata.
pub fn clock_offsets(api: &'static CoreApi, rank: c_int, size: c_int, p: &Pmpi, j: &Job) {
    // SAFETY: no arguments.
    let now = || unsafe { (api.now_ns)() };
    let bound = wait_bound();
    if rank == 0 {
        metadata(api, kprof_core_keys::OFFSET, "0");
        metadata(api, kprof_core_keys::ERROR, "0");
        for r in 1..size {
            let mut best: Option<(u64, i64)> = None;
            for _ in 0..PINGS {
                let t0 = now();
                let mut pong = [0u8; 8];
                let ok = send(p, j, &[0], r, TAG_PING, bound)
                    && recv(p, j, &mut pong, r, TAG_PONG, bound);
                let t1 = now();
                if !ok {
                    break;
                }
                let theirs = u64::from_le_bytes(pong);
                let rtt = t1.saturating_sub(t0);
                let mid = t0 + rtt / 2;
                let offset = theirs as i64 - mid as i64;
                if best.is_none_or(|(b, _)| rtt < b) {
                    best = Some((rtt, offset));
                }
            }
            let (rtt, offset) = best.unwrap_or((u64::MAX, 0));
            let mut msg = [0u8; 16];
            msg[..8].copy_from_slice(&offset.to_le_bytes());
            // The pong was read between t0 and t1: within ceil(rtt / 2) of mid.
            let error = if rtt == u64::MAX {
                u64::MAX
            } else {
                rtt.div_ceil(2)
            };
            msg[8..].copy_from_slice(&error.to_le_bytes());
            send(p, j, &msg, r, TAG_OFFSET, bound);
        }
    } else {
        for _ in 0..PINGS {
            let mut ping = [0u8; 1];
            if !recv(p, j, &mut ping, 0, TAG_PING, bound) {
                return;
            }
            let t = now().to_le_bytes();
            if !send(p, j, &t, 0, TAG_PONG, bound) {
                return;
            }
        }
        let mut msg = [0u8; 16];
        if recv(p, j, &mut msg, 0, TAG_OFFSET, bound) {
            let offset = i64::from_le_bytes(msg[..8].try_into().unwrap_or_default());
            let error = u64::from_le_bytes(msg[8..].try_into().unwrap_or_default());
            if error != u64::MAX {
                metadata(api, kprof_core_keys::OFFSET, &offset.to_string());
                metadata(api, kprof_core_keys::ERROR, &error.to_string());
            }
        }
    }
}

/// The metadata keys the core reads the offset from (`kprof_core::reduce`'s;
/// the plugin does not link the core, so they are repeated here; the MPI tests
/// find the offsets in the job's profile, which needs both to agree).
pub mod kprof_core_keys {
    /// This rank's clock offset to rank 0's (ns, signed).
    pub const OFFSET: &str = "clock offset to rank 0 (ns)";
    /// Its error bound (ns).
    pub const ERROR: &str = "clock offset error (ns)";
}

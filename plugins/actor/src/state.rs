//! The per-PE state: conveyors, their rows and the MAIN/PROC/COMM segments.
//!
//! A PE's conveyors are driven by one thread, so every counter is an atomic
//! read and written with relaxed plain loads and stores ([`bump`]): no locked
//! instruction, no lock, no allocation on the hot path (rows are allocated
//! when a conveyor begins).

use std::ffi::CString;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Mutex, OnceLock};

use kprof_abi::{message, CoreApi, Kind};

use crate::clock;

/// Conveyors alive at once that are measured (more are counted, not measured).
pub const SLOTS: usize = 64;

/// The Conveyors entry a wrapper reports (`enum kprof_actor_op`).
pub mod op {
    /// `convey_new`.
    pub const NEW: i32 = 0;
    /// `convey_begin` (arg: item size).
    pub const BEGIN: i32 = 1;
    /// `convey_push` (pe: destination).
    pub const PUSH: i32 = 2;
    /// `convey_pull` (pe: source).
    pub const PULL: i32 = 3;
    /// `convey_advance`.
    pub const ADVANCE: i32 = 4;
    /// `convey_free`.
    pub const FREE: i32 = 5;
    /// `convey_epush` (pe: destination, arg: the item's bytes).
    pub const EPUSH: i32 = 6;
    /// `convey_epull` (pe: source, arg: the item's bytes).
    pub const EPULL: i32 = 7;
}

/// Whether the MAIN/PROC/COMM breakdown is measured (`KPROF_ACTOR_BREAKDOWN`,
/// default 1; 0 counts messages only and reads no clock per call).
pub fn timing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        kprof_tables::settings::actor::ACTOR_BREAKDOWN
            .get()
            .is_none_or(|v| v.trim() != "0")
    })
}

/// `convey_OK` (bale's value; `convey_FAIL` is 0, errors are negative).
pub const CONVEY_OK: i64 = 1;

/// `convey_FAIL`: a full buffer (push) or nothing to pull; no message.
pub const CONVEY_FAIL: i64 = 0;

/// Adds `v` to a counter owned by this PE's one conveyor thread.
#[inline(always)]
pub fn bump(a: &AtomicU64, v: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// A peer's messages and bytes (side by side: one bounds check per message).
struct Cell {
    count: AtomicU64,
    bytes: AtomicU64,
}

/// Messages and bytes per peer PE.
pub struct Row {
    cells: Box<[Cell]>,
}

impl Row {
    /// A row for `npes` peers.
    pub fn new(npes: usize) -> Row {
        Row {
            cells: (0..npes)
                .map(|_| Cell {
                    count: AtomicU64::new(0),
                    bytes: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// Its peers.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether it has no peers.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Counts `n` messages of `bytes` in all to `peer`; false (nothing counted)
    /// when `peer` is not a PE of the job.
    #[inline(always)]
    pub fn add(&self, peer: i64, n: u64, bytes: u64) -> bool {
        // A negative peer is a huge index: one unsigned compare refuses both.
        let i = if cfg!(target_pointer_width = "64") {
            peer as usize
        } else {
            usize::try_from(peer).unwrap_or(usize::MAX)
        };
        match self.cells.get(i) {
            Some(c) => {
                bump(&c.count, n);
                bump(&c.bytes, bytes);
                true
            }
            None => false,
        }
    }

    /// Messages and bytes to `peer` so far ((0, 0) for a PE outside the row).
    #[inline]
    pub fn get(&self, peer: usize) -> (u64, u64) {
        self.cells.get(peer).map_or((0, 0), |c| {
            (
                c.count.load(Ordering::Relaxed),
                c.bytes.load(Ordering::Relaxed),
            )
        })
    }

    /// (peer, count, bytes) of every peer with messages, zeroing them.
    pub fn take(&self) -> Vec<(u32, u64, u64)> {
        let mut v = Vec::new();
        for (i, c) in self.cells.iter().enumerate() {
            let (n, b) = (
                c.count.swap(0, Ordering::Relaxed),
                c.bytes.swap(0, Ordering::Relaxed),
            );
            if n > 0 || b > 0 {
                v.push((i as u32, n, b));
            }
        }
        v
    }
}

/// The rows of one conveyor.
pub struct Rows {
    /// Logical sends (OK pushes) per destination.
    pub send: Row,
    /// Logical receives (OK pulls) per source.
    pub recv: Row,
    /// Non-blocking puts Conveyors issued, per destination.
    pub phys: Row,
    /// Buffers the porter's local path copied, per destination.
    pub local: Row,
    /// Signals the remote porter's progress put after completing its puts
    /// (its `shmem_quiet`), per destination.
    pub progress: Row,
    /// Calls of the remote porter's progress (`nonblock_progress`).
    pub progress_calls: AtomicU64,
    /// Those that completed the puts in flight (returned true).
    pub progress_forced: AtomicU64,
}

/// One measured conveyor (its PROC ticks are [`Hot::seg_ticks`]`[slot + 1]`).
pub struct Conv {
    /// Its `convey_t*` (0: the slot is free).
    key: AtomicUsize,
    /// Its number on this PE, in the order conveyors began.
    index: AtomicU32,
    /// Item size (bytes of a message).
    item: AtomicU64,
    /// Ticks inside its entries.
    comm: AtomicU64,
    /// Ticks when it began.
    begin: AtomicU64,
    /// Its rows (allocated when it began; kept for the next conveyor of the slot).
    rows: AtomicPtr<Rows>,
}

impl Conv {
    const fn new() -> Conv {
        Conv {
            key: AtomicUsize::new(0),
            index: AtomicU32::new(0),
            item: AtomicU64::new(0),
            comm: AtomicU64::new(0),
            begin: AtomicU64::new(0),
            rows: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Its rows, once it began.
    #[inline(always)]
    pub fn rows(&self) -> Option<&'static Rows> {
        // SAFETY: `rows` holds null or a leaked Box never freed.
        unsafe { self.rows.load(Ordering::Relaxed).as_ref() }
    }
}

/// Time totals of the PE, in ticks, other than MAIN ([`Hot::seg_ticks`]`[0]`).
/// Conveyors keep their own COMM and PROC while they live: a retired
/// conveyor's are added here, so that a call books its time once.
struct Totals {
    proc_: AtomicU64,
    /// COMM of retired conveyors, and COMM of no conveyor (OpenSHMEM calls
    /// outside Conveyors, calls on unknown conveyors, a free's own work).
    comm: AtomicU64,
    /// The part of `comm` in OpenSHMEM calls made outside Conveyors.
    comm_shmem: AtomicU64,
    /// Closed phases' time.
    phase: AtomicU64,
    /// Phases (from a first begin to a last free).
    phases: AtomicU64,
}

/// No conveyor looked up ([`Hot::cache_key`]; 0 is a NULL conveyor, never measured).
const NO_KEY: usize = usize::MAX;

/// What every Conveyors call reads and writes, in one static: the hot path
/// reaches it through one address (a static of another code-generation unit
/// costs a load of its address each).
struct Hot {
    /// The conveyor looked up last ([`NO_KEY`]: none) and its slot.
    cache_key: AtomicUsize,
    cache_slot: AtomicUsize,
    /// Ticks of the last segment boundary.
    last: AtomicU64,
    /// The running segment, an index in `seg_ticks`: 0 MAIN, s + 1 PROC of
    /// slot s's conveyor.
    seg: AtomicUsize,
    /// Ticks per segment: MAIN of the PE, then the PROC of each slot's conveyor.
    seg_ticks: [AtomicU64; SLOTS + 1],
    /// The conveyor whose entry runs now (set by the hooks and the wrappers;
    /// 0 outside Conveyors).
    current: AtomicUsize,
    /// Ticks at which the next per-peer sample is due ([`crate::peers`];
    /// `u64::MAX`: none).
    next_sample: AtomicU64,
    convs: [Conv; SLOTS],
}

static HOT: Hot = Hot {
    cache_key: AtomicUsize::new(NO_KEY),
    cache_slot: AtomicUsize::new(0),
    last: AtomicU64::new(0),
    seg: AtomicUsize::new(0),
    seg_ticks: [const { AtomicU64::new(0) }; SLOTS + 1],
    current: AtomicUsize::new(0),
    next_sample: AtomicU64::new(u64::MAX),
    convs: [const { Conv::new() }; SLOTS],
};
static TOTALS: Totals = Totals {
    proc_: AtomicU64::new(0),
    comm: AtomicU64::new(0),
    comm_shmem: AtomicU64::new(0),
    phase: AtomicU64::new(0),
    phases: AtomicU64::new(0),
};
/// Conveyors begun and not freed.
static ACTIVE: AtomicU64 = AtomicU64::new(0);
/// Ticks of the current phase's start.
static PHASE_START: AtomicU64 = AtomicU64::new(0);
/// Conveyors numbered so far.
static NEXT_INDEX: AtomicU32 = AtomicU32::new(0);
/// The remote porter's progress (`nonblock_progress`, hooked) runs now: the
/// signal puts it makes are counted in the conveyor's progress row.
pub static IN_PROGRESS: AtomicBool = AtomicBool::new(false);
/// This PE and the job's PEs (-1 until known).
static MY_PE: AtomicI64 = AtomicI64::new(-1);
static N_PES: AtomicI64 = AtomicI64::new(-1);

/// Things counted instead of measured.
pub struct Odd {
    /// Calls on a conveyor never begun or already freed.
    pub unknown_conveyor: AtomicU64,
    /// Pushes/pulls naming a PE outside the job.
    pub bad_peer: AtomicU64,
    /// Conveyors begun beyond [`SLOTS`] alive.
    pub too_many: AtomicU64,
    /// Conveyors still alive at exit.
    pub not_freed: AtomicU64,
    /// Pushes and pulls that returned an error (a negative value: a PE out of
    /// range, a conveyor in the wrong state, an item too large).
    pub errors: AtomicU64,
}

/// The odd calls seen.
pub static ODD: Odd = Odd {
    unknown_conveyor: AtomicU64::new(0),
    bad_peer: AtomicU64::new(0),
    too_many: AtomicU64::new(0),
    not_freed: AtomicU64::new(0),
    errors: AtomicU64::new(0),
};

/// Sends and receives made without Conveyors ([`mod@crate::api`]).
pub static DIRECT: OnceLock<(Row, Row)> = OnceLock::new();
/// OpenSHMEM puts made outside Conveyors, per destination.
pub static OUTSIDE_PUTS: OnceLock<Row> = OnceLock::new();

/// Whether the job's PEs are known ([`set_pes`]).
pub fn pes_known() -> bool {
    N_PES.load(Ordering::Relaxed) >= 0
}

/// Sets this PE and the job's PEs (as OpenSHMEM tells them, once).
pub fn set_pes(me: i64, n: i64) {
    MY_PE.store(me, Ordering::Relaxed);
    N_PES.store(n, Ordering::Relaxed);
}

/// This PE as learnt ([`set_pes`]; -1 when unknown).
pub fn my_pe() -> i64 {
    MY_PE.load(Ordering::Relaxed)
}

/// The job's PEs as learnt ([`set_pes`]; 0 when unknown).
pub fn n_pes() -> usize {
    N_PES.load(Ordering::Relaxed).max(0) as usize
}

/// Whether an actor phase runs (a conveyor begun and not freed).
#[inline(always)]
pub fn in_phase() -> bool {
    ACTIVE.load(Ordering::Relaxed) > 0
}

/// Whether the running segment is a handler's (PROC).
#[inline(always)]
pub fn in_proc() -> bool {
    HOT.seg.load(Ordering::Relaxed) != 0
}

/// The conveyor whose entry runs now (0: none).
#[inline(always)]
pub fn current() -> usize {
    HOT.current.load(Ordering::Relaxed)
}

/// Sets the conveyor whose entry runs now (0: none).
#[inline(always)]
pub fn set_current(key: usize) {
    HOT.current.store(key, Ordering::Relaxed);
}

/// The word [`current`] reads, for the link-time wrappers.
pub fn current_word() -> *mut usize {
    HOT.current.as_ptr()
}

/// Ticks at which the next per-peer sample is due (`u64::MAX`: none).
#[inline(always)]
pub fn next_sample() -> u64 {
    HOT.next_sample.load(Ordering::Relaxed)
}

/// Sets when the next per-peer sample is due.
pub fn set_next_sample(ticks: u64) {
    HOT.next_sample.store(ticks, Ordering::Relaxed);
}

/// The slot of conveyor `key`, if measured.
#[inline(always)]
pub fn find(key: usize) -> Option<usize> {
    if key == 0 || key == NO_KEY {
        return None;
    }
    if HOT.cache_key.load(Ordering::Relaxed) == key {
        return Some(HOT.cache_slot.load(Ordering::Relaxed));
    }
    let s = HOT
        .convs
        .iter()
        .position(|c| c.key.load(Ordering::Relaxed) == key)?;
    HOT.cache_key.store(key, Ordering::Relaxed);
    HOT.cache_slot.store(s, Ordering::Relaxed);
    Some(s)
}

/// The measured conveyor in `slot` (any index: wrapped into the slots).
#[inline(always)]
fn conv(slot: usize) -> &'static Conv {
    &HOT.convs[slot % SLOTS]
}

/// Measures conveyor `key` from now on (a convey_begin that succeeded).
fn register(key: usize, item: u64, t0: u64) -> Option<usize> {
    if key == 0 {
        return None;
    }
    let s = match find(key) {
        Some(s) => s, // begun again after a reset: keeps its rows
        None => {
            let Some(s) = HOT
                .convs
                .iter()
                .position(|c| c.key.load(Ordering::Relaxed) == 0)
            else {
                bump(&ODD.too_many, 1);
                return None;
            };
            let c = conv(s);
            // The PEs were asked for before the begin was booked (a Conveyors
            // entry runs with OpenSHMEM initialized).
            let npes = n_pes();
            if c.rows().is_none_or(|r| r.send.len() != npes) {
                let rows = Box::new(Rows {
                    send: Row::new(npes),
                    recv: Row::new(npes),
                    phys: Row::new(npes),
                    local: Row::new(npes),
                    progress: Row::new(npes),
                    progress_calls: AtomicU64::new(0),
                    progress_forced: AtomicU64::new(0),
                });
                // Rows of another size are leaked (a job's PE count does not change).
                c.rows.store(Box::into_raw(rows), Ordering::Relaxed);
            }
            c.index.store(
                NEXT_INDEX.fetch_add(1, Ordering::Relaxed),
                Ordering::Relaxed,
            );
            c.comm.store(0, Ordering::Relaxed);
            HOT.seg_ticks[s + 1].store(0, Ordering::Relaxed);
            c.begin.store(t0, Ordering::Relaxed);
            c.key.store(key, Ordering::Relaxed);
            s
        }
    };
    conv(s).item.store(item, Ordering::Relaxed);
    Some(s)
}

/// Closes the running segment at `t0`: its time since the last boundary goes
/// to MAIN or to the PROC of its conveyor.
#[inline(always)]
fn close_segment(t0: u64) {
    let gap = t0.saturating_sub(HOT.last.load(Ordering::Relaxed));
    if let Some(acc) = HOT.seg_ticks.get(HOT.seg.load(Ordering::Relaxed)) {
        bump(acc, gap);
    }
}

/// Logical messages and bytes sent to `peer` and received from it by the
/// conveyors alive now: ((sent messages, bytes), (received messages, bytes)).
pub fn live(peer: usize) -> ((u64, u64), (u64, u64)) {
    let add = |a: (u64, u64), v: (u64, u64)| (a.0 + v.0, a.1 + v.1);
    HOT.convs
        .iter()
        .filter(|c| c.key.load(Ordering::Relaxed) != 0)
        .filter_map(|c| c.rows())
        .map(|r| (r.send.get(peer), r.recv.get(peer)))
        .fold(((0, 0), (0, 0)), |a, v| (add(a.0, v.0), add(a.1, v.1)))
}

/// kprof's own work after a Conveyors entry was booked (the per-peer tracks'
/// sample): COMM of the PE and of the conveyor whose entry it follows, up to now.
pub fn comm_to_now() {
    if ACTIVE.load(Ordering::Relaxed) == 0 {
        return;
    }
    let after = clock::ticks();
    let spent = after.saturating_sub(HOT.last.load(Ordering::Relaxed));
    match find(HOT.cache_key.load(Ordering::Relaxed)) {
        Some(s) => bump(&conv(s).comm, spent),
        None => bump(&TOTALS.comm, spent),
    }
    HOT.last.store(after, Ordering::Relaxed);
}

/// What takes a retired conveyor's rows (sent, received): the per-peer tracks.
pub type Absorb = fn(&Row, &Row);

/// A Conveyors entry that returned: what the hooks and the wrappers report.
#[derive(Clone, Copy)]
pub struct Call {
    /// The conveyor (`convey_t*`; only compared).
    pub key: usize,
    /// The entry ([`op`]).
    pub op: i32,
    /// Its return value.
    pub rc: i64,
    /// The peer PE of a push or pull (destination, source).
    pub pe: i64,
    /// The item size of a begin, the item's bytes of an elastic push or pull.
    pub arg: u64,
    /// The clock before the entry ran and after it (0, 0 without the breakdown).
    pub t0: u64,
    /// See `t0`.
    pub now: u64,
}

/// Whether `op` is a pull (the handler of an OK one is PROC).
#[inline(always)]
fn is_pull(op: i32) -> bool {
    op == op::PULL || op == op::EPULL
}

/// Books a push, pull or advance of the conveyor looked up last (about every
/// call of a phase) in fewer steps ([`fast`]); false for any other call, which
/// then takes [`leave`] (nothing was done).
#[inline(always)]
pub fn book_fast(call: Call) -> bool {
    let frequent = matches!(
        call.op,
        op::PUSH | op::PULL | op::EPUSH | op::EPULL | op::ADVANCE
    );
    frequent && fast(call)
}

/// [`leave`] for a push, pull or advance of the conveyor looked up last, in
/// fewer steps (no lookup, no checks that cannot fail for a conveyor alive):
/// the same bookkeeping. False when `call.key` is not the conveyor looked up
/// last (then nothing was done).
#[inline(always)]
fn fast(call: Call) -> bool {
    if HOT.cache_key.load(Ordering::Relaxed) != call.key {
        return false;
    }
    let s = HOT.cache_slot.load(Ordering::Relaxed) % SLOTS;
    let c = conv(s);
    if call.t0 != 0 {
        // A conveyor looked up is alive: the phase runs (ACTIVE > 0).
        close_segment(call.t0);
        bump(&c.comm, call.now.saturating_sub(call.t0));
        HOT.last.store(call.now, Ordering::Relaxed);
        let seg = if is_pull(call.op) && call.rc == CONVEY_OK {
            s + 1
        } else {
            0
        };
        HOT.seg.store(seg, Ordering::Relaxed);
    }
    if call.op != op::ADVANCE {
        if call.rc == CONVEY_OK {
            count_message(c, call);
        } else if call.rc < 0 {
            bump(&ODD.errors, 1);
        }
    }
    true
}

/// An OK push or pull of conveyor `c`: a logical message in its send or
/// receive row.
#[inline(always)]
fn count_message(c: &Conv, call: Call) {
    let Some(rows) = c.rows() else {
        return;
    };
    let row = if is_pull(call.op) {
        &rows.recv
    } else {
        &rows.send
    };
    // Elastic items carry their own size (0 bytes is an item too).
    let bytes = if call.op == op::EPUSH || call.op == op::EPULL {
        call.arg
    } else {
        c.item.load(Ordering::Relaxed)
    };
    if !row.add(call.pe, 1, bytes) {
        bump(&ODD.bad_peer, 1);
    }
}

/// A Conveyors entry returned: `call.t0` is the clock before it ran,
/// `call.now` after it (both 0 without the breakdown). A conveyor freed gives
/// its rows to `retired` (sent, received) before they are kept for the end.
pub fn leave(call: Call, retired: Absorb) {
    let Call {
        key,
        op,
        rc,
        pe: _,
        arg,
        t0,
        now,
    } = call;
    let slot = if op == op::BEGIN && rc == CONVEY_OK {
        let s = register(key, arg, t0);
        if ACTIVE.load(Ordering::Relaxed) == 0 {
            PHASE_START.store(t0, Ordering::Relaxed);
            HOT.last.store(t0, Ordering::Relaxed);
            HOT.seg.store(0, Ordering::Relaxed);
        }
        bump(&ACTIVE, 1);
        s
    } else if op == op::NEW {
        None
    } else {
        let s = find(key);
        if s.is_none() {
            bump(&ODD.unknown_conveyor, 1);
        }
        s
    };
    if t0 != 0 && ACTIVE.load(Ordering::Relaxed) > 0 {
        close_segment(t0);
        let inside = now.saturating_sub(t0);
        match slot {
            Some(s) => bump(&conv(s).comm, inside),
            None => bump(&TOTALS.comm, inside),
        }
        HOT.last.store(now, Ordering::Relaxed);
        HOT.seg.store(
            match slot {
                Some(s) if is_pull(op) && rc == CONVEY_OK => s + 1,
                _ => 0,
            },
            Ordering::Relaxed,
        );
    }
    let push_or_pull = matches!(op, op::PUSH | op::PULL | op::EPUSH | op::EPULL);
    if rc < 0 && push_or_pull {
        bump(&ODD.errors, 1);
    }
    let Some(s) = slot else {
        return;
    };
    let c = conv(s);
    if push_or_pull && rc == CONVEY_OK {
        count_message(c, call);
    } else if op == op::FREE {
        retire(s, now, retired);
        c.key.store(0, Ordering::Relaxed);
        HOT.cache_key.store(NO_KEY, Ordering::Relaxed);
        end_active(now);
        if t0 != 0 && ACTIVE.load(Ordering::Relaxed) > 0 {
            // Keeping the rows is part of this convey_free for the
            // conveyors still alive: COMM, not the MAIN that follows.
            let after = clock::ticks();
            bump(&TOTALS.comm, after.saturating_sub(now));
            HOT.last.store(after, Ordering::Relaxed);
        }
    }
}

/// One conveyor fewer alive at `now`: the phase ends with the last.
fn end_active(now: u64) {
    let a = ACTIVE.load(Ordering::Relaxed);
    if a == 0 {
        return;
    }
    ACTIVE.store(a - 1, Ordering::Relaxed);
    HOT.seg.store(0, Ordering::Relaxed);
    if a == 1 {
        bump(
            &TOTALS.phase,
            now.saturating_sub(PHASE_START.load(Ordering::Relaxed)),
        );
        bump(&TOTALS.phases, 1);
    }
}

/// The rows of the conveyor running now (its entry is on the stack).
#[inline(always)]
fn current_rows() -> Option<&'static Rows> {
    find(current()).and_then(|s| conv(s).rows())
}

/// An OpenSHMEM call returned (`t0`: the clock before it ran): a put of
/// `bytes` to `pe` counts in the physical row of the conveyor running it, or
/// in the outside-puts row; outside Conveyors its time is COMM.
#[inline]
pub fn shmem_call(t0: u64, put: Option<(i64, u64)>) -> u64 {
    let now = clock::ticks();
    if current() != 0 {
        if let Some((pe, bytes)) = put {
            if let Some(rows) = current_rows() {
                rows.phys.add(pe, 1, bytes);
            }
        }
        return now;
    }
    if let Some((pe, bytes)) = put {
        let npes = n_pes();
        OUTSIDE_PUTS
            .get_or_init(|| Row::new(npes))
            .add(pe, 1, bytes);
    }
    if timing() && ACTIVE.load(Ordering::Relaxed) > 0 {
        close_segment(t0);
        let inside = now.saturating_sub(t0);
        bump(&TOTALS.comm, inside);
        bump(&TOTALS.comm_shmem, inside);
        HOT.last.store(now, Ordering::Relaxed);
    }
    now
}

/// A porter sent a buffer of `bytes` on its local path to the PE `pe()` tells
/// (asked only when a conveyor runs now) for the conveyor running now.
#[inline]
pub fn local_send(pe: impl FnOnce() -> i64, bytes: u64) {
    if let Some(rows) = current_rows() {
        if !rows.local.add(pe(), 1, bytes) {
            bump(&ODD.bad_peer, 1);
        }
    }
}

/// The remote porter's progress returned (`forced`: it completed the puts in
/// flight) for the conveyor running now.
#[inline]
pub fn progress(forced: bool) {
    if let Some(rows) = current_rows() {
        bump(&rows.progress_calls, 1);
        bump(&rows.progress_forced, u64::from(forced));
    }
}

/// A signal put of `bytes` to `pe` (`shmem_put64`, `shmem_longlong_p`): while
/// the remote porter's progress runs, counted in the progress row of the
/// conveyor running now.
#[inline]
pub fn signal(pe: i64, bytes: u64) {
    if !IN_PROGRESS.load(Ordering::Relaxed) {
        return;
    }
    if let Some(rows) = current_rows() {
        if !rows.progress.add(pe, 1, bytes) {
            bump(&ODD.bad_peer, 1);
        }
    }
}

/// Names conveyor `key` (route 3): metadata `actor.conveyor.<n>.<what>`.
pub fn describe(api: &CoreApi, key: usize, what: &str, value: &str) -> bool {
    let Some(s) = find(key) else {
        bump(&ODD.unknown_conveyor, 1);
        return false;
    };
    let n = conv(s).index.load(Ordering::Relaxed);
    meta(api, &format!("actor.conveyor.{n}.{what}"), value);
    true
}

/// Records a metadata pair.
pub fn meta(api: &CoreApi, key: &str, value: &str) {
    let (Ok(k), Ok(v)) = (CString::new(key), CString::new(value)) else {
        return;
    };
    // SAFETY: two NUL-terminated strings, copied by the core.
    unsafe { (api.metadata)(k.as_ptr(), v.as_ptr()) };
}

/// Emits a row as message instants on `channel`.
pub fn emit_row(api: &CoreApi, channel: &str, direction: u8, rows: Vec<(u32, u64, u64)>) {
    let Ok(name) = CString::new(channel) else {
        return;
    };
    for (peer, mut count, mut bytes) in rows {
        // One instant carries at most MAX_COUNT messages: the rest follow.
        while count > 0 || bytes > 0 {
            let n = count.min(message::MAX_COUNT);
            let b = if n == count { bytes } else { bytes / count * n };
            // SAFETY: a NUL-terminated channel name, copied by the core.
            unsafe {
                (api.instant)(
                    Kind::Message as u8,
                    name.as_ptr(),
                    message::pack(peer, direction, n),
                    b,
                )
            };
            count -= n;
            bytes -= b;
            if n == 0 {
                break;
            }
        }
    }
}

/// What a freed conveyor measured, kept until the end of the run: delivering
/// it inside `convey_free` would put kprof's own work (and the core's first
/// calls on the thread) inside the program's phase.
pub struct Retired {
    index: u32,
    item: u64,
    /// Its rows, moved out of its slot (the slot's next conveyor gets new ones).
    rows: Option<Box<Rows>>,
    /// Ticks: its life, its COMM, its PROC.
    life: u64,
    comm: u64,
    proc_: u64,
}

/// A parked [`Retired`], in a preallocated array: retiring a conveyor inside
/// `convey_free` allocates nothing and takes no lock (the program's phase ends
/// right after).
struct Parked {
    index: AtomicU32,
    item: AtomicU64,
    rows: AtomicPtr<Rows>,
    life: AtomicU64,
    comm: AtomicU64,
    proc_: AtomicU64,
}

/// Conveyors parked without allocating; more go to [`RETIRED`].
const PARKED_MAX: usize = 256;
static PARKED: [Parked; PARKED_MAX] = [const {
    Parked {
        index: AtomicU32::new(0),
        item: AtomicU64::new(0),
        rows: AtomicPtr::new(std::ptr::null_mut()),
        life: AtomicU64::new(0),
        comm: AtomicU64::new(0),
        proc_: AtomicU64::new(0),
    }
}; PARKED_MAX];
static PARKED_N: AtomicUsize = AtomicUsize::new(0);

static RETIRED: Mutex<Vec<Retired>> = Mutex::new(Vec::new());

/// Takes the rows and times of the conveyor in `slot` (it is freed at `now`,
/// or the run ends); its COMM and PROC join the PE's.
fn retire(slot: usize, now: u64, retired: Absorb) {
    let c = conv(slot);
    let comm = c.comm.load(Ordering::Relaxed);
    let proc_ = HOT.seg_ticks[slot % SLOTS + 1].load(Ordering::Relaxed);
    bump(&TOTALS.comm, comm);
    bump(&TOTALS.proc_, proc_);
    let rows = c.rows.swap(std::ptr::null_mut(), Ordering::Relaxed);
    // SAFETY: `rows` is null or a leaked Box of this slot, alive until `finish`.
    if let Some(r) = unsafe { rows.as_ref() } {
        retired(&r.send, &r.recv);
    }
    let life = now.saturating_sub(c.begin.load(Ordering::Relaxed));
    let n = PARKED_N.load(Ordering::Relaxed);
    if let Some(p) = PARKED.get(n) {
        p.index
            .store(c.index.load(Ordering::Relaxed), Ordering::Relaxed);
        p.item
            .store(c.item.load(Ordering::Relaxed), Ordering::Relaxed);
        p.rows.store(rows, Ordering::Relaxed);
        p.life.store(life, Ordering::Relaxed);
        p.comm.store(comm, Ordering::Relaxed);
        p.proc_.store(proc_, Ordering::Relaxed);
        PARKED_N.store(n + 1, Ordering::Release);
        return;
    }
    let r = Retired {
        index: c.index.load(Ordering::Relaxed),
        item: c.item.load(Ordering::Relaxed),
        // SAFETY: `rows` was a leaked Box of this slot, now owned here alone.
        rows: (!rows.is_null()).then(|| unsafe { Box::from_raw(rows) }),
        life,
        comm,
        proc_,
    };
    RETIRED.lock().unwrap_or_else(|p| p.into_inner()).push(r);
}

/// Every retired conveyor, in the order they were retired.
fn all_retired() -> Vec<Retired> {
    let n = PARKED_N.swap(0, Ordering::Acquire).min(PARKED_MAX);
    let mut v: Vec<Retired> = PARKED[..n]
        .iter()
        .map(|p| {
            let rows = p.rows.swap(std::ptr::null_mut(), Ordering::Relaxed);
            Retired {
                index: p.index.load(Ordering::Relaxed),
                item: p.item.load(Ordering::Relaxed),
                // SAFETY: a Box parked by `retire`, owned by the array alone.
                rows: (!rows.is_null()).then(|| unsafe { Box::from_raw(rows) }),
                life: p.life.load(Ordering::Relaxed),
                comm: p.comm.load(Ordering::Relaxed),
                proc_: p.proc_.load(Ordering::Relaxed),
            }
        })
        .collect();
    v.append(&mut RETIRED.lock().unwrap_or_else(|p| p.into_inner()));
    v
}

/// Delivers a retired conveyor (`k`: nanoseconds per tick).
fn emit(api: &CoreApi, r: Retired, k: f64) {
    let n = r.index;
    if let Some(rows) = &r.rows {
        let logical = format!("conveyor {n} logical");
        emit_row(api, &logical, message::SEND, rows.send.take());
        emit_row(api, &logical, message::RECEIVE, rows.recv.take());
        emit_row(
            api,
            &format!("conveyor {n} physical remote"),
            message::SEND,
            rows.phys.take(),
        );
        emit_row(
            api,
            &format!("conveyor {n} physical local"),
            message::SEND,
            rows.local.take(),
        );
        emit_row(
            api,
            &format!("conveyor {n} physical progress"),
            message::SEND,
            rows.progress.take(),
        );
        let calls = rows.progress_calls.load(Ordering::Relaxed);
        if calls > 0 {
            let p = format!("actor.conveyor.{n}");
            meta(api, &format!("{p}.progress_calls"), &calls.to_string());
            let forced = rows.progress_forced.load(Ordering::Relaxed);
            meta(api, &format!("{p}.progress_forced"), &forced.to_string());
        }
    }
    let p = format!("actor.conveyor.{n}");
    meta(api, &format!("{p}.item_bytes"), &r.item.to_string());
    if timing() {
        let ns = |t: u64| ((t as f64) * k).round() as u64;
        meta(api, &format!("{p}.life_ns"), &ns(r.life).to_string());
        meta(api, &format!("{p}.comm_ns"), &ns(r.comm).to_string());
        meta(api, &format!("{p}.proc_ns"), &ns(r.proc_).to_string());
        meta(
            api,
            &format!("{p}.main_ns"),
            &ns(r.life.saturating_sub(r.comm + r.proc_)).to_string(),
        );
    }
}

/// The end of the run: the conveyors never freed are retired now (their rows to
/// `retired`).
pub fn retire_all(retired: Absorb) {
    let now = clock::ticks();
    for (s, c) in HOT.convs.iter().enumerate() {
        if c.key.load(Ordering::Relaxed) != 0 {
            bump(&ODD.not_freed, 1);
            if ACTIVE.load(Ordering::Relaxed) > 0 {
                close_segment(now);
                HOT.last.store(now, Ordering::Relaxed);
            }
            retire(s, now, retired);
            c.key.store(0, Ordering::Relaxed);
            end_active(now);
        }
    }
    HOT.cache_key.store(NO_KEY, Ordering::Relaxed);
}

/// Delivers the PE's conveyors, its breakdown and its odd calls (`odd`: the
/// other parts' counts of odd calls, by name; `k`: nanoseconds per tick).
pub fn report(api: &CoreApi, odd: &[(&str, &AtomicU64)], k: f64) {
    for r in all_retired() {
        emit(api, r, k);
    }
    if let Some((send, recv)) = DIRECT.get() {
        emit_row(api, "actor direct", message::SEND, send.take());
        emit_row(api, "actor direct", message::RECEIVE, recv.take());
    }
    if let Some(puts) = OUTSIDE_PUTS.get() {
        emit_row(api, "openshmem put", message::SEND, puts.take());
    }
    let ns = |a: &AtomicU64| ((a.load(Ordering::Relaxed) as f64) * k).round() as u64;
    meta(api, "actor.pe", &MY_PE.load(Ordering::Relaxed).to_string());
    meta(
        api,
        "actor.npes",
        &N_PES.load(Ordering::Relaxed).to_string(),
    );
    if !timing() {
        meta(api, "actor.breakdown", "off");
    } else {
        let (main, proc_, comm) = (ns(&HOT.seg_ticks[0]), ns(&TOTALS.proc_), ns(&TOTALS.comm));
        let total = main + proc_ + comm;
        meta(api, "actor.phase_ns", &ns(&TOTALS.phase).to_string());
        meta(
            api,
            "actor.phases",
            &TOTALS.phases.load(Ordering::Relaxed).to_string(),
        );
        for (name, v) in [("main", main), ("proc", proc_), ("comm", comm)] {
            meta(api, &format!("actor.{name}_ns"), &v.to_string());
            let share = if total > 0 {
                v as f64 / total as f64
            } else {
                0.0
            };
            meta(api, &format!("actor.{name}_share"), &format!("{share:.4}"));
        }
        meta(
            api,
            "actor.comm_openshmem_ns",
            &ns(&TOTALS.comm_shmem).to_string(),
        );
    }
    for (name, v) in [
        ("unknown_conveyor_calls", &ODD.unknown_conveyor),
        ("bad_peer", &ODD.bad_peer),
        ("conveyors_not_measured", &ODD.too_many),
        ("conveyors_not_freed", &ODD.not_freed),
        ("convey_errors", &ODD.errors),
    ]
    .into_iter()
    .chain(odd.iter().copied())
    {
        let v = v.load(Ordering::Relaxed);
        if v > 0 {
            meta(api, &format!("actor.{name}"), &v.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(key: usize, op: i32, rc: i64, pe: i64, t0: u64, now: u64) -> Call {
        Call {
            key,
            op,
            rc,
            pe,
            arg: if op == op::BEGIN { 8 } else { 0 },
            t0,
            now,
        }
    }

    /// One phase of conveyor `key` (times from `b`), each call given to `book`:
    /// begin, a push to PE 3, an OK pull from PE 1 and its 30-tick handler, a
    /// failed pull, an advance, a push naming a PE outside the job, free.
    fn phase(key: usize, b: u64, book: &dyn Fn(Call)) {
        book(call(key, op::BEGIN, CONVEY_OK, 0, b, b + 10));
        book(call(key, op::PUSH, CONVEY_OK, 3, b + 20, b + 25));
        book(call(key, op::PULL, CONVEY_OK, 1, b + 30, b + 40));
        book(call(key, op::PULL, CONVEY_FAIL, -1, b + 70, b + 72));
        book(call(key, op::ADVANCE, 1, 0, b + 80, b + 90));
        book(call(key, op::PUSH, CONVEY_OK, 9, b + 95, b + 96));
        book(call(key, op::FREE, 0, 0, b + 100, b + 110));
    }

    /// The last parked conveyor: (life, comm, proc, sent to 3, received from 1).
    fn last_parked() -> (u64, u64, u64, (u64, u64), (u64, u64)) {
        let n = PARKED_N.load(Ordering::Relaxed);
        let p = &PARKED[n - 1];
        // SAFETY: a Box parked by `retire`, read while the test holds it.
        let rows = unsafe { &*p.rows.load(Ordering::Relaxed) };
        (
            p.life.load(Ordering::Relaxed),
            p.comm.load(Ordering::Relaxed),
            p.proc_.load(Ordering::Relaxed),
            rows.send.get(3),
            rows.recv.get(1),
        )
    }

    /// The hot path ([`book_fast`], after its first lookup) books exactly what
    /// [`leave`] alone books: rows, COMM and PROC per conveyor, and the PE's
    /// MAIN + PROC + COMM = its phases.
    #[test]
    fn fast_path_books_what_leave_books() {
        // The PEs the porter's test sets too (tests share the statics).
        set_pes(2, 4);
        let bad_before = ODD.bad_peer.load(Ordering::Relaxed);
        let none: Absorb = |_, _| {};
        phase(0x1000, 1000, &|c| {
            if !book_fast(c) {
                leave(c, none)
            }
        });
        let fast = last_parked();
        phase(0x2000, 2000, &|c| leave(c, none));
        let slow = last_parked();
        // Life 110; COMM 10 + 5 + 10 + 2 + 10 + 1 + 10; PROC the handler.
        assert_eq!(fast, (110, 48, 30, (1, 8), (1, 8)));
        assert_eq!(slow, fast);
        assert_eq!(ODD.bad_peer.load(Ordering::Relaxed), bad_before + 2);
        let main = HOT.seg_ticks[0].load(Ordering::Relaxed);
        let proc_ = TOTALS.proc_.load(Ordering::Relaxed);
        let comm = TOTALS.comm.load(Ordering::Relaxed);
        assert_eq!((main, proc_, comm), (2 * 32, 2 * 30, 2 * 48));
        assert_eq!(TOTALS.phase.load(Ordering::Relaxed), main + proc_ + comm);
        assert_eq!(HOT.cache_key.load(Ordering::Relaxed), NO_KEY);
    }
}

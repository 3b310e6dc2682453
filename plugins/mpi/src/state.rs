//! The plugin's state: the `PMPI_*` table, whether calls are measured (the core's
//! table, `MPI_COMM_WORLD` and its group), the per-communicator translation of
//! ranks to `MPI_COMM_WORLD` ranks, the table of receives in flight, and the
//! sizes of the datatypes seen (until one is freed).
//!
//! The first two tables are fixed arrays of atomics, probed in buckets of 8
//! keys (one cache line): no lock and no allocation on a call. A bucket's
//! receive slots are taken in order and a slot once taken never reads as never
//! taken again, so a search stops at the first slot never taken: a request that
//! is no tracked receive (a send's) costs one or two probes, not eight. A communicator's
//! translation is built once, at its creation or first sight (the cold path), and
//! kept for the life of the process, so a request posted on a communicator freed
//! before it completes still translates.

use std::ffi::{c_int, CStr};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use kprof_abi::{message, ActivityArg, Call, CoreApi, Kind, CALL_ARGS};

use crate::say::{metadata, warn};
use crate::sys::{self, Abi, Comm, Datatype, Family, Group, Pmpi, StatusView};

/// The `PMPI_*` table once resolved (leaked); null before the first call.
static PMPI: AtomicPtr<Pmpi> = AtomicPtr::new(ptr::null_mut());
/// What measuring needs, while calls are measured (from `MPI_Init` to
/// `MPI_Finalize`); null otherwise.
static ACTIVE: AtomicPtr<Active> = AtomicPtr::new(ptr::null_mut());
/// Receives whose request found no free slot (their messages are not counted).
static UNTRACKED: AtomicU64 = AtomicU64::new(0);
/// Peers that could not be translated to `MPI_COMM_WORLD` ranks.
static UNTRANSLATED: AtomicU64 = AtomicU64::new(0);

/// The channel of point-to-point messages in the profile's `messages`.
pub const CHANNEL: &CStr = c"MPI p2p";

/// The `PMPI_*` functions (resolved at the first call).
#[inline(always)]
pub fn pmpi() -> Option<&'static Pmpi> {
    // SAFETY: PMPI holds null or a leaked, never freed table.
    match unsafe { PMPI.load(Ordering::Acquire).as_ref() } {
        Some(p) => Some(p),
        None => resolve_pmpi(),
    }
}

#[cold]
#[inline(never)]
fn resolve_pmpi() -> Option<&'static Pmpi> {
    let fresh = Box::into_raw(Box::new(Pmpi::resolve()));
    match PMPI.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked.
        Ok(_) => Some(unsafe { &*fresh }),
        Err(won) => {
            // SAFETY: ours, never published.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: the winner's leaked table.
            Some(unsafe { &*won })
        }
    }
}

/// What measuring needs.
pub struct Active {
    /// The core's table (attached).
    pub api: &'static CoreApi,
    /// The MPI family's ABI.
    pub abi: Abi,
    /// `MPI_COMM_WORLD`.
    pub world: Comm,
    /// The group of `MPI_COMM_WORLD`.
    pub world_group: Group,
    /// This process's rank in `MPI_COMM_WORLD`.
    pub world_rank: c_int,
    /// Ranks in `MPI_COMM_WORLD`.
    pub world_size: c_int,
    /// kprof's own communicator (None: the job ends with per-rank files only).
    pub job: Option<crate::job::Job>,
    /// Calls are recorded whole ([`kprof_abi::CoreApi::call`]); false when MPI
    /// calls get hardware counters, which are read as an instance opens, or
    /// call-stack samples, which land under the thread's open instance.
    pub whole: bool,
}

/// The state while measuring.
#[inline(always)]
pub fn active() -> Option<&'static Active> {
    // SAFETY: ACTIVE holds null or a leaked, never freed `Active`.
    unsafe { ACTIVE.load(Ordering::Acquire).as_ref() }
}

/// Address of a function of this library that it does not export.
fn anchor() -> usize {
    start as *const () as usize
}

/// Before the real `MPI_Init`: detects the MPI family and attaches the core.
/// Returns the core's table and the family's ABI when calls are to be measured.
pub fn start(p: &Pmpi) -> Option<(&'static CoreApi, Abi)> {
    if let Some(missing) = p.missing {
        warn(&format!(
            "the MPI library has no {missing}: MPI calls are not measured"
        ));
        return None;
    }
    let family = Family::detect();
    let Some(abi) = Abi::of(family) else {
        let what = match family {
            Family::Unknown => "unknown MPI library (neither Open MPI nor MPICH)",
            _ => "the MPI library's predefined handles were not found",
        };
        warn(&format!("{what}; MPI calls are not measured"));
        return None;
    };
    let api = match kprof_abi::loader::load_core(anchor()) {
        Ok(api) => api,
        Err(e) => {
            warn(&format!("{e}; MPI runs without kprof"));
            return None;
        }
    };
    // SAFETY: NUL-terminated literals.
    unsafe {
        if (api.option_flag)(c"enable".as_ptr()) == 0 || !(api.attach)(c"mpi".as_ptr()) {
            return None;
        }
    }
    Some((api, abi))
}

/// After the real `MPI_Init` succeeded: `MPI_COMM_WORLD`, its group, rank and size;
/// from now on calls are measured.
pub fn activate(api: &'static CoreApi, abi: Abi, p: &Pmpi, thread_level: Option<c_int>) {
    let world = abi.comm_world as Comm;
    let (mut rank, mut size, mut group): (c_int, c_int, Group) = (0, 0, ptr::null_mut());
    // SAFETY: MPI is initialized; out-pointers to locals.
    unsafe {
        (p.comm_rank)(world, &mut rank);
        (p.comm_size)(world, &mut size);
        (p.comm_group)(world, &mut group);
    }
    metadata(api, "MPI family", abi.family.name());
    // MPI_MAX_LIBRARY_VERSION_STRING: 256 in Open MPI, 8192 in MPICH.
    let mut buf = vec![0u8; 8192 + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes.
    if unsafe { (p.get_library_version)(buf.as_mut_ptr().cast(), &mut len) } == sys::SUCCESS {
        let text =
            String::from_utf8_lossy(&buf[..usize::try_from(len).unwrap_or(0).min(buf.len())]);
        // Its first line or clause, spaces collapsed (MPICH's has a tab).
        let first = text
            .split([',', '\n'])
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        metadata(api, "MPI library", &first);
    }
    metadata(api, "MPI rank", &rank.to_string());
    metadata(api, "MPI size", &size.to_string());
    if let Some(level) = thread_level {
        let name = match level {
            0 => "MPI_THREAD_SINGLE",
            1 => "MPI_THREAD_FUNNELED",
            2 => "MPI_THREAD_SERIALIZED",
            3 => "MPI_THREAD_MULTIPLE",
            _ => "unknown",
        };
        metadata(api, "MPI thread level", name);
    }
    // SAFETY: NUL-terminated literals.
    let (counters, samples) = unsafe {
        (
            (api.option_flag)(c"mpi-counters".as_ptr()) == 1,
            (api.option_flag)(c"stack-samples".as_ptr()) == 1,
        )
    };
    // A call recorded whole is no instance while it runs: a call-stack sample
    // taken inside it would land under its parent.
    let whole = !counters && !samples;
    metadata(
        api,
        "MPI calls",
        match (counters, samples) {
            (false, false) => "recorded whole",
            (true, _) => "opened and closed (hardware counters)",
            (false, true) => "opened and closed (call-stack samples)",
        },
    );
    let a = Active {
        api,
        abi,
        world,
        world_group: group,
        world_rank: rank,
        world_size: size,
        job: crate::job::Job::start(p, &abi),
        whole,
    };
    match a.job {
        Some(j) => crate::job::clock_offsets(a.api, a.world_rank, a.world_size, p, &j),
        None => {
            warn("cannot duplicate MPI_COMM_WORLD: the job's profile is not reduced at MPI_Finalize; each rank keeps its own directory");
        }
    }
    let a = Box::into_raw(Box::new(a));
    ACTIVE.store(a, Ordering::Release);
}

/// At `MPI_Finalize`, before the real one: calls are no longer measured; what was
/// lost is recorded.
pub fn deactivate(a: &Active) {
    ACTIVE.store(ptr::null_mut(), Ordering::Release);
    for (key, n) in [
        (
            "MPI receives not tracked",
            UNTRACKED.load(Ordering::Relaxed),
        ),
        (
            "MPI peers not translated",
            UNTRANSLATED.load(Ordering::Relaxed),
        ),
    ] {
        if n > 0 {
            metadata(a.api, key, &n.to_string());
        }
    }
}

// ---- communicators: ranks in MPI_COMM_WORLD ----

/// A communicator's ranks translated to `MPI_COMM_WORLD` (of the remote group for
/// an inter-communicator, whose point-to-point peers are there).
pub struct Ranks {
    /// World rank of each peer rank (`u32::MAX`: none).
    pub world: Box<[u32]>,
    /// Size of the local group.
    pub size: c_int,
    /// This process's rank in the communicator.
    pub me: c_int,
}

/// A communicator as calls use it: the world itself (no translation) or its
/// translation.
#[derive(Clone, Copy)]
pub enum CommView {
    /// `MPI_COMM_WORLD`.
    World,
    /// Another communicator.
    Other(&'static Ranks),
    /// A communicator kprof could not look up (`MPI_COMM_NULL`, an error).
    Unknown,
}

const COMM_SLOTS: usize = 1024;
const BUCKET: usize = 8;
static COMM_KEYS: [AtomicUsize; COMM_SLOTS] = [const { AtomicUsize::new(0) }; COMM_SLOTS];
static COMM_VALS: [AtomicPtr<Ranks>; COMM_SLOTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; COMM_SLOTS];
/// A slot being filled (never a handle: handles are aligned pointers).
const RESERVED: usize = 1;

#[inline(always)]
fn bucket(key: usize, slots: usize) -> usize {
    // Open MPI's handles are aligned pointers, MPICH's small indices in the
    // low bits: both kinds of bits count.
    let h = (key ^ key >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) % (slots / BUCKET) * BUCKET
}

impl Active {
    /// How `comm` translates.
    #[inline(always)]
    pub fn view(&self, p: &Pmpi, comm: Comm) -> CommView {
        if self.abi.key(comm) == self.abi.comm_world {
            return CommView::World;
        }
        self.view_other(p, comm)
    }

    /// How `comm`, not `MPI_COMM_WORLD`, translates.
    #[inline(never)]
    fn view_other(&self, p: &Pmpi, comm: Comm) -> CommView {
        let key = self.abi.key(comm);
        if key <= RESERVED || key == self.abi.comm_null {
            return CommView::Unknown;
        }
        let b = bucket(key, COMM_SLOTS);
        for i in b..b + BUCKET {
            if COMM_KEYS[i].load(Ordering::Acquire) == key {
                // SAFETY: a published slot holds a leaked `Ranks`.
                if let Some(r) = unsafe { COMM_VALS[i].load(Ordering::Acquire).as_ref() } {
                    return CommView::Other(r);
                }
            }
        }
        self.learn(p, comm)
    }

    /// First sight of a communicator: its translation, cached.
    #[cold]
    #[inline(never)]
    pub fn learn(&self, p: &Pmpi, comm: Comm) -> CommView {
        let Some(r) = self.translate(p, comm) else {
            return CommView::Unknown;
        };
        let r: &'static Ranks = Box::leak(Box::new(r));
        let key = self.abi.key(comm);
        let b = bucket(key, COMM_SLOTS);
        for i in b..b + BUCKET {
            if COMM_KEYS[i]
                .compare_exchange(0, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                COMM_VALS[i].store(r as *const Ranks as *mut Ranks, Ordering::Release);
                COMM_KEYS[i].store(key, Ordering::Release);
                break;
            }
        }
        // A full bucket: this communicator is translated again at its next use.
        CommView::Other(r)
    }

    fn translate(&self, p: &Pmpi, comm: Comm) -> Option<Ranks> {
        let (mut inter, mut size, mut me, mut group): (c_int, c_int, c_int, Group) =
            (0, 0, 0, ptr::null_mut());
        // SAFETY: `comm` is a communicator the program passed to MPI; out-pointers
        // to locals.
        unsafe {
            if (p.comm_test_inter)(comm, &mut inter) != sys::SUCCESS
                || (p.comm_size)(comm, &mut size) != sys::SUCCESS
                || (p.comm_rank)(comm, &mut me) != sys::SUCCESS
            {
                return None;
            }
            let rc = if inter != 0 {
                (p.comm_remote_group)(comm, &mut group)
            } else {
                (p.comm_group)(comm, &mut group)
            };
            if rc != sys::SUCCESS {
                return None;
            }
        }
        let mut n: c_int = 0;
        // SAFETY: a valid group; out-pointer to a local.
        unsafe { (p.group_size)(group, &mut n) };
        let n = n.max(0);
        let from: Vec<c_int> = (0..n).collect();
        let mut to: Vec<c_int> = vec![sys::UNDEFINED; from.len()];
        // SAFETY: both arrays hold `n` ranks; groups are valid.
        unsafe {
            (p.group_translate_ranks)(group, n, from.as_ptr(), self.world_group, to.as_mut_ptr());
            (p.group_free)(&mut group);
        }
        let world = to
            .iter()
            .map(|&w| u32::try_from(w).unwrap_or(u32::MAX))
            .collect();
        Some(Ranks { world, size, me })
    }

    /// A communicator (its handle as [`Abi::key`] gives it) is being freed: its
    /// handle may be reused by another one.
    pub fn forget(&self, key: usize) {
        if key <= RESERVED {
            return;
        }
        let b = bucket(key, COMM_SLOTS);
        for k in &COMM_KEYS[b..b + BUCKET] {
            let _ = k.compare_exchange(key, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// The `MPI_COMM_WORLD` rank of `rank` in the communicator seen as `view`.
    #[inline]
    pub fn world_rank_of(view: CommView, rank: c_int) -> Option<u32> {
        let r = match view {
            CommView::World => u32::try_from(rank).ok(),
            CommView::Other(t) => usize::try_from(rank)
                .ok()
                .and_then(|i| t.world.get(i).copied())
                .filter(|&w| w != u32::MAX),
            CommView::Unknown => None,
        };
        if r.is_none() {
            UNTRANSLATED.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// Size of the communicator and this process's rank in it.
    #[inline]
    pub fn size_and_rank(&self, view: CommView) -> (c_int, c_int) {
        match view {
            CommView::World => (self.world_size, self.world_rank),
            CommView::Other(t) => (t.size, t.me),
            CommView::Unknown => (0, -1),
        }
    }

    // ---- recording ----

    /// A call named `name` begins: the core clock now, for its [`Rec`] (or,
    /// when MPI calls get hardware counters, its instance opens now).
    #[inline(always)]
    pub fn open(&self, name: &'static CStr) -> Rec {
        if self.whole {
            // SAFETY: no arguments.
            return Rec::new(name, unsafe { (self.api.stamp)() });
        }
        // SAFETY: a static NUL-terminated name.
        unsafe { (self.api.begin_static)(Kind::Mpi as u8, name.as_ptr(), 0, 0) };
        Rec::new(name, 0)
    }

    /// Records a call: whole (its node, arguments and first message, in one
    /// call into the core), or, when it was opened, its arguments, message and
    /// end.
    #[inline(always)]
    pub fn record(&self, r: &Rec) {
        if self.whole {
            // SAFETY: a call whose strings are all static literals.
            unsafe { (self.api.call)(&r.0) };
            return;
        }
        let c = &r.0;
        // SAFETY: static NUL-terminated keys and channel; plain values.
        unsafe {
            for a in &c.args[..usize::from(c.nargs)] {
                (self.api.arg_static)(a.key, a.value);
            }
            if !c.channel.is_null() {
                (self.api.instant_static)(Kind::Message as u8, c.channel, c.message, c.bytes);
            }
            (self.api.end)(Kind::Mpi as u8, 0);
        }
    }

    /// One message to or from world rank `peer`, on its own (a call's second
    /// and later messages; its first goes with the call).
    #[inline]
    pub fn message(&self, peer: u32, direction: u8, bytes: u64) {
        // SAFETY: a static NUL-terminated channel.
        unsafe {
            (self.api.instant_static)(
                Kind::Message as u8,
                CHANNEL.as_ptr(),
                message::pack(peer, direction, 1),
                bytes,
            )
        };
    }

    /// A received message, from its status (source in `view`, bytes as the
    /// status holds them: no call into MPI), added to `r`; returns its (world
    /// peer, bytes).
    #[inline]
    pub fn received(&self, view: CommView, st: StatusView, r: &mut Rec) -> Option<(u32, u64)> {
        // MPI_PROC_NULL is negative in every family (-2 Open MPI, -1 MPICH).
        if st.source < 0 || st.cancelled {
            return None;
        }
        let bytes = st.bytes;
        let peer = Active::world_rank_of(view, st.source)?;
        r.message(self, peer, message::RECEIVE, bytes);
        Some((peer, bytes))
    }
}

/// A call being recorded: what it adds once MPI returned, handed to the core
/// whole by [`Active::record`].
pub struct Rec(pub Call);

impl Rec {
    /// A call named `name` that began at `begin` (the core's [`stamp`](kprof_abi::CoreApi::stamp)).
    #[inline(always)]
    pub fn new(name: &'static CStr, begin: u64) -> Rec {
        const NO_ARG: ActivityArg = ActivityArg {
            key: ptr::null(),
            value: 0,
        };
        Rec(Call {
            kind: Kind::Mpi as u8,
            nargs: 0,
            name: name.as_ptr(),
            begin,
            args: [NO_ARG; CALL_ARGS],
            channel: ptr::null(),
            message: 0,
            bytes: 0,
        })
    }

    /// An argument of the call (`key` a static literal); beyond
    /// [`CALL_ARGS`], ignored.
    #[inline(always)]
    pub fn arg(&mut self, key: &'static CStr, value: u64) {
        let n = usize::from(self.0.nargs);
        if n < CALL_ARGS {
            self.0.args[n] = ActivityArg {
                key: key.as_ptr(),
                value,
            };
            self.0.nargs += 1;
        }
    }

    /// The first arguments of the call (`keys` static literals), as
    /// [`Rec::arg`] of each but in one step.
    #[inline(always)]
    pub fn args<const N: usize>(&mut self, args: [(&'static CStr, u64); N]) {
        if self.0.nargs == 0 && N <= CALL_ARGS {
            for (i, (key, value)) in args.into_iter().enumerate() {
                self.0.args[i] = ActivityArg {
                    key: key.as_ptr(),
                    value,
                };
            }
            self.0.nargs = N as u8;
        } else {
            for (key, value) in args {
                self.arg(key, value);
            }
        }
    }

    /// One message to or from world rank `peer`: the call's first goes with
    /// it, later ones to the core at once.
    #[inline(always)]
    pub fn message(&mut self, a: &Active, peer: u32, direction: u8, bytes: u64) {
        if self.0.channel.is_null() {
            self.0.channel = CHANNEL.as_ptr();
            self.0.message = message::pack(peer, direction, 1);
            self.0.bytes = bytes;
        } else {
            a.message(peer, direction, bytes);
        }
    }
}

// ---- datatype sizes ----

/// Datatype sizes seen so far, direct-mapped by handle: the handle (its
/// [`Abi::key`]) in the low [`KEY_BITS`], the size above (0: empty). A call
/// then reads one word instead of calling `PMPI_Type_size` (about 40
/// instructions in Open MPI).
const TYPE_SLOTS: usize = 64;
static TYPE_SIZES: [AtomicU64; TYPE_SLOTS] = [const { AtomicU64::new(0) }; TYPE_SLOTS];
/// Datatypes freed so far (`MPI_Type_free`): a size learnt while one was freed
/// is not kept, as its handle may already name another datatype.
static TYPES_FREED: AtomicU64 = AtomicU64::new(0);
/// Sizes above this are not cached (they would not fit beside the handle).
const MAX_CACHED_SIZE: u64 = (1 << (64 - KEY_BITS)) - 1;

#[inline(always)]
fn type_slot(key: u64) -> usize {
    // Open MPI's datatypes are objects of a few hundred bytes, MPICH's
    // predefined ones small integers: both kinds of bits count.
    ((key ^ key >> 9).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % TYPE_SLOTS
}

/// Size in bytes of one element of `dtype` (0 when MPI refuses it): from the
/// cache, else from `PMPI_Type_size` (then cached).
#[inline]
pub fn type_size(abi: &Abi, p: &Pmpi, dtype: Datatype) -> u64 {
    let key = abi.key(dtype) as u64;
    let w = TYPE_SIZES[type_slot(key)].load(Ordering::Relaxed);
    if w & KEY_MASK == key && key != 0 {
        return w >> KEY_BITS;
    }
    learn_type_size(key, p, dtype)
}

/// A datatype not in the cache: its size from MPI, cached unless a datatype
/// was freed meanwhile.
#[cold]
#[inline(never)]
fn learn_type_size(key: u64, p: &Pmpi, dtype: Datatype) -> u64 {
    let freed = TYPES_FREED.load(Ordering::SeqCst);
    let mut size: c_int = 0;
    // SAFETY: the program's datatype; out-pointer to a local.
    if unsafe { (p.type_size)(dtype, &mut size) } != sys::SUCCESS {
        return 0;
    }
    let size = u64::try_from(size).unwrap_or(0);
    if key == 0 || key > KEY_MASK || size > MAX_CACHED_SIZE {
        return size;
    }
    let slot = &TYPE_SIZES[type_slot(key)];
    let w = size << KEY_BITS | key;
    slot.store(w, Ordering::SeqCst);
    // A free that began before the store clears the cache after it; one the
    // load below misses cannot have begun (both sequentially consistent).
    if TYPES_FREED.load(Ordering::SeqCst) != freed {
        let _ = slot.compare_exchange(w, 0, Ordering::SeqCst, Ordering::Relaxed);
    }
    size
}

/// A datatype is being freed (`MPI_Type_free`): its handle may name another
/// datatype next, so no size is kept.
pub fn forget_type_sizes() {
    TYPES_FREED.fetch_add(1, Ordering::SeqCst);
    for s in &TYPE_SIZES {
        s.store(0, Ordering::SeqCst);
    }
}

// ---- receives in flight ----

const REQ_SLOTS: usize = 8192;
/// Per slot: the request's handle in the low [`KEY_BITS`] (0: free), and above
/// them how many times the slot was taken, so that a release clears only the
/// receive it looked up. Another thread may post a receive that MPI gives the
/// same handle as soon as a wait freed it, before that wait releases its slot.
static REQ_KEYS: [AtomicU64; REQ_SLOTS] = [const { AtomicU64::new(0) }; REQ_SLOTS];
static REQ_COMM: [AtomicPtr<Ranks>; REQ_SLOTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; REQ_SLOTS];
static REQ_TYPE: [AtomicUsize; REQ_SLOTS] = [const { AtomicUsize::new(0) }; REQ_SLOTS];
/// `REQ_COMM` of a receive on `MPI_COMM_WORLD`.
const WORLD_MARK: *mut Ranks = std::ptr::dangling_mut::<Ranks>();
/// Bits of a slot's word that hold the handle: user-space pointers (Open MPI)
/// and integer handles (MPICH) both fit; a handle that does not is not tracked.
const KEY_BITS: u32 = 48;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;

/// A receive in flight: its communicator's translation and its datatype.
#[derive(Clone, Copy)]
pub struct Pending {
    /// How the source translates.
    pub view: CommView,
    /// The receive's datatype.
    pub dtype: Datatype,
}

/// Where a tracked receive was found, and which taking of that slot it is.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    slot: usize,
    word: u64,
}

/// `word` taken once more for `key`. The count skips 0, so that a slot once
/// taken never reads 0 again: a bucket's slots are taken in order, and a
/// search stops at the first one never taken.
fn retaken(word: u64, key: u64) -> u64 {
    let taken = match (word >> KEY_BITS).wrapping_add(1) & TAKEN_MASK {
        0 => 1,
        n => n,
    };
    taken << KEY_BITS | key
}
const TAKEN_MASK: u64 = (1 << (64 - KEY_BITS)) - 1;

/// Remembers the receive posted as `req` (until a wait or test completes it).
#[inline]
pub fn track(key: usize, view: CommView, dtype: Datatype) {
    let comm = match view {
        CommView::World => WORLD_MARK,
        CommView::Other(r) => r as *const Ranks as *mut Ranks,
        CommView::Unknown => return,
    };
    let key64 = key as u64;
    if key <= RESERVED {
        return;
    }
    if key64 > KEY_MASK {
        UNTRACKED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let b = bucket(key, REQ_SLOTS);
    // One pass: a handle MPI reuses after an untracked completion replaces its
    // old entry (searched up to the first slot never taken: none lies beyond);
    // else the first free slot is taken. A race lost on a slot starts over
    // (each loss is another thread's progress in this bucket).
    'retry: for _ in 0..2 * BUCKET {
        let mut free = None;
        for i in b..b + BUCKET {
            let w = REQ_KEYS[i].load(Ordering::Acquire);
            if w & KEY_MASK == key64 {
                if REQ_KEYS[i]
                    .compare_exchange(w, retaken(w, key64), Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    continue 'retry;
                }
                REQ_COMM[i].store(comm, Ordering::Relaxed);
                REQ_TYPE[i].store(dtype as usize, Ordering::Relaxed);
                return;
            }
            if w & KEY_MASK == 0 && free.is_none() {
                free = Some((i, w));
            }
            if w == 0 {
                break;
            }
        }
        let Some((i, w)) = free else {
            break;
        };
        let reserved = (w & !KEY_MASK) | RESERVED as u64;
        if REQ_KEYS[i]
            .compare_exchange(w, reserved, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            REQ_COMM[i].store(comm, Ordering::Relaxed);
            REQ_TYPE[i].store(dtype as usize, Ordering::Relaxed);
            REQ_KEYS[i].store(retaken(w, key64), Ordering::Release);
            return;
        }
    }
    UNTRACKED.fetch_add(1, Ordering::Relaxed);
}

/// The receive posted as `req`, if it is one kprof tracks: where it is and what
/// it needs at completion.
#[inline]
pub fn lookup(key: usize) -> Option<(Claim, Pending)> {
    let key64 = key as u64;
    if key <= RESERVED || key64 > KEY_MASK {
        return None;
    }
    let b = bucket(key, REQ_SLOTS);
    for i in b..b + BUCKET {
        let word = REQ_KEYS[i].load(Ordering::Acquire);
        if word & KEY_MASK == key64 {
            let comm = REQ_COMM[i].load(Ordering::Relaxed);
            let view = if comm == WORLD_MARK {
                CommView::World
            } else {
                // SAFETY: a tracked receive's slot holds a leaked `Ranks`.
                match unsafe { comm.as_ref() } {
                    Some(r) => CommView::Other(r),
                    None => CommView::Unknown,
                }
            };
            let dtype = REQ_TYPE[i].load(Ordering::Relaxed) as Datatype;
            return Some((Claim { slot: i, word }, Pending { view, dtype }));
        }
        if word == 0 {
            // Never taken: neither is any slot after it.
            return None;
        }
    }
    None
}

/// The receive found as `c` completed (or its request was freed); a slot taken
/// again since, by a receive that got the same handle, stays.
#[inline]
pub fn release(c: Claim) {
    let _ = REQ_KEYS[c.slot].compare_exchange(
        c.word,
        c.word & !KEY_MASK,
        Ordering::AcqRel,
        Ordering::Relaxed,
    );
}

/// A request handle now names something else (a send): forget a stale receive.
#[inline]
pub fn untrack(key: usize) {
    if let Some((claim, _)) = lookup(key) {
        release(claim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(i: usize) -> usize {
        // Aligned like the heap objects Open MPI's handles point to.
        0x7f00_0000_0000 + i * 0x40
    }

    #[test]
    fn receives_in_flight_are_found_until_released() {
        let dtype = 0x1234_5670 as Datatype;
        for i in 0..100 {
            track(req(i), CommView::World, dtype);
        }
        for i in 0..100 {
            let (claim, p) = lookup(req(i)).expect("tracked");
            assert!(matches!(p.view, CommView::World));
            assert_eq!(p.dtype, dtype);
            if i % 2 == 0 {
                release(claim);
            }
        }
        for i in 0..100 {
            assert_eq!(lookup(req(i)).is_some(), i % 2 == 1, "{i}");
            untrack(req(i));
            assert!(lookup(req(i)).is_none());
        }
        // Handles that are no pointers are never tracked.
        track(0, CommView::World, dtype);
        assert!(lookup(0).is_none());
    }

    #[test]
    fn a_receive_given_the_handle_a_wait_just_freed_survives_that_waits_release() {
        let (key, dtype) = (req(7000), 0x55 as Datatype);
        // Thread A's receive, looked up by its wait before MPI completes it.
        track(key, CommView::World, dtype);
        let (a, _) = lookup(key).expect("tracked");
        // MPI freed the request inside A's wait; thread B's receive gets the
        // same handle and is tracked before A's wait releases its slot.
        track(key, CommView::World, dtype);
        release(a);
        let (b, _) = lookup(key).expect("B's receive is still tracked");
        release(b);
        assert!(lookup(key).is_none());
        // A stale release of a slot taken again later is ignored too.
        track(key, CommView::World, dtype);
        release(a);
        assert!(lookup(key).is_some());
        untrack(key);
        assert!(lookup(key).is_none());
    }

    #[test]
    fn a_full_bucket_counts_what_it_cannot_track() {
        // Keys of one bucket, which no key of the other test (run in parallel,
        // same table) falls in.
        let other: Vec<usize> = (0..100).map(|i| bucket(req(i), REQ_SLOTS)).collect();
        let want = (5000..)
            .map(|i| bucket(req(i), REQ_SLOTS))
            .find(|b| !other.contains(b))
            .unwrap();
        let same: Vec<usize> = (5000..200_000)
            .map(req)
            .filter(|&r| bucket(r, REQ_SLOTS) == want)
            .take(BUCKET + 3)
            .collect();
        assert_eq!(same.len(), BUCKET + 3);
        let before = UNTRACKED.load(Ordering::Relaxed);
        for &r in &same {
            track(r, CommView::World, std::ptr::null_mut());
        }
        assert_eq!(UNTRACKED.load(Ordering::Relaxed) - before, 3);
        for &r in &same {
            untrack(r);
        }
    }

    /// `n` keys of one bucket that no other test's keys fall in (the tests
    /// share the table and run in parallel).
    fn keys_of_a_quiet_bucket(n: usize) -> Vec<usize> {
        let mut other: Vec<usize> = (0..100)
            .chain([7000])
            .map(|i| bucket(req(i), REQ_SLOTS))
            .collect();
        // The bucket `a_full_bucket_counts_what_it_cannot_track` fills.
        let full = (5000..)
            .map(|i| bucket(req(i), REQ_SLOTS))
            .find(|b| !other[..100].contains(b))
            .unwrap();
        other.push(full);
        let key = |i: usize| 0x7e00_0000_0000 + i * 0x40;
        let want = (0..)
            .map(|i| bucket(key(i), REQ_SLOTS))
            .find(|b| !other.contains(b))
            .unwrap();
        (0..)
            .map(key)
            .filter(|&k| bucket(k, REQ_SLOTS) == want)
            .take(n)
            .collect()
    }

    #[test]
    fn a_search_stops_at_the_first_slot_never_taken_and_passes_freed_ones() {
        let k = keys_of_a_quiet_bucket(4);
        let dtype = 0x77 as Datatype;
        track(k[0], CommView::World, dtype);
        track(k[1], CommView::World, dtype);
        // The first slot freed: the second receive is still found past it.
        let (first, _) = lookup(k[0]).expect("tracked");
        release(first);
        assert!(lookup(k[0]).is_none());
        assert!(lookup(k[1]).is_some());
        assert!(lookup(k[2]).is_none());
        // A new receive takes the freed slot; both are found, the one never
        // posted is not.
        track(k[2], CommView::World, dtype);
        assert!(lookup(k[2]).is_some());
        assert!(lookup(k[1]).is_some());
        assert!(lookup(k[3]).is_none());
        // A handle tracked again (its completion unseen) keeps one entry.
        track(k[1], CommView::World, dtype);
        untrack(k[1]);
        assert!(lookup(k[1]).is_none());
        untrack(k[2]);
        assert!(lookup(k[2]).is_none());
    }

    #[test]
    fn a_slot_once_taken_never_reads_as_never_taken() {
        let key = 0x7f00_1234_5640u64;
        // The count of takings wraps past 0 to 1.
        let last = TAKEN_MASK << KEY_BITS;
        assert_eq!(retaken(last, key) >> KEY_BITS, 1);
        assert_eq!(retaken(0, key) >> KEY_BITS, 1);
        assert_ne!(retaken(last, key) & !KEY_MASK, 0);
    }

    static SIZE_CALLS: AtomicU64 = AtomicU64::new(0);
    static SIZE: AtomicU64 = AtomicU64::new(8);

    /// A `PMPI_Type_size` that counts its calls and answers [`SIZE`].
    unsafe extern "C" fn fake_type_size(_: Datatype, size: *mut c_int) -> c_int {
        SIZE_CALLS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the caller's out-pointer.
        unsafe { *size = SIZE.load(Ordering::SeqCst) as c_int };
        sys::SUCCESS
    }

    #[test]
    fn datatype_sizes_are_asked_once_until_a_datatype_is_freed() {
        let mut p = Pmpi::resolve();
        p.type_size = fake_type_size;
        let abi = Abi::of(Family::Mpich).expect("MPICH's ABI needs no library");
        // An MPICH handle passed in a register whose upper half is not zero.
        let dtype = 0xdead_0000_4c00_080b_u64 as usize as Datatype;
        let calls = || SIZE_CALLS.load(Ordering::SeqCst);
        assert_eq!(type_size(&abi, &p, dtype), 8);
        assert_eq!(type_size(&abi, &p, dtype), 8);
        assert_eq!(type_size(&abi, &p, 0x4c00_080b as Datatype), 8);
        assert_eq!(calls(), 1);
        // Freed, and the handle names a datatype of another size.
        forget_type_sizes();
        SIZE.store(24, Ordering::SeqCst);
        assert_eq!(type_size(&abi, &p, dtype), 24);
        assert_eq!(type_size(&abi, &p, dtype), 24);
        assert_eq!(calls(), 2);
        // Sizes too large to cache are asked each time.
        SIZE.store(1 << 20, Ordering::SeqCst);
        forget_type_sizes();
        assert_eq!(type_size(&abi, &p, dtype), 1 << 20);
        assert_eq!(type_size(&abi, &p, dtype), 1 << 20);
        assert_eq!(calls(), 4);
    }

    #[test]
    fn translated_ranks() {
        let r: &'static Ranks = Box::leak(Box::new(Ranks {
            world: vec![6, 4, u32::MAX].into_boxed_slice(),
            size: 3,
            me: 1,
        }));
        assert_eq!(Active::world_rank_of(CommView::World, 3), Some(3));
        assert_eq!(Active::world_rank_of(CommView::Other(r), 0), Some(6));
        assert_eq!(Active::world_rank_of(CommView::Other(r), 1), Some(4));
        assert_eq!(Active::world_rank_of(CommView::Other(r), 2), None);
        assert_eq!(Active::world_rank_of(CommView::Other(r), 3), None);
        assert_eq!(Active::world_rank_of(CommView::Unknown, 0), None);
        assert_eq!(Active::world_rank_of(CommView::World, -2), None);
    }
}

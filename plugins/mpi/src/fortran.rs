//! The Fortran entries (`mpif.h` and `use mpi`): `mpi_send_` and its other
//! spellings (`mpi_send__`, `mpi_send`, `MPI_SEND`), each forwarding to the MPI
//! library's Fortran profiling entry (`pmpi_send_`, found with `dlsym`), so the
//! program's results and `ierr` are the library's own.
//!
//! Whether they record depends on what the library's Fortran entries call,
//! measured on Debian 12 (`nm -D`, `objdump -d` of the Fortran libraries; see
//! docs/mpi.md):
//! - Open MPI 4.1 (`libmpi_mpifh`): every spelling is an alias of one function
//!   that converts the handles and calls the C **`PMPI_*`** function, so the C
//!   wrappers never see a Fortran program's calls: these entries record them,
//!   as the C wrappers would (same node names, arguments and messages), with the
//!   handles converted by `PMPI_Comm_f2c`, `PMPI_Type_f2c`, `PMPI_Request_f2c`
//!   and the statuses by `PMPI_Status_f2c`.
//! - MPICH 4.0 (`libmpichfort`): the Fortran entries call the C **`MPI_*`**
//!   functions, which are kprof's: these entries only forward (recording here
//!   too would count each call twice).
//!
//! The `mpi_f08` module's entries (`mpi_send_f08_`) are not covered.

use std::ffi::{c_int, c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use kprof_abi::guard::guard;

use crate::state::{self, active, Active, Rec};
use crate::sys::{self, Comm, Datatype, Pmpi, Request, Status};
use crate::{Scan, INLINE};

/// Fortran's default `INTEGER` (`MPI_Fint`).
pub type Fint = c_int;

macro_rules! fortran_table {
    ($($field:ident: $sym:literal fn($($arg:ty),*);)*) => {
        /// The library's Fortran profiling entries (`pmpi_send_` ...), and what
        /// converting Fortran handles and statuses needs.
        pub struct Fpmpi {
            $(
                #[doc = concat!("`", $sym, "_`.")]
                pub $field: Option<unsafe extern "C" fn($($arg),*)>,
            )*
            /// `PMPI_Comm_f2c`.
            pub comm_f2c: Option<unsafe extern "C" fn(Fint) -> Comm>,
            /// `PMPI_Type_f2c`.
            pub type_f2c: Option<unsafe extern "C" fn(Fint) -> Datatype>,
            /// `PMPI_Request_f2c`.
            pub request_f2c: Option<unsafe extern "C" fn(Fint) -> Request>,
            /// `PMPI_Status_f2c`.
            pub status_f2c: Option<unsafe extern "C" fn(*const Fint, *mut Status) -> c_int>,
            /// Fortran's `MPI_STATUS_IGNORE` (`MPI_F_STATUS_IGNORE`), or null.
            pub status_ignore: *const Fint,
            /// Fortran's `MPI_STATUSES_IGNORE` (`MPI_F_STATUSES_IGNORE`), or null.
            pub statuses_ignore: *const Fint,
            /// Fortran's `MPI_IN_PLACE` (Open MPI's `mpi_fortran_in_place_`), or null.
            pub in_place: *const c_void,
            /// These entries record (Open MPI); otherwise they only forward.
            pub records: bool,
        }

        impl Fpmpi {
            /// Every entry from the libraries after this one, in whichever
            /// spelling the library exports.
            fn resolve() -> Fpmpi {
                let mut f = Fpmpi {
                    $(
                        // SAFETY: the symbol is the MPI standard's Fortran binding
                        // of that name (every argument by reference).
                        $field: fortran($sym).map(|f| unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*)>(f)
                        }),
                    )*
                    // SAFETY (the four below): the MPI standard's C functions of
                    // those names and signatures.
                    comm_f2c: sys::lookup("PMPI_Comm_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Comm>(f)
                    }),
                    type_f2c: sys::lookup("PMPI_Type_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Datatype>(f)
                    }),
                    request_f2c: sys::lookup("PMPI_Request_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Request>(f)
                    }),
                    status_f2c: sys::lookup("PMPI_Status_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<
                            *mut c_void,
                            unsafe extern "C" fn(*const Fint, *mut Status) -> c_int,
                        >(f)
                    }),
                    status_ignore: ignore_pointer("MPI_F_STATUS_IGNORE\0"),
                    statuses_ignore: ignore_pointer("MPI_F_STATUSES_IGNORE\0"),
                    in_place: sys::data("mpi_fortran_in_place_\0")
                        .map_or(ptr::null(), |p| p.cast_const()),
                    records: false,
                };
                f.records = sys::Family::detect() == sys::Family::OpenMpi
                    && f.comm_f2c.is_some()
                    && f.type_f2c.is_some()
                    && f.request_f2c.is_some()
                    && f.status_f2c.is_some()
                    && !f.status_ignore.is_null()
                    && !f.statuses_ignore.is_null();
                f
            }
        }
    };
}

// The library's Fortran profiling entries; every argument by reference, the
// last one `ierr`.
fortran_table! {
    init: "pmpi_init" fn(*mut Fint);
    init_thread: "pmpi_init_thread" fn(*const Fint, *mut Fint, *mut Fint);
    finalize: "pmpi_finalize" fn(*mut Fint);
    abort: "pmpi_abort" fn(*const Fint, *const Fint, *mut Fint);
    send: "pmpi_send" fn(*const c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut Fint);
    recv: "pmpi_recv" fn(*mut c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut Fint, *mut Fint);
    isend: "pmpi_isend" fn(*const c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut Fint, *mut Fint);
    irecv: "pmpi_irecv" fn(*mut c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut Fint, *mut Fint);
    sendrecv: "pmpi_sendrecv" fn(*const c_void, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *const Fint, *mut Fint, *mut Fint);
    wait: "pmpi_wait" fn(*mut Fint, *mut Fint, *mut Fint);
    waitall: "pmpi_waitall" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint);
    test: "pmpi_test" fn(*mut Fint, *mut Fint, *mut Fint, *mut Fint);
    testall: "pmpi_testall" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);
    waitany: "pmpi_waitany" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);
    waitsome: "pmpi_waitsome" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint,
        *mut Fint);
    testsome: "pmpi_testsome" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint,
        *mut Fint);
    request_free: "pmpi_request_free" fn(*mut Fint, *mut Fint);
    barrier: "pmpi_barrier" fn(*const Fint, *mut Fint);
    bcast: "pmpi_bcast" fn(*mut c_void, *const Fint, *const Fint, *const Fint, *const Fint,
        *mut Fint);
    reduce: "pmpi_reduce" fn(*const c_void, *mut c_void, *const Fint, *const Fint,
        *const Fint, *const Fint, *const Fint, *mut Fint);
    allreduce: "pmpi_allreduce" fn(*const c_void, *mut c_void, *const Fint, *const Fint,
        *const Fint, *const Fint, *mut Fint);
    allgather: "pmpi_allgather" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *mut Fint);
    alltoall: "pmpi_alltoall" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *mut Fint);
    gather: "pmpi_gather" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    scatter: "pmpi_scatter" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    allgatherv: "pmpi_allgatherv" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    alltoallv: "pmpi_alltoallv" fn(*const c_void, *const Fint, *const Fint, *const Fint,
        *mut c_void, *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    gatherv: "pmpi_gatherv" fn(*const c_void, *const Fint, *const Fint, *mut c_void,
        *const Fint, *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    scatterv: "pmpi_scatterv" fn(*const c_void, *const Fint, *const Fint, *const Fint,
        *mut c_void, *const Fint, *const Fint, *const Fint, *const Fint, *mut Fint);
    comm_split: "pmpi_comm_split" fn(*const Fint, *const Fint, *const Fint, *mut Fint,
        *mut Fint);
    comm_dup: "pmpi_comm_dup" fn(*const Fint, *mut Fint, *mut Fint);
    comm_free: "pmpi_comm_free" fn(*mut Fint, *mut Fint);
}

/// The Fortran entry `base` in the first spelling the libraries after this one
/// export (gfortran's `base_` first).
fn fortran(base: &str) -> Option<*mut c_void> {
    [
        format!("{base}_"),
        format!("{base}__"),
        base.to_string(),
        base.to_ascii_uppercase(),
    ]
    .into_iter()
    .find_map(|name| {
        let c = CString::new(name).ok()?;
        // SAFETY: dlsym only reads the NUL-terminated name and the loader's tables.
        let f = unsafe { libc::dlsym(libc::RTLD_NEXT, c.as_ptr()) };
        (!f.is_null()).then_some(f)
    })
}

/// The value of the C global `MPI_F_STATUS_IGNORE` (a pointer to Fortran's
/// `MPI_STATUS_IGNORE`), or null.
fn ignore_pointer(symbol: &str) -> *const Fint {
    match sys::data(symbol) {
        // SAFETY: the library's `MPI_Fint *` global, set when it was loaded.
        Some(p) => unsafe { *p.cast::<*const Fint>() },
        None => ptr::null(),
    }
}

/// The table once resolved (leaked); null before the first Fortran call.
static FPMPI: AtomicPtr<Fpmpi> = AtomicPtr::new(ptr::null_mut());

// SAFETY: the table is written once, before it is published, and then only read;
// its raw pointers are addresses of the library's globals.
unsafe impl Sync for Fpmpi {}
// SAFETY: as above.
unsafe impl Send for Fpmpi {}

/// The Fortran table (resolved at the first call).
#[inline(always)]
fn fpmpi() -> &'static Fpmpi {
    // SAFETY: FPMPI holds null or a leaked, never freed table.
    match unsafe { FPMPI.load(Ordering::Acquire).as_ref() } {
        Some(f) => f,
        None => resolve_fpmpi(),
    }
}

#[cold]
#[inline(never)]
fn resolve_fpmpi() -> &'static Fpmpi {
    let fresh = Box::into_raw(Box::new(Fpmpi::resolve()));
    match FPMPI.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked.
        Ok(_) => unsafe { &*fresh },
        Err(won) => {
            // SAFETY: ours, never published.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: the winner's leaked table.
            unsafe { &*won }
        }
    }
}

/// `ierr` as MPI set it (`MPI_SUCCESS` when the program passed none).
fn rc(ierr: *const Fint) -> c_int {
    if ierr.is_null() {
        sys::SUCCESS
    } else {
        // SAFETY: the program's INTEGER, which MPI set.
        unsafe { *ierr }
    }
}

/// Calls `entry` of the library (the program calls it: the library has it);
/// an entry the library lacks sets `ierr` to `MPI_ERR_OTHER`.
fn call<F>(entry: Option<F>, ierr: *mut Fint, f: impl FnOnce(F)) -> c_int {
    match entry {
        Some(e) => f(e),
        None if !ierr.is_null() => {
            // SAFETY: the program's INTEGER.
            unsafe { *ierr = sys::ERR_OTHER };
        }
        None => {}
    }
    rc(ierr)
}

/// The conversions of Fortran handles (only where [`Fpmpi::records`] holds).
impl Fpmpi {
    /// The C communicator of Fortran's `*c`.
    ///
    /// # Safety
    /// `c` points to the program's INTEGER.
    unsafe fn comm(&self, c: *const Fint) -> Comm {
        match (self.comm_f2c, c.is_null()) {
            // SAFETY: the caller's contract.
            (Some(f), false) => unsafe { f(*c) },
            _ => ptr::null_mut(),
        }
    }

    /// The C datatype of Fortran's `*t`.
    ///
    /// # Safety
    /// `t` points to the program's INTEGER.
    unsafe fn dtype(&self, t: *const Fint) -> Datatype {
        match (self.type_f2c, t.is_null()) {
            // SAFETY: the caller's contract.
            (Some(f), false) => unsafe { f(*t) },
            _ => ptr::null_mut(),
        }
    }

    /// The C request of Fortran's `*r`.
    ///
    /// # Safety
    /// `r` points to the program's INTEGER.
    unsafe fn request(&self, r: *const Fint) -> Request {
        match (self.request_f2c, r.is_null()) {
            // SAFETY: the caller's contract.
            (Some(f), false) => unsafe { f(*r) },
            _ => ptr::null_mut(),
        }
    }

    /// The status of Fortran status `i` of the array at `st`, as C's.
    ///
    /// # Safety
    /// `st` holds more than `i` Fortran statuses, which MPI filled.
    unsafe fn status(&self, a: &Active, st: *const Fint, i: usize) -> Option<sys::StatusView> {
        let f = self.status_f2c?;
        let mut c = Status::default();
        // SAFETY: the caller's contract; `c` is a C status (Open MPI's size, the
        // larger).
        let ok = unsafe { f(st.add(i * a.abi.fortran_status_ints()), &mut c) } == sys::SUCCESS;
        // SAFETY: MPI filled `c`.
        ok.then(|| unsafe { a.abi.status(&c, 0) })
    }

    /// A buffer as the C wrappers see it: Fortran's `MPI_IN_PLACE` becomes C's.
    fn buf(&self, a: &Active, b: *const c_void) -> *const c_void {
        if !self.in_place.is_null() && b == self.in_place {
            a.abi.in_place_ptr()
        } else {
            b
        }
    }
}

/// The value of the program's INTEGER at `v` (0 for none).
fn val(v: *const Fint) -> c_int {
    if v.is_null() {
        0
    } else {
        // SAFETY: the program's INTEGER.
        unsafe { *v }
    }
}

/// `INTEGER`s of kprof's own Fortran status: room for one of either family
/// (`MPI_STATUS_SIZE` is 6 in Open MPI, 5 in MPICH).
const OWN_STATUS_INTS: usize = 8;
/// A Fortran status of kprof's own.
type OwnStatus = [Fint; OWN_STATUS_INTS];

/// Records a call as [`crate::measured`] does, where these entries record;
/// otherwise only forwards (`fwd` returns `ierr`).
#[inline(always)]
fn measured(
    name: &'static CStr,
    fwd: impl FnOnce(&'static Fpmpi) -> c_int,
    after: impl FnOnce(&'static Fpmpi, &'static Active, &'static Pmpi, c_int, &mut Rec),
) -> c_int {
    let f = fpmpi();
    if !f.records {
        return fwd(f);
    }
    crate::measured(name, |_| fwd(f), |a, p, rc, r| after(f, a, p, rc, r))
}

/// Defines the exported spellings of one Fortran entry, each calling `$imp`.
macro_rules! entry {
    ($imp:ident: [$($name:ident),+] $params:tt) => {
        $( entry!(@one $imp $name $params); )+
    };
    (@one $imp:ident $name:ident ($($arg:ident: $ty:ty),*)) => {
            #[doc = concat!("The Fortran entry `", stringify!($name), "` (see the module).")]
            ///
            /// # Safety
            /// The MPI standard's Fortran binding.
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) {
                // SAFETY: the caller's contract.
                unsafe { $imp($($arg),*) }
            }
    };
}

// ---- start and end ----

entry!(init: [mpi_init_, mpi_init__, mpi_init, MPI_INIT] (ierr: *mut Fint));
unsafe fn init(ierr: *mut Fint) {
    let f = fpmpi();
    if !f.records {
        // SAFETY: the program's own argument, forwarded to the library's entry.
        call(f.init, ierr, |e| unsafe { e(ierr) });
        return;
    }
    // SAFETY: forwarded as received.
    crate::init(c"MPI_Init", None, |_| {
        call(f.init, ierr, |e| unsafe { e(ierr) })
    });
}

entry!(init_thread: [mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD]
    (required: *const Fint, provided: *mut Fint, ierr: *mut Fint));
unsafe fn init_thread(required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    // SAFETY (both): forwarded as received.
    let fwd = || {
        call(f.init_thread, ierr, |e| unsafe {
            e(required, provided, ierr)
        })
    };
    if !f.records {
        fwd();
        return;
    }
    crate::init(c"MPI_Init_thread", Some(provided), |_| fwd());
}

entry!(finalize: [mpi_finalize_, mpi_finalize__, mpi_finalize, MPI_FINALIZE] (ierr: *mut Fint));
unsafe fn finalize(ierr: *mut Fint) {
    let f = fpmpi();
    // SAFETY (both): forwarded as received.
    let fwd = || call(f.finalize, ierr, |e| unsafe { e(ierr) });
    if !f.records {
        fwd();
        return;
    }
    crate::finalize(|_| fwd());
}

entry!(abort: [mpi_abort_, mpi_abort__, mpi_abort, MPI_ABORT]
    (comm: *const Fint, errorcode: *const Fint, ierr: *mut Fint));
unsafe fn abort(comm: *const Fint, errorcode: *const Fint, ierr: *mut Fint) {
    let f = fpmpi();
    // SAFETY (both): forwarded as received.
    let fwd = || call(f.abort, ierr, |e| unsafe { e(comm, errorcode, ierr) });
    if !f.records {
        fwd();
        return;
    }
    crate::abort(val(errorcode), |_| fwd());
}

// ---- point to point ----

entry!(send: [mpi_send_, mpi_send__, mpi_send, MPI_SEND]
    (buf: *const c_void, count: *const Fint, dtype: *const Fint, dest: *const Fint,
     tag: *const Fint, comm: *const Fint, ierr: *mut Fint));
unsafe fn send(
    buf: *const c_void,
    count: *const Fint,
    dtype: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Send",
        // SAFETY: forwarded as received.
        |f| {
            call(f.send, ierr, |e| unsafe {
                e(buf, count, dtype, dest, tag, comm, ierr)
            })
        },
        |f, a, p, rc, r| {
            if rc == sys::SUCCESS {
                // SAFETY: the program's handles.
                let (t, c) = unsafe { (f.dtype(dtype), f.comm(comm)) };
                crate::sent(a, p, r, t, val(count), val(dest), c, true);
            }
        },
    );
}

entry!(isend: [mpi_isend_, mpi_isend__, mpi_isend, MPI_ISEND]
    (buf: *const c_void, count: *const Fint, dtype: *const Fint, dest: *const Fint,
     tag: *const Fint, comm: *const Fint, req: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn isend(
    buf: *const c_void,
    count: *const Fint,
    dtype: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    req: *mut Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Isend",
        // SAFETY: forwarded as received.
        |f| {
            call(f.isend, ierr, |e| unsafe {
                e(buf, count, dtype, dest, tag, comm, req, ierr)
            })
        },
        |f, a, p, rc, r| {
            if rc == sys::SUCCESS && !req.is_null() {
                // SAFETY: MPI wrote the new request; the program's handles.
                let (q, t, c) = unsafe { (f.request(req), f.dtype(dtype), f.comm(comm)) };
                state::untrack(a.abi.key(q));
                crate::sent(a, p, r, t, val(count), val(dest), c, false);
            }
        },
    );
}

entry!(irecv: [mpi_irecv_, mpi_irecv__, mpi_irecv, MPI_IRECV]
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, req: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn irecv(
    buf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    req: *mut Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Irecv",
        // SAFETY: forwarded as received.
        |f| {
            call(f.irecv, ierr, |e| unsafe {
                e(buf, count, dtype, source, tag, comm, req, ierr)
            })
        },
        |f, a, p, rc, _| {
            if rc == sys::SUCCESS && !req.is_null() {
                // SAFETY: MPI wrote the new request; the program's handles.
                let (q, t, c) = unsafe { (f.request(req), f.dtype(dtype), f.comm(comm)) };
                state::track(a.abi.key(q), a.view(p, c), t);
            }
        },
    );
}

/// The status to pass for a receive: the program's, or kprof's own in place of
/// `MPI_STATUS_IGNORE`.
fn own_status(f: &Fpmpi, status: *mut Fint, own: &mut OwnStatus) -> *mut Fint {
    if f.records && status.cast_const() == f.status_ignore {
        own.as_mut_ptr()
    } else {
        status
    }
}

entry!(recv: [mpi_recv_, mpi_recv__, mpi_recv, MPI_RECV]
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, status: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn recv(
    buf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let mut own: OwnStatus = [0; 8];
    let st = own_status(fpmpi(), status, &mut own);
    measured(
        c"MPI_Recv",
        // SAFETY: forwarded, with a status of kprof's own in place of
        // MPI_STATUS_IGNORE.
        |f| {
            call(f.recv, ierr, |e| unsafe {
                e(buf, count, dtype, source, tag, comm, st, ierr)
            })
        },
        |f, a, p, rc, r| {
            if rc == sys::SUCCESS && !st.is_null() {
                // SAFETY: the program's communicator; MPI filled the status.
                let (c, s) = unsafe { (f.comm(comm), f.status(a, st, 0)) };
                if let Some(s) = s {
                    let got = a.received(a.view(p, c), s, r);
                    crate::received_args(r, got, true);
                }
            }
        },
    );
}

entry!(sendrecv: [mpi_sendrecv_, mpi_sendrecv__, mpi_sendrecv, MPI_SENDRECV]
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint, dest: *const Fint,
     sendtag: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, source: *const Fint, recvtag: *const Fint, comm: *const Fint,
     status: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    dest: *const Fint,
    sendtag: *const Fint,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    recvtype: *const Fint,
    source: *const Fint,
    recvtag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let mut own: OwnStatus = [0; 8];
    let st = own_status(fpmpi(), status, &mut own);
    measured(
        c"MPI_Sendrecv",
        |f| {
            // SAFETY: forwarded, with a status of kprof's own in place of
            // MPI_STATUS_IGNORE.
            call(f.sendrecv, ierr, |e| unsafe {
                e(
                    sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                    source, recvtag, comm, st, ierr,
                )
            })
        },
        |f, a, p, rc, r| {
            if rc != sys::SUCCESS {
                return;
            }
            // SAFETY: the program's handles.
            let (t, c) = unsafe { (f.dtype(sendtype), f.comm(comm)) };
            crate::sent(a, p, r, t, val(sendcount), val(dest), c, false);
            // SAFETY: MPI filled the status.
            if let Some(s) = unsafe { f.status(a, st, 0) } {
                let got = a.received(a.view(p, c), s, r);
                crate::received_args(r, got, false);
            }
        },
    );
}

entry!(request_free: [mpi_request_free_, mpi_request_free__, mpi_request_free, MPI_REQUEST_FREE]
    (req: *mut Fint, ierr: *mut Fint));
unsafe fn request_free(req: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    if let Some(a) = active().filter(|_| f.records) {
        // SAFETY: the program's request.
        guard((), || state::untrack(a.abi.key(unsafe { f.request(req) })));
    }
    // SAFETY: forwarded as received.
    call(f.request_free, ierr, |e| unsafe { e(req, ierr) });
}

// ---- completion ----

/// The C handles of `count` Fortran requests (an inline array for up to
/// [`INLINE`], else on the heap).
struct Requests {
    inline: [Request; INLINE],
    heap: Vec<Request>,
}

impl Requests {
    /// The C handles of the `count` Fortran requests at `reqs`.
    ///
    /// # Safety
    /// `reqs` holds `count` INTEGERs (or is NULL).
    unsafe fn of(f: &Fpmpi, reqs: *const Fint, count: c_int) -> Requests {
        let mut out = Requests {
            inline: [ptr::null_mut(); INLINE],
            heap: Vec::new(),
        };
        let n = usize::try_from(count).unwrap_or(0);
        if reqs.is_null() {
            return out;
        }
        if n > INLINE {
            out.heap = vec![ptr::null_mut(); n];
        }
        let to = if n > INLINE {
            &mut out.heap[..]
        } else {
            &mut out.inline[..n]
        };
        for (i, slot) in to.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *slot = unsafe { f.request(reqs.add(i)) };
        }
        out
    }

    fn ptr(&self, count: c_int) -> *const Request {
        if usize::try_from(count).unwrap_or(0) > INLINE {
            self.heap.as_ptr()
        } else {
            self.inline.as_ptr()
        }
    }
}

/// A wait or test, as [`crate::completion`] does for C: the tracked receives
/// among the requests (converted before the call: MPI resets completed
/// handles), statuses of kprof's own in place of `MPI_STATUSES_IGNORE` when one
/// is needed, and the completed receives recorded from their statuses. `fwd`
/// gets the statuses to pass; `done` lists the completed (request index, status
/// index) pairs, both from 0.
fn completion(
    name: &'static CStr,
    reqs: *const Fint,
    count: c_int,
    statuses: *mut Fint,
    ignore: *const Fint,
    fwd: impl FnOnce(&'static Fpmpi, *mut Fint) -> c_int,
    done: impl FnOnce(&mut dyn FnMut(c_int, c_int)),
) -> c_int {
    let f = fpmpi();
    let Some(a) = active().filter(|_| f.records) else {
        return fwd(f, statuses);
    };
    let mut r = guard(Rec::new(name, 0), || a.open(name));
    let mut scan = Scan::new();
    guard((), || {
        // SAFETY: the program passes `count` requests.
        let c = unsafe { Requests::of(f, reqs, count) };
        // SAFETY: `c` holds `count` C requests.
        unsafe { scan.fill(&a.abi, c.ptr(count), count) };
    });
    // kprof's own statuses: inline for up to INLINE requests (no allocation on
    // the common path), else on the heap.
    // Left uninitialized: MPI writes the statuses of the requests it completes,
    // the only ones read.
    let mut inline = [const { MaybeUninit::<Fint>::uninit() }; INLINE * OWN_STATUS_INTS];
    let need = statuses.cast_const() == ignore && !scan.is_empty() && count > 0;
    let ints = usize::try_from(count).unwrap_or(0) * a.abi.fortran_status_ints();
    let mut heap: Vec<Fint> = if need && ints > inline.len() {
        vec![0; ints]
    } else {
        Vec::new()
    };
    let st = match (need, heap.is_empty()) {
        (false, _) => statuses,
        (true, true) => inline.as_mut_ptr().cast(),
        (true, false) => heap.as_mut_ptr(),
    };
    let rc = fwd(f, st);
    guard((), || {
        if scan.is_empty() || rc != sys::SUCCESS {
            a.record(&r);
            return;
        }
        let (mut n, mut bytes, mut peer) = (0u32, 0u64, None);
        done(&mut |index, status| {
            if let Some(t) = scan.find(index) {
                // SAFETY: MPI filled the status of each completed request.
                let s = unsafe { f.status(a, st, status as usize) };
                if let Some((w, b)) = crate::completed(a, &mut r, t, s) {
                    n += 1;
                    bytes += b;
                    peer = Some(w);
                }
            }
        });
        crate::completion_args(&mut r, n, bytes, peer);
        a.record(&r);
    });
    rc
}

entry!(wait: [mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT]
    (req: *mut Fint, status: *mut Fint, ierr: *mut Fint));
unsafe fn wait(req: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    completion(
        c"MPI_Wait",
        req,
        1,
        status,
        f.status_ignore,
        // SAFETY: forwarded, the status possibly kprof's own.
        |f, st| call(f.wait, ierr, |e| unsafe { e(req, st, ierr) }),
        |d| d(0, 0),
    );
}

entry!(waitall: [mpi_waitall_, mpi_waitall__, mpi_waitall, MPI_WAITALL]
    (count: *const Fint, reqs: *mut Fint, statuses: *mut Fint, ierr: *mut Fint));
unsafe fn waitall(count: *const Fint, reqs: *mut Fint, statuses: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    let n = val(count);
    completion(
        c"MPI_Waitall",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        // SAFETY: forwarded, the statuses possibly kprof's own.
        |f, st| call(f.waitall, ierr, |e| unsafe { e(count, reqs, st, ierr) }),
        |d| (0..n).for_each(|i| d(i, i)),
    );
}

entry!(test: [mpi_test_, mpi_test__, mpi_test, MPI_TEST]
    (req: *mut Fint, flag: *mut Fint, status: *mut Fint, ierr: *mut Fint));
unsafe fn test(req: *mut Fint, flag: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    completion(
        c"MPI_Test",
        req,
        1,
        status,
        f.status_ignore,
        // SAFETY: forwarded, the status possibly kprof's own.
        |f, st| call(f.test, ierr, |e| unsafe { e(req, flag, st, ierr) }),
        |d| {
            if val(flag) != 0 {
                d(0, 0);
            }
        },
    );
}

entry!(testall: [mpi_testall_, mpi_testall__, mpi_testall, MPI_TESTALL]
    (count: *const Fint, reqs: *mut Fint, flag: *mut Fint, statuses: *mut Fint, ierr: *mut Fint));
unsafe fn testall(
    count: *const Fint,
    reqs: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let f = fpmpi();
    let n = val(count);
    completion(
        c"MPI_Testall",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        // SAFETY: forwarded, the statuses possibly kprof's own.
        |f, st| {
            call(f.testall, ierr, |e| unsafe {
                e(count, reqs, flag, st, ierr)
            })
        },
        |d| {
            if val(flag) != 0 {
                (0..n).for_each(|i| d(i, i));
            }
        },
    );
}

entry!(waitany: [mpi_waitany_, mpi_waitany__, mpi_waitany, MPI_WAITANY]
    (count: *const Fint, reqs: *mut Fint, index: *mut Fint, status: *mut Fint,
     ierr: *mut Fint));
unsafe fn waitany(
    count: *const Fint,
    reqs: *mut Fint,
    index: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let f = fpmpi();
    completion(
        c"MPI_Waitany",
        reqs,
        val(count),
        status,
        f.status_ignore,
        // SAFETY: forwarded, the status possibly kprof's own.
        |f, st| {
            call(f.waitany, ierr, |e| unsafe {
                e(count, reqs, index, st, ierr)
            })
        },
        |d| {
            // Fortran's index counts from 1 (MPI_UNDEFINED: none completed).
            let i = val(index);
            if i >= 1 {
                d(i - 1, 0);
            }
        },
    );
}

/// The completed pairs of a Fortran `MPI_WAITSOME`/`MPI_TESTSOME`: its indices
/// count from 1.
///
/// # Safety
/// `outcount` and `indices` as MPI filled them.
unsafe fn some(
    outcount: *const Fint,
    indices: *const Fint,
    incount: c_int,
    d: &mut dyn FnMut(c_int, c_int),
) {
    let n = val(outcount);
    if indices.is_null() || n <= 0 || n == sys::UNDEFINED {
        return;
    }
    for j in 0..n.min(incount) {
        // SAFETY: MPI wrote `n` indices.
        let i = unsafe { *indices.add(j as usize) };
        if i >= 1 {
            d(i - 1, j);
        }
    }
}

entry!(waitsome: [mpi_waitsome_, mpi_waitsome__, mpi_waitsome, MPI_WAITSOME]
    (incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint, ierr: *mut Fint));
unsafe fn waitsome(
    incount: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let f = fpmpi();
    let n = val(incount);
    completion(
        c"MPI_Waitsome",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        // SAFETY: forwarded, the statuses possibly kprof's own.
        |f, st| {
            call(f.waitsome, ierr, |e| unsafe {
                e(incount, reqs, outcount, indices, st, ierr)
            })
        },
        // SAFETY: MPI wrote them.
        |d| unsafe { some(outcount, indices, n, d) },
    );
}

entry!(testsome: [mpi_testsome_, mpi_testsome__, mpi_testsome, MPI_TESTSOME]
    (incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint, ierr: *mut Fint));
unsafe fn testsome(
    incount: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let f = fpmpi();
    let n = val(incount);
    completion(
        c"MPI_Testsome",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        // SAFETY: forwarded, the statuses possibly kprof's own.
        |f, st| {
            call(f.testsome, ierr, |e| unsafe {
                e(incount, reqs, outcount, indices, st, ierr)
            })
        },
        // SAFETY: MPI wrote them.
        |d| unsafe { some(outcount, indices, n, d) },
    );
}

// ---- collectives ----

entry!(barrier: [mpi_barrier_, mpi_barrier__, mpi_barrier, MPI_BARRIER]
    (comm: *const Fint, ierr: *mut Fint));
unsafe fn barrier(comm: *const Fint, ierr: *mut Fint) {
    measured(
        c"MPI_Barrier",
        // SAFETY: forwarded as received.
        |f| call(f.barrier, ierr, |e| unsafe { e(comm, ierr) }),
        // SAFETY: the program's communicator.
        |f, a, p, _, r| crate::barrier_done(a, p, r, unsafe { f.comm(comm) }),
    );
}

entry!(bcast: [mpi_bcast_, mpi_bcast__, mpi_bcast, MPI_BCAST]
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, root: *const Fint,
     comm: *const Fint, ierr: *mut Fint));
unsafe fn bcast(
    buf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Bcast",
        // SAFETY: forwarded as received.
        |f| {
            call(f.bcast, ierr, |e| unsafe {
                e(buf, count, dtype, root, comm, ierr)
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles.
            let (t, c) = unsafe { (f.dtype(dtype), f.comm(comm)) };
            crate::bcast_done(a, p, r, val(count), t, val(root), c);
        },
    );
}

entry!(reduce: [mpi_reduce_, mpi_reduce__, mpi_reduce, MPI_REDUCE]
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, dtype: *const Fint,
     op: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    op: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Reduce",
        // SAFETY: forwarded as received.
        |f| {
            call(f.reduce, ierr, |e| unsafe {
                e(sendbuf, recvbuf, count, dtype, op, root, comm, ierr)
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles.
            let (t, c) = unsafe { (f.dtype(dtype), f.comm(comm)) };
            crate::reduce_done(a, p, r, val(count), t, val(root), c);
        },
    );
}

entry!(allreduce: [mpi_allreduce_, mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE]
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, dtype: *const Fint,
     op: *const Fint, comm: *const Fint, ierr: *mut Fint));
unsafe fn allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Allreduce",
        // SAFETY: forwarded as received.
        |f| {
            call(f.allreduce, ierr, |e| unsafe {
                e(sendbuf, recvbuf, count, dtype, op, comm, ierr)
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles.
            let (t, c) = unsafe { (f.dtype(dtype), f.comm(comm)) };
            crate::allreduce_done(a, p, r, val(count), t, c);
        },
    );
}

/// Defines a collective of the shape of `MPI_Alltoall` (`$root`: with a root,
/// as `MPI_Gather`); `$done` of lib.rs records it.
macro_rules! blocks {
    ($imp:ident, $field:ident, $cname:literal, $done:ident, [$($name:ident),+]) => {
        entry!($imp: [$($name),+]
            (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
             recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
             comm: *const Fint, ierr: *mut Fint));
        #[allow(clippy::too_many_arguments)]
        unsafe fn $imp(
            sendbuf: *const c_void,
            sendcount: *const Fint,
            sendtype: *const Fint,
            recvbuf: *mut c_void,
            recvcount: *const Fint,
            recvtype: *const Fint,
            comm: *const Fint,
            ierr: *mut Fint,
        ) {
            measured(
                $cname,
                |f| {
                    // SAFETY: forwarded as received.
                    call(f.$field, ierr, |e| unsafe {
                        e(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr)
                    })
                },
                |f, a, p, _, r| {
                    // SAFETY: the program's handles.
                    let (st, rt, c) =
                        unsafe { (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm)) };
                    let s = (val(sendcount), st);
                    let v = (val(recvcount), rt);
                    crate::$done(a, p, r, f.buf(a, sendbuf), s, v, c);
                },
            );
        }
    };
    (root $imp:ident, $field:ident, $cname:literal, $done:ident, $which:ident, [$($name:ident),+]) => {
        entry!($imp: [$($name),+]
            (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
             recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
             root: *const Fint, comm: *const Fint, ierr: *mut Fint));
        #[allow(clippy::too_many_arguments)]
        unsafe fn $imp(
            sendbuf: *const c_void,
            sendcount: *const Fint,
            sendtype: *const Fint,
            recvbuf: *mut c_void,
            recvcount: *const Fint,
            recvtype: *const Fint,
            root: *const Fint,
            comm: *const Fint,
            ierr: *mut Fint,
        ) {
            measured(
                $cname,
                |f| {
                    // SAFETY: forwarded as received.
                    call(f.$field, ierr, |e| unsafe {
                        e(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                          comm, ierr)
                    })
                },
                |f, a, p, _, r| {
                    // SAFETY: the program's handles.
                    let (st, rt, c) =
                        unsafe { (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm)) };
                    let s = (val(sendcount), st);
                    let v = (val(recvcount), rt);
                    let b = f.buf(a, blocks!(@buf $which, sendbuf, recvbuf));
                    crate::$done(a, p, r, b, s, v, val(root), c);
                },
            );
        }
    };
    (@buf send, $s:ident, $r:ident) => { $s };
    (@buf recv, $s:ident, $r:ident) => { $r.cast_const() };
}

blocks!(
    alltoall,
    alltoall,
    c"MPI_Alltoall",
    alltoall_done,
    [mpi_alltoall_, mpi_alltoall__, mpi_alltoall, MPI_ALLTOALL]
);
blocks!(
    allgather,
    allgather,
    c"MPI_Allgather",
    allgather_done,
    [
        mpi_allgather_,
        mpi_allgather__,
        mpi_allgather,
        MPI_ALLGATHER
    ]
);
blocks!(root gather, gather, c"MPI_Gather", gather_done, send,
    [mpi_gather_, mpi_gather__, mpi_gather, MPI_GATHER]);
blocks!(root scatter, scatter, c"MPI_Scatter", scatter_done, recv,
    [mpi_scatter_, mpi_scatter__, mpi_scatter, MPI_SCATTER]);

entry!(allgatherv: [mpi_allgatherv_, mpi_allgatherv__, mpi_allgatherv, MPI_ALLGATHERV]
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    displs: *const Fint,
    recvtype: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Allgatherv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.allgatherv, ierr, |e| unsafe {
                e(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr,
                )
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles and counts (a Fortran INTEGER array is
            // C's `int` array).
            unsafe {
                let (st, rt, c) = (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm));
                let (s, v) = ((val(sendcount), st), (recvcounts, rt));
                crate::allgatherv_done(a, p, r, f.buf(a, sendbuf), s, v, c);
            }
        },
    );
}

entry!(alltoallv: [mpi_alltoallv_, mpi_alltoallv__, mpi_alltoallv, MPI_ALLTOALLV]
    (sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
     rdispls: *const Fint, recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    sdispls: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    rdispls: *const Fint,
    recvtype: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Alltoallv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.alltoallv, ierr, |e| unsafe {
                e(
                    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm, ierr,
                )
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles and counts.
            unsafe {
                let (st, rt, c) = (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm));
                let (s, v) = ((sendcounts, st), (recvcounts, rt));
                crate::alltoallv_done(a, p, r, f.buf(a, sendbuf), s, v, c);
            }
        },
    );
}

entry!(gatherv: [mpi_gatherv_, mpi_gatherv__, mpi_gatherv, MPI_GATHERV]
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    sendbuf: *const c_void,
    sendcount: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcounts: *const Fint,
    displs: *const Fint,
    recvtype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Gatherv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.gatherv, ierr, |e| unsafe {
                e(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                    comm, ierr,
                )
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles and counts.
            unsafe {
                let (st, rt, c) = (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm));
                let (s, v) = ((val(sendcount), st), (recvcounts, rt));
                crate::gatherv_done(a, p, r, f.buf(a, sendbuf), s, v, val(root), c);
            }
        },
    );
}

entry!(scatterv: [mpi_scatterv_, mpi_scatterv__, mpi_scatterv, MPI_SCATTERV]
    (sendbuf: *const c_void, sendcounts: *const Fint, displs: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    sendbuf: *const c_void,
    sendcounts: *const Fint,
    displs: *const Fint,
    sendtype: *const Fint,
    recvbuf: *mut c_void,
    recvcount: *const Fint,
    recvtype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Scatterv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.scatterv, ierr, |e| unsafe {
                e(
                    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                    comm, ierr,
                )
            })
        },
        |f, a, p, _, r| {
            // SAFETY: the program's handles and counts.
            unsafe {
                let (st, rt, c) = (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm));
                let (s, v) = ((sendcounts, st), (val(recvcount), rt));
                let b = f.buf(a, recvbuf.cast_const());
                crate::scatterv_done(a, p, r, b, s, v, val(root), c);
            }
        },
    );
}

// ---- communicators ----

/// Learns the communicator MPI wrote at Fortran's `newcomm`.
fn learn_new(f: &Fpmpi, a: &Active, p: &Pmpi, rc: c_int, newcomm: *const Fint) {
    if rc != sys::SUCCESS || newcomm.is_null() {
        return;
    }
    // SAFETY: MPI wrote the new communicator.
    let mut c = unsafe { f.comm(newcomm) };
    crate::learn_new(a, p, rc, &mut c);
}

entry!(comm_split: [mpi_comm_split_, mpi_comm_split__, mpi_comm_split, MPI_COMM_SPLIT]
    (comm: *const Fint, color: *const Fint, key: *const Fint, newcomm: *mut Fint,
     ierr: *mut Fint));
unsafe fn comm_split(
    comm: *const Fint,
    color: *const Fint,
    key: *const Fint,
    newcomm: *mut Fint,
    ierr: *mut Fint,
) {
    measured(
        c"MPI_Comm_split",
        // SAFETY: forwarded as received.
        |f| {
            call(f.comm_split, ierr, |e| unsafe {
                e(comm, color, key, newcomm, ierr)
            })
        },
        |f, a, p, rc, _| learn_new(f, a, p, rc, newcomm),
    );
}

entry!(comm_dup: [mpi_comm_dup_, mpi_comm_dup__, mpi_comm_dup, MPI_COMM_DUP]
    (comm: *const Fint, newcomm: *mut Fint, ierr: *mut Fint));
unsafe fn comm_dup(comm: *const Fint, newcomm: *mut Fint, ierr: *mut Fint) {
    measured(
        c"MPI_Comm_dup",
        // SAFETY: forwarded as received.
        |f| call(f.comm_dup, ierr, |e| unsafe { e(comm, newcomm, ierr) }),
        |f, a, p, rc, _| learn_new(f, a, p, rc, newcomm),
    );
}

entry!(comm_free: [mpi_comm_free_, mpi_comm_free__, mpi_comm_free, MPI_COMM_FREE]
    (comm: *mut Fint, ierr: *mut Fint));
unsafe fn comm_free(comm: *mut Fint, ierr: *mut Fint) {
    let f = fpmpi();
    if let Some(a) = active().filter(|_| f.records) {
        // SAFETY: the program's communicator.
        guard((), || a.forget(a.abi.key(unsafe { f.comm(comm) })));
    }
    // SAFETY: forwarded as received.
    call(f.comm_free, ierr, |e| unsafe { e(comm, ierr) });
}

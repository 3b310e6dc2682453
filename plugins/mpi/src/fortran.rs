//! The Fortran entries: those of `mpif.h` and `use mpi` (`mpi_send_` and its
//! other spellings `mpi_send__`, `mpi_send`, `MPI_SEND`), each forwarding to the
//! MPI library's Fortran profiling entry (`pmpi_send_`), and those of the
//! `mpi_f08` module (`mpi_send_f08_`), each forwarding to the library's entry of
//! the same name; all found with `dlsym` after this library, so the program's
//! results and `ierror` are the library's own. Both bindings pass every argument
//! by reference, an `mpi_f08` handle (`type(MPI_Comm)`, a `bind(C)` structure of
//! one `INTEGER`) as an `INTEGER`, so one implementation serves both
//! ([`Binding`] says which entry to forward to and how to read statuses).
//!
//! Whether they record depends on what the library's entries call, measured on
//! Debian 12 (`nm -D`, `objdump -d` of the Fortran libraries; see docs/mpi.md):
//! - Open MPI 4.1: `mpif.h`/`use mpi` (`libmpi_mpifh`): every spelling is an
//!   alias of one function (`ompi_send_f`) that converts the handles and calls
//!   the C **`PMPI_*`** function; `mpi_f08` (`libmpi_usempif08`):
//!   `mpi_send_f08_` calls that same `ompi_send_f` (`mpi_test_f08_` the
//!   library's `pmpi_test_`). So the C wrappers never see a Fortran program's
//!   calls: these entries record them, in both bindings, as the C wrappers
//!   would (same node names, arguments and messages), with the handles
//!   converted by `PMPI_Comm_f2c`, `PMPI_Type_f2c`, `PMPI_Request_f2c` and the
//!   statuses (the same 6 `INTEGER`s in both bindings) by `PMPI_Status_f2c`.
//! - MPICH 4.0 (`libmpichfort`): the `mpif.h` entries call the C **`MPI_*`**
//!   functions, which are kprof's: they only forward (recording here too would
//!   count each call twice). Its `mpi_f08` entries are of two kinds: those with
//!   choice buffers are other symbols (`mpi_send_f08ts_`, which kprof does not
//!   define) and call the C `MPI_*` function (recorded there); the others
//!   (`mpi_wait_f08_`, `mpi_barrier_f08_`, `mpi_init_f08_`, ...) call the C
//!   **`PMPI_*`** function, so these entries record them (handles are the C
//!   ones, statuses converted by `PMPI_Status_f082c`).

use std::ffi::{c_int, c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use kprof_abi::guard::guard;

use crate::state::{self, active, Active, Rec};
use crate::sys::{self, Comm, Datatype, Pmpi, Request, Status};
use crate::{Done, Scan, INLINE};

/// Fortran's default `INTEGER` (`MPI_Fint`).
pub type Fint = c_int;

/// The Fortran binding a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `mpif.h` and `use mpi` (`mpi_send_`).
    Mpif,
    /// The `mpi_f08` module (`mpi_send_f08_`).
    F08,
}

/// A function converting a Fortran status to C's (`PMPI_Status_f2c`,
/// `PMPI_Status_f082c`).
type StatusToC = unsafe extern "C" fn(*const Fint, *mut Status) -> c_int;

macro_rules! fortran_table {
    ($($field:ident: $sym:literal fn($($arg:ty),*);)*) => {
        /// One binding's entries in the library (`pmpi_send_` or
        /// `mpi_send_f08_` ...), and what converting its handles and statuses
        /// needs.
        pub struct Dialect {
            $(
                #[doc = concat!("`", $sym, "_`, or the `mpi_f08` entry of that call.")]
                pub $field: Option<unsafe extern "C" fn($($arg),*)>,
            )*
            /// `PMPI_Comm_f2c` (none in MPICH, whose Fortran handles are C's).
            pub comm_f2c: Option<unsafe extern "C" fn(Fint) -> Comm>,
            /// `PMPI_Type_f2c`.
            pub type_f2c: Option<unsafe extern "C" fn(Fint) -> Datatype>,
            /// `PMPI_Request_f2c`.
            pub request_f2c: Option<unsafe extern "C" fn(Fint) -> Request>,
            /// The Fortran handle is the C one (MPICH's `int` handles).
            pub same_handles: bool,
            /// This binding's status to C's.
            pub status_to_c: Option<StatusToC>,
            /// This binding's `MPI_STATUS_IGNORE`, or null.
            pub status_ignore: *const Fint,
            /// This binding's `MPI_STATUSES_IGNORE`, or null.
            pub statuses_ignore: *const Fint,
            /// Fortran's `MPI_IN_PLACE` (Open MPI's `mpi_fortran_in_place_`), or null.
            pub in_place: *const c_void,
            /// The index of the first request in what this binding's
            /// `MPI_Waitany`, `MPI_Waitsome` and `MPI_Testsome` return: 1, as
            /// the standard says, but 0 in MPICH 4.0's `mpi_f08` (its bug,
            /// fixed in 4.1).
            pub first_index: c_int,
            /// These entries record calls taking only handles (otherwise they
            /// only forward).
            pub records_handles: bool,
            /// These entries record calls taking choice buffers.
            pub records_buffers: bool,
        }

        impl Dialect {
            /// The entries `entry(base)` finds (`base` is the profiling
            /// entry's name, `pmpi_send`), with the handle conversions and
            /// nothing recorded yet.
            fn resolve(entry: impl Fn(&str) -> Option<*mut c_void>) -> Dialect {
                Dialect {
                    $(
                        // SAFETY: the symbol is the MPI standard's Fortran binding
                        // of that name (every argument by reference).
                        $field: entry($sym).map(|f| unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*)>(f)
                        }),
                    )*
                    // SAFETY: the MPI standard's C functions of those names and signatures.
                    comm_f2c: sys::lookup("PMPI_Comm_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Comm>(f)
                    }),
                    // SAFETY: the MPI standard's C functions of those names and signatures.
                    type_f2c: sys::lookup("PMPI_Type_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Datatype>(f)
                    }),
                    // SAFETY: the MPI standard's C functions of those names and signatures.
                    request_f2c: sys::lookup("PMPI_Request_f2c\0").map(|f| unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Fint) -> Request>(f)
                    }),
                    same_handles: false,
                    first_index: 1,
                    status_to_c: None,
                    status_ignore: ptr::null(),
                    statuses_ignore: ptr::null(),
                    in_place: sys::data("mpi_fortran_in_place_\0")
                        .map_or(ptr::null(), |p| p.cast_const()),
                    records_handles: false,
                    records_buffers: false,
                }
            }
        }
    };
}

/// Both bindings' tables.
pub struct Fpmpi {
    /// `mpif.h` and `use mpi`.
    pub mpif: Dialect,
    /// `mpi_f08`.
    pub f08: Dialect,
}

impl Fpmpi {
    /// Both tables, and whether each binding's entries record (see the module).
    fn resolve() -> Fpmpi {
        let family = sys::Family::detect();
        let status = |name: &str| {
            // SAFETY: the MPI standard's C function of that name and signature.
            sys::lookup(name).map(|f| unsafe { std::mem::transmute::<*mut c_void, StatusToC>(f) })
        };
        let mut mpif = Dialect::resolve(fortran);
        mpif.status_to_c = status("PMPI_Status_f2c\0");
        mpif.status_ignore = ignore_pointer("MPI_F_STATUS_IGNORE\0");
        mpif.statuses_ignore = ignore_pointer("MPI_F_STATUSES_IGNORE\0");
        let mut f08 = Dialect::resolve(f08_entry);
        match family {
            // Open MPI 4.1's `mpi_f08` statuses and ignore objects are those of
            // `mpif.h` (`mpi_fortran_status_ignore_`); a library with MPI-4's
            // `MPI_F08_STATUS_IGNORE` says where its own are.
            sys::Family::OpenMpi => {
                f08.status_to_c = status("PMPI_Status_f082c\0").or(mpif.status_to_c);
                f08.status_ignore = ignore_pointer("MPI_F08_STATUS_IGNORE\0");
                f08.statuses_ignore = ignore_pointer("MPI_F08_STATUSES_IGNORE\0");
                if f08.status_ignore.is_null() || f08.statuses_ignore.is_null() {
                    f08.status_ignore = mpif.status_ignore;
                    f08.statuses_ignore = mpif.statuses_ignore;
                }
            }
            sys::Family::Mpich => {
                f08.status_to_c = status("PMPI_Status_f082c\0");
                f08.status_ignore = ignore_pointer("MPI_F08_STATUS_IGNORE\0");
                f08.statuses_ignore = ignore_pointer("MPI_F08_STATUSES_IGNORE\0");
                f08.same_handles = true;
                if mpich_4_0() {
                    f08.first_index = 0;
                }
            }
            sys::Family::Unknown => {}
        }
        let complete = |d: &Dialect| {
            (d.same_handles
                || (d.comm_f2c.is_some() && d.type_f2c.is_some() && d.request_f2c.is_some()))
                && d.status_to_c.is_some()
                && !d.status_ignore.is_null()
                && !d.statuses_ignore.is_null()
        };
        let (mpif_ok, f08_ok) = (complete(&mpif), complete(&f08));
        match family {
            sys::Family::OpenMpi => {
                mpif.records_handles = mpif_ok;
                mpif.records_buffers = mpif_ok;
                f08.records_handles = f08_ok;
                f08.records_buffers = f08_ok;
            }
            // MPICH's `mpi_f08` entries without choice buffers call `PMPI_*`;
            // the rest of its Fortran entries call kprof's `MPI_*`.
            sys::Family::Mpich => f08.records_handles = f08_ok,
            sys::Family::Unknown => {}
        }
        Fpmpi { mpif, f08 }
    }
}

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
    type_free: "pmpi_type_free" fn(*mut Fint, *mut Fint);
}

/// The library is MPICH 4.0.x, whose `mpi_f08` `MPI_Waitany`, `MPI_Waitsome`
/// and `MPI_Testsome` return indices from 0 (measured with 4.0.2; fixed in
/// 4.1). `MPI_Get_library_version` may be called before `MPI_Init`.
fn mpich_4_0() -> bool {
    let Some(p) = state::pmpi() else {
        return false;
    };
    // MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH.
    let mut buf = vec![0u8; 8192 + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes.
    if unsafe { (p.get_library_version)(buf.as_mut_ptr().cast(), &mut len) } != sys::SUCCESS {
        return false;
    }
    is_mpich_4_0(&String::from_utf8_lossy(
        &buf[..usize::try_from(len).unwrap_or(0).min(buf.len())],
    ))
}

/// `MPI_Get_library_version`'s text names MPICH 4.0.x (`MPICH Version:\t4.0.2`).
fn is_mpich_4_0(text: &str) -> bool {
    let version = text
        .split_whitespace()
        .skip_while(|w| *w != "Version:")
        .nth(1)
        .unwrap_or_default();
    let mut parts = version.split('.');
    let (major, minor) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let minor: String = minor.chars().take_while(char::is_ascii_digit).collect();
    text.starts_with("MPICH") && major == "4" && minor == "0"
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
    .find_map(|name| next(&name))
}

/// The `mpi_f08` entry of the call whose profiling entry is `base`
/// (`pmpi_send` -> `mpi_send_f08_`): the library's own entry of the name the
/// program calls (Open MPI's `pmpi_send_f08_` is a copy of it, MPICH's
/// profiling entries have other names).
fn f08_entry(base: &str) -> Option<*mut c_void> {
    next(&f08_name(base))
}

/// The `mpi_f08` entry's name of the call whose profiling entry is `base`.
fn f08_name(base: &str) -> String {
    format!("{}_f08_", base.strip_prefix('p').unwrap_or(base))
}

/// `name` from the libraries after this one.
fn next(name: &str) -> Option<*mut c_void> {
    let c = CString::new(name).ok()?;
    // SAFETY: dlsym only reads the NUL-terminated name and the loader's tables.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, c.as_ptr()) };
    (!f.is_null()).then_some(f)
}

/// The value of the C global `symbol` (`MPI_F_STATUS_IGNORE`: a pointer to
/// Fortran's `MPI_STATUS_IGNORE`), or null.
fn ignore_pointer(symbol: &str) -> *const Fint {
    match sys::data(symbol) {
        // SAFETY: the library's `MPI_Fint *` global, set when it was loaded.
        Some(p) => unsafe { *p.cast::<*const Fint>() },
        None => ptr::null(),
    }
}

/// The tables once resolved (leaked); null before the first Fortran call.
static FPMPI: AtomicPtr<Fpmpi> = AtomicPtr::new(ptr::null_mut());

// SAFETY: the table is written once, before it is published, and then only read;
// its raw pointers are addresses of the library's globals.
unsafe impl Sync for Dialect {}
// SAFETY: as above.
unsafe impl Send for Dialect {}

/// The Fortran tables (resolved at the first call).
#[inline(always)]
fn fpmpi() -> &'static Fpmpi {
    // SAFETY: FPMPI holds null or a leaked, never freed table.
    match unsafe { FPMPI.load(Ordering::Acquire).as_ref() } {
        Some(f) => f,
        None => resolve_fpmpi(),
    }
}

/// The table of binding `b`.
#[inline(always)]
fn dialect(b: Binding) -> &'static Dialect {
    let f = fpmpi();
    match b {
        Binding::Mpif => &f.mpif,
        Binding::F08 => &f.f08,
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

/// Calls `entry` of the library (the program calls it: the library has it)
/// through `f`, which passes on the `ierror` it is given; an entry the library
/// lacks sets it to `MPI_ERR_OTHER`. Returns the call's result. An `mpi_f08`
/// program may leave its optional `ierror` out (NULL): the library then gets
/// kprof's own, so that a failed call is known as failed (its message is not
/// counted) while the program sees the call as it made it.
fn call<F>(entry: Option<F>, ierr: *mut Fint, f: impl FnOnce(F, *mut Fint)) -> c_int {
    let mut own = sys::SUCCESS;
    let ierr = if ierr.is_null() {
        &mut own as *mut Fint
    } else {
        ierr
    };
    match entry {
        Some(e) => f(e, ierr),
        None => {
            // SAFETY: the program's INTEGER or ours.
            unsafe { *ierr = sys::ERR_OTHER };
        }
    }
    // SAFETY: as above, set by MPI or here.
    unsafe { *ierr }
}

/// The conversions of Fortran handles (only where the dialect records).
impl Dialect {
    /// Whether these entries record calls that take `takes`.
    fn records(&self, takes: Takes) -> bool {
        match takes {
            Takes::Buffers => self.records_buffers,
            Takes::Handles => self.records_handles,
        }
    }

    /// A C handle from Fortran's `*h`: `f2c` of it, or the same value where
    /// the handles are C's (MPICH's `int`s, as its `MPI_Comm_f2c` macro does).
    ///
    /// # Safety
    /// `h` points to the program's INTEGER.
    #[inline(always)]
    unsafe fn handle(
        &self,
        f2c: Option<unsafe extern "C" fn(Fint) -> *mut c_void>,
        h: *const Fint,
    ) -> *mut c_void {
        if h.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        let v = unsafe { *h };
        match f2c {
            _ if self.same_handles => v as isize as *mut c_void,
            // SAFETY: the library's conversion of its own handle.
            Some(f) => unsafe { f(v) },
            None => ptr::null_mut(),
        }
    }

    /// The C communicator of Fortran's `*c`.
    ///
    /// # Safety
    /// `c` points to the program's INTEGER.
    unsafe fn comm(&self, c: *const Fint) -> Comm {
        // SAFETY: the caller's contract.
        unsafe { self.handle(self.comm_f2c, c) }
    }

    /// The C datatype of Fortran's `*t`.
    ///
    /// # Safety
    /// `t` points to the program's INTEGER.
    unsafe fn dtype(&self, t: *const Fint) -> Datatype {
        // SAFETY: the caller's contract.
        unsafe { self.handle(self.type_f2c, t) }
    }

    /// The C request of Fortran's `*r`.
    ///
    /// # Safety
    /// `r` points to the program's INTEGER.
    unsafe fn request(&self, r: *const Fint) -> Request {
        // SAFETY: the caller's contract.
        unsafe { self.handle(self.request_f2c, r) }
    }

    /// The status of Fortran status `i` of the array at `st`, as C's.
    ///
    /// # Safety
    /// `st` holds more than `i` Fortran statuses, which MPI filled.
    unsafe fn status(&self, a: &Active, st: *const Fint, i: usize) -> Option<sys::StatusView> {
        let f = self.status_to_c?;
        let mut c = Status::default();
        // SAFETY: the caller's contract (a status of either binding has the
        // `INTEGER`s of the C status: 6 in Open MPI, 5 in MPICH); `c` is a C
        // status (Open MPI's size, the larger).
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

/// Whether a Fortran entry takes choice buffers (`MPI_Send`) or only handles
/// (`MPI_Wait`, `MPI_Barrier`): MPICH's `mpi_f08` entries of the first kind
/// call the C `MPI_*` function, those of the second the C `PMPI_*` one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// Choice buffers.
    Buffers,
    /// Handles and integers only.
    Handles,
}

/// Records a call as [`crate::measured`] does, where the binding's entries
/// record calls of this kind; otherwise only forwards (`fwd` returns `ierr`).
#[inline(always)]
fn measured(
    b: Binding,
    takes: Takes,
    name: &'static CStr,
    fwd: impl FnOnce(&'static Dialect) -> c_int,
    after: impl FnOnce(&'static Dialect, &'static Active, &'static Pmpi, c_int, &mut Rec),
) -> c_int {
    let f = dialect(b);
    if !f.records(takes) {
        return fwd(f);
    }
    crate::measured(name, |_| fwd(f), |a, p, rc, r| after(f, a, p, rc, r))
}

/// Defines the exported spellings of one Fortran entry (the four of `mpif.h`
/// and `use mpi`, then the `mpi_f08` one), each calling `$imp` with its binding.
macro_rules! entry {
    ($imp:ident: [$($name:ident),+] $f08:ident $params:tt) => {
        $( entry!(@one $imp Mpif $name $params); )+
        entry!(@one $imp F08 $f08 $params);
    };
    (@one $imp:ident $b:ident $name:ident ($($arg:ident: $ty:ty),*)) => {
            #[doc = concat!("The Fortran entry `", stringify!($name), "` (see the module).")]
            ///
            /// # Safety
            /// The MPI standard's Fortran binding.
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) {
                // SAFETY: the caller's contract.
                unsafe { $imp(Binding::$b, $($arg),*) }
            }
    };
}

// ---- start and end ----

entry!(init: [mpi_init_, mpi_init__, mpi_init, MPI_INIT] mpi_init_f08_ (ierr: *mut Fint));
unsafe fn init(b: Binding, ierr: *mut Fint) {
    let f = dialect(b);
    if !f.records_handles {
        // SAFETY: the program's own argument, forwarded to the library's entry.
        call(f.init, ierr, |e, ierr| unsafe { e(ierr) });
        return;
    }
    crate::init(c"MPI_Init", None, |_| {
        // SAFETY: forwarded as received.
        call(f.init, ierr, |e, ierr| unsafe { e(ierr) })
    });
}

entry!(init_thread: [mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD] mpi_init_thread_f08_
    (required: *const Fint, provided: *mut Fint, ierr: *mut Fint));
unsafe fn init_thread(b: Binding, required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    let fwd = || {
        // SAFETY: forwarded as received.
        call(f.init_thread, ierr, |e, ierr| unsafe {
            e(required, provided, ierr)
        })
    };
    if !f.records_handles {
        fwd();
        return;
    }
    crate::init(c"MPI_Init_thread", Some(provided), |_| fwd());
}

entry!(finalize: [mpi_finalize_, mpi_finalize__, mpi_finalize, MPI_FINALIZE] mpi_finalize_f08_ (ierr: *mut Fint));
unsafe fn finalize(b: Binding, ierr: *mut Fint) {
    let f = dialect(b);
    // SAFETY: forwarded as received.
    let fwd = || call(f.finalize, ierr, |e, ierr| unsafe { e(ierr) });
    if !f.records_handles {
        fwd();
        return;
    }
    crate::finalize(|_| fwd());
}

entry!(abort: [mpi_abort_, mpi_abort__, mpi_abort, MPI_ABORT] mpi_abort_f08_
    (comm: *const Fint, errorcode: *const Fint, ierr: *mut Fint));
unsafe fn abort(b: Binding, comm: *const Fint, errorcode: *const Fint, ierr: *mut Fint) {
    let f = dialect(b);
    // SAFETY: forwarded as received.
    let fwd = || call(f.abort, ierr, |e, ierr| unsafe { e(comm, errorcode, ierr) });
    if !f.records_handles {
        fwd();
        return;
    }
    crate::abort(val(errorcode), |_| fwd());
}

// ---- point to point ----

entry!(send: [mpi_send_, mpi_send__, mpi_send, MPI_SEND] mpi_send_f08_
    (buf: *const c_void, count: *const Fint, dtype: *const Fint, dest: *const Fint,
     tag: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn send(
    b: Binding,
    buf: *const c_void,
    count: *const Fint,
    dtype: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        b,
        Takes::Buffers,
        c"MPI_Send",
        |f| {
            // SAFETY: forwarded as received.
            call(f.send, ierr, |e, ierr| unsafe {
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

entry!(isend: [mpi_isend_, mpi_isend__, mpi_isend, MPI_ISEND] mpi_isend_f08_
    (buf: *const c_void, count: *const Fint, dtype: *const Fint, dest: *const Fint,
     tag: *const Fint, comm: *const Fint, req: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn isend(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Isend",
        |f| {
            // SAFETY: forwarded as received.
            call(f.isend, ierr, |e, ierr| unsafe {
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

entry!(irecv: [mpi_irecv_, mpi_irecv__, mpi_irecv, MPI_IRECV] mpi_irecv_f08_
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, req: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn irecv(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Irecv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.irecv, ierr, |e, ierr| unsafe {
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
fn own_status(f: &Dialect, status: *mut Fint, own: &mut OwnStatus) -> *mut Fint {
    if f.records_buffers && status.cast_const() == f.status_ignore {
        own.as_mut_ptr()
    } else {
        status
    }
}

entry!(recv: [mpi_recv_, mpi_recv__, mpi_recv, MPI_RECV] mpi_recv_f08_
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, source: *const Fint,
     tag: *const Fint, comm: *const Fint, status: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn recv(
    b: Binding,
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
    let st = own_status(dialect(b), status, &mut own);
    measured(
        b,
        Takes::Buffers,
        c"MPI_Recv",
        |f| {
            // SAFETY: forwarded, with a status of kprof's own in place of MPI_STATUS_IGNORE.
            call(f.recv, ierr, |e, ierr| unsafe {
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

entry!(sendrecv: [mpi_sendrecv_, mpi_sendrecv__, mpi_sendrecv, MPI_SENDRECV] mpi_sendrecv_f08_
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint, dest: *const Fint,
     sendtag: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, source: *const Fint, recvtag: *const Fint, comm: *const Fint,
     status: *mut Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv(
    b: Binding,
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
    let st = own_status(dialect(b), status, &mut own);
    measured(
        b,
        Takes::Buffers,
        c"MPI_Sendrecv",
        |f| {
            // SAFETY: forwarded, with a status of kprof's own in place of
            // MPI_STATUS_IGNORE.
            call(f.sendrecv, ierr, |e, ierr| unsafe {
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

entry!(request_free: [mpi_request_free_, mpi_request_free__, mpi_request_free, MPI_REQUEST_FREE] mpi_request_free_f08_
    (req: *mut Fint, ierr: *mut Fint));
unsafe fn request_free(b: Binding, req: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    if let Some(a) = active().filter(|_| f.records_handles) {
        // SAFETY: the program's request.
        guard((), || state::untrack(a.abi.key(unsafe { f.request(req) })));
    }
    // SAFETY: forwarded as received.
    call(f.request_free, ierr, |e, ierr| unsafe { e(req, ierr) });
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
    unsafe fn of(f: &Dialect, reqs: *const Fint, count: c_int) -> Requests {
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
/// gets the statuses to pass; `done` tells what completed (request indices
/// from 0).
#[allow(clippy::too_many_arguments)]
fn completion(
    b: Binding,
    name: &'static CStr,
    reqs: *const Fint,
    count: c_int,
    statuses: *mut Fint,
    ignore: *const Fint,
    fwd: impl FnOnce(&'static Dialect, *mut Fint) -> c_int,
    done: impl FnOnce() -> Done,
) -> c_int {
    let f = dialect(b);
    let Some(a) = active().filter(|_| f.records_handles) else {
        return fwd(f, statuses);
    };
    // No guard: opening only calls the core's `extern "C"` functions.
    let mut r = a.open(name);
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
        // SAFETY: MPI filled the status of each completed request.
        let status = |s: c_int| unsafe { f.status(a, st, s as usize) };
        crate::record_completion(a, &mut r, &scan, rc, done, status);
    });
    rc
}

entry!(wait: [mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT] mpi_wait_f08_
    (req: *mut Fint, status: *mut Fint, ierr: *mut Fint));
unsafe fn wait(b: Binding, req: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    completion(
        b,
        c"MPI_Wait",
        req,
        1,
        status,
        f.status_ignore,
        // SAFETY: forwarded, the status possibly kprof's own.
        |f, st| call(f.wait, ierr, |e, ierr| unsafe { e(req, st, ierr) }),
        || Done::One(0),
    );
}

entry!(waitall: [mpi_waitall_, mpi_waitall__, mpi_waitall, MPI_WAITALL] mpi_waitall_f08_
    (count: *const Fint, reqs: *mut Fint, statuses: *mut Fint, ierr: *mut Fint));
unsafe fn waitall(
    b: Binding,
    count: *const Fint,
    reqs: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let f = dialect(b);
    let n = val(count);
    completion(
        b,
        c"MPI_Waitall",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        |f, st| {
            // SAFETY: forwarded, the statuses possibly kprof's own.
            call(f.waitall, ierr, |e, ierr| unsafe {
                e(count, reqs, st, ierr)
            })
        },
        || Done::All,
    );
}

entry!(test: [mpi_test_, mpi_test__, mpi_test, MPI_TEST] mpi_test_f08_
    (req: *mut Fint, flag: *mut Fint, status: *mut Fint, ierr: *mut Fint));
unsafe fn test(b: Binding, req: *mut Fint, flag: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    completion(
        b,
        c"MPI_Test",
        req,
        1,
        status,
        f.status_ignore,
        // SAFETY: forwarded, the status possibly kprof's own.
        |f, st| call(f.test, ierr, |e, ierr| unsafe { e(req, flag, st, ierr) }),
        || {
            if val(flag) != 0 {
                Done::One(0)
            } else {
                Done::Nothing
            }
        },
    );
}

entry!(testall: [mpi_testall_, mpi_testall__, mpi_testall, MPI_TESTALL] mpi_testall_f08_
    (count: *const Fint, reqs: *mut Fint, flag: *mut Fint, statuses: *mut Fint, ierr: *mut Fint));
unsafe fn testall(
    b: Binding,
    count: *const Fint,
    reqs: *mut Fint,
    flag: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let f = dialect(b);
    let n = val(count);
    completion(
        b,
        c"MPI_Testall",
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        |f, st| {
            // SAFETY: forwarded, the statuses possibly kprof's own.
            call(f.testall, ierr, |e, ierr| unsafe {
                e(count, reqs, flag, st, ierr)
            })
        },
        || {
            if val(flag) != 0 {
                Done::All
            } else {
                Done::Nothing
            }
        },
    );
}

entry!(waitany: [mpi_waitany_, mpi_waitany__, mpi_waitany, MPI_WAITANY] mpi_waitany_f08_
    (count: *const Fint, reqs: *mut Fint, index: *mut Fint, status: *mut Fint,
     ierr: *mut Fint));
unsafe fn waitany(
    b: Binding,
    count: *const Fint,
    reqs: *mut Fint,
    index: *mut Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let f = dialect(b);
    completion(
        b,
        c"MPI_Waitany",
        reqs,
        val(count),
        status,
        f.status_ignore,
        |f, st| {
            // SAFETY: forwarded, the status possibly kprof's own.
            call(f.waitany, ierr, |e, ierr| unsafe {
                e(count, reqs, index, st, ierr)
            })
        },
        || {
            // Fortran's index counts from 1 (MPI_UNDEFINED: none completed).
            let i = val(index) - f.first_index;
            if i >= 0 {
                Done::One(i)
            } else {
                Done::Nothing
            }
        },
    );
}

/// What a Fortran `MPI_WAITSOME`/`MPI_TESTSOME` completed: its indices
/// count from `first` (1, as the standard says, but for MPICH 4.0's `mpi_f08`).
///
/// # Safety
/// `outcount` and `indices` as MPI filled them.
unsafe fn some(first: c_int, outcount: *const Fint, indices: *const Fint, incount: c_int) -> Done {
    // SAFETY: the caller's contract (`Fint` is C's `int`).
    unsafe { crate::some(outcount, indices, incount, first) }
}

entry!(waitsome: [mpi_waitsome_, mpi_waitsome__, mpi_waitsome, MPI_WAITSOME] mpi_waitsome_f08_
    (incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint, ierr: *mut Fint));
unsafe fn waitsome(
    b: Binding,
    incount: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let args = (incount, reqs, outcount, indices, statuses, ierr);
    // SAFETY: forwarded from the program.
    unsafe { completion_some(b, c"MPI_Waitsome", |f| f.waitsome, args) };
}

entry!(testsome: [mpi_testsome_, mpi_testsome__, mpi_testsome, MPI_TESTSOME] mpi_testsome_f08_
    (incount: *const Fint, reqs: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
     statuses: *mut Fint, ierr: *mut Fint));
unsafe fn testsome(
    b: Binding,
    incount: *const Fint,
    reqs: *mut Fint,
    outcount: *mut Fint,
    indices: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let args = (incount, reqs, outcount, indices, statuses, ierr);
    // SAFETY: forwarded from the program.
    unsafe { completion_some(b, c"MPI_Testsome", |f| f.testsome, args) };
}

/// The library's `MPI_Waitsome` or `MPI_Testsome` (same arguments).
type SomeFn =
    unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);

/// `MPI_Waitsome` and `MPI_Testsome`: `entry` picks the library's function; `args`
/// are the program's (incount, requests, outcount, indices, statuses, ierror).
///
/// # Safety
/// The arguments as the MPI standard's Fortran binding passes them.
unsafe fn completion_some(
    b: Binding,
    name: &'static CStr,
    entry: fn(&Dialect) -> Option<SomeFn>,
    (incount, reqs, outcount, indices, statuses, ierr): (
        *const Fint,
        *mut Fint,
        *mut Fint,
        *mut Fint,
        *mut Fint,
        *mut Fint,
    ),
) {
    let f = dialect(b);
    let n = val(incount);
    completion(
        b,
        name,
        reqs,
        n,
        statuses,
        f.statuses_ignore,
        |f, st| {
            // SAFETY: forwarded, the statuses possibly kprof's own.
            call(entry(f), ierr, |e, ierr| unsafe {
                e(incount, reqs, outcount, indices, st, ierr)
            })
        },
        // SAFETY: MPI wrote them.
        || unsafe { some(f.first_index, outcount, indices, n) },
    );
}

// ---- collectives ----

entry!(barrier: [mpi_barrier_, mpi_barrier__, mpi_barrier, MPI_BARRIER] mpi_barrier_f08_
    (comm: *const Fint, ierr: *mut Fint));
unsafe fn barrier(b: Binding, comm: *const Fint, ierr: *mut Fint) {
    measured(
        b,
        Takes::Handles,
        c"MPI_Barrier",
        // SAFETY: forwarded as received.
        |f| call(f.barrier, ierr, |e, ierr| unsafe { e(comm, ierr) }),
        // SAFETY: the program's communicator.
        |f, a, p, _, r| crate::barrier_done(a, p, r, unsafe { f.comm(comm) }),
    );
}

entry!(bcast: [mpi_bcast_, mpi_bcast__, mpi_bcast, MPI_BCAST] mpi_bcast_f08_
    (buf: *mut c_void, count: *const Fint, dtype: *const Fint, root: *const Fint,
     comm: *const Fint, ierr: *mut Fint));
unsafe fn bcast(
    b: Binding,
    buf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        b,
        Takes::Buffers,
        c"MPI_Bcast",
        |f| {
            // SAFETY: forwarded as received.
            call(f.bcast, ierr, |e, ierr| unsafe {
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

entry!(reduce: [mpi_reduce_, mpi_reduce__, mpi_reduce, MPI_REDUCE] mpi_reduce_f08_
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, dtype: *const Fint,
     op: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Reduce",
        |f| {
            // SAFETY: forwarded as received.
            call(f.reduce, ierr, |e, ierr| unsafe {
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

entry!(allreduce: [mpi_allreduce_, mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE] mpi_allreduce_f08_
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: *const Fint, dtype: *const Fint,
     op: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn allreduce(
    b: Binding,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: *const Fint,
    dtype: *const Fint,
    op: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    measured(
        b,
        Takes::Buffers,
        c"MPI_Allreduce",
        |f| {
            // SAFETY: forwarded as received.
            call(f.allreduce, ierr, |e, ierr| unsafe {
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
    ($imp:ident, $field:ident, $cname:literal, $done:ident, [$($name:ident),+] $f08:ident) => {
        entry!($imp: [$($name),+] $f08
            (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
             recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
             comm: *const Fint, ierr: *mut Fint));
        #[allow(clippy::too_many_arguments)]
        unsafe fn $imp(
            b: Binding,
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
                b,
                Takes::Buffers,
                $cname,
                |f| {
                    // SAFETY: forwarded as received.
                    call(f.$field, ierr, |e, ierr| unsafe {
                        e(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr)
                    })
                },
                |f, a, p, _, r| {
                    let (st, rt, c) =
                        // SAFETY: the program's handles.
                        unsafe { (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm)) };
                    let s = (val(sendcount), st);
                    let v = (val(recvcount), rt);
                    crate::$done(a, p, r, f.buf(a, sendbuf), s, v, c);
                },
            );
        }
    };
    (root $imp:ident, $field:ident, $cname:literal, $done:ident, $which:ident,
     [$($name:ident),+] $f08:ident) => {
        entry!($imp: [$($name),+] $f08
            (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
             recvbuf: *mut c_void, recvcount: *const Fint, recvtype: *const Fint,
             root: *const Fint, comm: *const Fint, ierr: *mut Fint));
        #[allow(clippy::too_many_arguments)]
        unsafe fn $imp(
            b: Binding,
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
                b,
                Takes::Buffers,
                $cname,
                |f| {
                    // SAFETY: forwarded as received.
                    call(f.$field, ierr, |e, ierr| unsafe {
                        e(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                          comm, ierr)
                    })
                },
                |f, a, p, _, r| {
                    let (st, rt, c) =
                        // SAFETY: the program's handles.
                        unsafe { (f.dtype(sendtype), f.dtype(recvtype), f.comm(comm)) };
                    let s = (val(sendcount), st);
                    let v = (val(recvcount), rt);
                    let buf = f.buf(a, blocks!(@buf $which, sendbuf, recvbuf));
                    crate::$done(a, p, r, buf, s, v, val(root), c);
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
    [mpi_alltoall_, mpi_alltoall__, mpi_alltoall, MPI_ALLTOALL] mpi_alltoall_f08_
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
    ] mpi_allgather_f08_
);
blocks!(root gather, gather, c"MPI_Gather", gather_done, send,
    [mpi_gather_, mpi_gather__, mpi_gather, MPI_GATHER] mpi_gather_f08_);
blocks!(root scatter, scatter, c"MPI_Scatter", scatter_done, recv,
    [mpi_scatter_, mpi_scatter__, mpi_scatter, MPI_SCATTER] mpi_scatter_f08_);

entry!(allgatherv: [mpi_allgatherv_, mpi_allgatherv__, mpi_allgatherv, MPI_ALLGATHERV] mpi_allgatherv_f08_
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Allgatherv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.allgatherv, ierr, |e, ierr| unsafe {
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

entry!(alltoallv: [mpi_alltoallv_, mpi_alltoallv__, mpi_alltoallv, MPI_ALLTOALLV] mpi_alltoallv_f08_
    (sendbuf: *const c_void, sendcounts: *const Fint, sdispls: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcounts: *const Fint,
     rdispls: *const Fint, recvtype: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Alltoallv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.alltoallv, ierr, |e, ierr| unsafe {
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

entry!(gatherv: [mpi_gatherv_, mpi_gatherv__, mpi_gatherv, MPI_GATHERV] mpi_gatherv_f08_
    (sendbuf: *const c_void, sendcount: *const Fint, sendtype: *const Fint,
     recvbuf: *mut c_void, recvcounts: *const Fint, displs: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Gatherv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.gatherv, ierr, |e, ierr| unsafe {
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

entry!(scatterv: [mpi_scatterv_, mpi_scatterv__, mpi_scatterv, MPI_SCATTERV] mpi_scatterv_f08_
    (sendbuf: *const c_void, sendcounts: *const Fint, displs: *const Fint,
     sendtype: *const Fint, recvbuf: *mut c_void, recvcount: *const Fint,
     recvtype: *const Fint, root: *const Fint, comm: *const Fint, ierr: *mut Fint));
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    b: Binding,
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
        b,
        Takes::Buffers,
        c"MPI_Scatterv",
        |f| {
            // SAFETY: forwarded as received.
            call(f.scatterv, ierr, |e, ierr| unsafe {
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
                let buf = f.buf(a, recvbuf.cast_const());
                crate::scatterv_done(a, p, r, buf, s, v, val(root), c);
            }
        },
    );
}

// ---- communicators ----

/// Learns the communicator MPI wrote at Fortran's `newcomm`.
fn learn_new(f: &Dialect, a: &Active, p: &Pmpi, rc: c_int, newcomm: *const Fint) {
    if rc != sys::SUCCESS || newcomm.is_null() {
        return;
    }
    // SAFETY: MPI wrote the new communicator.
    let mut c = unsafe { f.comm(newcomm) };
    crate::learn_new(a, p, rc, &mut c);
}

entry!(comm_split: [mpi_comm_split_, mpi_comm_split__, mpi_comm_split, MPI_COMM_SPLIT] mpi_comm_split_f08_
    (comm: *const Fint, color: *const Fint, key: *const Fint, newcomm: *mut Fint,
     ierr: *mut Fint));
unsafe fn comm_split(
    b: Binding,
    comm: *const Fint,
    color: *const Fint,
    key: *const Fint,
    newcomm: *mut Fint,
    ierr: *mut Fint,
) {
    measured(
        b,
        Takes::Handles,
        c"MPI_Comm_split",
        |f| {
            // SAFETY: forwarded as received.
            call(f.comm_split, ierr, |e, ierr| unsafe {
                e(comm, color, key, newcomm, ierr)
            })
        },
        |f, a, p, rc, _| learn_new(f, a, p, rc, newcomm),
    );
}

entry!(comm_dup: [mpi_comm_dup_, mpi_comm_dup__, mpi_comm_dup, MPI_COMM_DUP] mpi_comm_dup_f08_
    (comm: *const Fint, newcomm: *mut Fint, ierr: *mut Fint));
unsafe fn comm_dup(b: Binding, comm: *const Fint, newcomm: *mut Fint, ierr: *mut Fint) {
    measured(
        b,
        Takes::Handles,
        c"MPI_Comm_dup",
        |f| {
            // SAFETY: forwarded as received.
            call(f.comm_dup, ierr, |e, ierr| unsafe {
                e(comm, newcomm, ierr)
            })
        },
        |f, a, p, rc, _| learn_new(f, a, p, rc, newcomm),
    );
}

entry!(comm_free: [mpi_comm_free_, mpi_comm_free__, mpi_comm_free, MPI_COMM_FREE] mpi_comm_free_f08_
    (comm: *mut Fint, ierr: *mut Fint));
unsafe fn comm_free(b: Binding, comm: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    if let Some(a) = active().filter(|_| f.records_handles) {
        // SAFETY: the program's communicator.
        guard((), || a.forget(a.abi.key(unsafe { f.comm(comm) })));
    }
    // SAFETY: forwarded as received.
    call(f.comm_free, ierr, |e, ierr| unsafe { e(comm, ierr) });
}

// ---- datatypes ----

entry!(type_free: [mpi_type_free_, mpi_type_free__, mpi_type_free, MPI_TYPE_FREE] mpi_type_free_f08_
    (dtype: *mut Fint, ierr: *mut Fint));
/// Whatever the binding records: its library entry may free the datatype
/// without calling kprof's `MPI_Type_free` (Open MPI's call `PMPI_Type_free`).
unsafe fn type_free(b: Binding, dtype: *mut Fint, ierr: *mut Fint) {
    let f = dialect(b);
    guard((), state::forget_type_sizes);
    // SAFETY: forwarded as received.
    call(f.type_free, ierr, |e, ierr| unsafe { e(dtype, ierr) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_4_0_is_told_by_its_version_line() {
        // MPICH 4.0.2's text as Debian 12's libmpich gives it (its first lines).
        let debian = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n";
        assert!(is_mpich_4_0(debian));
        assert!(is_mpich_4_0("MPICH Version:      4.0\n"));
        assert!(is_mpich_4_0("MPICH Version:\t4.0b1\n"));
        assert!(!is_mpich_4_0("MPICH Version:\t4.1.2\n"));
        assert!(!is_mpich_4_0("MPICH Version:\t4.10\n"));
        assert!(!is_mpich_4_0("MPICH Version:\t3.4.3\n"));
        assert!(!is_mpich_4_0(
            "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"
        ));
        assert!(!is_mpich_4_0(""));
    }

    #[test]
    fn f08_entries_are_named_from_the_profiling_ones() {
        // The names gfortran's objects reference under Open MPI (`nm -u`).
        assert_eq!(f08_name("pmpi_send"), "mpi_send_f08_");
        assert_eq!(f08_name("pmpi_waitall"), "mpi_waitall_f08_");
        assert_eq!(f08_name("pmpi_init_thread"), "mpi_init_thread_f08_");
    }
}

//! The part of Open MPI's C ABI the plugin uses, written from the MPI standard and
//! Open MPI's public `mpi.h` (4.x): handles are pointers to opaque structures, the
//! predefined ones are addresses of exported globals (`ompi_mpi_comm_world`), and
//! `MPI_Status` starts with the three public fields. Nothing links `libmpi`: the
//! `PMPI_*` functions are found at run time ([`Pmpi::resolve`]), so the workspace
//! builds on machines without MPI.
//!
//! MPICH's handles are `int`s: passed through untouched in the same registers,
//! which is all an inert plugin does with them.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `MPI_Comm`.
pub type Comm = *mut c_void;
/// `MPI_Datatype`.
pub type Datatype = *mut c_void;
/// `MPI_Request`.
pub type Request = *mut c_void;
/// `MPI_Op`.
pub type Op = *mut c_void;
/// `MPI_Group`.
pub type Group = *mut c_void;

/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = 0;
/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: c_int = -1;
/// `MPI_PROC_NULL`.
pub const PROC_NULL: c_int = -2;
/// `MPI_UNDEFINED` (Open MPI's value).
pub const UNDEFINED: c_int = -32766;
/// `MPI_IN_PLACE` (Open MPI's value).
// The value is Open MPI's, not an alignment: `ptr::dangling` would say otherwise.
#[allow(clippy::manual_dangling_ptr)]
pub const IN_PLACE: *const c_void = 1 as *const c_void;
/// `MPI_ERR_OTHER` (Open MPI's value): returned only by the stand-in of a `PMPI_*`
/// function the library lacks, which the program cannot be calling.
pub const ERR_OTHER: c_int = 16;

/// Open MPI's `MPI_Status` (`struct ompi_status_public_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    /// `MPI_SOURCE`: the sender's rank in the request's communicator.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// Open MPI's private fields, kept only for the size.
    pub cancelled: c_int,
    /// Open MPI's private byte count.
    pub ucount: usize,
}

macro_rules! pmpi_table {
    ($($field:ident: $sym:literal fn($($arg:ty),*);)*) => {
        /// The `PMPI_*` functions, found once with `dlsym`.
        #[derive(Clone, Copy)]
        pub struct Pmpi {
            $(
                #[doc = concat!("`", $sym, "`.")]
                pub $field: unsafe extern "C" fn($($arg),*) -> c_int,
            )*
            /// The first function the library lacks (then a stand-in returning
            /// `MPI_ERR_OTHER` takes its place, and calls are not measured).
            pub missing: Option<&'static str>,
        }

        impl Pmpi {
            /// Every function, from the next library after this one (`RTLD_NEXT`: the
            /// MPI library a preloaded plugin interposes), else from the global scope.
            /// A function the library lacks cannot be one the program calls (it would
            /// not link without kprof), so only measuring depends on all of them.
            pub fn resolve() -> Pmpi {
                let mut missing = None;
                Pmpi {
                    $(
                        $field: match lookup(concat!($sym, "\0")) {
                            // SAFETY: the symbol is the MPI standard's C binding of that
                            // name, whose signature is the one declared here.
                            Some(f) => unsafe {
                                std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> c_int>(f)
                            },
                            None => {
                                missing = missing.or(Some($sym));
                                unsafe extern "C" fn absent($(_: $arg),*) -> c_int {
                                    ERR_OTHER
                                }
                                absent
                            }
                        },
                    )*
                    missing,
                }
            }
        }
    };
}

pmpi_table! {
    init: "PMPI_Init" fn(*mut c_int, *mut *mut *mut c_char);
    init_thread: "PMPI_Init_thread" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int);
    finalize: "PMPI_Finalize" fn();
    send: "PMPI_Send" fn(*const c_void, c_int, Datatype, c_int, c_int, Comm);
    recv: "PMPI_Recv" fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Status);
    isend: "PMPI_Isend" fn(*const c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    irecv: "PMPI_Irecv" fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    sendrecv: "PMPI_Sendrecv" fn(
        *const c_void, c_int, Datatype, c_int, c_int,
        *mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Status);
    wait: "PMPI_Wait" fn(*mut Request, *mut Status);
    waitall: "PMPI_Waitall" fn(c_int, *mut Request, *mut Status);
    waitany: "PMPI_Waitany" fn(c_int, *mut Request, *mut c_int, *mut Status);
    waitsome: "PMPI_Waitsome" fn(c_int, *mut Request, *mut c_int, *mut c_int, *mut Status);
    test: "PMPI_Test" fn(*mut Request, *mut c_int, *mut Status);
    testall: "PMPI_Testall" fn(c_int, *mut Request, *mut c_int, *mut Status);
    testsome: "PMPI_Testsome" fn(c_int, *mut Request, *mut c_int, *mut c_int, *mut Status);
    request_free: "PMPI_Request_free" fn(*mut Request);
    barrier: "PMPI_Barrier" fn(Comm);
    bcast: "PMPI_Bcast" fn(*mut c_void, c_int, Datatype, c_int, Comm);
    reduce: "PMPI_Reduce" fn(*const c_void, *mut c_void, c_int, Datatype, Op, c_int, Comm);
    allreduce: "PMPI_Allreduce" fn(*const c_void, *mut c_void, c_int, Datatype, Op, Comm);
    allgather: "PMPI_Allgather" fn(*const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, Comm);
    allgatherv: "PMPI_Allgatherv" fn(
        *const c_void, c_int, Datatype, *mut c_void, *const c_int, *const c_int, Datatype, Comm);
    alltoall: "PMPI_Alltoall" fn(*const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, Comm);
    alltoallv: "PMPI_Alltoallv" fn(
        *const c_void, *const c_int, *const c_int, Datatype,
        *mut c_void, *const c_int, *const c_int, Datatype, Comm);
    gather: "PMPI_Gather" fn(
        *const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, c_int, Comm);
    gatherv: "PMPI_Gatherv" fn(
        *const c_void, c_int, Datatype, *mut c_void, *const c_int, *const c_int, Datatype, c_int, Comm);
    scatter: "PMPI_Scatter" fn(
        *const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, c_int, Comm);
    scatterv: "PMPI_Scatterv" fn(
        *const c_void, *const c_int, *const c_int, Datatype, *mut c_void, c_int, Datatype, c_int, Comm);
    comm_split: "PMPI_Comm_split" fn(Comm, c_int, c_int, *mut Comm);
    comm_dup: "PMPI_Comm_dup" fn(Comm, *mut Comm);
    comm_free: "PMPI_Comm_free" fn(*mut Comm);
    comm_size: "PMPI_Comm_size" fn(Comm, *mut c_int);
    comm_rank: "PMPI_Comm_rank" fn(Comm, *mut c_int);
    comm_test_inter: "PMPI_Comm_test_inter" fn(Comm, *mut c_int);
    comm_group: "PMPI_Comm_group" fn(Comm, *mut Group);
    comm_remote_group: "PMPI_Comm_remote_group" fn(Comm, *mut Group);
    group_translate_ranks: "PMPI_Group_translate_ranks" fn(Group, c_int, *const c_int, Group, *mut c_int);
    group_free: "PMPI_Group_free" fn(*mut Group);
    group_size: "PMPI_Group_size" fn(Group, *mut c_int);
    type_size: "PMPI_Type_size" fn(Datatype, *mut c_int);
    get_count: "PMPI_Get_count" fn(*const Status, Datatype, *mut c_int);
    get_library_version: "PMPI_Get_library_version" fn(*mut c_char, *mut c_int);
    cancel: "PMPI_Cancel" fn(*mut Request);
    abort: "PMPI_Abort" fn(Comm, c_int);
}

/// `symbol` from the libraries after this one, else from the global scope.
pub fn lookup(symbol: &str) -> Option<*mut c_void> {
    let name = CStr::from_bytes_with_nul(symbol.as_bytes()).ok()?;
    // SAFETY: dlsym only reads the NUL-terminated name and the loader's tables.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !next.is_null() {
        return Some(next);
    }
    // SAFETY: as above.
    let any = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!any.is_null()).then_some(any)
}

/// The MPI library the process runs with, told by symbols only that family exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Open MPI (`ompi_mpi_comm_world`): the ABI this plugin is written for.
    OpenMpi,
    /// MPICH or a derivative (Intel MPI, MVAPICH, Cray MPICH): `int` handles.
    Mpich,
    /// Something else.
    Unknown,
}

impl Family {
    /// The family of the MPI library in the process.
    pub fn detect() -> Family {
        if lookup("ompi_mpi_comm_world\0").is_some() {
            Family::OpenMpi
        } else if lookup("MPIR_Err_return_comm\0").is_some() || lookup("MPICH_Init\0").is_some() {
            Family::Mpich
        } else {
            Family::Unknown
        }
    }
}

/// The address of a predefined object (`ompi_mpi_comm_world`) as the program
/// and MPI use it: from the global scope first, because an executable that
/// takes the address of MPI data gets its own copy of it (a copy relocation) and
/// the library's references bind to that copy, not to the library's original.
pub fn data(symbol: &str) -> Option<*mut c_void> {
    let name = CStr::from_bytes_with_nul(symbol.as_bytes()).ok()?;
    // SAFETY: dlsym only reads the NUL-terminated name and the loader's tables.
    let any = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!any.is_null()).then_some(any)
}

/// Open MPI's `MPI_COMM_WORLD`: the address of `ompi_mpi_comm_world`.
pub fn comm_world() -> Option<Comm> {
    data("ompi_mpi_comm_world\0")
}

/// Open MPI's `MPI_BYTE`: the address of `ompi_mpi_byte`.
pub fn byte() -> Option<Datatype> {
    data("ompi_mpi_byte\0")
}

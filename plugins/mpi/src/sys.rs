//! The two C ABIs of MPI the plugin meets, written from the MPI standard and the
//! families' public `mpi.h` (Open MPI 4.x; MPICH 3.x/4.x, whose ABI Intel MPI,
//! MVAPICH and Cray MPICH share). Nothing links `libmpi`: the `PMPI_*` functions
//! are found at run time ([`Pmpi::resolve`]), the family is told by the symbols
//! it exports ([`Family::detect`]) and what differs is read from [`Abi`], so one
//! build of the plugin measures either, and the workspace builds without MPI.
//!
//! Handles are declared as pointers: Open MPI's are pointers to opaque
//! structures (the predefined ones are addresses of exported globals,
//! `ompi_mpi_comm_world`); MPICH's are `int`s, passed in the same registers (the
//! upper half of the register is then undefined: [`Abi::key`] drops it) and
//! stored in 4 bytes in memory ([`Abi::handle`] reads arrays of them). The
//! status layouts differ ([`Abi::status`]), and so do `MPI_STATUS_IGNORE`,
//! `MPI_IN_PLACE`, and the predefined handles.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `MPI_Comm` (a pointer in Open MPI, an `int` in MPICH: see the module's
/// documentation).
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

/// Open MPI's `MPI_Status` (`struct ompi_status_public_t`); also the storage of
/// kprof's own statuses for MPICH, whose status (20 bytes) is smaller. Read
/// statuses MPI filled through [`Abi::status`].
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
    get_library_version: "PMPI_Get_library_version" fn(*mut c_char, *mut c_int);
    cancel: "PMPI_Cancel" fn(*mut Request);
    abort: "PMPI_Abort" fn(Comm, c_int);
    type_free: "PMPI_Type_free" fn(*mut Datatype);
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
    /// Open MPI (`ompi_mpi_comm_world`).
    OpenMpi,
    /// MPICH or a derivative (Intel MPI, MVAPICH, Cray MPICH): `int` handles.
    Mpich,
    /// Something else.
    Unknown,
}

impl Family {
    /// The family's name, for the profile's metadata.
    pub fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
            Family::Unknown => "unknown",
        }
    }
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

/// MPICH's `MPI_COMM_WORLD`, `MPI_COMM_NULL` and `MPI_BYTE` (the MPICH ABI's
/// fixed values, from its `mpi.h`).
const MPICH_COMM_WORLD: usize = 0x4400_0000;
const MPICH_COMM_NULL: usize = 0x0400_0000;
const MPICH_BYTE: usize = 0x4c00_010d;

/// What differs between the MPI families, for the one in the process.
#[derive(Debug, Clone, Copy)]
pub struct Abi {
    /// The family.
    pub family: Family,
    /// `MPI_COMM_WORLD`, as [`Abi::key`] gives it.
    pub comm_world: usize,
    /// `MPI_COMM_NULL`, as [`Abi::key`] gives it.
    pub comm_null: usize,
    /// `MPI_BYTE`.
    pub byte: Datatype,
    /// Bytes of a handle in memory.
    handle_size: usize,
    /// The bits of a handle passed by value that hold it (an MPICH `int`: the
    /// low half of its register).
    key_mask: usize,
    /// Bytes of an `MPI_Status` (the stride of an array of them).
    status_size: usize,
    /// `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE`.
    status_ignore: usize,
    /// `MPI_IN_PLACE`.
    in_place: usize,
}

/// A status MPI filled, as the plugin needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusView {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// Bytes received.
    pub bytes: u64,
    /// The request was cancelled.
    pub cancelled: bool,
}

impl Abi {
    /// The ABI of `family` (None for an unknown one); Open MPI's predefined
    /// handles are looked up in the process.
    pub fn of(family: Family) -> Option<Abi> {
        match family {
            Family::OpenMpi => Some(Abi {
                family,
                comm_world: comm_world()? as usize,
                comm_null: data("ompi_mpi_comm_null\0")? as usize,
                byte: data("ompi_mpi_byte\0")?,
                handle_size: std::mem::size_of::<*mut c_void>(),
                key_mask: usize::MAX,
                status_size: std::mem::size_of::<Status>(),
                status_ignore: 0,
                in_place: 1,
            }),
            Family::Mpich => Some(Abi {
                family,
                comm_world: MPICH_COMM_WORLD,
                comm_null: MPICH_COMM_NULL,
                byte: MPICH_BYTE as Datatype,
                handle_size: std::mem::size_of::<c_int>(),
                key_mask: 0xffff_ffff,
                status_size: 5 * std::mem::size_of::<c_int>(),
                status_ignore: 1,
                in_place: usize::MAX,
            }),
            Family::Unknown => None,
        }
    }

    /// A handle passed by value, as a key: an MPICH `int` without the undefined
    /// upper half of its register.
    #[inline(always)]
    pub fn key<T>(&self, h: *mut T) -> usize {
        h as usize & self.key_mask
    }

    /// Handle `i` of the array at `p`, as a key.
    ///
    /// # Safety
    /// `p` holds more than `i` handles of this ABI.
    #[inline(always)]
    pub unsafe fn handle<T>(&self, p: *const *mut T, i: usize) -> usize {
        if self.handle_size == 4 {
            // SAFETY: the caller's contract (4-byte handles).
            unsafe { p.cast::<u32>().add(i).read_unaligned() as usize }
        } else {
            // SAFETY: the caller's contract.
            unsafe { *p.add(i) as usize }
        }
    }

    /// `p` is `MPI_STATUS_IGNORE` (or `MPI_STATUSES_IGNORE`).
    #[inline(always)]
    pub fn ignores(&self, p: *const Status) -> bool {
        p as usize == self.status_ignore
    }

    /// `MPI_STATUS_IGNORE` as a pointer.
    #[inline(always)]
    pub fn status_ignore(&self) -> *mut Status {
        self.status_ignore as *mut Status
    }

    /// `buf` is `MPI_IN_PLACE`.
    #[inline(always)]
    pub fn in_place(&self, buf: *const c_void) -> bool {
        buf as usize == self.in_place
    }

    /// `MPI_IN_PLACE` as a pointer.
    #[inline(always)]
    pub fn in_place_ptr(&self) -> *const c_void {
        self.in_place as *const c_void
    }

    /// `MPI_STATUS_SIZE`: the `INTEGER`s of a Fortran status (the C status's
    /// bytes, in both families).
    #[inline(always)]
    pub fn fortran_status_ints(&self) -> usize {
        self.status_size / std::mem::size_of::<c_int>()
    }

    /// Status `i` of the array at `p`.
    ///
    /// # Safety
    /// `p` holds more than `i` statuses of this ABI, which MPI filled.
    #[inline(always)]
    pub unsafe fn status(&self, p: *const Status, i: usize) -> StatusView {
        // SAFETY: the caller's contract; every field read is an aligned `int`
        // (or Open MPI's `size_t`) inside the status.
        unsafe {
            let at = p.cast::<u8>().add(i * self.status_size);
            let int = |off: usize| at.add(off).cast::<c_int>().read_unaligned();
            match self.family {
                Family::Mpich => {
                    // count_lo, count_hi_and_cancelled (bit 0: cancelled),
                    // MPI_SOURCE, MPI_TAG, MPI_ERROR; the count is in bytes.
                    let (lo, hi) = (int(0) as u32, int(4) as u32);
                    StatusView {
                        source: int(8),
                        bytes: u64::from(hi >> 1) << 32 | u64::from(lo),
                        cancelled: hi & 1 != 0,
                    }
                }
                _ => {
                    // MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled, _ucount (bytes).
                    StatusView {
                        source: int(0),
                        bytes: at.add(16).cast::<usize>().read_unaligned() as u64,
                        cancelled: int(12) != 0,
                    }
                }
            }
        }
    }
}

//! The OpenACC profiling interface (OpenACC 2.7, chapter 5), written here from the
//! specification: event numbers, construct and device kinds, and the three
//! structures every callback receives, with readers that honour `valid_bytes`.
//!
//! Layouts are x86-64 LP64 (see `ffi-headers/kprof_acc_prof.h`, the same interface
//! for C). Every structure starts with its event type and `valid_bytes`; a runtime of
//! an older interface version fills fewer bytes, so a field is read only when it lies
//! entirely within `valid_bytes` ([`within`], through `has!`).

use std::ffi::{c_char, c_int, c_long, c_void, CStr};
use std::mem::{offset_of, size_of};

/// `acc_event_t` values.
pub mod event {
    /// `acc_ev_device_init_start`.
    pub const DEVICE_INIT_START: i32 = 1;
    /// `acc_ev_device_init_end`.
    pub const DEVICE_INIT_END: i32 = 2;
    /// `acc_ev_device_shutdown_start`.
    pub const DEVICE_SHUTDOWN_START: i32 = 3;
    /// `acc_ev_device_shutdown_end`.
    pub const DEVICE_SHUTDOWN_END: i32 = 4;
    /// `acc_ev_runtime_shutdown`.
    pub const RUNTIME_SHUTDOWN: i32 = 5;
    /// `acc_ev_create`.
    pub const CREATE: i32 = 6;
    /// `acc_ev_delete`.
    pub const DELETE: i32 = 7;
    /// `acc_ev_alloc`.
    pub const ALLOC: i32 = 8;
    /// `acc_ev_free`.
    pub const FREE: i32 = 9;
    /// `acc_ev_enter_data_start`.
    pub const ENTER_DATA_START: i32 = 10;
    /// `acc_ev_enter_data_end`.
    pub const ENTER_DATA_END: i32 = 11;
    /// `acc_ev_exit_data_start`.
    pub const EXIT_DATA_START: i32 = 12;
    /// `acc_ev_exit_data_end`.
    pub const EXIT_DATA_END: i32 = 13;
    /// `acc_ev_update_start`.
    pub const UPDATE_START: i32 = 14;
    /// `acc_ev_update_end`.
    pub const UPDATE_END: i32 = 15;
    /// `acc_ev_compute_construct_start`.
    pub const COMPUTE_CONSTRUCT_START: i32 = 16;
    /// `acc_ev_compute_construct_end`.
    pub const COMPUTE_CONSTRUCT_END: i32 = 17;
    /// `acc_ev_enqueue_launch_start`.
    pub const ENQUEUE_LAUNCH_START: i32 = 18;
    /// `acc_ev_enqueue_launch_end`.
    pub const ENQUEUE_LAUNCH_END: i32 = 19;
    /// `acc_ev_enqueue_upload_start`.
    pub const ENQUEUE_UPLOAD_START: i32 = 20;
    /// `acc_ev_enqueue_upload_end`.
    pub const ENQUEUE_UPLOAD_END: i32 = 21;
    /// `acc_ev_enqueue_download_start`.
    pub const ENQUEUE_DOWNLOAD_START: i32 = 22;
    /// `acc_ev_enqueue_download_end`.
    pub const ENQUEUE_DOWNLOAD_END: i32 = 23;
    /// `acc_ev_wait_start`.
    pub const WAIT_START: i32 = 24;
    /// `acc_ev_wait_end`.
    pub const WAIT_END: i32 = 25;
    /// `acc_ev_last`: one past the last event kprof knows.
    pub const LAST: i32 = 26;
}

/// `acc_construct_t` values kprof treats specially.
pub mod construct {
    /// `acc_construct_parallel`: a compute construct.
    pub const PARALLEL: i32 = 0;
    /// `acc_construct_data`: a data construct.
    pub const DATA: i32 = 3;
}

/// `acc_register_t::acc_reg`.
pub const ACC_REG: c_int = 0;

/// A callback: `void (*)(acc_prof_info *, acc_event_info *, acc_api_info *)`.
pub type Callback = unsafe extern "C" fn(*mut ProfInfo, *mut EventInfo, *mut ApiInfo);
/// `acc_prof_reg`: registers (or unregisters) a callback for an event.
pub type RegFn = unsafe extern "C" fn(event: c_int, cb: Option<Callback>, reg: c_int);
/// `acc_query_fn`.
pub type QueryFn = unsafe extern "C" fn();
/// `acc_prof_lookup_func`.
pub type LookupFn = unsafe extern "C" fn(name: *const c_char) -> Option<QueryFn>;

/// `acc_prof_info` (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProfInfo {
    /// The event (`acc_event_t`).
    pub event_type: c_int,
    /// How many bytes of this structure the runtime filled.
    pub valid_bytes: c_int,
    /// The runtime's interface version (`_OPENACC`).
    pub version: c_int,
    /// The device type (`acc_device_t`).
    pub device_type: c_int,
    /// The device's number among those of its type.
    pub device_number: c_int,
    /// The host thread, as the runtime numbers it.
    pub thread_id: c_int,
    /// The `async` argument of the construct (`async` is a Rust keyword).
    pub async_: c_long,
    /// The activity queue the construct runs on.
    pub async_queue: c_long,
    /// Source file of the construct, NULL when unknown.
    pub src_file: *const c_char,
    /// Enclosing function, NULL when unknown.
    pub func_name: *const c_char,
    /// First line of the construct (0: unknown).
    pub line_no: c_int,
    /// Last line of the construct.
    pub end_line_no: c_int,
    /// First line of the enclosing function.
    pub func_line_no: c_int,
    /// Last line of the enclosing function.
    pub func_end_line_no: c_int,
}

/// The fields of every `acc_event_info` variant: `acc_other_event_info` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OtherEvent {
    /// The event (`acc_event_t`).
    pub event_type: c_int,
    /// How many bytes of this structure the runtime filled.
    pub valid_bytes: c_int,
    /// The construct the event belongs to (`acc_construct_t`).
    pub parent_construct: c_int,
    /// Nonzero for an implicit event (no construct in the source).
    pub implicit: c_int,
    /// A pointer the tool may set at a start event and find at its end.
    pub tool_info: *mut c_void,
}

/// `acc_data_event_info` (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DataEvent {
    /// The event (`acc_event_t`).
    pub event_type: c_int,
    /// How many bytes of this structure the runtime filled.
    pub valid_bytes: c_int,
    /// The construct the event belongs to (`acc_construct_t`).
    pub parent_construct: c_int,
    /// Nonzero for an implicit event (no construct in the source).
    pub implicit: c_int,
    /// A pointer the tool may set at a start event and find at its end.
    pub tool_info: *mut c_void,
    /// Name of the variable moved, NULL when unknown.
    pub var_name: *const c_char,
    /// Bytes moved or allocated.
    pub bytes: usize,
    /// Host address of the data.
    pub host_ptr: *const c_void,
    /// Device address of the data.
    pub device_ptr: *const c_void,
}

/// `acc_launch_event_info` (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchEvent {
    /// The event (`acc_event_t`).
    pub event_type: c_int,
    /// How many bytes of this structure the runtime filled.
    pub valid_bytes: c_int,
    /// The construct the event belongs to (`acc_construct_t`).
    pub parent_construct: c_int,
    /// Nonzero for an implicit event (no construct in the source).
    pub implicit: c_int,
    /// A pointer the tool may set at a start event and find at its end.
    pub tool_info: *mut c_void,
    /// Name of the kernel launched, NULL when unknown.
    pub kernel_name: *const c_char,
    /// Gangs of the launch.
    pub num_gangs: usize,
    /// Workers per gang.
    pub num_workers: usize,
    /// Vector length.
    pub vector_length: usize,
}

/// `acc_event_info`: the union of the three event structures (56 bytes).
#[repr(C)]
pub union EventInfo {
    /// The event (`acc_event_t`), first in every variant.
    pub event_type: c_int,
    /// For data events.
    pub data: DataEvent,
    /// For launch events.
    pub launch: LaunchEvent,
    /// For every other event.
    pub other: OtherEvent,
}

/// `acc_api_info` (40 bytes). kprof does not read it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ApiInfo {
    /// The device API (`acc_device_api`).
    pub device_api: c_int,
    /// How many bytes of this structure the runtime filled.
    pub valid_bytes: c_int,
    /// The device type (`acc_device_t`).
    pub device_type: c_int,
    /// The runtime vendor's identifier.
    pub vendor: c_int,
    /// The device API's device handle.
    pub device_handle: *const c_void,
    /// The device API's context handle.
    pub context_handle: *const c_void,
    /// The device API's queue (stream) handle.
    pub async_handle: *const c_void,
}

const _: () = {
    assert!(size_of::<ProfInfo>() == 72);
    assert!(size_of::<OtherEvent>() == 24);
    assert!(size_of::<DataEvent>() == 56);
    assert!(size_of::<LaunchEvent>() == 56);
    assert!(size_of::<EventInfo>() == 56);
    assert!(size_of::<ApiInfo>() == 40);
    assert!(offset_of!(ProfInfo, async_) == 24);
    assert!(offset_of!(ProfInfo, src_file) == 40);
    assert!(offset_of!(ProfInfo, func_end_line_no) == 68);
    assert!(offset_of!(DataEvent, tool_info) == 16);
    assert!(offset_of!(DataEvent, device_ptr) == 48);
    assert!(offset_of!(LaunchEvent, vector_length) == 48);
};

/// Whether a field of `size` bytes at `offset` lies within `valid_bytes`.
#[inline(always)]
pub fn within(valid_bytes: c_int, offset: usize, size: usize) -> bool {
    usize::try_from(valid_bytes).is_ok_and(|v| offset + size <= v)
}

macro_rules! has {
    ($t:ty, $v:expr, $field:ident) => {
        within($v, offset_of!($t, $field), {
            fn size<T>(_: impl FnOnce(&$t) -> &T) -> usize {
                size_of::<T>()
            }
            size(|s: &$t| &s.$field)
        })
    };
}

/// The valid fields of an `acc_prof_info`, copied out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prof {
    /// Event type, 0 when absent.
    pub event_type: i32,
    /// Runtime's `_OPENACC` version, 0 when absent.
    pub version: i32,
    /// Device type, -1 when absent.
    pub device_type: i32,
    /// Device number, 0 when absent.
    pub device_number: i32,
    /// The async argument, `ASYNC_SYNC` when absent.
    pub async_: i64,
    /// Source file, NULL when absent.
    pub src_file: *const c_char,
    /// Function, NULL when absent.
    pub func_name: *const c_char,
    /// Line of the construct, -1 when absent.
    pub line_no: i32,
}

/// `acc_async_sync`: a synchronous operation.
pub const ASYNC_SYNC: i64 = -2;

impl Prof {
    /// Reads the valid fields of `p` (all defaults for NULL).
    ///
    /// # Safety
    /// `p` is NULL or points to at least `valid_bytes` readable bytes (and at least 8).
    #[inline(always)]
    pub unsafe fn read(p: *const ProfInfo) -> Prof {
        let mut out = Prof {
            device_type: -1,
            async_: ASYNC_SYNC,
            line_no: -1,
            ..Prof::default()
        };
        if p.is_null() {
            return out;
        }
        let base = p.cast::<u8>();
        // SAFETY: the first two ints are always present (caller's contract).
        let (event_type, vb) = unsafe {
            (
                base.cast::<c_int>().read_unaligned(),
                base.add(4).cast::<c_int>().read_unaligned(),
            )
        };
        out.event_type = event_type;
        macro_rules! get {
            ($field:ident) => {
                has!(ProfInfo, vb, $field).then(|| {
                    // SAFETY: the field lies within valid_bytes, which are readable.
                    unsafe { std::ptr::addr_of!((*p).$field).read_unaligned() }
                })
            };
        }
        if let Some(v) = get!(version) {
            out.version = v;
        }
        if let Some(v) = get!(device_type) {
            out.device_type = v;
        }
        if let Some(v) = get!(device_number) {
            out.device_number = v;
        }
        if let Some(v) = get!(async_) {
            // `long` is i64 on LP64 targets, narrower elsewhere.
            #[allow(clippy::unnecessary_cast)]
            let v = v as i64;
            out.async_ = v;
        }
        if let Some(v) = get!(src_file) {
            out.src_file = v;
        }
        if let Some(v) = get!(func_name) {
            out.func_name = v;
        }
        if let Some(v) = get!(line_no) {
            out.line_no = v;
        }
        out
    }
}

/// The valid common fields of an `acc_event_info`.
#[derive(Debug, Clone, Copy)]
pub struct Common {
    /// Event type, 0 when absent.
    pub event_type: i32,
    /// `valid_bytes` of the event structure.
    pub valid_bytes: i32,
    /// Parent construct, -1 when absent.
    pub parent: i32,
    /// Whether the event comes from an implicit clause or construct.
    pub implicit: bool,
    /// Where the tool may keep a word between a start and its end; NULL when the
    /// runtime does not provide it.
    pub tool_info: *mut *mut c_void,
}

impl Common {
    /// Reads the common fields of `e`.
    ///
    /// # Safety
    /// `e` is NULL or points to at least `valid_bytes` readable bytes (and at least
    /// 8), writable at `tool_info`.
    #[inline(always)]
    pub unsafe fn read(e: *mut EventInfo) -> Common {
        let mut out = Common {
            event_type: 0,
            valid_bytes: 0,
            parent: -1,
            implicit: false,
            tool_info: std::ptr::null_mut(),
        };
        if e.is_null() {
            return out;
        }
        let o = e.cast::<OtherEvent>();
        // SAFETY: the first two ints are always present (caller's contract).
        let (event_type, vb) = unsafe {
            (
                std::ptr::addr_of!((*o).event_type).read_unaligned(),
                std::ptr::addr_of!((*o).valid_bytes).read_unaligned(),
            )
        };
        out.event_type = event_type;
        out.valid_bytes = vb;
        if has!(OtherEvent, vb, parent_construct) {
            // SAFETY: within valid_bytes.
            out.parent = unsafe { std::ptr::addr_of!((*o).parent_construct).read_unaligned() };
        }
        if has!(OtherEvent, vb, implicit) {
            // SAFETY: within valid_bytes.
            out.implicit = unsafe { std::ptr::addr_of!((*o).implicit).read_unaligned() } != 0;
        }
        if has!(OtherEvent, vb, tool_info) {
            // SAFETY: within valid_bytes; only the address is taken.
            out.tool_info = unsafe { std::ptr::addr_of_mut!((*o).tool_info) };
        }
        out
    }

    /// The word a start event left in `tool_info` (0 when there is none).
    #[inline(always)]
    pub fn take_word(&self) -> u64 {
        if self.tool_info.is_null() {
            return 0;
        }
        // SAFETY: tool_info points into the runtime's structure, within valid_bytes.
        unsafe { self.tool_info.read_unaligned() as u64 }
    }

    /// Stores `w` in `tool_info` when the runtime provides it; returns whether it did.
    #[inline(always)]
    pub fn put_word(&self, w: u64) -> bool {
        if self.tool_info.is_null() {
            return false;
        }
        // SAFETY: tool_info points into the runtime's writable structure.
        unsafe { self.tool_info.write_unaligned(w as usize as *mut c_void) };
        true
    }
}

/// The valid data fields of an `acc_data_event_info`.
#[derive(Debug, Clone, Copy)]
pub struct Data {
    /// Variable name, NULL when absent.
    pub var_name: *const c_char,
    /// Bytes, 0 when absent.
    pub bytes: u64,
    /// Host address, 0 when absent.
    pub host_ptr: u64,
    /// Device address, 0 when absent.
    pub device_ptr: u64,
}

impl Data {
    /// Reads the data fields of `e` (`vb`: its `valid_bytes`).
    ///
    /// # Safety
    /// As [`Common::read`].
    #[inline]
    pub unsafe fn read(e: *const EventInfo, vb: i32) -> Data {
        let mut out = Data {
            var_name: std::ptr::null(),
            bytes: 0,
            host_ptr: 0,
            device_ptr: 0,
        };
        if e.is_null() {
            return out;
        }
        let d = e.cast::<DataEvent>();
        // SAFETY (all reads): within valid_bytes.
        if has!(DataEvent, vb, var_name) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.var_name = unsafe { std::ptr::addr_of!((*d).var_name).read_unaligned() };
        }
        if has!(DataEvent, vb, bytes) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.bytes = unsafe { std::ptr::addr_of!((*d).bytes).read_unaligned() } as u64;
        }
        if has!(DataEvent, vb, host_ptr) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.host_ptr = unsafe { std::ptr::addr_of!((*d).host_ptr).read_unaligned() } as u64;
        }
        if has!(DataEvent, vb, device_ptr) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.device_ptr = unsafe { std::ptr::addr_of!((*d).device_ptr).read_unaligned() } as u64;
        }
        out
    }
}

/// The valid launch fields of an `acc_launch_event_info`.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    /// Kernel name, NULL when absent.
    pub kernel_name: *const c_char,
    /// `(gangs, workers, vector length)` when all three are valid.
    pub shape: Option<(u64, u64, u64)>,
}

impl Launch {
    /// Reads the launch fields of `e` (`vb`: its `valid_bytes`).
    ///
    /// # Safety
    /// As [`Common::read`].
    #[inline]
    pub unsafe fn read(e: *const EventInfo, vb: i32) -> Launch {
        let mut out = Launch {
            kernel_name: std::ptr::null(),
            shape: None,
        };
        if e.is_null() {
            return out;
        }
        let l = e.cast::<LaunchEvent>();
        // SAFETY (all reads): within valid_bytes.
        if has!(LaunchEvent, vb, kernel_name) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.kernel_name = unsafe { std::ptr::addr_of!((*l).kernel_name).read_unaligned() };
        }
        if has!(LaunchEvent, vb, vector_length) {
            // SAFETY: the field lies within valid_bytes (checked just above), which are readable.
            out.shape = Some(unsafe {
                (
                    std::ptr::addr_of!((*l).num_gangs).read_unaligned() as u64,
                    std::ptr::addr_of!((*l).num_workers).read_unaligned() as u64,
                    std::ptr::addr_of!((*l).vector_length).read_unaligned() as u64,
                )
            });
        }
        out
    }
}

/// Name of a construct (`acc_construct_t`), `implicit` marking constructs and
/// clauses the program did not write; static, for the core's pointer-keyed cache.
pub fn construct_name(c: i32, implicit: bool) -> &'static CStr {
    const EXPLICIT: [&CStr; 17] = [
        c"parallel",
        c"kernels",
        c"loop",
        c"data",
        c"enter data",
        c"exit data",
        c"host_data",
        c"atomic",
        c"declare",
        c"init",
        c"shutdown",
        c"set",
        c"update",
        c"routine",
        c"wait",
        c"runtime api",
        c"serial",
    ];
    const IMPLICIT: [&CStr; 17] = [
        c"parallel (implicit)",
        c"kernels (implicit)",
        c"loop (implicit)",
        c"data (implicit)",
        c"enter data (implicit)",
        c"exit data (implicit)",
        c"host_data (implicit)",
        c"atomic (implicit)",
        c"declare (implicit)",
        c"init (implicit)",
        c"shutdown (implicit)",
        c"set (implicit)",
        c"update (implicit)",
        c"routine (implicit)",
        c"wait (implicit)",
        c"runtime api (implicit)",
        c"serial (implicit)",
    ];
    let table = if implicit { &IMPLICIT } else { &EXPLICIT };
    usize::try_from(c)
        .ok()
        .and_then(|i| table.get(i))
        .copied()
        .unwrap_or(c"unknown construct")
}

/// Name of a device type (`acc_device_t`), for back-end names.
pub fn device_type_name(t: i32) -> &'static CStr {
    match t {
        0 => c"OpenACC none",
        1 => c"OpenACC default",
        2 => c"OpenACC host",
        3 => c"OpenACC device type 3",
        4 => c"OpenACC not_host",
        5 => c"OpenACC nvidia",
        6 => c"OpenACC device type 6",
        7 => c"OpenACC device type 7",
        8 => c"OpenACC radeon",
        _ => c"OpenACC",
    }
}

/// Name of an event, for messages.
pub fn event_name(e: i32) -> &'static str {
    const NAMES: [&str; 26] = [
        "none",
        "device_init_start",
        "device_init_end",
        "device_shutdown_start",
        "device_shutdown_end",
        "runtime_shutdown",
        "create",
        "delete",
        "alloc",
        "free",
        "enter_data_start",
        "enter_data_end",
        "exit_data_start",
        "exit_data_end",
        "update_start",
        "update_end",
        "compute_construct_start",
        "compute_construct_end",
        "enqueue_launch_start",
        "enqueue_launch_end",
        "enqueue_upload_start",
        "enqueue_upload_end",
        "enqueue_download_start",
        "enqueue_download_end",
        "wait_start",
        "wait_end",
    ];
    usize::try_from(e)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_bytes_limit_the_fields() {
        let p = ProfInfo {
            event_type: 16,
            valid_bytes: 24,
            version: 201711,
            device_type: 5,
            device_number: 1,
            thread_id: 0,
            async_: 3,
            async_queue: 3,
            src_file: c"a.c".as_ptr(),
            func_name: c"main".as_ptr(),
            line_no: 7,
            end_line_no: 9,
            func_line_no: 1,
            func_end_line_no: 20,
        };
        // SAFETY: a valid structure.
        let r = unsafe { Prof::read(&p) };
        assert_eq!((r.event_type, r.version, r.device_type), (16, 201711, 5));
        assert_eq!((r.device_number, r.async_), (1, ASYNC_SYNC));
        assert!(r.src_file.is_null() && r.func_name.is_null());
        assert_eq!(r.line_no, -1);
        let full = ProfInfo {
            valid_bytes: 72,
            ..p
        };
        // SAFETY: a valid structure.
        let r = unsafe { Prof::read(&full) };
        assert_eq!((r.async_, r.line_no), (3, 7));
        assert!(!r.src_file.is_null());
        // SAFETY: NULL is allowed.
        let r = unsafe { Prof::read(std::ptr::null()) };
        assert_eq!((r.event_type, r.device_type), (0, -1));
    }

    #[test]
    fn event_fields() {
        let mut e = EventInfo {
            data: DataEvent {
                event_type: 20,
                valid_bytes: 48,
                parent_construct: 0,
                implicit: 1,
                tool_info: std::ptr::null_mut(),
                var_name: c"x".as_ptr(),
                bytes: 800,
                host_ptr: 16 as *const c_void,
                device_ptr: 32 as *const c_void,
            },
        };
        // SAFETY: a valid structure.
        let c = unsafe { Common::read(&mut e) };
        assert_eq!((c.event_type, c.parent, c.implicit), (20, 0, true));
        assert!(c.put_word(77));
        assert_eq!(c.take_word(), 77);
        // SAFETY: a valid structure.
        let d = unsafe { Data::read(&e, c.valid_bytes) };
        assert_eq!((d.bytes, d.host_ptr, d.device_ptr), (800, 16, 0));
        let mut short = EventInfo {
            other: OtherEvent {
                event_type: 16,
                valid_bytes: 12,
                parent_construct: 3,
                implicit: 0,
                tool_info: std::ptr::null_mut(),
            },
        };
        // SAFETY: a valid structure.
        let c = unsafe { Common::read(&mut short) };
        assert_eq!(c.parent, 3);
        assert!(!c.put_word(1));
        assert_eq!(c.take_word(), 0);
        assert_eq!(construct_name(0, false).to_bytes(), b"parallel");
        assert_eq!(construct_name(3, true).to_bytes(), b"data (implicit)");
        assert_eq!(construct_name(99, false).to_bytes(), b"unknown construct");
        assert_eq!(event_name(25), "wait_end");
        assert_eq!(event_name(26), "unknown");
    }
}

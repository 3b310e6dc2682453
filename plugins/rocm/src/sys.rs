//! The part of rocprofiler-sdk's C interface this plugin uses, written here from
//! rocprofiler-sdk's public API documentation and headers (no header text is
//! copied; names follow the C ones without the `rocprofiler_` prefix).
//!
//! Layouts follow rocprofiler-sdk's public headers as released with ROCm 6.2 to
//! 7.x (`rocprofiler-sdk/fwd.h`, `registration.h`, `buffer_tracing.h`,
//! `callback_tracing.h`, `agent.h`; SDK versions 0.4 to 1.x), where every
//! record starts with its own `size`, and fields are only ever appended (the
//! SDK's rule for ABI stability; `rocprofiler_kernel_dispatch_info_t` is fixed at
//! 128 bytes by a static assertion in `fwd.h`). The plugin reads a field only
//! when the record's `size` covers it. The C enums are 32-bit ints.
//!
//! The functions are not linked: [`Rocprofiler::resolve`] finds them in the
//! process at run time (the SDK library that called `rocprofiler_configure` is
//! already loaded), so kprof builds and loads without ROCm. `tests/harness/
//! rocprofiler_standin.h` declares the same types for the CI stand-in; the size
//! and offset tests below pin both.

#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// `rocprofiler_status_t`.
pub type Status = c_int;
/// `ROCPROFILER_STATUS_SUCCESS`.
pub const STATUS_SUCCESS: Status = 0;

/// `ROCPROFILER_BUFFER_CATEGORY_TRACING` (`rocprofiler_buffer_category_t`).
pub const BUFFER_CATEGORY_TRACING: u32 = 1;

/// `ROCPROFILER_AGENT_TYPE_GPU` (`rocprofiler_agent_type_t`).
pub const AGENT_TYPE_GPU: u32 = 2;
/// `ROCPROFILER_AGENT_INFO_VERSION_0` (`rocprofiler_agent_version_t`).
pub const AGENT_INFO_VERSION_0: u32 = 1;

/// `rocprofiler_callback_phase_t`: `ENTER` (also `LOAD`), `EXIT` (also `UNLOAD`).
pub const CALLBACK_PHASE_ENTER: u32 = 1;
/// See [`CALLBACK_PHASE_ENTER`].
pub const CALLBACK_PHASE_EXIT: u32 = 2;

/// `rocprofiler_callback_tracing_kind_t` values used.
pub const CALLBACK_TRACING_HIP_RUNTIME_API: u32 = 5;
/// See [`CALLBACK_TRACING_HIP_RUNTIME_API`].
pub const CALLBACK_TRACING_CODE_OBJECT: u32 = 10;

/// `rocprofiler_buffer_tracing_kind_t` values used.
pub const BUFFER_TRACING_MEMORY_COPY: u32 = 10;
/// See [`BUFFER_TRACING_MEMORY_COPY`].
pub const BUFFER_TRACING_KERNEL_DISPATCH: u32 = 11;
/// See [`BUFFER_TRACING_MEMORY_COPY`] (SDK 0.5, ROCm 6.3, and later).
pub const BUFFER_TRACING_MEMORY_ALLOCATION: u32 = 17;

/// `ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER`.
pub const CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER: i32 = 2;

/// `rocprofiler_memory_copy_operation_t`.
pub const MEMORY_COPY_HOST_TO_HOST: u32 = 1;
/// See [`MEMORY_COPY_HOST_TO_HOST`].
pub const MEMORY_COPY_HOST_TO_DEVICE: u32 = 2;
/// See [`MEMORY_COPY_HOST_TO_HOST`].
pub const MEMORY_COPY_DEVICE_TO_HOST: u32 = 3;
/// See [`MEMORY_COPY_HOST_TO_HOST`].
pub const MEMORY_COPY_DEVICE_TO_DEVICE: u32 = 4;

/// `rocprofiler_memory_allocation_operation_t`.
pub const MEMORY_ALLOCATION_ALLOCATE: u32 = 1;
/// See [`MEMORY_ALLOCATION_ALLOCATE`].
pub const MEMORY_ALLOCATION_VMEM_ALLOCATE: u32 = 2;
/// See [`MEMORY_ALLOCATION_ALLOCATE`].
pub const MEMORY_ALLOCATION_FREE: u32 = 3;
/// See [`MEMORY_ALLOCATION_ALLOCATE`].
pub const MEMORY_ALLOCATION_VMEM_FREE: u32 = 4;

/// `ROCPROFILER_BUFFER_POLICY_DISCARD`: a full buffer drops records (counted,
/// reported to the buffer callback) instead of blocking the program.
pub const BUFFER_POLICY_DISCARD: u32 = 1;

/// `rocprofiler_context_id_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextId {
    pub handle: u64,
}

/// `rocprofiler_buffer_id_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferId {
    pub handle: u64,
}

/// `rocprofiler_agent_id_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AgentId {
    pub handle: u64,
}

/// `rocprofiler_queue_id_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct QueueId {
    pub handle: u64,
}

/// `rocprofiler_user_data_t`: a per-call slot the SDK keeps from an API call's
/// enter to its exit.
#[repr(C)]
#[derive(Clone, Copy)]
pub union UserData {
    pub value: u64,
    pub ptr: *mut c_void,
}

/// `rocprofiler_correlation_id_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CorrelationId {
    /// The SDK's own id, unique per API call in the process; the activity records
    /// of the call carry it.
    pub internal: u64,
    pub external: UserData,
}

/// `rocprofiler_callback_tracing_record_t` (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CallbackTracingRecord {
    pub context_id: ContextId,
    pub thread_id: u64,
    pub correlation_id: CorrelationId,
    pub kind: u32,
    pub operation: i32,
    pub phase: u32,
    pub payload: *mut c_void,
}

/// `rocprofiler_record_header_t`: `category` and `kind` (a union with a 64-bit
/// `hash` in C, the same bytes), and the record.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RecordHeader {
    pub category: u32,
    pub kind: u32,
    pub payload: *mut c_void,
}

/// `rocprofiler_dim3_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// `rocprofiler_kernel_dispatch_info_t` (128 bytes in every release).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelDispatchInfo {
    pub size: u64,
    pub agent_id: AgentId,
    pub queue_id: QueueId,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per work-group.
    pub group_segment_size: u32,
    pub workgroup_size: Dim3,
    /// In work-items, as HSA's dispatch packet (not in work-groups as CUDA's).
    pub grid_size: Dim3,
    pub reserved_padding: [u8; 56],
}

/// `rocprofiler_buffer_tracing_kernel_dispatch_record_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelDispatchRecord {
    pub size: u64,
    pub kind: u32,
    pub operation: u32,
    pub correlation_id: CorrelationId,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dispatch_info: KernelDispatchInfo,
}

/// `rocprofiler_buffer_tracing_memory_copy_record_t` (the addresses at the end
/// came with SDK 0.6; they are not read).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryCopyRecord {
    pub size: u64,
    pub kind: u32,
    pub operation: u32,
    pub correlation_id: CorrelationId,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dst_agent_id: AgentId,
    pub src_agent_id: AgentId,
    pub bytes: u64,
}

/// `rocprofiler_buffer_tracing_memory_allocation_record_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryAllocationRecord {
    pub size: u64,
    pub kind: u32,
    pub operation: u32,
    pub correlation_id: CorrelationId,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub agent_id: AgentId,
    pub address: u64,
    pub allocation_size: u64,
}

/// The head of `rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t`
/// (the fields read; more follow).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelSymbolRegister {
    pub size: u64,
    pub kernel_id: u64,
    pub code_object_id: u64,
    pub kernel_name: *const c_char,
    pub kernel_object: u64,
    pub kernarg_segment_size: u32,
    pub kernarg_segment_alignment: u32,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
    pub sgpr_count: u32,
    pub arch_vgpr_count: u32,
    pub accum_vgpr_count: u32,
}

/// The head of `rocprofiler_agent_v0_t` (the query is given this size: the SDK
/// accepts any size up to its own).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AgentHead {
    pub size: u64,
    pub id: AgentId,
    pub agent_type: u32,
}

/// `rocprofiler_client_id_t`: the tool may set `name`.
#[repr(C)]
#[derive(Debug)]
pub struct ClientId {
    pub name: *const c_char,
    pub handle: u32,
}

/// `rocprofiler_client_finalize_t`.
pub type ClientFinalize = Option<unsafe extern "C" fn(ClientId)>;
/// `rocprofiler_tool_initialize_t`.
pub type ToolInitialize =
    Option<unsafe extern "C" fn(finalize: ClientFinalize, tool_data: *mut c_void) -> c_int>;
/// `rocprofiler_tool_finalize_t`.
pub type ToolFinalize = Option<unsafe extern "C" fn(tool_data: *mut c_void)>;

/// `rocprofiler_tool_configure_result_t`.
#[repr(C)]
#[derive(Debug)]
pub struct ToolConfigureResult {
    pub size: usize,
    pub initialize: ToolInitialize,
    pub finalize: ToolFinalize,
    pub tool_data: *mut c_void,
}

/// `rocprofiler_callback_tracing_cb_t`.
pub type CallbackTracingCb = Option<
    unsafe extern "C" fn(
        record: CallbackTracingRecord,
        user_data: *mut UserData,
        data: *mut c_void,
    ),
>;

/// `rocprofiler_buffer_tracing_cb_t`.
pub type BufferTracingCb = Option<
    unsafe extern "C" fn(
        context: ContextId,
        buffer: BufferId,
        headers: *mut *mut RecordHeader,
        num_headers: usize,
        data: *mut c_void,
        drop_count: u64,
    ),
>;

/// `rocprofiler_query_available_agents_cb_t`.
pub type AgentsCb = Option<
    unsafe extern "C" fn(
        version: u32,
        agents: *mut *const c_void,
        num_agents: usize,
        data: *mut c_void,
    ) -> Status,
>;

/// `rocprofiler_create_context`.
pub type CreateContextFn = unsafe extern "C" fn(*mut ContextId) -> Status;
/// `rocprofiler_start_context`.
pub type StartContextFn = unsafe extern "C" fn(ContextId) -> Status;
/// `rocprofiler_configure_callback_tracing_service`.
pub type ConfigureCallbackFn = unsafe extern "C" fn(
    ContextId,
    u32,
    *const i32,
    usize,
    CallbackTracingCb,
    *mut c_void,
) -> Status;
/// `rocprofiler_create_buffer`.
pub type CreateBufferFn = unsafe extern "C" fn(
    ContextId,
    usize,
    usize,
    u32,
    BufferTracingCb,
    *mut c_void,
    *mut BufferId,
) -> Status;
/// `rocprofiler_configure_buffer_tracing_service`.
pub type ConfigureBufferFn =
    unsafe extern "C" fn(ContextId, u32, *const i32, usize, BufferId) -> Status;
/// `rocprofiler_flush_buffer`.
pub type FlushBufferFn = unsafe extern "C" fn(BufferId) -> Status;
/// `rocprofiler_get_timestamp`.
pub type GetTimestampFn = unsafe extern "C" fn(*mut u64) -> Status;
/// `rocprofiler_query_callback_tracing_kind_operation_name`.
pub type OperationNameFn = unsafe extern "C" fn(u32, i32, *mut *const c_char, *mut u64) -> Status;
/// `rocprofiler_get_status_string`.
pub type StatusStringFn = unsafe extern "C" fn(Status) -> *const c_char;
/// `rocprofiler_query_available_agents`.
pub type QueryAgentsFn = unsafe extern "C" fn(u32, AgentsCb, usize, *mut c_void) -> Status;

/// The SDK functions this plugin calls, resolved at run time.
pub struct Rocprofiler {
    pub create_context: CreateContextFn,
    pub start_context: StartContextFn,
    pub configure_callback_tracing_service: ConfigureCallbackFn,
    pub create_buffer: CreateBufferFn,
    pub configure_buffer_tracing_service: ConfigureBufferFn,
    pub flush_buffer: FlushBufferFn,
    pub get_timestamp: GetTimestampFn,
    pub query_callback_tracing_kind_operation_name: OperationNameFn,
    pub get_status_string: StatusStringFn,
    pub query_available_agents: QueryAgentsFn,
}

/// Libraries looked at (already loaded only) when the process's global scope
/// has no rocprofiler-sdk functions (rocprofiler-register may load the SDK
/// with `RTLD_LOCAL`).
const LIBRARIES: &[&str] = kprof_tables::libraries::ROCPROFILER_SDK.names;

impl Rocprofiler {
    /// Finds every function in the process: in its global scope first, then in
    /// an already loaded rocprofiler-sdk library. Err: the first one missing.
    pub fn resolve() -> Result<Rocprofiler, &'static str> {
        match Self::from_handle(libc::RTLD_DEFAULT) {
            Ok(r) => Ok(r),
            Err(missing) => {
                // Once per process (at configure): the names as C strings.
                for name in LIBRARIES.iter().filter_map(|n| CString::new(*n).ok()) {
                    // SAFETY: RTLD_NOLOAD loads nothing and runs no initializer;
                    // the reference it adds keeps the (loaded) SDK as it is.
                    let h =
                        unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
                    if !h.is_null() {
                        if let Ok(r) = Self::from_handle(h) {
                            return Ok(r);
                        }
                    }
                }
                Err(missing)
            }
        }
    }

    fn from_handle(h: *mut c_void) -> Result<Rocprofiler, &'static str> {
        macro_rules! sym {
            ($ty:ty, $name:literal) => {{
                let c: &CStr = $name;
                // SAFETY: dlsym with a valid handle and a NUL-terminated name.
                let p = unsafe { libc::dlsym(h, c.as_ptr()) };
                if p.is_null() {
                    return Err(c.to_str().unwrap_or("?"));
                }
                // SAFETY: the SDK's function of that name has the signature the
                // field declares (rocprofiler-sdk's headers).
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        Ok(Rocprofiler {
            create_context: sym!(CreateContextFn, c"rocprofiler_create_context"),
            start_context: sym!(StartContextFn, c"rocprofiler_start_context"),
            configure_callback_tracing_service: sym!(
                ConfigureCallbackFn,
                c"rocprofiler_configure_callback_tracing_service"
            ),
            create_buffer: sym!(CreateBufferFn, c"rocprofiler_create_buffer"),
            configure_buffer_tracing_service: sym!(
                ConfigureBufferFn,
                c"rocprofiler_configure_buffer_tracing_service"
            ),
            flush_buffer: sym!(FlushBufferFn, c"rocprofiler_flush_buffer"),
            get_timestamp: sym!(GetTimestampFn, c"rocprofiler_get_timestamp"),
            query_callback_tracing_kind_operation_name: sym!(
                OperationNameFn,
                c"rocprofiler_query_callback_tracing_kind_operation_name"
            ),
            get_status_string: sym!(StatusStringFn, c"rocprofiler_get_status_string"),
            query_available_agents: sym!(QueryAgentsFn, c"rocprofiler_query_available_agents"),
        })
    }

    /// The SDK's text for `status`.
    pub fn status_text(&self, status: Status) -> String {
        // SAFETY: an SDK function returning a static string or NULL.
        let p = unsafe { (self.get_status_string)(status) };
        if p.is_null() {
            return format!("rocprofiler status {status}");
        }
        // SAFETY: a NUL-terminated static string of the SDK.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The sizes and offsets of rocprofiler-sdk's documented layouts (x86_64).
    #[test]
    fn layouts() {
        assert_eq!(size_of::<CorrelationId>(), 16);
        assert_eq!(size_of::<CallbackTracingRecord>(), 56);
        assert_eq!(offset_of!(CallbackTracingRecord, correlation_id), 16);
        assert_eq!(offset_of!(CallbackTracingRecord, kind), 32);
        assert_eq!(offset_of!(CallbackTracingRecord, operation), 36);
        assert_eq!(offset_of!(CallbackTracingRecord, phase), 40);
        assert_eq!(offset_of!(CallbackTracingRecord, payload), 48);
        assert_eq!(size_of::<RecordHeader>(), 16);
        assert_eq!(size_of::<KernelDispatchInfo>(), 128);
        assert_eq!(offset_of!(KernelDispatchInfo, kernel_id), 24);
        assert_eq!(offset_of!(KernelDispatchInfo, private_segment_size), 40);
        assert_eq!(offset_of!(KernelDispatchInfo, workgroup_size), 48);
        assert_eq!(offset_of!(KernelDispatchInfo, grid_size), 60);
        assert_eq!(offset_of!(KernelDispatchRecord, correlation_id), 16);
        assert_eq!(offset_of!(KernelDispatchRecord, thread_id), 32);
        assert_eq!(offset_of!(KernelDispatchRecord, start_timestamp), 40);
        assert_eq!(offset_of!(KernelDispatchRecord, dispatch_info), 56);
        assert_eq!(size_of::<KernelDispatchRecord>(), 184);
        assert_eq!(offset_of!(MemoryCopyRecord, dst_agent_id), 56);
        assert_eq!(offset_of!(MemoryCopyRecord, bytes), 72);
        assert_eq!(offset_of!(MemoryAllocationRecord, agent_id), 56);
        assert_eq!(offset_of!(MemoryAllocationRecord, allocation_size), 72);
        assert_eq!(offset_of!(KernelSymbolRegister, kernel_name), 24);
        assert_eq!(offset_of!(KernelSymbolRegister, sgpr_count), 56);
        assert_eq!(size_of::<ToolConfigureResult>(), 32);
        assert_eq!(size_of::<ClientId>(), 16);
        assert_eq!(size_of::<AgentHead>(), 24);
    }
}

//! The part of rocprofiler-sdk's C interface this plugin uses, written here from
//! rocprofiler-sdk's public API documentation and headers (no header text is
//! copied; names follow the C ones without the `rocprofiler_` prefix).
//!
//! Layouts follow rocprofiler-sdk's public headers as released with ROCm 6.2 to
//! 7.x (`rocprofiler-sdk/fwd.h`, `registration.h`, `buffer_tracing.h`,
//! `callback_tracing.h`, `agent.h`; SDK versions 0.4 to 1.x), where every
//! record starts with its own `size`. Fields are appended in most releases, but
//! SDK 1.0 (ROCm 7.0) broke that rule in three places, all told apart by the
//! version `rocprofiler_configure` is given ([`Abi`]): the correlation id of
//! callback records and memory allocation records gained an `ancestor` (moving
//! every field after it by 8 bytes), the client id gained a leading `size`, and
//! the memory allocation buffer kind went from 17 to 16. The plugin reads a field
//! only when the record's `size` covers it. The C enums are 32-bit ints.
//!
//! Every size, offset and constant here is checked against what the real headers
//! of SDK 0.5.0, 0.6.0 and 1.0.0 print (`tests/rocm/real_layout/`, recorded by
//! `tests/scripts/check-real-rocprofiler.sh`) by the unit tests below.
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

/// Which of rocprofiler-sdk's incompatible layouts a process has, from the
/// version number `rocprofiler_configure` is given (10000 x major + 100 x minor
/// + patch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abi {
    /// SDK 0.x (ROCm 6.2 to 6.4).
    V0,
    /// SDK 1.0 and later (ROCm 7.0 and later).
    V1,
}

impl Abi {
    /// The layout of SDK `version` (SDK 1.0.0 is 10000).
    pub fn of(version: u32) -> Abi {
        if version >= 10_000 {
            Abi::V1
        } else {
            Abi::V0
        }
    }

    /// `ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION`: 17 in SDK 0.6, 16 from
    /// SDK 1.0 (SDK 0.5 has no memory allocation tracing: asking for it fails,
    /// and the plugin runs without it).
    pub fn buffer_tracing_memory_allocation(self) -> u32 {
        match self {
            Abi::V0 => 17,
            Abi::V1 => 16,
        }
    }
}

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

/// `rocprofiler_correlation_id_t` of SDK 1.0: with the id of the call that made
/// this one. Kernel dispatch and memory copy records keep the 16-byte
/// [`CorrelationId`] (`rocprofiler_async_correlation_id_t` there).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CorrelationIdV1 {
    pub internal: u64,
    pub external: UserData,
    pub ancestor: u64,
}

/// `rocprofiler_callback_tracing_record_t` of SDK 0.x.
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

/// `rocprofiler_callback_tracing_record_t` of SDK 1.0: 8 bytes longer. The SDK
/// passes the record by value, which on x86-64 and aarch64 Linux means in memory
/// on the caller's stack: the callbacks take this, the longer of the two, and
/// [`CallbackTracingRecordV1::fields`] reads the layout the SDK has.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CallbackTracingRecordV1 {
    pub context_id: ContextId,
    pub thread_id: u64,
    pub correlation_id: CorrelationIdV1,
    pub kind: u32,
    pub operation: i32,
    pub phase: u32,
    pub payload: *mut c_void,
}

/// The fields of a callback record the plugin reads, whatever the layout.
#[derive(Clone, Copy)]
pub struct CallbackFields {
    pub correlation: u64,
    pub kind: u32,
    pub operation: i32,
    pub phase: u32,
    pub payload: *mut c_void,
}

impl CallbackTracingRecordV1 {
    /// The record's fields in the layout of `abi`.
    pub fn fields(&self, abi: Abi) -> CallbackFields {
        match abi {
            Abi::V1 => CallbackFields {
                correlation: self.correlation_id.internal,
                kind: self.kind,
                operation: self.operation,
                phase: self.phase,
                payload: self.payload,
            },
            Abi::V0 => {
                // SAFETY: an SDK 0.x record is the first 56 of these 64 bytes
                // (what follows is the caller's stack, never read as a field).
                let r = unsafe {
                    std::ptr::from_ref(self)
                        .cast::<CallbackTracingRecord>()
                        .read()
                };
                CallbackFields {
                    correlation: r.correlation_id.internal,
                    kind: r.kind,
                    operation: r.operation,
                    phase: r.phase,
                    payload: r.payload,
                }
            }
        }
    }
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

/// `rocprofiler_buffer_tracing_memory_allocation_record_t` of SDK 0.x; the
/// plugin's form of it in every version.
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

/// `rocprofiler_buffer_tracing_memory_allocation_record_t` of SDK 1.0 (its
/// correlation id has the `ancestor`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryAllocationRecordV1 {
    pub size: u64,
    pub kind: u32,
    pub operation: u32,
    pub correlation_id: CorrelationIdV1,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub agent_id: AgentId,
    pub address: u64,
    pub allocation_size: u64,
}

impl From<MemoryAllocationRecordV1> for MemoryAllocationRecord {
    fn from(r: MemoryAllocationRecordV1) -> Self {
        MemoryAllocationRecord {
            size: r.size,
            kind: r.kind,
            operation: r.operation,
            correlation_id: CorrelationId {
                internal: r.correlation_id.internal,
                external: r.correlation_id.external,
            },
            thread_id: r.thread_id,
            start_timestamp: r.start_timestamp,
            end_timestamp: r.end_timestamp,
            agent_id: r.agent_id,
            address: r.address,
            allocation_size: r.allocation_size,
        }
    }
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

/// `rocprofiler_client_id_t` of SDK 0.x: the tool may set `name`.
#[repr(C)]
#[derive(Debug)]
pub struct ClientId {
    pub name: *const c_char,
    pub handle: u32,
}

/// `rocprofiler_client_id_t` of SDK 1.0: with its size first.
#[repr(C)]
#[derive(Debug)]
pub struct ClientIdV1 {
    pub size: usize,
    pub name: *const c_char,
    pub handle: u32,
}

/// `rocprofiler_client_finalize_t` (SDK 0.x's client id; the plugin never calls
/// it).
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
        record: CallbackTracingRecordV1,
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
    use std::collections::BTreeMap;
    use std::mem::{offset_of, size_of};

    /// What the Rust declarations say for `abi`, keyed as
    /// `tests/rocm/layout_probe.cpp` prints the real headers' facts.
    fn ours(abi: Abi) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: usize| m.insert(k.to_string(), v as i64);
        macro_rules! size {
            ($t:ty, $n:expr) => {
                put(&format!("size {}", $n), size_of::<$t>())
            };
        }
        macro_rules! off {
            ($t:ty, $n:expr, $($f:tt)+) => {
                put(
                    &format!("offset {}.{}", $n, stringify!($($f)+)),
                    offset_of!($t, $($f)+),
                )
            };
        }
        size!(UserData, "UserData");
        size!(ContextId, "ContextId");
        size!(BufferId, "BufferId");
        size!(AgentId, "AgentId");
        size!(QueueId, "QueueId");
        macro_rules! callback {
            ($t:ty, $c:ty) => {
                size!($c, "CorrelationId");
                size!($t, "CallbackTracingRecord");
                off!($t, "CallbackTracingRecord", context_id);
                off!($t, "CallbackTracingRecord", thread_id);
                off!($t, "CallbackTracingRecord", correlation_id);
                off!($t, "CallbackTracingRecord", kind);
                off!($t, "CallbackTracingRecord", operation);
                off!($t, "CallbackTracingRecord", phase);
                off!($t, "CallbackTracingRecord", payload);
            };
        }
        macro_rules! allocation {
            ($t:ty) => {
                for_fields!($t, "MemoryAllocationRecord", size kind operation correlation_id
                    thread_id start_timestamp end_timestamp agent_id address allocation_size);
            };
        }
        macro_rules! for_fields {
            ($t:ty, $n:expr, $($f:ident)+) => {
                $(off!($t, $n, $f);)+
            };
        }
        match abi {
            Abi::V0 => {
                callback!(CallbackTracingRecord, CorrelationId);
                allocation!(MemoryAllocationRecord);
                size!(ClientId, "ClientId");
                off!(ClientId, "ClientId", name);
                off!(ClientId, "ClientId", handle);
            }
            Abi::V1 => {
                callback!(CallbackTracingRecordV1, CorrelationIdV1);
                allocation!(MemoryAllocationRecordV1);
                size!(ClientIdV1, "ClientId");
                off!(ClientIdV1, "ClientId", name);
                off!(ClientIdV1, "ClientId", handle);
            }
        }
        size!(RecordHeader, "RecordHeader");
        for_fields!(RecordHeader, "RecordHeader", category kind payload);
        size!(KernelDispatchInfo, "KernelDispatchInfo");
        for_fields!(KernelDispatchInfo, "KernelDispatchInfo", size agent_id queue_id kernel_id
            dispatch_id private_segment_size group_segment_size workgroup_size grid_size);
        size!(KernelDispatchRecord, "KernelDispatchRecord");
        for_fields!(KernelDispatchRecord, "KernelDispatchRecord", size kind operation
            correlation_id thread_id start_timestamp end_timestamp dispatch_info);
        for_fields!(MemoryCopyRecord, "MemoryCopyRecord", size kind operation correlation_id
            thread_id start_timestamp end_timestamp dst_agent_id src_agent_id bytes);
        for_fields!(KernelSymbolRegister, "KernelSymbolRegister", size kernel_id code_object_id
            kernel_name kernel_object kernarg_segment_size kernarg_segment_alignment
            group_segment_size private_segment_size sgpr_count arch_vgpr_count accum_vgpr_count);
        off!(AgentHead, "AgentHead", size);
        off!(AgentHead, "AgentHead", id);
        put("offset AgentHead.type", offset_of!(AgentHead, agent_type));
        size!(ToolConfigureResult, "ToolConfigureResult");
        for_fields!(ToolConfigureResult, "ToolConfigureResult", size initialize finalize tool_data);
        let consts: [(&str, i64); 21] = [
            ("STATUS_SUCCESS", STATUS_SUCCESS.into()),
            ("BUFFER_CATEGORY_TRACING", BUFFER_CATEGORY_TRACING.into()),
            ("AGENT_TYPE_GPU", AGENT_TYPE_GPU.into()),
            ("AGENT_INFO_VERSION_0", AGENT_INFO_VERSION_0.into()),
            ("CALLBACK_PHASE_ENTER", CALLBACK_PHASE_ENTER.into()),
            ("CALLBACK_PHASE_EXIT", CALLBACK_PHASE_EXIT.into()),
            (
                "CALLBACK_TRACING_HIP_RUNTIME_API",
                CALLBACK_TRACING_HIP_RUNTIME_API.into(),
            ),
            (
                "CALLBACK_TRACING_CODE_OBJECT",
                CALLBACK_TRACING_CODE_OBJECT.into(),
            ),
            (
                "BUFFER_TRACING_MEMORY_COPY",
                BUFFER_TRACING_MEMORY_COPY.into(),
            ),
            (
                "BUFFER_TRACING_KERNEL_DISPATCH",
                BUFFER_TRACING_KERNEL_DISPATCH.into(),
            ),
            (
                "BUFFER_TRACING_MEMORY_ALLOCATION",
                abi.buffer_tracing_memory_allocation().into(),
            ),
            (
                "CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER",
                CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER.into(),
            ),
            ("MEMORY_COPY_HOST_TO_HOST", MEMORY_COPY_HOST_TO_HOST.into()),
            (
                "MEMORY_COPY_HOST_TO_DEVICE",
                MEMORY_COPY_HOST_TO_DEVICE.into(),
            ),
            (
                "MEMORY_COPY_DEVICE_TO_HOST",
                MEMORY_COPY_DEVICE_TO_HOST.into(),
            ),
            (
                "MEMORY_COPY_DEVICE_TO_DEVICE",
                MEMORY_COPY_DEVICE_TO_DEVICE.into(),
            ),
            (
                "MEMORY_ALLOCATION_ALLOCATE",
                MEMORY_ALLOCATION_ALLOCATE.into(),
            ),
            (
                "MEMORY_ALLOCATION_VMEM_ALLOCATE",
                MEMORY_ALLOCATION_VMEM_ALLOCATE.into(),
            ),
            ("MEMORY_ALLOCATION_FREE", MEMORY_ALLOCATION_FREE.into()),
            (
                "MEMORY_ALLOCATION_VMEM_FREE",
                MEMORY_ALLOCATION_VMEM_FREE.into(),
            ),
            ("BUFFER_POLICY_DISCARD", BUFFER_POLICY_DISCARD.into()),
        ];
        for (name, v) in consts {
            m.insert(format!("const ROCPROFILER_{name}"), v);
        }
        m
    }

    /// Every fact the real headers of `file` print, against ours for the ABI of
    /// its version; returns how many were compared.
    fn check(file: &str, text: &str) -> usize {
        let mut version = None;
        let mut facts = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (key, value) = line.rsplit_once(' ').expect("`key value`");
            let value: i64 = value.parse().expect("a number");
            if key == "version" {
                version = Some(value as u32);
            } else {
                facts.push((key.to_string(), value));
            }
        }
        let abi = Abi::of(version.expect("a version line"));
        let ours = ours(abi);
        for (key, value) in &facts {
            assert_eq!(ours.get(key), Some(value), "{file}: {key} ({abi:?})");
        }
        facts.len()
    }

    /// The layouts and constants of the real rocprofiler-sdk headers of SDK
    /// 0.5.0, 0.6.0 and 1.0.0 (x86_64), as `tests/scripts/check-real-rocprofiler.sh`
    /// recorded them, against the declarations here.
    #[test]
    fn layouts_match_real_rocprofiler_sdk() {
        let files = [
            (
                "sdk-0.5.0.txt",
                include_str!("../../../tests/rocm/real_layout/sdk-0.5.0.txt"),
            ),
            (
                "sdk-0.6.0.txt",
                include_str!("../../../tests/rocm/real_layout/sdk-0.6.0.txt"),
            ),
            (
                "sdk-1.0.0.txt",
                include_str!("../../../tests/rocm/real_layout/sdk-1.0.0.txt"),
            ),
        ];
        for (file, text) in files {
            let n = check(file, text);
            assert!(n > 80, "{file}: only {n} facts");
        }
        // The newest SDK's file names every fact the declarations state.
        let newest = files[2].1;
        for key in ours(Abi::V1).keys() {
            assert!(
                newest.lines().any(|l| l.starts_with(&format!("{key} "))),
                "sdk-1.0.0.txt lacks {key}"
            );
        }
    }

    /// An SDK 0.x callback record read through the 1.0 declaration the callbacks
    /// take: the fields of the layout the SDK has.
    #[test]
    fn callback_fields_follow_the_abi() {
        let v0 = CallbackTracingRecord {
            context_id: ContextId { handle: 1 },
            thread_id: 2,
            correlation_id: CorrelationId {
                internal: 3,
                external: UserData { value: 4 },
            },
            kind: 5,
            operation: 6,
            phase: 7,
            payload: std::ptr::null_mut(),
        };
        let mut v1 = CallbackTracingRecordV1 {
            context_id: ContextId { handle: 1 },
            thread_id: 2,
            correlation_id: CorrelationIdV1 {
                internal: 3,
                external: UserData { value: 4 },
                ancestor: 99,
            },
            kind: 10,
            operation: 2,
            phase: 1,
            payload: std::ptr::null_mut(),
        };
        let f = v1.fields(Abi::V1);
        assert_eq!((f.correlation, f.kind, f.operation, f.phase), (3, 10, 2, 1));
        // SAFETY: test only: the 56 bytes of an SDK 0.x record at the start.
        unsafe {
            std::ptr::from_mut(&mut v1)
                .cast::<CallbackTracingRecord>()
                .write(v0)
        };
        let f = v1.fields(Abi::V0);
        assert_eq!((f.correlation, f.kind, f.operation, f.phase), (3, 5, 6, 7));
        assert_eq!(Abi::of(600), Abi::V0);
        assert_eq!(Abi::of(10_000), Abi::V1);
    }
}

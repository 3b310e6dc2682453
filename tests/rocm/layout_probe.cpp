// Prints, one "what name value" line each, the layout facts of rocprofiler-sdk
// that kprof's ROCm plugin depends on (plugins/rocm/src/sys.rs): struct sizes,
// field offsets and enum values. Compiled against rocprofiler-sdk's real public
// headers (with the HSA, hsakmt and HIP headers they include) by
// tests/scripts/check-real-rocprofiler.sh, which records the output in
// tests/rocm/real_layout.txt; the unit test `layouts_match_real_rocprofiler_sdk`
// in sys.rs prints the same lines from the Rust declarations and requires them.
#include <rocprofiler-sdk/registration.h>
#include <rocprofiler-sdk/rocprofiler.h>

#include <cstddef>
#include <cstdio>

#define SIZE(T, name) std::printf("size %s %zu\n", name, sizeof(T))
#define OFFSET(T, name, field)                                                 \
  std::printf("offset %s.%s %zu\n", name, #field, offsetof(T, field))
#define CONST(C) std::printf("const %s %ld\n", #C, static_cast<long>(C))

int main() {
  std::printf("version %d\n", ROCPROFILER_VERSION);
  SIZE(rocprofiler_correlation_id_t, "CorrelationId");
  SIZE(rocprofiler_user_data_t, "UserData");
  SIZE(rocprofiler_context_id_t, "ContextId");
  SIZE(rocprofiler_buffer_id_t, "BufferId");
  SIZE(rocprofiler_agent_id_t, "AgentId");
  SIZE(rocprofiler_queue_id_t, "QueueId");

  typedef rocprofiler_callback_tracing_record_t Cb;
  SIZE(Cb, "CallbackTracingRecord");
  OFFSET(Cb, "CallbackTracingRecord", context_id);
  OFFSET(Cb, "CallbackTracingRecord", thread_id);
  OFFSET(Cb, "CallbackTracingRecord", correlation_id);
  OFFSET(Cb, "CallbackTracingRecord", kind);
  OFFSET(Cb, "CallbackTracingRecord", operation);
  OFFSET(Cb, "CallbackTracingRecord", phase);
  OFFSET(Cb, "CallbackTracingRecord", payload);

  typedef rocprofiler_record_header_t H;
  SIZE(H, "RecordHeader");
  OFFSET(H, "RecordHeader", category);
  OFFSET(H, "RecordHeader", kind);
  OFFSET(H, "RecordHeader", payload);

  typedef rocprofiler_kernel_dispatch_info_t Kd;
  SIZE(Kd, "KernelDispatchInfo");
  OFFSET(Kd, "KernelDispatchInfo", size);
  OFFSET(Kd, "KernelDispatchInfo", agent_id);
  OFFSET(Kd, "KernelDispatchInfo", queue_id);
  OFFSET(Kd, "KernelDispatchInfo", kernel_id);
  OFFSET(Kd, "KernelDispatchInfo", dispatch_id);
  OFFSET(Kd, "KernelDispatchInfo", private_segment_size);
  OFFSET(Kd, "KernelDispatchInfo", group_segment_size);
  OFFSET(Kd, "KernelDispatchInfo", workgroup_size);
  OFFSET(Kd, "KernelDispatchInfo", grid_size);

  typedef rocprofiler_buffer_tracing_kernel_dispatch_record_t Kr;
  SIZE(Kr, "KernelDispatchRecord");
  OFFSET(Kr, "KernelDispatchRecord", size);
  OFFSET(Kr, "KernelDispatchRecord", kind);
  OFFSET(Kr, "KernelDispatchRecord", operation);
  OFFSET(Kr, "KernelDispatchRecord", correlation_id);
  OFFSET(Kr, "KernelDispatchRecord", thread_id);
  OFFSET(Kr, "KernelDispatchRecord", start_timestamp);
  OFFSET(Kr, "KernelDispatchRecord", end_timestamp);
  OFFSET(Kr, "KernelDispatchRecord", dispatch_info);

  typedef rocprofiler_buffer_tracing_memory_copy_record_t Mc;
  OFFSET(Mc, "MemoryCopyRecord", size);
  OFFSET(Mc, "MemoryCopyRecord", kind);
  OFFSET(Mc, "MemoryCopyRecord", operation);
  OFFSET(Mc, "MemoryCopyRecord", correlation_id);
  OFFSET(Mc, "MemoryCopyRecord", thread_id);
  OFFSET(Mc, "MemoryCopyRecord", start_timestamp);
  OFFSET(Mc, "MemoryCopyRecord", end_timestamp);
  OFFSET(Mc, "MemoryCopyRecord", dst_agent_id);
  OFFSET(Mc, "MemoryCopyRecord", src_agent_id);
  OFFSET(Mc, "MemoryCopyRecord", bytes);

#if ROCPROFILER_VERSION >= 600 // memory allocation tracing came with SDK 0.6
  typedef rocprofiler_buffer_tracing_memory_allocation_record_t Ma;
  OFFSET(Ma, "MemoryAllocationRecord", size);
  OFFSET(Ma, "MemoryAllocationRecord", kind);
  OFFSET(Ma, "MemoryAllocationRecord", operation);
  OFFSET(Ma, "MemoryAllocationRecord", correlation_id);
  OFFSET(Ma, "MemoryAllocationRecord", thread_id);
  OFFSET(Ma, "MemoryAllocationRecord", start_timestamp);
  OFFSET(Ma, "MemoryAllocationRecord", end_timestamp);
  OFFSET(Ma, "MemoryAllocationRecord", agent_id);
  OFFSET(Ma, "MemoryAllocationRecord", address);
  OFFSET(Ma, "MemoryAllocationRecord", allocation_size);
#endif

  typedef rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t Ks;
  OFFSET(Ks, "KernelSymbolRegister", size);
  OFFSET(Ks, "KernelSymbolRegister", kernel_id);
  OFFSET(Ks, "KernelSymbolRegister", code_object_id);
  OFFSET(Ks, "KernelSymbolRegister", kernel_name);
  OFFSET(Ks, "KernelSymbolRegister", kernel_object);
  OFFSET(Ks, "KernelSymbolRegister", kernarg_segment_size);
  OFFSET(Ks, "KernelSymbolRegister", kernarg_segment_alignment);
  OFFSET(Ks, "KernelSymbolRegister", group_segment_size);
  OFFSET(Ks, "KernelSymbolRegister", private_segment_size);
  OFFSET(Ks, "KernelSymbolRegister", sgpr_count);
  OFFSET(Ks, "KernelSymbolRegister", arch_vgpr_count);
  OFFSET(Ks, "KernelSymbolRegister", accum_vgpr_count);

  typedef rocprofiler_agent_v0_t Ag;
  OFFSET(Ag, "AgentHead", size);
  OFFSET(Ag, "AgentHead", id);
  OFFSET(Ag, "AgentHead", type);

  typedef rocprofiler_client_id_t Cl;
  SIZE(Cl, "ClientId");
  OFFSET(Cl, "ClientId", name);
  OFFSET(Cl, "ClientId", handle);

  typedef rocprofiler_tool_configure_result_t Tc;
  SIZE(Tc, "ToolConfigureResult");
  OFFSET(Tc, "ToolConfigureResult", size);
  OFFSET(Tc, "ToolConfigureResult", initialize);
  OFFSET(Tc, "ToolConfigureResult", finalize);
  OFFSET(Tc, "ToolConfigureResult", tool_data);

  CONST(ROCPROFILER_STATUS_SUCCESS);
  CONST(ROCPROFILER_BUFFER_CATEGORY_TRACING);
  CONST(ROCPROFILER_AGENT_TYPE_GPU);
  CONST(ROCPROFILER_AGENT_INFO_VERSION_0);
  CONST(ROCPROFILER_CALLBACK_PHASE_ENTER);
  CONST(ROCPROFILER_CALLBACK_PHASE_EXIT);
  CONST(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API);
  CONST(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT);
  CONST(ROCPROFILER_BUFFER_TRACING_MEMORY_COPY);
  CONST(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH);
#if ROCPROFILER_VERSION >= 600
  CONST(ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION);
#endif
  CONST(ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER);
  CONST(ROCPROFILER_MEMORY_COPY_HOST_TO_HOST);
  CONST(ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE);
  CONST(ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST);
  CONST(ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE);
#if ROCPROFILER_VERSION >= 600
  CONST(ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE);
  CONST(ROCPROFILER_MEMORY_ALLOCATION_VMEM_ALLOCATE);
  CONST(ROCPROFILER_MEMORY_ALLOCATION_FREE);
  CONST(ROCPROFILER_MEMORY_ALLOCATION_VMEM_FREE);
#endif
  CONST(ROCPROFILER_BUFFER_POLICY_DISCARD);
  return 0;
}

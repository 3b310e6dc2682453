/*
 * rocprofiler_standin.h - the rocprofiler-sdk types the stand-in
 * librocprofiler-sdk.so (tests/harness/rocprofiler_standin.c) implements,
 * written here from rocprofiler-sdk's public API documentation (no AMD header
 * is copied or needed), with the same layouts as the plugin's
 * plugins/rocm/src/sys.rs (ROCm 6.2 to 7.x, SDK 0.4 to 1.x; the static
 * assertions below are the same sizes and offsets as sys.rs's tests), and the
 * control API through which a test program replays what the HIP runtime and a
 * GPU would make the SDK report.
 *
 * Times given to the control API are CLOCK_MONOTONIC nanoseconds; the
 * stand-in's records and rocprofiler_get_timestamp are on its own clock
 * (CLOCK_MONOTONIC plus STANDIN_CLOCK_OFFSET_NS), which a tool must convert.
 */
#ifndef KPROF_ROCPROFILER_STANDIN_H
#define KPROF_ROCPROFILER_STANDIN_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------ rocprofiler-sdk's types */

typedef int rocprofiler_status_t;
enum {
    ROCPROFILER_STATUS_SUCCESS = 0,
    ROCPROFILER_STATUS_ERROR = 1,
    ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND = 2,
    ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND = 3,
    ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND = 4,
    ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND = 5,
    ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED = 15,
    ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED = 16,
    ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI = 18,
    ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT = 19,
};

enum { ROCPROFILER_BUFFER_CATEGORY_TRACING = 1 };
enum { ROCPROFILER_AGENT_TYPE_CPU = 1, ROCPROFILER_AGENT_TYPE_GPU = 2 };
enum { ROCPROFILER_AGENT_INFO_VERSION_0 = 1 };
enum { ROCPROFILER_CALLBACK_PHASE_ENTER = 1, ROCPROFILER_CALLBACK_PHASE_EXIT = 2 };
enum {
    ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API = 5,
    ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT = 10,
    ROCPROFILER_CALLBACK_TRACING_LAST = 21,
};
enum {
    ROCPROFILER_BUFFER_TRACING_MEMORY_COPY = 10,
    ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH = 11,
#ifdef STANDIN_SDK_1
    ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION = 16, /* 1.0 dropped a kind before it */
#else
    ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION = 17,
#endif
    ROCPROFILER_BUFFER_TRACING_LAST = 22,
};
enum { ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER = 2 };
enum { ROCPROFILER_KERNEL_DISPATCH_COMPLETE = 2 };
enum {
    ROCPROFILER_MEMORY_COPY_HOST_TO_HOST = 1,
    ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE = 2,
    ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST = 3,
    ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE = 4,
};
enum { ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE = 1, ROCPROFILER_MEMORY_ALLOCATION_FREE = 3 };

typedef struct { uint64_t handle; } rocprofiler_context_id_t;
typedef struct { uint64_t handle; } rocprofiler_buffer_id_t;
typedef struct { uint64_t handle; } rocprofiler_agent_id_t;
typedef struct { uint64_t handle; } rocprofiler_queue_id_t;
typedef union { uint64_t value; void *ptr; } rocprofiler_user_data_t;
/* SDK 1.0 (ROCm 7) added `ancestor` to the correlation id of callback records
 * and of memory allocation records; kernel dispatch and memory copy records keep
 * a 16-byte one (`rocprofiler_async_correlation_id_t`). Built with
 * -DSTANDIN_SDK_1 the stand-in is SDK 1.0.0, otherwise 0.6.0 (ROCm 6.4). */
typedef struct {
    uint64_t internal;
    rocprofiler_user_data_t external;
} standin_async_correlation_id_t;
typedef struct {
    uint64_t internal;
    rocprofiler_user_data_t external;
#ifdef STANDIN_SDK_1
    uint64_t ancestor;
#endif
} rocprofiler_correlation_id_t;

typedef struct {
    rocprofiler_context_id_t context_id;
    uint64_t thread_id;
    rocprofiler_correlation_id_t correlation_id;
    int kind;
    int32_t operation;
    int phase;
    void *payload;
} rocprofiler_callback_tracing_record_t;

typedef struct {
    uint32_t category;
    uint32_t kind;
    void *payload;
} rocprofiler_record_header_t;

typedef struct { uint32_t x, y, z; } rocprofiler_dim3_t;

typedef struct {
    uint64_t size;
    rocprofiler_agent_id_t agent_id;
    rocprofiler_queue_id_t queue_id;
    uint64_t kernel_id;
    uint64_t dispatch_id;
    uint32_t private_segment_size;
    uint32_t group_segment_size;
    rocprofiler_dim3_t workgroup_size;
    rocprofiler_dim3_t grid_size;
    uint8_t reserved_padding[56];
} rocprofiler_kernel_dispatch_info_t;

typedef struct {
    uint64_t size;
    int kind;
    int operation;
    standin_async_correlation_id_t correlation_id;
    uint64_t thread_id;
    uint64_t start_timestamp;
    uint64_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_buffer_tracing_kernel_dispatch_record_t;

typedef struct {
    uint64_t size;
    int kind;
    int operation;
    standin_async_correlation_id_t correlation_id;
    uint64_t thread_id;
    uint64_t start_timestamp;
    uint64_t end_timestamp;
    rocprofiler_agent_id_t dst_agent_id;
    rocprofiler_agent_id_t src_agent_id;
    uint64_t bytes;
    uint64_t dst_address;
    uint64_t src_address;
} rocprofiler_buffer_tracing_memory_copy_record_t;

typedef struct {
    uint64_t size;
    int kind;
    int operation;
    rocprofiler_correlation_id_t correlation_id;
    uint64_t thread_id;
    uint64_t start_timestamp;
    uint64_t end_timestamp;
    rocprofiler_agent_id_t agent_id;
    uint64_t address;
    uint64_t allocation_size;
} rocprofiler_buffer_tracing_memory_allocation_record_t;

typedef struct {
    uint64_t size;
    uint64_t kernel_id;
    uint64_t code_object_id;
    const char *kernel_name;
    uint64_t kernel_object;
    uint32_t kernarg_segment_size;
    uint32_t kernarg_segment_alignment;
    uint32_t group_segment_size;
    uint32_t private_segment_size;
    uint32_t sgpr_count;
    uint32_t arch_vgpr_count;
    uint32_t accum_vgpr_count;
    int64_t kernel_code_entry_byte_offset;
    uint64_t kernel_address;
} rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t;

/* The head of rocprofiler_agent_v0_t and room for the rest (the stand-in's
 * agents are this size; a query asking for more is refused, as the SDK does). */
typedef struct {
    uint64_t size;
    rocprofiler_agent_id_t id;
    int type;
    uint8_t rest[488];
} standin_agent_t;

typedef struct {
#ifdef STANDIN_SDK_1
    size_t size; /* since SDK 1.0 */
#endif
    const char *name;
    const uint32_t handle;
} rocprofiler_client_id_t;

typedef void (*rocprofiler_client_finalize_t)(rocprofiler_client_id_t);
typedef int (*rocprofiler_tool_initialize_t)(rocprofiler_client_finalize_t finalize_func,
                                             void *tool_data);
typedef void (*rocprofiler_tool_finalize_t)(void *tool_data);
typedef struct {
    size_t size;
    rocprofiler_tool_initialize_t initialize;
    rocprofiler_tool_finalize_t finalize;
    void *tool_data;
} rocprofiler_tool_configure_result_t;
typedef rocprofiler_tool_configure_result_t *(*rocprofiler_configure_func_t)(
    uint32_t version, const char *runtime_version, uint32_t priority,
    rocprofiler_client_id_t *client_id);

typedef void (*rocprofiler_callback_tracing_cb_t)(rocprofiler_callback_tracing_record_t record,
                                                  rocprofiler_user_data_t *user_data,
                                                  void *callback_data);
typedef void (*rocprofiler_buffer_tracing_cb_t)(rocprofiler_context_id_t context,
                                                rocprofiler_buffer_id_t buffer_id,
                                                rocprofiler_record_header_t **headers,
                                                size_t num_headers, void *data,
                                                uint64_t drop_count);
typedef rocprofiler_status_t (*rocprofiler_query_available_agents_cb_t)(
    int version, const void **agents, size_t num_agents, void *user_data);

#ifdef STANDIN_SDK_1
#define STANDIN_CORRELATION 24
#else
#define STANDIN_CORRELATION 16
#endif
_Static_assert(sizeof(rocprofiler_callback_tracing_record_t) == 40 + STANDIN_CORRELATION,
               "callback record");
_Static_assert(sizeof(rocprofiler_kernel_dispatch_info_t) == 128, "dispatch info");
_Static_assert(sizeof(rocprofiler_buffer_tracing_kernel_dispatch_record_t) == 184,
               "dispatch record");
_Static_assert(offsetof(rocprofiler_buffer_tracing_memory_copy_record_t, bytes) == 72,
               "copy record");
_Static_assert(offsetof(rocprofiler_buffer_tracing_memory_allocation_record_t,
                        allocation_size) == 56 + STANDIN_CORRELATION,
               "allocation record");
_Static_assert(offsetof(rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t,
                        sgpr_count) == 56,
               "kernel symbol");
_Static_assert(sizeof(rocprofiler_tool_configure_result_t) == 32, "configure result");

/* ---------------------------------------------------------- control API */

/* The stand-in's HIP runtime operations (its own numbering: a tool asks their
 * names with rocprofiler_query_callback_tracing_kind_operation_name). */
enum {
    STANDIN_hipMalloc = 1,
    STANDIN_hipFree,
    STANDIN_hipMemcpy,
    STANDIN_hipMemcpyAsync,
    STANDIN_hipLaunchKernel,
    STANDIN_hipDeviceSynchronize,
    STANDIN_HIP_OPS
};

/* The stand-in's agents: index 0 the CPU, 1 GPU 0, 2 GPU 1. */
enum { STANDIN_CPU = 0, STANDIN_GPU0 = 1, STANDIN_GPU1 = 2, STANDIN_AGENTS = 3 };

/* What the SDK does when a ROCm runtime registers with it: finds the tools
 * (ROCP_TOOL_LIBRARIES), configures and initializes them. Once. */
void standin_init(void);
/* A code object registering kernel `kernel_id` named `symbol`. */
void standin_kernel_symbol(uint64_t kernel_id, const char *symbol);
/* A HIP runtime call's enter (phase 1) or exit (phase 2) on this thread. */
void standin_hip(int op, int phase, uint64_t correlation);
/* A completed kernel dispatch. */
void standin_dispatch(uint64_t correlation, int agent, uint64_t queue, uint64_t kernel_id,
                      const uint32_t grid[3], const uint32_t workgroup[3], uint32_t lds,
                      uint32_t scratch, uint64_t start, uint64_t end);
/* A completed memory copy (operation: rocprofiler_memory_copy_operation_t). */
void standin_copy(uint64_t correlation, int operation, int src_agent, int dst_agent,
                  uint64_t bytes, uint64_t start, uint64_t end);
/* A memory allocation (operation 1) or free (3). */
void standin_memory(uint64_t correlation, int operation, int agent, uint64_t address,
                    uint64_t bytes, uint64_t t);
/* A tracing record of a kind no tool configured (as a newer SDK may deliver). */
void standin_unknown(uint32_t kind);
/* `n` records the buffer lost (reported with the next delivery). */
void standin_drop(uint64_t n);
/* Closes the batch being filled: the next record goes into a new one. */
void standin_seal(void);
/* Delivers every batch from a thread of the stand-in's own, oldest or newest
 * first; returns how many. */
size_t standin_complete(int newest_first);

#endif

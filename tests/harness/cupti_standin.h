/*
 * cupti_standin.h - the control API of the stand-in libcupti.so
 * (tests/harness/cupti_standin.c), through which a test program replays what a
 * CUDA driver and a GPU would make CUPTI report: API calls (callback API) and
 * activity records (activity API), with times it chooses.
 *
 * Times given to these functions are CLOCK_MONOTONIC nanoseconds; the stand-in
 * writes them into its records on its own clock (CLOCK_MONOTONIC plus
 * STANDIN_CLOCK_OFFSET_NS, see cupti_standin.c), which cuptiGetTimestamp reads.
 *
 * The program finds these functions with dlsym in the library the tool loaded
 * (dlopen(path, RTLD_NOLOAD)); their types are below so that it can.
 */
#ifndef KPROF_CUPTI_STANDIN_H
#define KPROF_CUPTI_STANDIN_H

#include <stddef.h>
#include <stdint.h>

/* An API call's enter (site 0) or exit (site 1) on the calling thread, in
 * callback domain `domain` (CUPTI_CB_DOMAIN_RUNTIME_API or _DRIVER_API), as
 * CUPTI's callback API reports it to its subscriber (when the domain or the
 * callback is enabled). `symbol` is the kernel of a launch (or NULL). */
typedef void (*standin_api_fn)(int domain, uint32_t cbid, const char *function,
                               const char *symbol, uint32_t correlation, int site);

/* A kernel (CONCURRENT_KERNEL record, the header's latest kernel layout). */
struct standin_kernel_desc {
    const char *name; /* mangled, as CUPTI reports it; kept by the stand-in */
    uint32_t device, stream, correlation;
    uint64_t start, end;
    int32_t grid[3], block[3];
    uint16_t registers;
    int32_t static_shared, dynamic_shared;
};
typedef void (*standin_kernel_fn)(const struct standin_kernel_desc *k);

/* A copy (MEMCPY record): copy_kind is a CUpti_ActivityMemcpyKind, src/dst kinds
 * CUpti_ActivityMemoryKind. `runtime_correlation` is the runtime API call's id
 * when `correlation` is the driver's (0 otherwise). */
typedef void (*standin_memcpy_fn)(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                                  uint64_t bytes, uint32_t device, uint32_t stream,
                                  uint32_t correlation, uint32_t runtime_correlation,
                                  uint64_t start, uint64_t end);

/* A copy between two devices (MEMCPY2 record). */
typedef void (*standin_memcpy_peer_fn)(uint64_t bytes, uint32_t src_device,
                                       uint32_t dst_device, uint32_t device, uint32_t stream,
                                       uint32_t correlation, uint64_t start, uint64_t end);

/* A memory set (MEMSET record). */
typedef void (*standin_memset_fn)(uint32_t value, uint64_t bytes, uint16_t memory_kind,
                                  uint32_t device, uint32_t stream, uint32_t correlation,
                                  uint64_t start, uint64_t end);

/* A device memory allocation (operation 1) or release (operation 2) (MEMORY2
 * record; memory_kind a CUpti_ActivityMemoryKind). */
typedef void (*standin_memory2_fn)(int operation, int memory_kind, uint64_t address,
                                   uint64_t bytes, uint32_t device, uint32_t stream,
                                   uint32_t correlation, uint64_t timestamp);

/* A synchronization (SYNCHRONIZATION record; type a
 * CUpti_ActivitySynchronizationType). */
typedef void (*standin_sync_fn)(int type, uint32_t context, uint32_t stream,
                                uint32_t correlation, uint64_t start, uint64_t end);

/* CUPTI's own overhead (OVERHEAD record; kind a CUpti_ActivityOverheadKind). */
typedef void (*standin_overhead_fn)(int kind, uint64_t start, uint64_t end);

/* A record of kind `kind` (one this CUPTI's header does not know, as a newer
 * CUPTI writes) and `size` bytes, zero after its kind. Written whatever is
 * enabled. */
typedef void (*standin_unknown_fn)(uint32_t kind, uint32_t size);

/* `n` records CUPTI lost (cuptiActivityGetNumDroppedRecords reports them). */
typedef void (*standin_drop_fn)(size_t n);

/* Closes the buffer being filled: the next record goes into a new one. */
typedef void (*standin_seal_fn)(void);

/* Completes every filled buffer (the one being filled too), from a thread of
 * the stand-in's own as CUPTI does, oldest first or (newest_first) newest
 * first. Returns how many buffers were completed. */
typedef size_t (*standin_complete_fn)(int newest_first);

#endif

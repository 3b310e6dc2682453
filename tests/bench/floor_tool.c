/*
 * floor_tool.c: the physical floor of a tracing Kokkos tool, for the overhead
 * benchmark (tests/benches/kokkos_overhead.rs). begin reads the TSC and hands the
 * timestamp back through kID; end reads the TSC and stores one 16-byte record
 * (begin ts, end ts) into a pre-allocated, reused thread-local buffer that wraps
 * around (64 KiB per thread, so it stays in cache). No names, no ids, no writer:
 * whatever a real tool adds on top of this is its own cost. It answers
 * requires_global_fencing=false, unless FLOOR_TOOL_FENCES=1: then it keeps Kokkos'
 * fences, as the kokkos-tools tools do (kernel-timer among them), and leaves the
 * fences Kokkos runs for it out the way they do (a strstr of the name, UINT64_MAX as
 * the handle); other fences are recorded like kernels.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "kokkos_tool.h"
#include "record_ring.h"

KOKKOS_TOOL_NO_INIT

EXPORT void kokkosp_request_tool_settings(uint32_t num, ToolSettings *settings)
{
    const char *keep = getenv("FLOOR_TOOL_FENCES");
    if (num >= 1 && settings && !(keep && strcmp(keep, "1") == 0))
        settings->requires_global_fencing = false;
}

EXPORT void kokkosp_begin_fence(const char *name, uint32_t dev_id, uint64_t *handle)
{
    (void)dev_id;
    *handle = strstr(name, "Kokkos Profile Tool Fence") ? UINT64_MAX : __rdtsc();
}

EXPORT void kokkosp_end_fence(uint64_t handle)
{
    if (handle == UINT64_MAX)
        return;
    uint64_t end = __rdtsc();
    ring_put(handle, end);
}

EXPORT void kokkosp_begin_parallel_for(const char *name, uint32_t dev_id, uint64_t *kid)
{
    (void)name;
    (void)dev_id;
    *kid = __rdtsc();
}

EXPORT void kokkosp_end_parallel_for(uint64_t kid)
{
    uint64_t end = __rdtsc();
    ring_put(kid, end);
}

EXPORT void kokkosp_finalize_library(void)
{
}

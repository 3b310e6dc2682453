/*
 * empty_tool.c: a Kokkos tool whose callbacks do nothing, for the overhead
 * benchmark (tests/benches/kokkos_overhead.rs). Its cost is the loader's and the
 * indirect calls' (through the function pointers Kokkos got from dlsym): the part
 * of any tool's overhead no tool can avoid. It answers requires_global_fencing=false.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kokkos_tool.h"

KOKKOS_TOOL_NO_INIT

KOKKOS_TOOL_NO_FENCING

EXPORT void kokkosp_begin_parallel_for(const char *name, uint32_t dev_id, uint64_t *kid)
{
    (void)name;
    (void)dev_id;
    (void)kid;
}

EXPORT void kokkosp_end_parallel_for(uint64_t kid)
{
    (void)kid;
}

EXPORT void kokkosp_finalize_library(void)
{
}

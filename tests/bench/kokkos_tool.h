/*
 * kokkos_tool.h: the parts of the Kokkos Tools interface that the benchmark's C
 * tools and driver share (empty_tool.c, floor_tool.c, inplace_floor_tool.c,
 * kokkos_driver.c): the structs Kokkos passes at initialization, with their x86-64
 * layouts, and the visibility the exported callbacks need.
 */
#ifndef KPROF_BENCH_KOKKOS_TOOL_H
#define KPROF_BENCH_KOKKOS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t deviceID;
} KokkosPDeviceInfo;

/* kokkosp_request_tool_settings' argument: 256 bytes, the first one read. */
typedef struct {
    bool requires_global_fencing;
    bool padding[255];
} ToolSettings;

#define EXPORT __attribute__((visibility("default")))

#endif

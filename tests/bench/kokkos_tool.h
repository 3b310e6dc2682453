/*
 * kokkos_tool.h: the parts of the Kokkos Tools interface that the benchmark's C
 * tools and driver share (empty_tool.c, floor_tool.c, inplace_floor_tool.c,
 * kokkos_driver.c): the structs Kokkos passes at initialization, with their x86-64
 * layouts, the visibility the exported callbacks need, and the callbacks that
 * most tools answer alike.
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

/* Defines kokkosp_init_library for a tool that needs no set-up. */
#define KOKKOS_TOOL_NO_INIT                                                                \
    EXPORT void kokkosp_init_library(int load_seq, uint64_t interface_ver, uint32_t dev_count, \
                                     KokkosPDeviceInfo *info)                              \
    {                                                                                      \
        (void)load_seq;                                                                    \
        (void)interface_ver;                                                               \
        (void)dev_count;                                                                   \
        (void)info;                                                                        \
    }

/* Defines kokkosp_request_tool_settings answering that Kokkos need not fence
 * around the tool's callbacks. */
#define KOKKOS_TOOL_NO_FENCING                                                 \
    EXPORT void kokkosp_request_tool_settings(uint32_t num, ToolSettings *settings) \
    {                                                                          \
        if (num >= 1 && settings)                                              \
            settings->requires_global_fencing = false;                         \
    }

#endif

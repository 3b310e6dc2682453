/*
 * annotation_tools.c - stand-ins for libkprof_core.so's two region functions, for
 * tests/benches/annotation_overhead.rs. Built twice:
 *   - plain: the functions do nothing: the cost of the calls themselves, which
 *     no annotation library avoids;
 *   - with -DFLOOR: begin reads the TSC, end reads it again and stores one 16-byte
 *     record (record_ring.h): the least a library that measures each region does.
 */
#include <stdint.h>
#include <x86intrin.h>

#include "record_ring.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef FLOOR
static __thread uint64_t opened;

EXPORT void kprof_region_begin(const char *name)
{
    (void)name;
    opened = __rdtsc();
}

EXPORT void kprof_region_end(const char *name)
{
    (void)name;
    ring_put(opened, __rdtsc());
}
#else
EXPORT void kprof_region_begin(const char *name)
{
    (void)name;
}

EXPORT void kprof_region_end(const char *name)
{
    (void)name;
}
#endif

/*
 * annotation_driver.c - the annotation API's cost per region, for
 * tests/benches/annotation_overhead.rs.
 *
 * Usage: annotation_driver LIB|none PAIRS REPS
 * Loads LIB (libkprof_core.so, or a stand-in exporting the same two functions:
 * annotation_tools.c) as a program linked with it calls it, through the address
 * the loader resolved, and runs PAIRS kprof_region_begin/kprof_region_end pairs
 * per repetition: one untimed warm-up, then REPS timed. "none" runs the loop with
 * no call (the loop's own cost). Prints "ns_per_pair <median over the reps>".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"

typedef void (*region_fn)(const char *);

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s LIB|none PAIRS REPS\n", argv[0]);
        return 2;
    }
    long pairs = atol(argv[2]), reps = atol(argv[3]);
    region_fn begin = NULL, end = NULL;
    if (strcmp(argv[1], "none") != 0) {
        void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
        if (!lib) {
            fprintf(stderr, "annotation_driver: %s\n", dlerror());
            return 1;
        }
        begin = (region_fn)dlsym(lib, "kprof_region_begin");
        end = (region_fn)dlsym(lib, "kprof_region_end");
        if (!begin || !end) {
            fprintf(stderr, "annotation_driver: %s lacks the annotation API\n", argv[1]);
            return 1;
        }
    }
    double *ns = calloc((size_t)reps, sizeof *ns);
    if (!ns)
        return 1;
    for (long r = -1; r < reps; r++) {
        double t0 = bench_now_ns();
        if (begin) {
            for (long i = 0; i < pairs; i++) {
                begin("bench_region");
                end("bench_region");
            }
        } else {
            for (long i = 0; i < pairs; i++)
                __asm__ volatile("" ::: "memory");
        }
        double t = bench_now_ns() - t0;
        if (r >= 0)
            ns[r] = t / (double)pairs;
    }
    printf("ns_per_pair %.3f\n", bench_median(ns, (size_t)reps));
    free(ns);
    return 0;
}

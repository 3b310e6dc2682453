/*
 * counters_driver.c - the cost of reading counters around a region: N begin/end
 * pairs of one region, timed, in one of three modes (argv[1]):
 *
 *   kprof   kprof_region_begin/end (the annotation API; kprof reads the counters
 *           KPROF_COUNTERS names, or none)
 *   ctool   the least a counting tool can do: at begin, PAPI_read into the
 *           thread's slot and a timestamp; at end, PAPI_read again, a timestamp,
 *           and the deltas added to per-region totals (no kprof at all)
 *   none    the loop alone
 *
 * argv[2]: SDE events to register and (ctool) to read, 0-4, named
 * sde:::kpbench::c0..c3; argv[3]: pairs per repetition; argv[4]: repetitions.
 * Each SDE counter is a thread-local variable read through a callback, the same
 * for both tools. Prints "ns_per_pair <median over repetitions>".
 */
#include <papi.h>
#include <sde_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kprof.h>

#include "bench_timing.h"

static __thread long long counts[4];

static long long read_counter(void *p)
{
    return counts[(long)p];
}

/* The C tool's state: one event set, the readings at begin, totals. */
static int event_set = PAPI_NULL;
static long long at_begin[4], totals[4], begin_ns, total_ns;
static int nevents;

static void ctool_setup(int n)
{
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT ||
        PAPI_create_eventset(&event_set) != PAPI_OK) {
        fprintf(stderr, "ctool: PAPI init failed\n");
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "sde:::kpbench::c%d", i);
        if (PAPI_add_named_event(event_set, name) != PAPI_OK) {
            fprintf(stderr, "ctool: cannot add %s\n", name);
            exit(1);
        }
    }
    if (n > 0 && PAPI_start(event_set) != PAPI_OK) {
        fprintf(stderr, "ctool: cannot start\n");
        exit(1);
    }
    nevents = n;
}

static inline long long tsc_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void ctool_begin(void)
{
    if (nevents)
        PAPI_read(event_set, at_begin);
    begin_ns = tsc_ns();
}

static inline void ctool_end(void)
{
    long long now[4];
    long long t = tsc_ns();
    if (nevents)
        PAPI_read(event_set, now);
    total_ns += t - begin_ns;
    for (int i = 0; i < nevents; i++)
        totals[i] += now[i] - at_begin[i];
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: counters_driver kprof|ctool|none EVENTS PAIRS REPS\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = atoi(argv[2]);
    long pairs = atol(argv[3]);
    int reps = atoi(argv[4]);
    papi_handle_t h = papi_sde_init("kpbench");
    for (long i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "c%ld", i);
        papi_sde_register_counter_cb(h, name, PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long,
                                     read_counter, (void *)i);
    }
    int ctool = strcmp(mode, "ctool") == 0, kprof = strcmp(mode, "kprof") == 0;
    if (ctool)
        ctool_setup(n);
    double *t = calloc((size_t)reps + 1, sizeof *t);
    for (int r = 0; r <= reps; r++) {
        double t0 = bench_now_ns();
        for (long i = 0; i < pairs; i++) {
            if (kprof)
                kprof_region_begin("bench_region");
            else if (ctool)
                ctool_begin();
            counts[0] += 1;
            if (kprof)
                kprof_region_end("bench_region");
            else if (ctool)
                ctool_end();
        }
        /* The first repetition warms up (first events, first chunks). */
        if (r > 0)
            t[r - 1] = (bench_now_ns() - t0) / (double)pairs;
    }
    printf("ns_per_pair %.2f\n", bench_median(t, (size_t)reps));
    if (ctool)
        printf("ctool_total c0 %lld\n", totals[0]);
    free(t);
    return 0;
}

/*
 * bench_timing.h - the timing every benchmark program of tests/ shares: a
 * CLOCK_MONOTONIC reading in ns, the thread's CPU time, and the median of repetitions (sorted in place;
 * the mean of the middle two for an even count), as tests/src/bench.rs takes it.
 */
#ifndef KPROF_BENCH_TIMING_H
#define KPROF_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of the calling thread in ns: what a loop cost on a machine shared
 * with other work, where wall time also counts the time it waited for a core. */
static inline double bench_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

#endif

/*
 * bench_regions.c: the OpenMP overhead benchmark's program
 * (tests/benches/openmp_overhead.rs). Usage: bench_regions <regions> <reps>.
 * One untimed warm-up repetition, then <reps> timed repetitions of <regions> tiny
 * parallel regions (2 threads, a parallel-for over 64 iterations of a trivial body).
 * Prints "ns_per_region <median over repetitions>" and a checksum on stdout.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../bench/bench_timing.h"

#define ITERS 64

static double data[ITERS];

int main(int argc, char **argv)
{
    long regions = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (regions < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: bench_regions <regions> <reps>\n");
        return 2;
    }
    double *per = calloc((size_t)reps, sizeof *per);
    for (int rep = -1; rep < reps; rep++) {
        double t0 = bench_now_ns();
        for (long r = 0; r < regions; r++) {
#pragma omp parallel for num_threads(2) schedule(static)
            for (int i = 0; i < ITERS; i++)
                data[i] += i;
        }
        double t = (bench_now_ns() - t0) / (double)regions;
        if (rep >= 0)
            per[rep] = t;
    }
    printf("ns_per_region %.1f\n", bench_median(per, (size_t)reps));
    printf("checksum %.1f\n", data[ITERS - 1]);
    free(per);
    return 0;
}

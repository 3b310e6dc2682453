/*
 * bench_constructs.c - the OpenACC overhead benchmark's program
 * (tests/benches/openacc_overhead.rs). Usage: bench_constructs <constructs> <reps>.
 * One untimed warm-up repetition, then <reps> timed repetitions of <constructs>
 * tiny `parallel loop` compute constructs (64 iterations of a trivial body; host
 * fallback with GCC). Prints "ns_per_construct <median over repetitions>" and a
 * checksum on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../bench/bench_timing.h"

#define ITERS 64

static double data[ITERS];

int main(int argc, char **argv)
{
    long constructs = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (constructs < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: bench_constructs <constructs> <reps>\n");
        return 2;
    }
    double *per = calloc((size_t)reps, sizeof *per);
    for (int rep = -1; rep < reps; rep++) {
        double t0 = bench_now_ns();
        for (long r = 0; r < constructs; r++) {
#pragma acc parallel loop
            for (int i = 0; i < ITERS; i++)
                data[i] += i;
        }
        double t = (bench_now_ns() - t0) / (double)constructs;
        if (rep >= 0)
            per[rep] = t;
    }
    printf("ns_per_construct %.1f\n", bench_median(per, (size_t)reps));
    printf("checksum %.1f\n", data[ITERS - 1]);
    free(per);
    return 0;
}

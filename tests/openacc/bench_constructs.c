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

#define ITERS 64

static double data[ITERS];

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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
        double t0 = now_ns();
        for (long r = 0; r < constructs; r++) {
#pragma acc parallel loop
            for (int i = 0; i < ITERS; i++)
                data[i] += i;
        }
        double t = (now_ns() - t0) / (double)constructs;
        if (rep >= 0)
            per[rep] = t;
    }
    qsort(per, (size_t)reps, sizeof *per, cmp);
    printf("ns_per_construct %.1f\n", per[reps / 2]);
    printf("checksum %.1f\n", data[ITERS - 1]);
    free(per);
    return 0;
}

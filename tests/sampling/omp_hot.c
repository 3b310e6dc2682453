/* An OpenMP program that knows nothing of kprof, for the call-stack samples of
 * tests/tests/stack_sampling.rs: it must run unchanged under
 * `kprof run --sample-hz`, and its samples land under its parallel regions.
 *
 *   omp_hot [ROUNDS [STEP]]
 *
 * ROUNDS (default 4) parallel regions of 2 threads; in each, every thread runs
 * omp_hot (9 steps) then omp_cold (1 step): 90/10 of the region's CPU time. A
 * step is STEP (default 6000000, about 10 ms) dependent floating-point
 * operations. Prints each thread's result (the same with or without a tool)
 * and exits 3, a status of its own that must come through.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static long STEP = 6000000;

__attribute__((noinline)) double omp_hot(double x) {
    for (long i = 0; i < 9 * STEP; i++)
        x = x * 0.9999999 + 1e-9;
    return x;
}

__attribute__((noinline)) double omp_cold(double x) {
    for (long i = 0; i < STEP; i++)
        x = x * 0.9999998 + 2e-9;
    return x;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        STEP = atol(argv[2]);
    double sums[2] = {0.0, 0.0};
    int team = 0;
    for (int r = 0; r < rounds; r++) {
#pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num();
            double x = omp_cold(omp_hot(1.0 + me));
            sums[me] += x; /* each thread its own element */
#pragma omp single
            team = omp_get_num_threads();
        }
    }
    printf("omp_hot: team %d, results %.6f %.6f\n", team, sums[0], sums[1]);
    return 3;
}

/* Known shares of CPU time between named functions, for the call-stack samples
 * (KPROF_SAMPLE_HZ) of tests/tests/stack_sampling.rs. Linked with libkprof_core.so;
 * each part is an annotation region, so every sample must fall in one of them.
 *
 *   split THREADS UNITS [STEP]
 *
 * Each of THREADS OpenMP threads runs, UNITS times:
 *   region "split": split_seventy (7 steps) then split_thirty (3 steps): 70/30;
 *   region "chain": chain_outer (2 steps of its own, then) -> chain_middle (3 steps,
 *                   then) -> chain_inner (5 steps): self shares 20/30/50, and
 *                   chain_inner's path is chain_outer / chain_middle / chain_inner.
 * A step is STEP (default 6000000, about 10 ms) dependent floating-point
 * operations, the same cost in every function (the constants differ only so that no two bodies are identical
 * and folded into one). Steps are long beside the kernel's tick (the resolution of
 * CPU-time timers), so that a sample's place in a call is not tied to the tick.
 * Prints the sum of the results (so that nothing is
 * optimised away) and exits 0.
 */
#include <kprof.h>
#include <stdio.h>
#include <stdlib.h>

static long STEP = 6000000;

#define STEPS(n, a, b)                                                        \
    do {                                                                      \
        for (long i = 0; i < (long)(n) * STEP; i++)                           \
            x = x * (a) + (b);                                                \
    } while (0)

__attribute__((noinline, noclone)) double split_seventy(double x) {
    STEPS(7, 0.9999999, 1e-9);
    return x;
}

__attribute__((noinline, noclone)) double split_thirty(double x) {
    STEPS(3, 0.9999998, 2e-9);
    return x;
}

__attribute__((noinline, noclone)) double chain_inner(double x) {
    STEPS(5, 0.9999997, 3e-9);
    return x;
}

__attribute__((noinline, noclone)) double chain_middle(double x) {
    STEPS(3, 0.9999996, 4e-9);
    return chain_inner(x) + 1.0;
}

__attribute__((noinline, noclone)) double chain_outer(double x) {
    STEPS(2, 0.9999995, 5e-9);
    return chain_middle(x) + 1.0;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    long units = argc > 2 ? atol(argv[2]) : 10;
    if (argc > 3)
        STEP = atol(argv[3]);
    double total = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        double x = 1.0;
        for (long u = 0; u < units; u++) {
            kprof_region_begin("split");
            x = split_seventy(x);
            x = split_thirty(x);
            kprof_region_end("split");
            kprof_region_begin("chain");
            x = chain_outer(x);
            kprof_region_end("chain");
        }
        total += x;
    }
    printf("result %.6f\n", total);
    return 0;
}

/*
 * loops.c: worksharing loops with known structure, for tests/tests/openmp.rs.
 * Every construct runs REPS times from its own function (noinline, so that the call
 * site is named after it). OMP_NUM_THREADS=2. Prints the results on stdout.
 */
#include <omp.h>
#include <stdio.h>

#define N 1000
#define REPS 3
#define NOINLINE __attribute__((noinline))

/* Counted after every construct, so that no function ends in a tail call into the
 * runtime (the reported return address would then be the caller's). */
static volatile int calls;

static double a[N];

NOINLINE static void loop_static(int r)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        a[i] = i * 0.5 + r;
    calls++;
}

NOINLINE static void loop_dynamic(int r)
{
#pragma omp parallel for schedule(dynamic, 100)
    for (int i = 0; i < N; i++)
        a[i] += r;
    calls++;
}

NOINLINE static void loop_guided(int r)
{
#pragma omp parallel for schedule(guided)
    for (int i = 0; i < N; i++)
        a[i] -= r;
    calls++;
}

NOINLINE static double reduce_sum(void)
{
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int i = 0; i < N; i++)
        sum += a[i];
    calls++;
    return sum;
}

int main(void)
{
    double total = 0;
    for (int r = 0; r < REPS; r++) {
        loop_static(r);
        loop_dynamic(r);
        loop_guided(r);
        total += reduce_sum();
    }
    printf("loops: total = %.1f\n", total);
    return 0;
}

/*
 * nested.c: nested parallel regions, for tests/tests/openmp.rs. Run with
 * OMP_NUM_THREADS=2 OMP_MAX_ACTIVE_LEVELS=2: one outer region of 2 threads, each of
 * which starts an inner region of 2 threads (4 threads in all).
 */
#include <omp.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

static volatile int calls;
static int inner_members;

NOINLINE static void inner(void)
{
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic
        inner_members++;
    }
    calls++;
}

NOINLINE static void outer(void)
{
#pragma omp parallel num_threads(2)
    inner();
    calls++;
}

int main(void)
{
    outer();
    printf("nested: inner members %d\n", inner_members);
    return 0;
}

/*
 * sync.c: synchronisation constructs with known structure, for tests/tests/openmp.rs.
 * OMP_NUM_THREADS=2; every construct in a parallel region of its own function.
 * - critical: each thread enters a critical section ITERS times.
 * - locks: each thread sets/unsets an omp_lock_t ITERS times, and a nest lock
 *   twice (nested) once.
 * - barrier: one explicit barrier.
 * - single / sections (2 sections) / masked + master.
 * - ordered: a loop of ORDERED iterations, schedule(static, 1), ordered blocks.
 */
#include <omp.h>
#include <stdio.h>

#define ITERS 5
#define ORDERED 4
#define NOINLINE __attribute__((noinline))

/* Counted after every construct, so that no function ends in a tail call into the
 * runtime (the reported return address would then be the caller's). */
static volatile int calls;
static volatile int iters = ITERS;
static int counter, locked, nested, singles, sections, masked, ordered_sum;
static omp_lock_t lock;
static omp_nest_lock_t nest_lock;

NOINLINE static void critical(void)
{
#pragma omp parallel
    for (int k = 0; k < iters; k++) {
#pragma omp critical
        counter++;
    }
    calls++;
}

NOINLINE static void locks(void)
{
#pragma omp parallel
    {
        for (int k = 0; k < iters; k++) {
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
        }
        omp_set_nest_lock(&nest_lock);
        omp_set_nest_lock(&nest_lock);
        nested++;
        omp_unset_nest_lock(&nest_lock);
        omp_unset_nest_lock(&nest_lock);
    }
    calls++;
}

NOINLINE static void barrier(void)
{
#pragma omp parallel
    {
        calls++;
#pragma omp barrier
        calls++;
    }
    calls++;
}

NOINLINE static void single(void)
{
#pragma omp parallel
    {
#pragma omp single
        singles++;
    }
    calls++;
}

NOINLINE static void sections2(void)
{
#pragma omp parallel
    {
#pragma omp sections
        {
#pragma omp section
            {
#pragma omp atomic
                sections += 1;
            }
#pragma omp section
            {
#pragma omp atomic
                sections += 2;
            }
        }
    }
    calls++;
}

NOINLINE static void masked_master(void)
{
#pragma omp parallel
    {
#pragma omp masked
        masked += 1;
#pragma omp barrier
#pragma omp master
        masked += 2;
    }
    calls++;
}

NOINLINE static void ordered(void)
{
#pragma omp parallel for ordered schedule(static, 1)
    for (int i = 0; i < ORDERED; i++) {
#pragma omp ordered
        ordered_sum = ordered_sum * 10 + i;
    }
    calls++;
}

int main(void)
{
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest_lock);
    critical();
    locks();
    barrier();
    single();
    sections2();
    masked_master();
    ordered();
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest_lock);
    printf("sync: critical %d, lock %d, nest %d, single %d, sections %d, masked %d, "
           "ordered %d\n",
           counter, locked, nested, singles, sections, masked, ordered_sum);
    return 0;
}

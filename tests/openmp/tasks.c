/*
 * tasks.c: explicit tasks with known structure, for tests/tests/openmp.rs.
 * OMP_NUM_THREADS=2. One thread (single) creates every task:
 * - deps: REPS rounds of a chain produce -> transform -> consume (depend out/in),
 *   then taskwait. produce sleeps 20 ms, so when transform and consume are created
 *   their predecessors have not finished and the runtime reports both edges.
 * - group: a taskgroup of GROUP_TASKS tasks.
 * - taskloop: 100 iterations with grainsize(25): 4 tasks.
 */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define REPS 3
#define GROUP_TASKS 4
#define NOINLINE __attribute__((noinline))

/* Counted after every construct, so that no function ends in a tail call into the
 * runtime (the reported return address would then be the caller's). */
static volatile int calls;

static int x, y, total, group_sum, loop_sum;
/* Read at run time, so that the compiler cannot unroll the task-creating loop
 * (every copy would be a creation site of its own). */
static volatile int group_tasks = GROUP_TASKS;

NOINLINE static void deps(void)
{
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < REPS; r++) {
#pragma omp task depend(out : x)
        {
            usleep(20000);
            x = r + 1;
        }
#pragma omp task depend(in : x) depend(out : y)
        y = x * 2;
#pragma omp task depend(in : y)
        total += y;
#pragma omp taskwait
    }
    calls++;
}

NOINLINE static void group(void)
{
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup
    for (int i = 0; i < group_tasks; i++) {
#pragma omp task
        {
            usleep(2000);
#pragma omp atomic
            group_sum += i;
        }
    }
    calls++;
}

NOINLINE static void loop(void)
{
#pragma omp parallel
#pragma omp single
#pragma omp taskloop grainsize(25)
    for (int i = 0; i < 100; i++) {
#pragma omp atomic
        loop_sum += i;
    }
    calls++;
}

int main(void)
{
    deps();
    group();
    loop();
    printf("tasks: total = %d, group = %d, loop = %d\n", total, group_sum, loop_sum);
    return 0;
}

/*
 * gcc_loop.c: an OpenMP program compiled with GCC (gcc -fopenmp, libgomp's ABI), run
 * on LLVM's libomp (libgomp.so.1 -> libomp.so.5) so that OMPT events are reported,
 * for tests/tests/openmp.rs. OMP_NUM_THREADS=2. REPS parallel regions, each with a
 * loop, a single and a critical section.
 */
#include <omp.h>
#include <stdio.h>

#define N 1000
#define REPS 4

static double a[N];
static int singles, criticals;

int main(void)
{
    double sum = 0;
    for (int r = 0; r < REPS; r++) {
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (int i = 0; i < N; i++)
                a[i] = i + r;
#pragma omp single
            singles++;
#pragma omp critical
            criticals++;
        }
        sum += a[N - 1];
    }
    printf("gcc_loop: sum %.1f, singles %d, criticals %d\n", sum, singles, criticals);
    return 0;
}

/*
 * target.c: OpenMP target offload to the host device (clang-19 -fopenmp
 * -fopenmp-targets=x86_64-pc-linux-gnu, libomp/libomptarget 19), for
 * tests/tests/openmp.rs. REPS target regions, each mapping N doubles to the device
 * and back (map(tofrom)) and one input array to it (map(to)).
 */
#include <omp.h>
#include <stdio.h>

#define N 1024
#define REPS 2
#define NOINLINE __attribute__((noinline))

static volatile int calls;
static double a[N], b[N];

NOINLINE static void offload(int r)
{
#pragma omp target map(tofrom : a[0:N]) map(to : b[0:N])
    for (int i = 0; i < N; i++)
        a[i] += b[i] * r;
    calls++;
}

int main(void)
{
    for (int i = 0; i < N; i++)
        b[i] = i;
    for (int r = 1; r <= REPS; r++)
        offload(r);
    printf("target: a[N-1] = %.1f, devices %d\n", a[N - 1], omp_get_num_devices());
    return 0;
}

/*
 * constructs.c - OpenACC constructs with exactly known counts, for
 * tests/tests/openacc.rs. Built with `gcc -fopenacc` (host fallback on this machine).
 * Usage: constructs <rounds>. Per round: parallel loop, kernels, serial, a data
 * region holding a parallel loop and an update, enter data + exit data, and an
 * async parallel loop followed by a wait. Prints a checksum on stdout.
 */
#include <stdio.h>
#include <stdlib.h>

#define N 1000

static float a[N], b[N];

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < N; i++)
        b[i] = (float)i;
    for (int r = 0; r < rounds; r++) {
#pragma acc parallel loop copyin(b) copyout(a)
        for (int i = 0; i < N; i++)
            a[i] = 2.0f * b[i];
#pragma acc kernels
        for (int i = 0; i < N; i++)
            a[i] += 1.0f;
#pragma acc serial
        a[0] += 5.0f;
#pragma acc data copy(a)
        {
#pragma acc parallel loop present(a)
            for (int i = 0; i < N; i++)
                a[i] += 1.0f;
#pragma acc update host(a)
        }
#pragma acc enter data copyin(b)
#pragma acc exit data delete(b)
#pragma acc parallel loop async(3)
        for (int i = 0; i < N; i++)
            a[i] += 1.0f;
#pragma acc wait
    }
    printf("checksum %.1f\n", a[10] + a[0]);
    return 0;
}

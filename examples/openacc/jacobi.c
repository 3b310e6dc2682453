/*
 * jacobi.c - a small OpenACC program to profile with kprof (see docs/openacc.md):
 * a 2-D Jacobi iteration with a data region, a compute construct per sweep, a
 * reduction, and an update of the result to the host.
 *
 *   gcc -O2 -g -fopenacc jacobi.c -o jacobi
 *   ACC_PROFLIB=../../target/release/libkprof_acc.so ./jacobi
 */
#include <math.h>
#include <stdio.h>

#define N 256
#define SWEEPS 50

static double a[N][N], b[N][N];

int main(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i][j] = (i == 0) ? 1.0 : 0.0;
    double err = 0.0;
#pragma acc data copy(a) create(b)
    {
        for (int s = 0; s < SWEEPS; s++) {
            err = 0.0;
#pragma acc parallel loop collapse(2) reduction(max : err)
            for (int i = 1; i < N - 1; i++)
                for (int j = 1; j < N - 1; j++) {
                    b[i][j] = 0.25 * (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1]);
                    err = fmax(err, fabs(b[i][j] - a[i][j]));
                }
#pragma acc parallel loop collapse(2)
            for (int i = 1; i < N - 1; i++)
                for (int j = 1; j < N - 1; j++)
                    a[i][j] = b[i][j];
        }
#pragma acc update host(a)
    }
    printf("error %.6f center %.6f\n", err, a[N / 2][N / 2]);
    return 0;
}

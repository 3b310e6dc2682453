/* A 1-D heat equation with OpenMP: one parallel loop per time step and a reduction
 * for the residual. Profile it (kprof detects libomp and loads its OMPT plugin):
 *
 *   clang -fopenmp -g -O2 heat.c -o heat
 *   kprof run -- ./heat 200
 *   kprof report kprof-heat-*
 *
 * Parallel regions are named after their source line (build with -g). GCC's
 * libgomp has no tool interface: build with clang (libomp) to see OpenMP events.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    const int n = 1 << 16;
    double *u = calloc(n, sizeof *u), *v = calloc(n, sizeof *v);
    if (!u || !v)
        return 1;
    u[n / 2] = 1000.0;
    double residual = 0.0;
    for (int s = 0; s < steps; s++) {
        residual = 0.0;
#pragma omp parallel for reduction(+ : residual)
        for (int i = 1; i < n - 1; i++) {
            v[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
            residual += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *t = u;
        u = v;
        v = t;
    }
    printf("steps %d residual %.6e\n", steps, residual);
    free(u);
    free(v);
    return 0;
}

/* An OpenMP reduction repeated N times (argument). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    double total = 0.0;
    for (int r = 0; r < n; r++) {
        double s = 0.0;
#pragma omp parallel for reduction(+ : s)
        for (int i = 1; i <= 100000; i++)
            s += 1.0 / i;
        total += s;
    }
    printf("omp_sum %d %.3f\n", n, total);
    return 0;
}

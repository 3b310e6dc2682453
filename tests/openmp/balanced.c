/* Balanced work: in each of ROUNDS parallel regions of 2 threads, both threads
 * spin until the same deadline, so each thread works for the whole region and
 * the implicit tasks' time summed over the team is about twice the region's.
 * Used by tests/tests/views_trust.rs (what each view shows of a team). */
#include <omp.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 3
#define WORK_S 0.1

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    double spins[2] = {0.0, 0.0};
    for (int r = 0; r < ROUNDS; r++) {
        double end = now() + WORK_S;
#pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num();
            double s = 0.0;
            while (now() < end) {
                s += 1.0;
            }
            spins[me] += s; /* each thread its own element */
        }
    }
    printf("spun %s\n", spins[0] > 0.0 && spins[1] > 0.0 ? "both" : "one");
    return 0;
}

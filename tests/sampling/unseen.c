/* Threads that never reach kprof, for the call-stack samples of
 * tests/tests/stack_sampling.rs: kprof must find them (it lists the process's
 * threads) and sample them, their samples under the profile's root. Linked
 * with libkprof_core.so; only the main thread calls it.
 *
 *   unseen pthread [UNITS [STEP]]
 *     Inside annotation region "main_work", the main thread starts a helper
 *     pthread and runs main_spin for UNITS steps; the helper, which never calls
 *     kprof, waits 400 ms (no CPU: kprof looks for new threads every 100 ms),
 *     then runs helper_spin for 2 x UNITS steps.
 *   unseen omp [UNITS [STEP]]
 *     Inside region "team", a first OpenMP parallel region of 2 threads starts
 *     the team (GCC's libgomp keeps its worker for the next regions and tells
 *     kprof nothing), the main thread waits 400 ms, then UNITS parallel regions
 *     of 2 threads each run team_hot (9 steps) then team_cold (1 step): 90/10.
 *
 * A step is STEP (default 6000000, about 10 ms) dependent floating-point
 * operations. Each thread measures the CPU time of its steps (its own
 * CLOCK_THREAD_CPUTIME_ID) and the program prints it, "cpu_ms NAME MS" (main,
 * helper; team_0, team_1: thread 0 is the main thread), the reference the
 * samples are checked against, then the results, and exits 0.
 */
#include <kprof.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long STEP = 6000000;
static long UNITS = 40;

#define STEPS(n, a, b)                                                        \
    do {                                                                      \
        for (long i = 0; i < (long)(n) * STEP; i++)                           \
            x = x * (a) + (b);                                                \
    } while (0)

__attribute__((noinline, noclone)) double main_spin(double x) {
    STEPS(UNITS, 0.9999999, 1e-9);
    return x;
}

__attribute__((noinline, noclone)) double helper_spin(double x) {
    STEPS(2 * UNITS, 0.9999998, 2e-9);
    return x;
}

__attribute__((noinline, noclone)) double team_hot(double x) {
    STEPS(9, 0.9999997, 3e-9);
    return x;
}

__attribute__((noinline, noclone)) double team_cold(double x) {
    STEPS(1, 0.9999996, 4e-9);
    return x;
}

/* The calling thread's CPU time, in ms. */
static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

struct helper {
    double result, cpu;
};

static void *helper(void *arg) {
    struct helper *h = arg;
    pause_ms(400);
    double t0 = cpu_ms();
    h->result = helper_spin(2.0);
    h->cpu = cpu_ms() - t0;
    return NULL;
}

static int with_pthread(void) {
    kprof_region_begin("main_work");
    struct helper h = {0.0, 0.0};
    pthread_t t;
    if (pthread_create(&t, NULL, helper, &h) != 0)
        return 1;
    double t0 = cpu_ms();
    double x = main_spin(1.0);
    double cpu = cpu_ms() - t0;
    pthread_join(t, NULL);
    kprof_region_end("main_work");
    printf("cpu_ms main %.1f\ncpu_ms helper %.1f\n", cpu, h.cpu);
    printf("results %.6f %.6f\n", x, h.result);
    return 0;
}

static int with_omp(void) {
    double sums[2] = {0.0, 0.0}, cpu[2] = {0.0, 0.0};
    int team = 0;
    kprof_region_begin("team");
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    pause_ms(400);
    for (long r = 0; r < UNITS / 10; r++) {
#pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num();
            double t0 = cpu_ms();
            sums[me] += team_cold(team_hot(1.0 + me));
            cpu[me] += cpu_ms() - t0; /* each thread its own element */
        }
    }
    kprof_region_end("team");
    printf("cpu_ms team_0 %.1f\ncpu_ms team_1 %.1f\n", cpu[0], cpu[1]);
    printf("team %d, results %.6f %.6f\n", team, sums[0], sums[1]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2)
        UNITS = atol(argv[2]);
    if (argc > 3)
        STEP = atol(argv[3]);
    if (argc > 1 && strcmp(argv[1], "pthread") == 0)
        return with_pthread();
    if (argc > 1 && strcmp(argv[1], "omp") == 0)
        return with_omp();
    fprintf(stderr, "usage: unseen pthread|omp [UNITS [STEP]]\n");
    return 2;
}

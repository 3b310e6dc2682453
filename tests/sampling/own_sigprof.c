/* A program with its own SIGPROF profiler (setitimer(ITIMER_PROF) every ms and a
 * handler that counts), for tests/tests/stack_sampling.rs: under kprof's call-stack
 * samples its handler must keep counting and its results stay the same. Computes
 * about UNITS x 10 ms of CPU time inside region "work", then prints the sum, the
 * CPU time it used ("cpu_ms") and the ticks its handler counted ("ticks").
 */
#include <kprof.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks;

static void on_prof(int sig) {
    (void)sig;
    ticks++;
}

__attribute__((noinline, noclone)) double compute(double x, long n) {
    for (long i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-9;
    return x;
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 30;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &it, NULL);
    double x = 1.0;
    kprof_region_begin("work");
    for (long u = 0; u < units; u++)
        x = compute(x, 6000000);
    kprof_region_end("work");
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    printf("result %.9f\n", x);
    printf("cpu_ms %ld\n", (long)(t.tv_sec * 1000 + t.tv_nsec / 1000000));
    printf("ticks %ld\n", (long)ticks);
    return 3;
}

/* The cost of the call-stack samples, for tests/benches/stack_sampling.rs.
 *
 *   cost UNITS
 *
 * First times a bare signal delivery on this thread: 20000 x tgkill(self, SIGUSR2)
 * to an empty handler (the system call, the delivery and the return from the
 * handler), printed as "bare_signal_ns X". Then computes UNITS x ~10 ms inside
 * region "compute", a call chain three functions deep, and prints the CPU time
 * that took on this thread ("compute_cpu_ns X": a sampling handler's time is
 * this thread's too) and the result.
 */
#define _GNU_SOURCE
#include <kprof.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void empty(int sig) { (void)sig; }

static long long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline, noclone)) double leaf(double x, long n) {
    for (long i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-9;
    return x;
}

__attribute__((noinline, noclone)) double middle(double x, long n) { return leaf(x, n) + 1.0; }

__attribute__((noinline, noclone)) double outer(double x, long n) { return middle(x, n) - 1.0; }

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 100;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = empty;
    sigaction(SIGUSR2, &sa, NULL);
    pid_t pid = getpid();
    pid_t tid = (pid_t)syscall(SYS_gettid);
    const int n = 20000;
    long long t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++)
        syscall(SYS_tgkill, pid, tid, SIGUSR2);
    long long t1 = now_ns(CLOCK_MONOTONIC);
    printf("bare_signal_ns %.1f\n", (double)(t1 - t0) / n);

    kprof_region_begin("compute");
    long long c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    double x = 1.0;
    for (long u = 0; u < units; u++)
        x = outer(x, 6000000);
    long long c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    kprof_region_end("compute");
    printf("compute_cpu_ns %lld\n", c1 - c0);
    printf("result %.9f\n", x);
    return 0;
}

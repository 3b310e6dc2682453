/* Phases of memory and CPU use for tests/tests/system_sampling.rs (the system
 * sampler, KPROF_SAMPLE_MS). Linked with libkprof_core.so: each phase is an
 * annotation region, so a trace shows where it begins and ends. Modes:
 *
 *   phases   "before": sleeps ~100 ms; "allocate": allocates 200 MiB and touches every page; "hold": keeps
 *            it ~300 ms (sleeping); frees it (one mapping: returned to the kernel
 *            at once); "freed": sleeps ~300 ms; "spin": spins ~300 ms on the CPU;
 *            "sleep": sleeps ~300 ms. Prints "checksum <n>" (so that the memory
 *            is really written and read), then "spin_cores <x>" and
 *            "sleep_cores <y>": the process's CPU time over the elapsed time of
 *            each phase, as measured here (on a loaded machine a spinning thread
 *            gets less than a core).
 *   idle MS  region "idle": sleeps MS ms.
 */
#include <kprof.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1024u * 1024u)
#define PAGE 4096u

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void sleep_ms(double ms) {
    /* Sleeps the whole time even when a signal interrupts it. */
    double end = now_ms() + ms;
    for (double left = ms; left > 0; left = end - now_ms()) {
        struct timespec t = {(time_t)(left / 1e3), (long)((left - (double)(time_t)(left / 1e3) * 1e3) * 1e6)};
        nanosleep(&t, NULL);
    }
}

static void spin_ms(double ms) {
    double end = now_ms() + ms;
    volatile uint64_t x = 0;
    while (now_ms() < end) {
        for (int i = 0; i < 1000; i++) {
            x += (uint64_t)i;
        }
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "phases";
    if (strcmp(mode, "idle") == 0) {
        kprof_region_begin("idle");
        sleep_ms(argc > 2 ? atof(argv[2]) : 200);
        kprof_region_end("idle");
        return 0;
    }
    if (strcmp(mode, "phases") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    size_t bytes = 200 * (size_t)MIB;
    kprof_region_begin("before");
    sleep_ms(100);
    kprof_region_end("before");
    kprof_region_begin("allocate");
    unsigned char *p = malloc(bytes);
    if (!p) {
        return 3;
    }
    memset(p, 1, bytes);
    kprof_region_end("allocate");

    kprof_region_begin("hold");
    sleep_ms(300);
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i += PAGE) {
        sum += p[i];
    }
    kprof_region_end("hold");
    free(p);

    kprof_region_begin("freed");
    sleep_ms(300);
    kprof_region_end("freed");

    kprof_region_begin("spin");
    double t0 = now_ms(), c0 = cpu_ms();
    spin_ms(300);
    double spin = (cpu_ms() - c0) / (now_ms() - t0);
    kprof_region_end("spin");

    kprof_region_begin("sleep");
    t0 = now_ms();
    c0 = cpu_ms();
    sleep_ms(300);
    double sleep = (cpu_ms() - c0) / (now_ms() - t0);
    kprof_region_end("sleep");
    printf("checksum %llu\nspin_cores %.4f\nsleep_cores %.4f\n", (unsigned long long)sum, spin,
           sleep);
    return 0;
}

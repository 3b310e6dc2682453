/*
 * rocm_driver.c - a program that does what a HIP program and the HIP runtime
 * make rocprofiler-sdk report, for the ROCm plugin's tests on machines without
 * an AMD GPU (tests/tests/rocm.rs): linked with the stand-in
 * librocprofiler-sdk.so (tests/harness/rocprofiler_standin.c), which loads the
 * tool of ROCP_TOOL_LIBRARIES at standin_init (the "hipInit"), and with the core
 * for its annotation regions (kprof.h).
 *
 * Usage: rocm_driver basic [exit code]
 *
 *   Times are chosen from the clock at each launch (work starts 5 us after the
 *   time taken before the call, after the queue's previous work). GPU 0 is
 *   agent 1 of the stand-in.
 *     code objects register kernel 1 "_Z5saxpyifPKfPf.kd" and kernel 2
 *       "_Z3fooIiEvPT_.kd"
 *     region "step" {
 *       hipLaunchKernel (corr 1) -> kernel 1 on queue 0xa000, 250 us,
 *         grid 1048576x1x1, workgroup 256x1x1
 *       hipMemcpy (corr 2) -> copy host to GPU 0, 1 MiB, 80 us
 *     }
 *     (the batch being filled is sealed: what follows goes into another)
 *     region "solve" {
 *       2 x hipLaunchKernel (corr 3, 4) -> kernel 2 on queue 0xb000, 120 and
 *         130 us, grid 128x2x1, workgroup 64x1x1, 4096 LDS bytes, 16 scratch
 *       hipMemcpyAsync (corr 5) -> copy GPU 0 to host, 64 KiB, 40 us
 *       hipDeviceSynchronize (corr 6)
 *     }
 *     hipMalloc (corr 7) -> 8 MiB on GPU 0 at 0x7f4a00000000, never freed
 *     hipMalloc (corr 8) -> 2 MiB at 0x7f4a00800000; hipFree (corr 9) frees it
 *     a dispatch of kernel 1 on queue 0xa000 with correlation id 999, never
 *       seen at a call (9 us)
 *     a record of a tracing kind nobody configured (kind 99)
 *     3 records dropped by the buffer
 *     then every batch is delivered, newest first (out of order).
 *   Prints "basic: done" and exits with the exit code (default 0).
 *
 * Usage: rocm_driver threads [T] [K]
 *
 *   T threads (default 4), each in its own region "worker": K (default 50) x
 *   hipLaunchKernel (corr 100000 + t * K + i) -> kernel 1 on queue 0xc000 + t,
 *   2 us each; after joining them, every batch is delivered. Prints
 *   "threads: T x K launches".
 *
 * Usage: rocm_driver bench [N] [R]
 *
 *   R rounds (default 5) of N (default 200000) hipLaunchKernel enter/exit
 *   pairs inside a region, no device record: the cost of the HIP call path.
 *   Prints the best round: "bench: N calls, X.X ns/call".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kprof.h"
#include "rocprofiler_standin.h"

static uint64_t mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void call(int op, uint64_t corr) {
    standin_hip(op, ROCPROFILER_CALLBACK_PHASE_ENTER, corr);
    standin_hip(op, ROCPROFILER_CALLBACK_PHASE_EXIT, corr);
}

/* When each queue (0: copies) is busy until. */
static uint64_t busy_until[3];

static uint64_t place(int q, uint64_t launched, uint64_t dur, uint64_t *end) {
    uint64_t start = launched + 5000;
    if (start < busy_until[q] + 1000)
        start = busy_until[q] + 1000;
    *end = start + dur;
    busy_until[q] = *end;
    return start;
}

static void dispatch(uint64_t corr, int q, uint64_t kernel, uint64_t launched, uint64_t dur,
                     const uint32_t grid[3], const uint32_t wg[3], uint32_t lds,
                     uint32_t scratch) {
    uint64_t end, start = place(q, launched, dur, &end);
    standin_dispatch(corr, STANDIN_GPU0, q == 1 ? 0xa000 : 0xb000, kernel, grid, wg, lds, scratch,
                     start, end);
}

static int basic(void) {
    static const uint32_t saxpy_grid[3] = {1048576, 1, 1}, saxpy_wg[3] = {256, 1, 1};
    static const uint32_t foo_grid[3] = {128, 2, 1}, foo_wg[3] = {64, 1, 1};
    uint64_t t, start, end;

    standin_init();
    standin_kernel_symbol(1, "_Z5saxpyifPKfPf.kd");
    standin_kernel_symbol(2, "_Z3fooIiEvPT_.kd");

    kprof_region_begin("step");
    t = mono();
    call(STANDIN_hipLaunchKernel, 1);
    dispatch(1, 1, 1, t, 250000, saxpy_grid, saxpy_wg, 0, 0);
    t = mono();
    call(STANDIN_hipMemcpy, 2);
    start = place(0, t, 80000, &end);
    standin_copy(2, ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE, STANDIN_CPU, STANDIN_GPU0, 1 << 20,
                 start, end);
    kprof_region_end("step");

    standin_seal();

    kprof_region_begin("solve");
    t = mono();
    call(STANDIN_hipLaunchKernel, 3);
    dispatch(3, 2, 2, t, 120000, foo_grid, foo_wg, 4096, 16);
    t = mono();
    call(STANDIN_hipLaunchKernel, 4);
    dispatch(4, 2, 2, t, 130000, foo_grid, foo_wg, 4096, 16);
    t = mono();
    call(STANDIN_hipMemcpyAsync, 5);
    start = place(0, t, 40000, &end);
    standin_copy(5, ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST, STANDIN_GPU0, STANDIN_CPU, 64 << 10,
                 start, end);
    call(STANDIN_hipDeviceSynchronize, 6);
    kprof_region_end("solve");

    t = mono();
    call(STANDIN_hipMalloc, 7);
    standin_memory(7, ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE, STANDIN_GPU0, 0x7f4a00000000ull,
                   8 << 20, t + 2000);
    t = mono();
    call(STANDIN_hipMalloc, 8);
    standin_memory(8, ROCPROFILER_MEMORY_ALLOCATION_ALLOCATE, STANDIN_GPU0, 0x7f4a00800000ull,
                   2 << 20, t + 2000);
    t = mono();
    call(STANDIN_hipFree, 9);
    standin_memory(9, ROCPROFILER_MEMORY_ALLOCATION_FREE, STANDIN_GPU0, 0x7f4a00800000ull, 0,
                   t + 2000);

    dispatch(999, 1, 1, mono(), 9000, saxpy_grid, saxpy_wg, 0, 0);
    standin_unknown(99);
    standin_drop(3);
    standin_complete(1);
    printf("basic: done\n");
    return 0;
}

static long per_thread;

static void *worker(void *arg) {
    static const uint32_t grid[3] = {4096, 1, 1}, wg[3] = {64, 1, 1};
    long t = (long)arg;
    uint64_t busy = 0;
    kprof_region_begin("worker");
    for (long i = 0; i < per_thread; i++) {
        uint64_t corr = (uint64_t)(100000 + t * per_thread + i);
        uint64_t now = mono();
        call(STANDIN_hipLaunchKernel, corr);
        uint64_t start = now + 5000 > busy + 1000 ? now + 5000 : busy + 1000;
        busy = start + 2000;
        standin_dispatch(corr, STANDIN_GPU0, 0xc000 + (uint64_t)t, 1, grid, wg, 0, 0, start, busy);
    }
    kprof_region_end("worker");
    return NULL;
}

static int threads(long n, long k) {
    pthread_t tid[32];
    if (n < 1 || n > 32)
        n = 4;
    per_thread = k;
    standin_init();
    standin_kernel_symbol(1, "_Z5saxpyifPKfPf.kd");
    for (long t = 0; t < n; t++)
        pthread_create(&tid[t], NULL, worker, (void *)t);
    for (long t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
    standin_complete(0);
    printf("threads: %ld x %ld launches\n", n, k);
    return 0;
}

static int bench(long n, long rounds) {
    standin_init();
    double best = 1e30;
    for (long r = 0; r < rounds; r++) {
        kprof_region_begin("bench");
        uint64_t t0 = mono();
        for (long i = 0; i < n; i++)
            call(STANDIN_hipLaunchKernel, (uint64_t)(r * n + i + 1));
        uint64_t t1 = mono();
        kprof_region_end("bench");
        double per = (double)(t1 - t0) / (double)n;
        if (per < best)
            best = per;
    }
    printf("bench: %ld calls, %.1f ns/call\n", n, best);
    return 0;
}

int main(int argc, char **argv) {
    const char *scenario = argc > 1 ? argv[1] : "basic";
    if (strcmp(scenario, "basic") == 0) {
        basic();
        return argc > 2 ? atoi(argv[2]) : 0;
    }
    if (strcmp(scenario, "threads") == 0)
        return threads(argc > 2 ? atol(argv[2]) : 4, argc > 3 ? atol(argv[3]) : 50);
    if (strcmp(scenario, "bench") == 0)
        return bench(argc > 2 ? atol(argv[2]) : 200000, argc > 3 ? atol(argv[3]) : 5);
    fprintf(stderr, "usage: rocm_driver basic [exit code] | threads [threads] [launches] | "
                    "bench [calls] [rounds]\n");
    return 2;
}

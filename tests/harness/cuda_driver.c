/*
 * cuda_driver.c - a program that does towards a CUDA tool what the CUDA driver
 * does, for the CUDA plugin's tests on machines without a GPU
 * (tests/tests/cuda.rs): at its "cuInit" it loads the library named by
 * CUDA_INJECTION64_PATH (dlopen RTLD_NOW), calls its InitializeInjection once,
 * then replays a scenario of CUDA API calls and device activities through the
 * stand-in libcupti.so (tests/harness/cupti_standin.c) that the tool loaded
 * (found with dlopen(KPROF_CUPTI_LIB, RTLD_NOLOAD)), inside kprof annotation
 * regions (linked with -lkprof_core). Compiled against CUPTI's headers for the
 * callback ids and enums.
 *
 * With no stand-in loaded (no tool, or a tool that loaded the real libcupti.so),
 * the replay does nothing and the program's output is the same.
 *
 * Usage: cuda_driver <scenario> [arguments]
 *
 *   basic  on device 0 (times chosen from the clock at each launch; every
 *          device activity is written right after its API call returns). A
 *          runtime call's driver call has the runtime call's correlation id, and
 *          records carry it, as CUPTI 13.0 does on an H100; some calls use a
 *          driver id of their own, with the record carrying either id, so that a
 *          tool must map both:
 *            region "step" {
 *              cudaLaunchKernel (corr 1) { cuLaunchKernel (corr 1) }
 *                -> kernel "saxpy" (record corr 1), stream 7, 250 us,
 *                   grid 4096x1x1, block 256x1x1, 32 registers, 0 static,
 *                   1024 dynamic shared bytes
 *              cudaMemcpy (corr 2) { cuMemcpyHtoD_v2 (corr 2) }
 *                -> memcpy HtoD pageable -> device, 1 MiB (record corr 2),
 *                   stream 7, 80 us
 *              cudaMemcpyPeerAsync (corr 12) { cuMemcpyPeerAsync (corr 112) }
 *                -> peer copy device 0 -> 1, 64 KiB (record corr 112),
 *                   stream 7, 40 us
 *            }
 *            (the buffer being filled is sealed: what follows goes into another)
 *            region "solve" {
 *              2 x cudaLaunchKernel (corr 3, 4) { cuLaunchKernel (corr 103, 104) }
 *                -> kernel "_Z3fooIiEvPT_" (records corr 103 and 4), stream 13,
 *                   120 and 130 us, grid 64x2x1, block 128x1x1, 40 registers,
 *                   4096 static shared bytes
 *              cuLaunchKernel (corr 110, no runtime call around it)
 *                -> kernel "_Z3barv" (record corr 110), stream 13, 7 us
 *              cudaMemsetAsync (corr 5) { cuMemsetD8Async (corr 5) }
 *                -> memset 4096 bytes of device memory (record corr 5),
 *                   stream 13, 3 us
 *              cudaStreamSynchronize (corr 11) { cuStreamSynchronize (corr 11) }
 *                -> stream synchronization (record corr 11), stream 13, from
 *                   the call to the end of the stream's work
 *            }
 *            cudaMalloc (corr 6) { cuMemAlloc_v2 (corr 6) }
 *              -> MEMORY2 allocation, device memory, 8 MiB at 0x7f4a00000000
 *                 (record corr 6), never freed: a leak
 *            cudaMalloc (corr 7) { cuMemAlloc_v2 (corr 7) }
 *              -> MEMORY2 allocation, 2 MiB at 0x7f4a00800000
 *            cudaMallocHost (corr 9) { cuMemAllocHost_v2 (corr 9) }
 *              -> MEMORY2 allocation, pinned host memory, 4 MiB at 0x7f5b00000000,
 *                 never freed: the host's leak, not the device's
 *            cudaFree (corr 8) { cuMemFree_v2 (corr 8) }
 *              -> MEMORY2 release of those 2 MiB
 *            an OVERHEAD record (CUPTI buffer flush, 3 us)
 *            a kernel "_Z6orphanv" with correlation id 999, never seen at a
 *              launch (stream 7, 9 us)
 *            a record of a kind CUPTI's header does not know (COUNT + 1000)
 *            3 records dropped inside CUPTI
 *            then every buffer is completed, newest first (out of order).
 *          Prints "basic: done" and exits with the exit code (default 0).
 *   pool N N (default 40000) launches, each cudaLaunchKernel (corr 1000 + i)
 *          -> kernel "tick" (record corr 1000 + i), stream 7, 1 us, in region
 *          "loop", with no buffer completed before the run ends (a tool with a
 *          small buffer pool must decline buffers and have CUPTI drop records).
 *          Prints "pool: N launches".
 *   threads T K  T threads (default 4), each in its own region "worker": K
 *          (default 50) x cudaLaunchKernel (corr 100000 + t * K + i) {
 *          cuLaunchKernel (corr 200000 + t * K + i) } -> kernel "_Z4workPi"
 *          (record corr: the driver's for even i, the runtime's for odd i) on
 *          stream 20 + t, 2 us each; after joining them, every buffer is
 *          completed. Prints "threads: T x K launches".
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_standin.h"
#include "kprof.h"

static struct {
    standin_api_fn api;
    standin_kernel_fn kernel;
    standin_memcpy_fn memcpy_;
    standin_memcpy_peer_fn memcpy_peer;
    standin_memset_fn memset_;
    standin_memory2_fn memory2;
    standin_sync_fn sync;
    standin_overhead_fn overhead;
    standin_unknown_fn unknown;
    standin_drop_fn drop;
    standin_seal_fn seal;
    standin_complete_fn complete;
} S;

static uint64_t mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the CUDA driver does at cuInit when CUDA_INJECTION64_PATH is set. */
static void cu_init(void) {
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW);
        if (!h) {
            fprintf(stderr, "cuda_driver: cannot load %s: %s\n", path, dlerror());
            exit(90);
        }
        int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
        if (!init) {
            fprintf(stderr, "cuda_driver: no InitializeInjection in %s\n", path);
            exit(91);
        }
        init();
    }
    /* The stand-in the tool loaded, if it loaded one. */
    const char *cupti = getenv("KPROF_CUPTI_LIB");
    void *h = cupti && *cupti ? dlopen(cupti, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (!h || !dlsym(h, "standin_api"))
        return;
#define SYM(field, name) *(void **)&S.field = dlsym(h, name)
    SYM(api, "standin_api");
    SYM(kernel, "standin_kernel");
    SYM(memcpy_, "standin_memcpy");
    SYM(memcpy_peer, "standin_memcpy_peer");
    SYM(memset_, "standin_memset");
    SYM(memory2, "standin_memory2");
    SYM(sync, "standin_sync");
    SYM(overhead, "standin_overhead");
    SYM(unknown, "standin_unknown");
    SYM(drop, "standin_drop");
    SYM(seal, "standin_seal");
    SYM(complete, "standin_complete");
#undef SYM
}

static int have_standin(void) { return S.api != NULL; }

enum { RT = CUPTI_CB_DOMAIN_RUNTIME_API, DRV = CUPTI_CB_DOMAIN_DRIVER_API };

static void enter(int domain, uint32_t cbid, const char *fn, const char *symbol,
                  uint32_t corr) {
    if (have_standin())
        S.api(domain, cbid, fn, symbol, corr, CUPTI_API_ENTER);
}

static void leave(int domain, uint32_t cbid, const char *fn, const char *symbol,
                  uint32_t corr) {
    if (have_standin())
        S.api(domain, cbid, fn, symbol, corr, CUPTI_API_EXIT);
}

/* A runtime call with the driver call it makes inside it. */
static void runtime_call(uint32_t rt_cbid, const char *rt_fn, uint32_t rt_corr,
                         uint32_t drv_cbid, const char *drv_fn, uint32_t drv_corr,
                         const char *symbol) {
    enter(RT, rt_cbid, rt_fn, symbol, rt_corr);
    enter(DRV, drv_cbid, drv_fn, symbol, drv_corr);
    leave(DRV, drv_cbid, drv_fn, symbol, drv_corr);
    leave(RT, rt_cbid, rt_fn, symbol, rt_corr);
}

/* When each stream is busy until (CLOCK_MONOTONIC ns): work on one stream
 * never overlaps. */
static uint64_t busy_until[64];

/* The [start, end) of `dur` ns of work on `stream` launched at `launched`. */
static uint64_t place(uint32_t stream, uint64_t launched, uint64_t dur, uint64_t *end) {
    uint64_t start = launched + 5000;
    if (start < busy_until[stream] + 1000)
        start = busy_until[stream] + 1000;
    *end = start + dur;
    busy_until[stream] = *end;
    return start;
}

static void kernel(const char *name, uint32_t stream, uint32_t corr, uint64_t launched,
                   uint64_t dur, int32_t gx, int32_t gy, int32_t gz, int32_t bx,
                   uint16_t regs, int32_t static_shared, int32_t dynamic_shared) {
    if (!have_standin())
        return;
    struct standin_kernel_desc k;
    memset(&k, 0, sizeof k);
    k.name = name;
    k.device = 0;
    k.stream = stream;
    k.correlation = corr;
    k.start = place(stream, launched, dur, &k.end);
    k.grid[0] = gx;
    k.grid[1] = gy;
    k.grid[2] = gz;
    k.block[0] = bx;
    k.block[1] = 1;
    k.block[2] = 1;
    k.registers = regs;
    k.static_shared = static_shared;
    k.dynamic_shared = dynamic_shared;
    S.kernel(&k);
}

#define LAUNCH_RT CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define LAUNCH_DRV CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

static int basic(void) {
    uint64_t t, end, start;

    kprof_region_begin("step");
    t = mono();
    runtime_call(LAUNCH_RT, "cudaLaunchKernel", 1, LAUNCH_DRV, "cuLaunchKernel", 1, "saxpy");
    kernel("saxpy", 7, 1, t, 250000, 4096, 1, 1, 256, 32, 0, 1024);

    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", 2,
                 CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", 2, NULL);
    if (have_standin()) {
        start = place(7, t, 80000, &end);
        S.memcpy_(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 0, 7, 2, 0, start, end);
    }

    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, "cudaMemcpyPeerAsync", 12,
                 CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 112, NULL);
    if (have_standin()) {
        start = place(7, t, 40000, &end);
        S.memcpy_peer(64 << 10, 0, 1, 0, 7, 112, start, end);
    }
    kprof_region_end("step");

    if (have_standin())
        S.seal();

    kprof_region_begin("solve");
    t = mono();
    runtime_call(LAUNCH_RT, "cudaLaunchKernel", 3, LAUNCH_DRV, "cuLaunchKernel", 103,
                 "_Z3fooIiEvPT_");
    kernel("_Z3fooIiEvPT_", 13, 103, t, 120000, 64, 2, 1, 128, 40, 4096, 0);
    t = mono();
    runtime_call(LAUNCH_RT, "cudaLaunchKernel", 4, LAUNCH_DRV, "cuLaunchKernel", 104,
                 "_Z3fooIiEvPT_");
    kernel("_Z3fooIiEvPT_", 13, 4, t, 130000, 64, 2, 1, 128, 40, 4096, 0);

    t = mono();
    enter(DRV, LAUNCH_DRV, "cuLaunchKernel", "_Z3barv", 110);
    leave(DRV, LAUNCH_DRV, "cuLaunchKernel", "_Z3barv", 110);
    kernel("_Z3barv", 13, 110, t, 7000, 1, 1, 1, 32, 16, 0, 0);

    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", 5,
                 CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async", 5, NULL);
    if (have_standin()) {
        start = place(13, t, 3000, &end);
        S.memset_(0, 4096, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 13, 5, start, end);
    }

    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize",
                 11, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize", 11,
                 NULL);
    if (have_standin()) {
        /* The host waits for the stream's work to end: the synchronization
         * spans [call, end of the stream's work]. */
        start = t + 1000;
        end = busy_until[13] > start + 15000 ? busy_until[13] : start + 15000;
        S.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1, 13, 11, start, end);
    }
    kprof_region_end("solve");

    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", 6,
                 CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", 6, NULL);
    if (have_standin())
        S.memory2(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x7f4a00000000ull, 8 << 20, 0,
                  CUPTI_INVALID_STREAM_ID, 6, t + 2000);
    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", 7,
                 CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", 7, NULL);
    if (have_standin())
        S.memory2(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x7f4a00800000ull, 2 << 20, 0,
                  CUPTI_INVALID_STREAM_ID, 7, t + 2000);
    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, "cudaMallocHost", 9,
                 CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", 9, NULL);
    if (have_standin())
        S.memory2(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                  CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0x7f5b00000000ull, 4 << 20, 0,
                  CUPTI_INVALID_STREAM_ID, 9, t + 2000);
    t = mono();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", 8,
                 CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", 8, NULL);
    if (have_standin()) {
        S.memory2(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x7f4a00800000ull, 2 << 20, 0,
                  CUPTI_INVALID_STREAM_ID, 8, t + 2000);

        t = mono();
        S.overhead(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, t, t + 3000);
        kernel("_Z6orphanv", 7, 999, mono(), 9000, 1, 1, 1, 1, 8, 0, 0);
        S.unknown(CUPTI_ACTIVITY_KIND_COUNT + 1000, 24);
        S.drop(3);
        S.complete(1);
    }
    printf("basic: done\n");
    return 0;
}

static int pool(long n) {
    kprof_region_begin("loop");
    for (long i = 0; i < n; i++) {
        uint32_t corr = (uint32_t)(1000 + i);
        uint64_t t = mono();
        enter(RT, LAUNCH_RT, "cudaLaunchKernel", "tick", corr);
        leave(RT, LAUNCH_RT, "cudaLaunchKernel", "tick", corr);
        kernel("tick", 7, corr, t, 1000, 1, 1, 1, 32, 8, 0, 0);
    }
    kprof_region_end("loop");
    printf("pool: %ld launches\n", n);
    return 0;
}

static long per_thread;

static void *worker(void *arg) {
    long t = (long)arg;
    kprof_region_begin("worker");
    for (long i = 0; i < per_thread; i++) {
        uint32_t rt = (uint32_t)(100000 + t * per_thread + i);
        uint32_t drv = (uint32_t)(200000 + t * per_thread + i);
        uint64_t now = mono();
        runtime_call(LAUNCH_RT, "cudaLaunchKernel", rt, LAUNCH_DRV, "cuLaunchKernel", drv,
                     "_Z4workPi");
        kernel("_Z4workPi", (uint32_t)(20 + t), i % 2 ? rt : drv, now, 2000, 8, 1, 1, 64, 24, 0,
               0);
    }
    kprof_region_end("worker");
    return NULL;
}

static int threads(long n, long k) {
    pthread_t tid[32];
    if (n < 1 || n > 32)
        n = 4;
    per_thread = k;
    for (long t = 0; t < n; t++)
        pthread_create(&tid[t], NULL, worker, (void *)t);
    for (long t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
    if (have_standin())
        S.complete(0);
    printf("threads: %ld x %ld launches\n", n, k);
    return 0;
}

int main(int argc, char **argv) {
    const char *scenario = argc > 1 ? argv[1] : "basic";
    cu_init();
    if (strcmp(scenario, "basic") == 0) {
        basic();
        return argc > 2 ? atoi(argv[2]) : 0;
    }
    if (strcmp(scenario, "pool") == 0)
        return pool(argc > 2 ? atol(argv[2]) : 40000);
    if (strcmp(scenario, "threads") == 0)
        return threads(argc > 2 ? atol(argv[2]) : 4, argc > 3 ? atol(argv[3]) : 50);
    fprintf(stderr, "usage: cuda_driver basic [exit code] | pool [launches] | "
                    "threads [threads] [launches]\n");
    return 2;
}

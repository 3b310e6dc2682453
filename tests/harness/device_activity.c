/* Device activities through the core's plugin table, as a GPU plugin delivers
 * them: launches on the program's thread (a site, then a GPU API slice), the
 * device work they launched later, from another thread (a vendor's buffer
 * thread), with its own times. For tests/tests/device_activity.rs.
 *
 * Main thread:
 *   region "step"  { launch (site + "cudaLaunchKernel") ; copy (site + "cudaMemcpyAsync") }
 *   region "solve" { launch ; launch }                       (both "cudaLaunchKernel")
 * Then a second thread reports, for each launch, its activity starting 1 us after
 * the launch returned or when the previous one ended (one after the other, as a
 * device runs them, so the device is busy for exactly their sum: 460 us):
 *   "saxpy"           kernel on CUDA device 0 stream 7, 250 us, grid_x 256, block_x 128
 *   "memcpy HtoD"     copy on stream 7, 100 us, 1 MiB to the device
 *   "foo<int>(int*)"  kernels on stream 9, 40 us and 60 us
 * and three that go wrong: "orphan" (a kernel with no site: the root, no flow,
 * 10 us), "bad" (a memset whose end is before its start: zero duration, counted),
 * and an activity of an unknown kind (counted, dropped). Device memory, as a GPU
 * plugin reports it (space "CUDA:0", label "device"): 4096 bytes at 0x7000 never
 * freed, 1024 bytes at 0x8000 freed (high-water 5120). With "late" as argv[1]
 * the activities are reported before main's regions end (the launching thread's
 * records reach the writer after the device's).
 * Prints "activities <n>" (the ones sent) and returns 0.
 *
 * With "flush" or "term" as argv[1], the program also registers a flush callback
 * (as a GPU plugin does with its vendor's buffers) that reports one more kernel,
 * "flushed" (5 us, stream 7, under "solve"'s last launch), when kprof ends the
 * run: at exit ("flush"), or at a SIGTERM the program sends itself after printing
 * its line ("term"; it then dies of the signal).
 */
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kp_core_api.h"

enum { USER_REGION = 7, GPU_KERNEL = 49, GPU_MEMCPY = 50, GPU_MEMSET = 51, GPU_API = 53 };

static const kp_core_api *api;

struct launch {
    kp_site site;
    uint64_t api_guid;
    uint64_t returned_ns;
};

static struct launch launches[4];
static uint16_t stream7, stream9;
static int sent;
/* Where the device is free again. */
static uint64_t cursor;

static uint64_t next_start(uint64_t earliest) {
    return earliest > cursor ? earliest : cursor;
}

static struct launch launch(const char *call) {
    struct launch l;
    l.site = api->site();
    l.api_guid = api->begin_static(GPU_API, call, 0, 0);
    api->end(GPU_API, l.api_guid);
    l.returned_ns = api->now_ns();
    return l;
}

static void activity(uint8_t kind, const char *name, uint16_t dev, const struct launch *l,
                     uint64_t start_ns, uint64_t dur_ns, uint64_t bytes, uint8_t direction) {
    kp_activity a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.kind = kind;
    a.direction = direction;
    a.dev = dev;
    a.name = name;
    a.start_ns = start_ns;
    a.end_ns = start_ns + dur_ns;
    a.bytes = bytes;
    if (l) {
        a.site = l->site;
        a.flow_from = l->api_guid;
    }
    if (kind == GPU_KERNEL && l) {
        a.nargs = 2;
        a.args[0].key = "grid_x";
        a.args[0].value = 256;
        a.args[1].key = "block_x";
        a.args[1].value = 128;
    }
    api->activity(&a);
    cursor = a.end_ns;
    sent++;
}

static void *buffer_thread(void *unused) {
    (void)unused;
    activity(GPU_KERNEL, "saxpy", stream7, &launches[0], next_start(launches[0].returned_ns + 1000), 250000,
             0, 0);
    activity(GPU_MEMCPY, "memcpy HtoD", stream7, &launches[1], next_start(launches[1].returned_ns + 1000),
             100000, 1 << 20, 1);
    activity(GPU_KERNEL, "foo<int>(int*)", stream9, &launches[2], next_start(launches[2].returned_ns + 1000),
             40000, 0, 0);
    activity(GPU_KERNEL, "foo<int>(int*)", stream9, &launches[3], next_start(launches[3].returned_ns + 1000),
             60000, 0, 0);
    uint64_t now = next_start(api->now_ns());
    activity(GPU_KERNEL, "orphan", stream7, NULL, now, 10000, 0, 0);
    /* End before start. */
    kp_activity bad;
    memset(&bad, 0, sizeof bad);
    bad.size = sizeof bad;
    bad.kind = GPU_MEMSET;
    bad.dev = stream7;
    bad.name = "bad";
    bad.start_ns = cursor + 20000;
    bad.end_ns = cursor + 10000;
    bad.bytes = 64;
    api->activity(&bad);
    sent++;
    /* A kind that is no device activity. */
    bad.kind = 200;
    api->activity(&bad);
    sent++;
    return NULL;
}

static void flushed(void) {
    activity(GPU_KERNEL, "flushed", stream7, &launches[3], next_start(api->now_ns()), 5000, 0, 0);
}

static void report(void) {
    pthread_t t;
    pthread_create(&t, NULL, buffer_thread, NULL);
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int late = strcmp(mode, "late") == 0;
    api = kprof_core_api(1);
    if (!api || !api->attach("gpu-test"))
        return 2;
    kp_device_desc d7 = {"CUDA", 0, 7}, d9 = {"CUDA", 0, 9};
    stream7 = api->device(&d7);
    stream9 = api->device(&d9);
    kp_space_name space = {"CUDA:0", 7};
    api->alloc(space, "device", 0x7000, 4096);
    api->alloc(space, "device", 0x8000, 1024);
    api->free(space, "device", 0x8000, 1024);
    uint64_t step = api->begin(USER_REGION, "step", 0, 0);
    launches[0] = launch("cudaLaunchKernel");
    launches[1] = launch("cudaMemcpyAsync");
    api->end(USER_REGION, step);
    uint64_t solve = api->begin(USER_REGION, "solve", 0, 0);
    launches[2] = launch("cudaLaunchKernel");
    launches[3] = launch("cudaLaunchKernel");
    if (late)
        report();
    api->end(USER_REGION, solve);
    if (!late)
        report();
    int flush = strcmp(mode, "flush") == 0, term = strcmp(mode, "term") == 0;
    if (flush || term)
        api->on_flush(flushed);
    printf("activities %d\n", sent);
    fflush(stdout);
    if (term)
        raise(SIGTERM);
    return 0;
}

/* A program that counts its own work in a PAPI software-defined event
 * (sde:::kptest::items, read per thread) and adds known amounts inside known
 * kprof regions, on the main thread and on each thread of an OpenMP team:
 *
 *   outer       +100      (exclusive 100, inclusive 100 + 4096)
 *     inner     +4096
 *     none      +0
 *   OpenMP team of N threads, thread t:
 *     implicit task  +1 outside worker
 *     worker         +1000 * (t + 1) outside work_inner
 *       work_inner   +7
 *
 * It prints the total it added, per thread, so a test compares kprof's numbers
 * with the program's own. Usage: sde_counters <threads> [rounds] */
#include <omp.h>
#include <sde_lib.h>
#include <stdio.h>
#include <stdlib.h>

#include <kprof.h>

static __thread long long items;

/* SDE reads the counter on the thread that reads the event set: each thread
 * sees its own amount, as a hardware counter bound to the thread would. */
static long long read_items(void *unused) {
    (void)unused;
    return items;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    papi_handle_t h = papi_sde_init("kptest");
    papi_sde_register_counter_cb(h, "items", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long,
                                 read_items, NULL);
    for (int r = 0; r < rounds; r++) {
        kprof_region_begin("outer");
        items += 100;
        kprof_region_begin("inner");
        items += 4096;
        kprof_region_end("inner");
        kprof_region_begin("none");
        kprof_region_end("none");
        kprof_region_end("outer");
    }
    long long total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        int t = omp_get_thread_num();
        for (int r = 0; r < rounds; r++) {
            items += 1;
            kprof_region_begin("worker");
            items += 1000LL * (t + 1);
            kprof_region_begin("work_inner");
            items += 7;
            kprof_region_end("work_inner");
            kprof_region_end("worker");
        }
        total += items;
    }
    printf("team items %lld\n", total);
    return 0;
}

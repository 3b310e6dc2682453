/*
 * trace_driver.c - drives libkprof_core.so directly through its plugin table
 * (kprof_core_api(1)), for the timeline trace tests (tests/tests/traces.rs) and the
 * trace size benchmark (tests/benches/trace_size.rs). Linked with -lkprof_core.
 *
 * Usage: trace_driver <mode> [n]
 *
 *   flows   cross-thread edges: on the main thread begin "parent" (kind 5, Region);
 *           start 4 pthreads, each begins "child" (kind 1, ParallelFor, device
 *           OpenMP/0/1) with parent = the parent's GUID, spins ~50 us and ends it;
 *           join; end "parent"; finalize. Expected: 4 flows parent -> each child,
 *           each child on its own thread track.
 *   loop    never ends: forever { begin region "outer"; 10 x kernel "k" (~2 us each);
 *           end "outer"; sleep 1 ms }. Prints "running" on stdout (flushed) after the
 *           first iteration. For the SIGKILL test.
 *   bench N N kernels "bench_kernel" (begin/end, no work) at top level on the main
 *           thread, then finalize. Prints on stdout:
 *             kernels=N  wall_ns=<begin of the loop to after finalize>
 *             cpu_ns=<process user+system CPU, all threads, whole run>
 *             maxrss_kb=<getrusage ru_maxrss, after finalize>
 *
 * The table's C mirror is kp_core_api.h.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kp_core_api.h"

enum { KIND_PARALLEL_FOR = 1, KIND_REGION = 5 };

static const kp_core_api *api;
static uint16_t dev_openmp;
static uint64_t parent_guid;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void spin_ns(uint64_t ns) {
  uint64_t a = now_ns();
  while (now_ns() - a < ns) {
  }
}

static void *child_main(void *arg) {
  (void)arg;
  uint64_t g = api->begin(KIND_PARALLEL_FOR, "child", dev_openmp, parent_guid);
  spin_ns(50000);
  api->end(KIND_PARALLEL_FOR, g);
  return NULL;
}

static int mode_flows(void) {
  enum { T = 4 };
  pthread_t th[T];
  parent_guid = api->begin(KIND_REGION, "parent", 0, 0);
  if (parent_guid == 0) {
    fprintf(stderr, "trace_driver: begin returned GUID 0\n");
    return 1;
  }
  for (int i = 0; i < T; i++) {
    if (pthread_create(&th[i], NULL, child_main, NULL) != 0) {
      fprintf(stderr, "trace_driver: pthread_create failed\n");
      return 1;
    }
  }
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
  spin_ns(10000);
  api->end(KIND_REGION, parent_guid);
  api->finalize();
  return 0;
}

static int mode_loop(void) {
  struct timespec pause = {0, 1000000};
  for (long it = 0;; it++) {
    uint64_t r = api->begin(KIND_REGION, "outer", 0, 0);
    for (int i = 0; i < 10; i++) {
      uint64_t k = api->begin(KIND_PARALLEL_FOR, "k", dev_openmp, 0);
      spin_ns(2000);
      api->end(KIND_PARALLEL_FOR, k);
    }
    api->end(KIND_REGION, r);
    if (it == 0) {
      printf("running\n");
      fflush(stdout);
    }
    nanosleep(&pause, NULL);
  }
  return 0;
}

static int mode_bench(long n) {
  uint64_t t0 = now_ns();
  for (long i = 0; i < n; i++) {
    uint64_t k = api->begin(KIND_PARALLEL_FOR, "bench_kernel", dev_openmp, 0);
    __asm__ __volatile__("" ::: "memory");
    api->end(KIND_PARALLEL_FOR, k);
  }
  api->finalize();
  uint64_t t1 = now_ns();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  uint64_t cpu = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                 (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
  printf("kernels=%ld\nwall_ns=%llu\ncpu_ns=%llu\nmaxrss_kb=%ld\n", n,
         (unsigned long long)(t1 - t0), (unsigned long long)cpu, ru.ru_maxrss);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: trace_driver flows|loop|bench [n]\n");
    return 2;
  }
  api = kprof_core_api(1);
  if (api == NULL || api->version != 1 ||
      api->size < offsetof(kp_core_api, end) + sizeof api->end) {
    fprintf(stderr, "trace_driver: no usable kprof core table\n");
    return 2;
  }
  /* false when KPROF_ENABLE=0: the calls below are then ignored by the core. */
  (void)api->attach("test");
  kp_device_desc d = {"OpenMP", 0, 1};
  dev_openmp = api->device(&d);
  if (strcmp(argv[1], "flows") == 0) return mode_flows();
  if (strcmp(argv[1], "loop") == 0) return mode_loop();
  if (strcmp(argv[1], "bench") == 0) return mode_bench(argc > 2 ? atol(argv[2]) : 1000000);
  fprintf(stderr, "trace_driver: unknown mode %s\n", argv[1]);
  return 2;
}

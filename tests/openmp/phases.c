/* A run in three phases of PHASE_MS each, for the profile's series over time
 * (`over_time`):
 *   1. one thread in a parallel region (num_threads(1)), sleeping;
 *   2. four threads in one, each sleeping;
 *   3. BYTES allocated in the "Host" memory space, all threads idle; then freed.
 * The allocation is told to the Kokkos tool named by KOKKOS_TOOLS_LIBS, loaded
 * and called as Kokkos loads and calls it (a Kokkos program on the OpenMP back
 * end has both tools). Prints each phase's CLOCK_MONOTONIC start and end:
 * "phase N START_NS END_NS". */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../ffi-headers/kokkosp.h"

#define PHASE_MS 300
#define BYTES 123456789ull

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

typedef void (*init_fn)(int, uint64_t, uint32_t, Kokkos_Profiling_KokkosPDeviceInfo *);
typedef void (*finalize_fn)(void);

int main(void) {
  const char *tool = getenv("KOKKOS_TOOLS_LIBS");
  void *lib = tool ? dlopen(tool, RTLD_NOW | RTLD_GLOBAL) : NULL;
  if (!lib) {
    fprintf(stderr, "phases: no Kokkos tool (KOKKOS_TOOLS_LIBS): %s\n", dlerror());
    return 2;
  }
  init_fn init = (init_fn)dlsym(lib, "kokkosp_init_library");
  finalize_fn fin = (finalize_fn)dlsym(lib, "kokkosp_finalize_library");
  Kokkos_Profiling_allocateDataFunction alloc =
      (Kokkos_Profiling_allocateDataFunction)dlsym(lib, "kokkosp_allocate_data");
  Kokkos_Profiling_deallocateDataFunction dealloc =
      (Kokkos_Profiling_deallocateDataFunction)dlsym(lib, "kokkosp_deallocate_data");
  if (!init || !fin || !alloc || !dealloc) {
    fprintf(stderr, "phases: the tool lacks a Kokkos Tools entry\n");
    return 2;
  }
  init(0, KOKKOSP_INTERFACE_VERSION_3_6, 0, NULL);

  int ran[4] = {0, 0, 0, 0};
  unsigned long long t[6];
  t[0] = now_ns();
#pragma omp parallel num_threads(1)
  {
    sleep_ms(PHASE_MS);
    ran[0]++;
  }
  t[1] = now_ns();
  t[2] = now_ns();
#pragma omp parallel num_threads(4)
  {
    sleep_ms(PHASE_MS);
    ran[omp_get_thread_num() & 3]++;
  }
  t[3] = now_ns();

  Kokkos_Profiling_SpaceHandle host = {"Host"};
  static char block[64];
  t[4] = now_ns();
  alloc(host, "big", block, BYTES);
  sleep_ms(PHASE_MS);
  dealloc(host, "big", block, BYTES);
  t[5] = now_ns();
  sleep_ms(PHASE_MS / 10);
  fin();
  for (int p = 0; p < 3; p++) printf("phase %d %llu %llu\n", p + 1, t[2 * p], t[2 * p + 1]);
  printf("ran %d %d %d %d\n", ran[0], ran[1], ran[2], ran[3]);
  return 0;
}

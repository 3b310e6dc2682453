/* The histogram with its work counted in a PAPI software-defined event
 * (sde:::kpactor::work), by known amounts in known segments: +1 after each
 * push that returned convey_OK (the program's own work: MAIN), +3 in the
 * handler of each message pulled (PROC), +1000 before the actor phase (in no
 * segment) and nothing inside Conveyors (COMM). Prints what it added where,
 * for a test to compare with kprof's counters per segment.
 *
 *   counted [updates per PE] */
#include <sde_lib.h>
#include <shmem.h>

#include "convey/convey.h"
#include "fabsp.h"

static long long work;

static long long read_work(void *unused) {
  (void)unused;
  return work;
}

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long updates = argc > 1 ? atol(argv[1]) : 5000;
  papi_handle_t h = papi_sde_init("kpactor");
  papi_sde_register_counter_cb(h, "work", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long,
                               read_work, NULL);
  uint64_t seed = 99 + (uint64_t)me * 7;
  long long main_adds = 0, proc_adds = 0;
  convey_t *c = convey_new(64, 0, 1, 0);
  work += 1000;
  if (!c || convey_begin(c, sizeof(uint64_t), 8) != convey_OK) return 2;
  long i = 0;
  uint64_t item = 0;
  bool have = false;
  while (convey_advance(c, i == updates && !have) != convey_DONE) {
    for (; i < updates || have;) {
      if (!have) {
        item = fabsp_rand(&seed);
        have = true;
      }
      if (convey_push(c, &item, (int64_t)(item % (uint64_t)npes)) != convey_OK) break;
      work += 1, main_adds += 1;
      have = false;
      i++;
    }
    uint64_t got;
    while (convey_pull(c, &got, NULL) == convey_OK) work += 3, proc_adds += 3;
  }
  convey_free(c);
  FABSP_LINE("counted %d %lld %lld\n", me, main_adds, proc_adds);
  shmem_finalize();
  return 0;
}

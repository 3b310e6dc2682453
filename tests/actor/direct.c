/* The hook header's functions (route 3, kprof_actor.h) in an FA-BSP program:
 * a conveyor named as a selector's mailbox, a named phase, done, and sends that
 * bypass Conveyors (shmem_putmem around a ring, reported with kprof_actor_send
 * and kprof_actor_receive), plus one send to a PE that does not exist. Prints
 * its own count of direct sends per destination.
 *
 *   direct [puts per PE] */
#include <shmem.h>

#include "convey/convey.h"
#include "fabsp.h"
#include "kprof_actor.h"

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long puts = argc > 1 ? atol(argv[1]) : 10;
  static uint64_t box[64]; /* symmetric (static) */
  uint64_t v[8] = {0};

  convey_t *c = convey_new(16, 0, 1, 0);
  if (!c || convey_begin(c, 8, 8) != convey_OK) return 2;
  kprof_actor_mailbox(c, 3, 1);
  kprof_actor_phase("ring");
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  for (long i = 0; i < puts; i++) {
    v[0] = (uint64_t)i;
    shmem_putmem(&box[me % 64], v, sizeof v, right);
    kprof_actor_send(right, sizeof v);
  }
  shmem_barrier_all();
  for (long i = 0; i < puts; i++) kprof_actor_receive(left, sizeof v);
  kprof_actor_send(npes + 5, 8); /* no such PE: counted, not recorded */
  while (convey_advance(c, true)) {
  }
  kprof_actor_done(3, 1);
  convey_free(c);
  FABSP_LINE("direct %d %d %ld %ld\n", me, right, puts, puts * (long)sizeof v);
  shmem_finalize();
  return 0;
}

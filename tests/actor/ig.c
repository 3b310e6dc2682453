/* Index-gather, FA-BSP style: every PE reads REQUESTS random entries of a table
 * spread over the PEs. Requests (8-byte items: the entry's local index and the
 * requester's slot) go through conveyor 0; the owner's handler answers through
 * conveyor 1 (8-byte items: slot and value). A reply that does not fit is kept
 * and pushed again before more requests are pulled. Prints its own logical
 * sends per conveyor and destination, the stand-in's physical count, the phase
 * time and a checksum of what it gathered (every value is checked).
 *
 *   ig [requests per PE] */
#include <shmem.h>
#include <string.h>

#include "convey/convey.h"
#include "fabsp.h"

#define ENTRIES 4096 /* table entries per PE */

/* Value of global entry g, known to everyone for the check. */
static uint64_t value_of(uint64_t g) { return g * 2654435761u + 17; }

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long requests = argc > 1 ? atol(argv[1]) : 10000;
  uint64_t *table = malloc(ENTRIES * sizeof *table);
  for (uint64_t l = 0; l < ENTRIES; l++) table[l] = value_of(l * (uint64_t)npes + (uint64_t)me);
  uint64_t *want = malloc((size_t)requests * sizeof *want);
  uint64_t *got = calloc((size_t)requests, sizeof *got);
  uint64_t seed = 777 + (uint64_t)me * 104729;
  for (long r = 0; r < requests; r++) want[r] = fabsp_rand(&seed) % ((uint64_t)ENTRIES * (uint64_t)npes);
  uint64_t sent[2][64] = {{0}};

  convey_t *req = convey_new(64, 0, 1, 0), *rep = convey_new(64, 0, 1, 0);
  uint64_t t0 = fabsp_now_ns();
  if (!req || !rep || convey_begin(req, 8, 8) != convey_OK || convey_begin(rep, 8, 8) != convey_OK) {
    fprintf(stderr, "convey setup failed\n");
    return 2;
  }
  long i = 0;
  bool stash = false, req_active = true, rep_active = true;
  uint64_t stash_item = 0;
  int64_t stash_to = 0;
  while (req_active || rep_active) {
    req_active = convey_advance(req, i == requests);
    rep_active = convey_advance(rep, !req_active && !stash);
    for (; i < requests; i++) {
      /* item: local index (upper 32 bits) and requester slot (lower 32) */
      uint64_t g = want[i], item = (g / (uint64_t)npes) << 32 | (uint64_t)i;
      int64_t pe = (int64_t)(g % (uint64_t)npes);
      if (convey_push(req, &item, pe) != convey_OK) break;
      sent[0][pe]++;
    }
    for (;;) {
      if (!stash) {
        uint64_t item;
        int64_t from;
        if (convey_pull(req, &item, &from) != convey_OK) break;
        uint64_t v = table[item >> 32] & 0xffffffffu;
        stash_item = v << 32 | (item & 0xffffffffu);
        stash_to = from;
        stash = true;
      }
      if (convey_push(rep, &stash_item, stash_to) != convey_OK) break;
      sent[1][stash_to]++;
      stash = false;
    }
    uint64_t r;
    while (convey_pull(rep, &r, NULL) == convey_OK) got[r & 0xffffffffu] = r >> 32;
  }
  convey_free(rep);
  convey_free(req);
  uint64_t t1 = fabsp_now_ns();

  uint64_t sum = 0, bad = 0;
  for (long r = 0; r < requests; r++) {
    bad += got[r] != (value_of(want[r]) & 0xffffffffu);
    sum += got[r];
  }
  for (int conv = 0; conv < 2; conv++)
    for (int d = 0; d < npes; d++)
      FABSP_LINE("logical %d %d %d %" PRIu64 " %" PRIu64 "\n", me, conv, d, sent[conv][d],
                 sent[conv][d] * 8);
  standin_convey_print(me, npes, fabsp_line);
  FABSP_LINE("phase %d %" PRIu64 "\n", me, t1 - t0);
  FABSP_LINE("result %d %ld %" PRIu64 " %" PRIu64 "\n", me, requests, bad, sum);
  free(table), free(want), free(got);
  shmem_finalize();
  return bad != 0;
}

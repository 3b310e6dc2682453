/* Elastic conveyors (HClib-Actor's lambda mailboxes): every PE sends MESSAGES
 * items of 0 to 40 bytes (0-byte items included, which Conveyors delivers) to
 * random PEs with convey_epush; the handler (after each OK convey_epull) sums
 * the items' words. Prints its own count of logical sends per destination
 * (items and bytes), the stand-in's physical count, the phase time, what it
 * received (items, 0-byte items, sum of the words sent and received) and the
 * pulls whose source was outside the job (injected by the stand-in with
 * STANDIN_CONVEY_BAD_FROM).
 *
 * With a second argument K > 0 the program then misuses the freed conveyor:
 * K times each convey_epush, convey_push and convey_pull after convey_free
 * (the stand-in answers an error), and prints how many calls returned one.
 *
 *   elastic [messages per PE] [calls after free] */
#include <shmem.h>

#include "convey/convey.h"
#include "fabsp.h"

static const size_t SIZES[6] = {0, 8, 16, 24, 24, 40};

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long messages = argc > 1 ? atol(argv[1]) : 5000;
  long after = argc > 2 ? atol(argv[2]) : 0;
  uint64_t sent[64] = {0}, sent_bytes[64] = {0};
  uint64_t sum_sent = 0, sum_got = 0, got = 0, zero = 0, bad_from = 0;
  uint64_t seed = 4242 + (uint64_t)me * 31337;

  convey_t *c = convey_new_elastic(24, 40, 0, NULL, 0);
  uint64_t t0 = fabsp_now_ns();
  if (!c || convey_begin(c, 24, 8) != convey_OK) {
    fprintf(stderr, "convey setup failed\n");
    return 2;
  }
  long i = 0;
  bool have = false;
  uint64_t item[5];
  size_t bytes = 0;
  int64_t pe = 0;
  while (convey_advance(c, i == messages && !have) != convey_DONE) {
    for (; i < messages || have;) {
      if (!have) {
        uint64_t r = fabsp_rand(&seed);
        pe = (int64_t)(r % (uint64_t)npes);
        bytes = SIZES[(r >> 8) % 6];
        for (size_t w = 0; w < 5; w++) item[w] = r + w;
        have = true;
      }
      if (convey_epush(c, bytes, item, pe) != convey_OK) break;
      for (size_t w = 0; w < bytes / 8; w++) sum_sent += item[w];
      sent[pe]++;
      sent_bytes[pe] += bytes;
      have = false;
      i++;
    }
    convey_item_t it;
    while (convey_epull(c, &it) == convey_OK) {
      got++;
      zero += it.bytes == 0;
      for (size_t w = 0; w < it.bytes / 8; w++) sum_got += ((const uint64_t *)it.data)[w];
      if (it.from < 0 || it.from >= npes) bad_from++;
    }
  }
  convey_free(c);
  uint64_t t1 = fabsp_now_ns();

  long errors = 0;
  for (long k = 0; k < after; k++) {
    uint64_t x = 1;
    int64_t from;
    errors += convey_epush(c, 8, &x, 0) < 0;
    errors += convey_push(c, &x, 0) < 0;
    errors += convey_pull(c, &x, &from) < 0;
  }

  for (int d = 0; d < npes; d++)
    FABSP_LINE("logical %d 0 %d %" PRIu64 " %" PRIu64 "\n", me, d, sent[d], sent_bytes[d]);
  standin_convey_print(me, npes, fabsp_line);
  FABSP_LINE("phase %d %" PRIu64 "\n", me, t1 - t0);
  FABSP_LINE("received %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", me, got, zero,
             sum_sent, sum_got);
  FABSP_LINE("bad_from %d %" PRIu64 "\n", me, bad_from);
  FABSP_LINE("after_free %d %ld %ld\n", me, 3 * after, errors);
  shmem_finalize();
  return 0;
}

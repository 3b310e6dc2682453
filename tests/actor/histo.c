/* Histogram, FA-BSP style: every PE sends UPDATES increments to random slots of
 * a table spread over the PEs, through one conveyor of 8-byte items; the
 * handler adds one to the slot. Prints its own count of logical sends per
 * destination, the stand-in's count of physical buffers, the phase time it
 * measured itself (convey_begin .. convey_free), with its bounds and the CPU
 * time the PE ran in it, its Conveyors calls in the phase, the time its
 * handler slept, and the table's checksum.
 *
 *   histo [updates per PE] [handler sleep, us, every 64th message] [nofree]
 *
 * With "nofree" the conveyor is never freed (a bad input kprof must survive). */
#include <shmem.h>
#include <string.h>

#include "convey/convey.h"
#include "fabsp.h"

#define SLOTS 1024 /* table slots per PE */

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long updates = argc > 1 ? atol(argv[1]) : 10000;
  long sleep_us = argc > 2 ? atol(argv[2]) : 0;
  uint64_t *table = calloc(SLOTS, sizeof *table);
  /* Conveyors calls in the phase: convey_begin, then every push, pull,
   * advance and convey_free. */
  uint64_t sent[64] = {0}, slept_ns = 0, handled = 0, calls = 1;
  uint64_t seed = 12345 + (uint64_t)me * 7919;

  convey_t *c = convey_new(64, 0, 1, 0);
  uint64_t cpu0 = fabsp_cpu_ns();
  uint64_t t0 = fabsp_now_ns();
  if (!c || convey_begin(c, sizeof(uint64_t), 8) != convey_OK) {
    fprintf(stderr, "convey setup failed\n");
    return 2;
  }
  long i = 0;
  uint64_t item = 0;
  bool have = false;
  while (calls++, convey_advance(c, i == updates && !have)) {
    for (; i < updates || have;) {
      if (!have) {
        uint64_t g = fabsp_rand(&seed) % ((uint64_t)SLOTS * (uint64_t)npes);
        item = g;
        have = true;
      }
      int64_t pe = (int64_t)(item % (uint64_t)npes);
      calls++;
      if (convey_push(c, &item, pe) != convey_OK) break;
      sent[pe]++;
      have = false;
      i++;
    }
    uint64_t got;
    int64_t from;
    while (calls++, convey_pull(c, &got, &from) == convey_OK) {
      table[got / (uint64_t)npes]++;
      if (sleep_us && handled % 64 == 0) {
        uint64_t s = fabsp_now_ns();
        fabsp_sleep_us(sleep_us);
        slept_ns += fabsp_now_ns() - s;
      }
      handled++;
    }
  }
  bool nofree = argc > 3 && strcmp(argv[3], "nofree") == 0;
  if (!nofree) {
    convey_free(c);
    calls++;
  }
  uint64_t t1 = fabsp_now_ns();
  uint64_t cpu1 = fabsp_cpu_ns();

  for (int d = 0; d < npes; d++)
    FABSP_LINE("logical %d 0 %d %" PRIu64 " %" PRIu64 "\n", me, d, sent[d], sent[d] * 8);
  standin_convey_print(me, npes, fabsp_line);
  uint64_t sum = 0;
  for (int s = 0; s < SLOTS; s++) sum += table[s] * (uint64_t)(s + 1);
  FABSP_LINE("phase %d %" PRIu64 "\n", me, t1 - t0);
  FABSP_LINE("window %d %" PRIu64 " %" PRIu64 "\n", me, t0, t1);
  FABSP_LINE("cpu %d %" PRIu64 "\n", me, cpu1 - cpu0);
  FABSP_LINE("calls %d %" PRIu64 "\n", me, calls);
  FABSP_LINE("slept %d %" PRIu64 "\n", me, slept_ns);
  FABSP_LINE("result %d %" PRIu64 " %" PRIu64 "\n", me, handled, sum);
  free(table);
  shmem_finalize();
  return 0;
}

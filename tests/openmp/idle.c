/* Balanced parallel regions between serial phases, for what an implicit task's
 * time means (work, not idle). `idle one`: a serial sleep, one parallel region of
 * 2 threads in which both threads sleep REGION_MS, then a serial sleep of
 * AFTER_MS: the worker sits idle after the region until the program ends.
 * `idle loop`: LOOPS short regions in which both threads sleep SHORT_US, each
 * followed by a serial sleep of SHORT_US. Every region's work is balanced, so
 * its imbalance is 1.0 and no thread works longer than its region lasts. Prints
 * what each thread did ("slept N M"). */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define REGION_MS 30
#define BEFORE_MS 20
#define AFTER_MS 50
#define LOOPS 40
#define SHORT_US 2000

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int slept[2];

/* One region: both threads sleep `us`. Not inlined, so the region's code address
 * names this function. */
__attribute__((noinline)) static void region(long us) {
#pragma omp parallel num_threads(2)
  {
    int me = omp_get_thread_num();
    sleep_us(us);
    slept[me & 1] += 1; /* each thread its own element */
  }
  /* Not a tail call: the region is named after this function. */
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
  int loop = argc > 1 && strcmp(argv[1], "loop") == 0;
  int rounds = loop ? LOOPS : 1;
  if (!loop) {
    sleep_us(BEFORE_MS * 1000L);
  }
  for (int r = 0; r < rounds; r++) {
    region(loop ? SHORT_US : REGION_MS * 1000L);
    sleep_us(loop ? SHORT_US : AFTER_MS * 1000L);
  }
  printf("slept %d %d\n", slept[0], slept[1]);
  return slept[0] == rounds && slept[1] == rounds ? 0 : 1;
}

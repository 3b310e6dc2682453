/*
 * policy.c - an application adapting a parameter to kprof's live statistics
 * through the policy API of kprof.h (tests/tests/policy.rs).
 *
 *   kprof_stats_of("solve/step") before anything ran      -> prints "before=<rc> count=<n>"
 *   registers "adapt" (period 0: every poll) and "rare" (period 1 hour: the first poll
 *   only) on "solve/step", and a NULL path (refused)       -> "handles=<h1>,<h2> null=<h3>"
 *   region "solve" { 6 x { 5 x region "step" spinning block x 40 us; kprof_policy_poll() } }
 *   adapt prints "policy path=<p> count=<n> total_ns=<t> mean_ns=<m> min_ns=<a> max_ns=<b>
 *   block=<block before>" and halves the block while the mean step is above 300 us
 *   (block starts at 16: 640 us)
 *   kprof_stats_of("solve/step"), ("solve"), ("solve/none") -> "after=<rc> count=<n>",
 *   "solve=<rc> count=<n>", "none=<rc>"
 *   "runs=<adapt runs> rare_runs=<rare runs> block=<final block>"
 */
#include "kprof.h"

#include <stdio.h>
#include <time.h>

struct state {
  int block;
  int runs;
};

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void adapt(const char *path, const kprof_stats *s, void *user) {
  struct state *st = user;
  st->runs++;
  printf("policy path=%s count=%llu total_ns=%llu mean_ns=%.0f min_ns=%llu max_ns=%llu block=%d\n",
         path, (unsigned long long)s->count, (unsigned long long)s->total_ns, s->mean_ns,
         (unsigned long long)s->min_ns, (unsigned long long)s->max_ns, st->block);
  if (s->count > 0 && s->mean_ns > 300000.0 && st->block > 1) st->block /= 2;
}

static void rare(const char *path, const kprof_stats *s, void *user) {
  (void)path;
  (void)s;
  ++*(int *)user;
}

int main(void) {
  struct state st = {16, 0};
  int rare_runs = 0;
  kprof_stats s;
  int rc = kprof_stats_of("solve/step", &s);
  printf("before=%d count=%llu\n", rc, (unsigned long long)s.count);
  int h1 = kprof_policy_register("solve/step", 0, adapt, &st);
  int h2 = kprof_policy_register("solve/step", 3600ull * 1000000000ull, rare, &rare_runs);
  int h3 = kprof_policy_register(NULL, 0, adapt, &st);
  printf("handles=%d,%d null=%d\n", h1, h2, h3);
  kprof_region_begin("solve");
  for (int t = 0; t < 6; t++) {
    for (int i = 0; i < 5; i++) {
      kprof_region_begin("step");
      spin_us(st.block * 40L);
      kprof_region_end("step");
    }
    kprof_policy_poll();
  }
  kprof_region_end("solve");
  rc = kprof_stats_of("solve/step", &s);
  printf("after=%d count=%llu\n", rc, (unsigned long long)s.count);
  rc = kprof_stats_of("solve", &s);
  printf("solve=%d count=%llu\n", rc, (unsigned long long)s.count);
  printf("none=%d\n", kprof_stats_of("solve/none", NULL));
  printf("runs=%d rare_runs=%d block=%d\n", st.runs, rare_runs, st.block);
  return 0;
}

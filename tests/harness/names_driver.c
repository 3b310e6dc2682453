/*
 * names_driver.c - N annotation regions, each of its own name ("kernel_<i>"), one
 * after the other on one thread: the profile of N distinct call paths. Used by
 * tests/benches/names_exit.rs to measure what kprof's end of run costs (time and
 * memory) at a million names.
 *
 * Usage: names_driver N
 * Prints on stdout: loop_ns=<time of the loop>. The benchmark times the whole
 * process: what it took beyond the loop is the start and the end of the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kprof.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  char name[64];
  double start = now_ns();
  for (long i = 0; i < n; i++) {
    snprintf(name, sizeof name, "kernel_%ld", i);
    kprof_region_begin(name);
    kprof_region_end(name);
  }
  printf("loop_ns=%.0f\n", now_ns() - start);
  return 0;
}

/* What the FA-BSP test programs share: the clock, a deterministic random
 * stream, and the lines they print for the tests to compare with kprof's
 * profile. Every line starts with a word naming it and this PE's number. */
#ifndef FABSP_H
#define FABSP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t fabsp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time: the part of a phase the PE ran. */
static inline uint64_t fabsp_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: the same stream on every run. */
static inline uint64_t fabsp_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Sleeps `us` microseconds (the handler of the PROC test). */
static inline void fabsp_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts)) {
  }
}

/* One line, written at once so that PEs' lines never mix. */
#define FABSP_LINE(...)      \
  do {                       \
    printf(__VA_ARGS__);     \
    fflush(stdout);          \
  } while (0)

/* FABSP_LINE as a function (for the stand-in's standin_convey_print). */
static inline int fabsp_line(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
  return n;
}

#endif

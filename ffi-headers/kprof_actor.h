/* kprof_actor.h - kprof's HClib-Actor / Conveyors plugin (libkprof_actor.so).
 *
 * Two ways for an FA-BSP program or runtime to reach the plugin:
 *
 * 1. Link-time wrapping of Conveyors' public entries (for executables whose
 *    static libconvey kprof cannot hook otherwise): link the program with
 *
 *      -Wl,--wrap=convey_new,--wrap=convey_begin,--wrap=convey_push,
 *      -Wl,--wrap=convey_pull,--wrap=convey_advance,--wrap=convey_free,
 *      -Wl,--wrap=convey_epush,--wrap=convey_epull
 *
 *    and compile kprof_actor_wrap.c (installed next to this header) into it, or
 *    call kprof_actor_link(<target>) from kprof's CMake package. The wrappers
 *    forward to the real entries; when libkprof_actor.so is loaded (kprof run
 *    --actor) they also tell it about each call through the table below, found
 *    once with dlsym. Without kprof they cost one predictable branch per call.
 *
 * 2. The functions declared at the end, which HClib-Actor (or the program)
 *    may call where ActorProf's macros are: mailbox names, phase names, done,
 *    and sends that do not go through Conveyors. Link with -lkprof_actor. They
 *    are no-ops (and cheap) while kprof is disabled.
 *
 * Everything is counted in place, per conveyor and per PE; nothing is recorded
 * per message. */
#ifndef KPROF_ACTOR_H
#define KPROF_ACTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The Conveyors entry a wrapper reports (kprof_actor_wrap_hooks.leave's op). */
enum kprof_actor_op {
  KPROF_ACTOR_NEW = 0,     /* convey_new: rc = 1 when a conveyor was made */
  KPROF_ACTOR_BEGIN = 1,   /* convey_begin: arg = item size in bytes */
  KPROF_ACTOR_PUSH = 2,    /* convey_push: pe = destination */
  KPROF_ACTOR_PULL = 3,    /* convey_pull: pe = source */
  KPROF_ACTOR_ADVANCE = 4, /* convey_advance: rc = its value, arg = done */
  KPROF_ACTOR_FREE = 5,    /* convey_free */
  KPROF_ACTOR_EPUSH = 6,   /* convey_epush: pe = destination, arg = item bytes */
  KPROF_ACTOR_EPULL = 7    /* convey_epull: pe = source, arg = item bytes */
};

/* Version of struct kprof_actor_wrap_hooks. */
#define KPROF_ACTOR_WRAP_VERSION 1

/* What libkprof_actor.so hands the link-time wrappers
 * (kprof_actor_wrap_hooks_v1()). */
struct kprof_actor_wrap_hooks {
  /* sizeof(struct kprof_actor_wrap_hooks) as the plugin built it. */
  uint32_t size;
  /* KPROF_ACTOR_WRAP_VERSION. */
  uint32_t version;
  /* The conveyor whose entry is running now (NULL outside Conveyors): the
   * wrappers set it around the real call, so that OpenSHMEM calls made by
   * Conveyors are told from the program's own. */
  void **current;
  /* After each entry: the conveyor, the op, the entry's return value, the
   * peer PE (push, pull; else 0), an op-specific argument, and the clock
   * (kprof_actor_ticks) read just before the real call. */
  void (*leave)(void *conveyor, int op, long rc, int64_t pe, uint64_t arg, uint64_t t0);
  /* 0: the MAIN/PROC/COMM breakdown is off (KPROF_ACTOR_BREAKDOWN=0): the
   * wrappers pass t0 = 0 and read no clock; only messages are counted. */
  uint32_t timing;
  /* Before each entry, after the clock was read; NULL unless the segments are
   * drawn or counted (a trace or KPROF_COUNTERS). Present when `size` covers
   * it (a plugin older than this field leaves it out). */
  void (*enter)(void *conveyor, int op);
};

/* The clock the wrappers and the plugin share: the time-stamp counter on
 * x86-64 (calibrated by the plugin against CLOCK_MONOTONIC), CLOCK_MONOTONIC
 * nanoseconds elsewhere. */
#if defined(__x86_64__)
static inline uint64_t kprof_actor_ticks(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}
#else
#include <time.h>
static inline uint64_t kprof_actor_ticks(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* The table, or NULL while kprof is disabled. Exported by libkprof_actor.so;
 * the wrappers look it up with dlsym(RTLD_DEFAULT, "kprof_actor_wrap_hooks_v1"). */
const struct kprof_actor_wrap_hooks *kprof_actor_wrap_hooks_v1(void);

/* --- for HClib-Actor or the program (route 3) --- */

/* Names `conveyor` (a convey_t*) as mailbox `mailbox` of selector `selector`:
 * profile.json's metadata `actor.conveyor.<n>.mailbox` says "selector S mailbox M". */
void kprof_actor_mailbox(const void *conveyor, int selector, int mailbox);

/* Names the actor phase now running (metadata `actor.phase`, a marker). */
void kprof_actor_phase(const char *name);

/* Mailbox `mailbox` of selector `selector` called done (a marker). */
void kprof_actor_done(int selector, int mailbox);

/* A logical message of `bytes` sent to `pe` without Conveyors (channel
 * "actor direct"). */
void kprof_actor_send(int64_t pe, uint64_t bytes);

/* A logical message of `bytes` received from `pe` without Conveyors. */
void kprof_actor_receive(int64_t pe, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* KPROF_ACTOR_H */

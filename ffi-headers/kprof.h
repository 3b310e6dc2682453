/*
 * kprof.h - the kprof annotation API (C, C++ and, through iso_c_binding, Fortran).
 *
 * Exported by libkprof_core.so. Link with -lkprof_core. Every call goes into the same
 * measurement runtime the kprof plugins use, so annotated regions nest with Kokkos
 * kernels, OpenMP regions and the rest, and appear in every output.
 *
 * The API measures only when asked: under `kprof run`, with a KPROF_* setting in the
 * environment (KPROF_OUTPUT_DIR, KPROF_TRACE, ... the README's table), or once a
 * runtime loaded a kprof plugin (Kokkos, OMPT, OpenACC, ...). Otherwise every call
 * returns at once (a load and a branch) and nothing is written, so a library may
 * annotate itself without leaving files behind in its users' programs.
 *
 * All functions are safe to call from any thread, before the runtime has started (it
 * starts on the first call that measures), and after it has finalized (the call is
 * ignored and counted). NULL names are accepted and reported as "<null>".
 */
#ifndef KPROF_H
#define KPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a region named `name` on the calling thread. */
void kprof_region_begin(const char *name);

/* Closes the calling thread's innermost open annotation region, which should be named
 * `name` (NULL: whichever it is). An end by another name is counted as an anomaly
 * (mismatched_region_ends) and noted with both names in the summary and profile.json;
 * a region of that name open further out is then closed with the regions inside it,
 * and with none open the end is ignored. An end with no region open is counted too. */
void kprof_region_end(const char *name);

/* Records a named instant event (a marker). */
void kprof_event(const char *name);

/* Records a value of the counter `name` (a counter track in traces; count, min, max,
 * mean and last value in profile.json's "counters"). */
void kprof_counter(const char *name, double value);

/* Directions of kprof_message. */
#define KPROF_SEND 0
#define KPROF_RECEIVE 1

/* Records `count` messages of `bytes` bytes in all, sent to (KPROF_SEND) or
 * received from (KPROF_RECEIVE) peer `peer` (a rank, a PE) on `channel` (a
 * communicator, a mailbox; a name): added to this process's row of the channel's
 * message matrix (profile.json's "messages"; `kprof merge` of the processes'
 * directories gives the whole matrix). For communication the runtimes kprof
 * measures do not see. A count above 2^24 - 1 is cut to it. */
void kprof_message(const char *channel, int direction, uint32_t peer, uint64_t count,
                   uint64_t bytes);

/* Records a key/value pair in the profile's metadata. */
void kprof_metadata(const char *key, const char *value);

/* Writes all output now and stops measuring (also done automatically at exit). */
void kprof_finalize(void);

/* ---- Policies: adapting a parameter to kprof's live statistics ----
 *
 * What the statistics are: those of the CALLING THREAD's own call-path tree, which
 * each thread builds in place as it records (kprof's default, profile-only mode):
 * completed instances only, of that thread only (a region other threads also ran
 * is not merged in), read without any lock on the measurement's hot path. A path
 * names instances from the thread's outermost one, separated by '/':
 * "solve/iteration/axpy" (a region "solve", in it "iteration", in it the kernel
 * "axpy"; a name containing '/' cannot be named). With a trace on
 * (KPROF_TRACE), trees are built by kprof's writer thread at the end: there are no
 * live statistics then.
 *
 * kprof runs no thread for policies: a registered callback runs inside
 * kprof_policy_poll(), on the thread that polls, when its period has passed;
 * the application polls where a change is safe (between time steps). */

/* Live statistics of one call path. */
typedef struct kprof_stats {
  uint64_t count;    /* completed instances */
  uint64_t total_ns; /* their inclusive time */
  double mean_ns;    /* total_ns / count (0 without instances) */
  uint64_t min_ns;   /* shortest (0 without instances) */
  uint64_t max_ns;   /* longest */
} kprof_stats;

/* Fills *out (when not NULL) with the calling thread's statistics of `path`.
 * Returns 1 when the path is in the thread's tree, 0 when it is not (yet; *out
 * zeroed), -1 when there are no live statistics (kprof not asked to measure,
 * disabled or finalized, or a trace is on; *out zeroed). */
int kprof_stats_of(const char *path, kprof_stats *out);

/* A policy: called with its path, the polling thread's statistics of it (zeroed
 * when absent) and the pointer given at registration. */
typedef void (*kprof_policy_fn)(const char *path, const kprof_stats *stats, void *user);

/* Registers `fn` for `path`, run by kprof_policy_poll() at most every
 * `period_ns` nanoseconds (0: at every poll; the first poll always runs it).
 * Returns a handle > 0, or 0 when refused (NULL path or fn, 64 policies
 * registered). Policies stay registered until the process ends. */
int kprof_policy_register(const char *path, uint64_t period_ns, kprof_policy_fn fn,
                          void *user);

/* Runs, on the calling thread, every policy whose period has passed (a trigger);
 * returns how many ran. A policy may call any kprof function. */
int kprof_policy_poll(void);

#ifdef __cplusplus
}
#endif

#endif /* KPROF_H */

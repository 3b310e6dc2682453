/*
 * kprof.h - the kprof annotation API (C, C++ and, through iso_c_binding, Fortran).
 *
 * Exported by libkprof_core.so. Link with -lkprof_core. Every call goes into the same
 * measurement runtime the kprof plugins use, so annotated regions nest with Kokkos
 * kernels, OpenMP regions and the rest, and appear in every output.
 *
 * All functions are safe to call from any thread, before the runtime has started (it
 * starts on the first call), and after it has finalized (the call is ignored and
 * counted). NULL names are accepted and reported as "<null>".
 */
#ifndef KPROF_H
#define KPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a region named `name` on the calling thread. */
void kprof_region_begin(const char *name);

/* Closes the innermost open annotation region of the calling thread. `name` is for
 * the reader of the code and may be NULL; an end with no region open is counted as an
 * anomaly. */
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

#ifdef __cplusplus
}
#endif

#endif /* KPROF_H */

/*
 * actor_floor_tool.c - the physical floor of an exact MAIN/PROC/COMM breakdown
 * through kprof's link-time Conveyors wrappers (ffi-headers/kprof_actor_wrap.c),
 * for the actor overhead benchmark (tests/benches/actor_overhead.rs). Preloaded
 * (LD_PRELOAD) into a program linked with the wrappers, it stands in for
 * libkprof_actor.so: it exports kprof_actor_wrap_hooks_v1(), the table the
 * wrappers look up once with dlsym(RTLD_DEFAULT), asking for the clock
 * (timing = 1) and no enter callback.
 *
 * What the wrappers then do per Conveyors entry (new, begin, push, pull,
 * advance, free, epush, epull): read the TSC (kprof_actor_ticks) before the
 * real call, set *current to the conveyor around it, and, since t0 != 0, call
 * leave after every entry whatever it returned: pushes and pulls that returned
 * convey_FAIL (a full buffer, nothing to pull) and every advance included.
 * leave reads the TSC once more and stores (t0, end) as one 16-byte record
 * into a pre-allocated, thread-local ring that wraps around (4096 records,
 * 64 KiB per thread, so it stays in cache). No conveyor lookup, no per-PE
 * counts, no sums: an exact breakdown needs at least these two clock reads
 * and a store per entry, and whatever kprof's plugin adds on top is its own.
 *
 * At exit it prints how many entries the thread that exits (the program's
 * main thread; the benchmark's histogram has no other) reported, on stderr:
 * "actor floor: <entries> wrapped entries" (the ring's index, never masked,
 * is the count: nothing is added to the per-entry path for it).
 */
#include <stdint.h>
#include <stdio.h>

#include "kprof_actor.h"
#include "record_ring.h"

#define EXPORT __attribute__((visibility("default")))

/* The word the wrappers set to the running conveyor (nobody reads it here). */
static void *current;

static void floor_leave(void *conveyor, int op, long rc, int64_t pe, uint64_t arg, uint64_t t0)
{
    (void)conveyor;
    (void)op;
    (void)rc;
    (void)pe;
    (void)arg;
    ring_put(t0, kprof_actor_ticks());
}

static const struct kprof_actor_wrap_hooks hooks = {
    .size = sizeof(struct kprof_actor_wrap_hooks),
    .version = KPROF_ACTOR_WRAP_VERSION,
    .current = &current,
    .leave = floor_leave,
    .timing = 1,
    .enter = NULL,
};

EXPORT const struct kprof_actor_wrap_hooks *kprof_actor_wrap_hooks_v1(void)
{
    return &hooks;
}

/* Only in processes that reported an entry (not oshrun's own, which the
 * preload also reaches). */
__attribute__((destructor)) static void floor_report(void)
{
    if (ring.next)
        fprintf(stderr, "actor floor: %llu wrapped entries\n", (unsigned long long)ring.next);
}

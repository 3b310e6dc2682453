/*
 * record_ring.h: the floor tools' store (floor_tool.c, actor_floor_tool.c): one
 * 16-byte record (begin, end) per timed event into a pre-allocated thread-local
 * ring that wraps around, so that it stays in cache and never faults in memory:
 * the least a tool that keeps each event can do.
 */
#ifndef KPROF_BENCH_RECORD_RING_H
#define KPROF_BENCH_RECORD_RING_H

#include <stdint.h>

typedef struct {
    uint64_t begin;
    uint64_t end;
} Record;

#define RECORDS 4096 /* power of two: 64 KiB per thread */

/* Thread-local, allocated with the thread's TLS block (before the first record). */
static __thread struct {
    uint64_t next; /* records stored so far; the slot is next & (RECORDS - 1) */
    Record buf[RECORDS];
} ring;

/* Stores one record. */
static inline void ring_put(uint64_t begin, uint64_t end)
{
    uint64_t i = ring.next;
    Record *r = &ring.buf[i & (RECORDS - 1)];
    r->begin = begin;
    r->end = end;
    ring.next = i + 1;
}

#endif

/*
 * inplace_floor_tool.c: the least a Kokkos tool can do to keep a profile in place,
 * for the overhead benchmark (tests/benches/kokkos_overhead.rs). Where the floor tool
 * (floor_tool.c) stores each kernel's two timestamps and leaves everything else to
 * later, this one aggregates on the application thread as kprof's profile-only mode
 * does, and nothing more:
 *
 * - begin: finds the node of (enclosing kernel, name) through a per-thread
 *   direct-mapped cache keyed by the enclosing node and the name's address, the
 *   name's text compared (strcmp) before a hit is believed, because Kokkos hands a
 *   std::string's buffer that may hold another name at the same address; on a miss,
 *   a search of the children or a new node. Then it pushes (node, TSC) on a
 *   per-thread stack.
 * - end: reads the TSC, pops the frame and adds the duration to the node's count,
 *   sum, min, max and sum of squares (the mean and standard deviation of a profile).
 *
 * No ids, no categories, no samples, no per-thread spread, no anomaly checks, no
 * publication for other threads, no tracing: what kprof adds on top of this is its
 * own cost. At finalize it prints `inplace_tool_count=N`, the kernels its trees
 * counted over all threads, so that the benchmark can check the tool did its work.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "kokkos_tool.h"

typedef struct Node {
    char *name;
    uint64_t count, sum, min, max;
    double sum_sq;
    struct Node *child, *next;
} Node;

typedef struct {
    Node *node;
    uint64_t begin;
} Frame;

typedef struct {
    const Node *parent;
    const char *name;
    Node *node;
} Slot;

#define MAX_DEPTH 64
#define SLOTS 256 /* power of two */
#define MAX_THREADS 1024

typedef struct {
    int depth;
    Node *root; /* on the heap: it outlives the thread */
    Frame frames[MAX_DEPTH];
    Slot cache[SLOTS];
} Thread;

static __thread Thread self;

/* Every thread's root, for the count at finalize (registered once per thread). */
static Node *roots[MAX_THREADS];
static unsigned nroots;

KOKKOS_TOOL_NO_INIT

KOKKOS_TOOL_NO_FENCING

static __attribute__((noinline)) Node *miss(Node *parent, const char *name, Slot *slot)
{
    if (!self.root) {
        if (!(self.root = calloc(1, sizeof *self.root)))
            return NULL;
        unsigned i = __atomic_fetch_add(&nroots, 1, __ATOMIC_RELAXED);
        if (i < MAX_THREADS)
            __atomic_store_n(&roots[i], self.root, __ATOMIC_RELEASE);
        parent = self.root;
    }
    Node *n = parent->child;
    while (n && strcmp(n->name, name) != 0)
        n = n->next;
    if (!n) {
        n = calloc(1, sizeof *n);
        if (!n)
            return NULL;
        n->name = strdup(name);
        n->min = UINT64_MAX;
        n->next = parent->child;
        parent->child = n;
    }
    slot->parent = parent;
    slot->name = name;
    slot->node = n;
    return n;
}

EXPORT void kokkosp_begin_parallel_for(const char *name, uint32_t dev_id, uint64_t *kid)
{
    (void)dev_id;
    int d = self.depth;
    *kid = (uint64_t)d;
    if (!name || d >= MAX_DEPTH)
        return;
    Node *parent = d ? self.frames[d - 1].node : self.root;
    Slot *slot = &self.cache[(((uintptr_t)name >> 3) ^ ((uintptr_t)parent >> 4)) & (SLOTS - 1)];
    Node *n;
    if (slot->parent == parent && slot->name == name && strcmp(slot->node->name, name) == 0)
        n = slot->node;
    else if (!(n = miss(parent, name, slot)))
        return;
    self.frames[d].node = n;
    self.frames[d].begin = __rdtsc();
    self.depth = d + 1;
}

EXPORT void kokkosp_end_parallel_for(uint64_t kid)
{
    uint64_t end = __rdtsc();
    int d = self.depth - 1;
    if (d < 0 || (uint64_t)d != kid)
        return;
    self.depth = d;
    Node *n = self.frames[d].node;
    uint64_t dur = end - self.frames[d].begin;
    n->count++;
    n->sum += dur;
    if (dur < n->min)
        n->min = dur;
    if (dur > n->max)
        n->max = dur;
    n->sum_sq += (double)dur * (double)dur;
}

static uint64_t count(const Node *n)
{
    uint64_t c = n->count;
    for (const Node *k = n->child; k; k = k->next)
        c += count(k);
    return c;
}

EXPORT void kokkosp_finalize_library(void)
{
    /* The driver joins its threads before it finalizes: every tree is complete. */
    unsigned n = __atomic_load_n(&nroots, __ATOMIC_ACQUIRE);
    uint64_t total = 0;
    for (unsigned i = 0; i < n && i < MAX_THREADS; i++) {
        const Node *root = __atomic_load_n(&roots[i], __ATOMIC_ACQUIRE);
        if (root)
            total += count(root);
    }
    printf("inplace_tool_count=%llu\n", (unsigned long long)total);
    fflush(stdout);
}

/* A stand-in for bale's Conveyors library, written for kprof's tests from the
 * library's public description (no code of bale's): the same public entry names,
 * signatures and status values, and the same structure. Public `convey_*`
 * entries dispatch through the conveyor's method table (laid out as bale 3.0's):
 * push, pull, epush and epull at once, begin, advance and free after checking
 * their argument and state. A porter moves full buffers either through a shmem_ptr address (memcpy into
 * the peer's symmetric buffer, an atomic store as the signal) or, between
 * "nodes" (forced with CONVEY_NLOCAL=1), with shmem_putmem_nbi, completed later
 * by shmem_quiet and a signal put. With CONVEY_NLOCAL=k (1 < k < PEs, k dividing
 * the PEs: "nodes" of k consecutive PEs) a conveyor has two porters, as bale's
 * matrix conveyor (its remote hop second): a message first goes through the local
 * porter to the PE of the sender's node with the destination's local rank, tagged
 * with the destination's node, then that PE moves it (in convey_advance) through
 * the remote porter to the destination, tagged with its origin's local rank. A
 * porter numbers its PEs by rank (its `relative` array holds their PEs), and its
 * first fields are laid out as bale 3.0's porter_t. With CONVEY_ORDER=3 as well
 * (k * k dividing the PEs) a conveyor has three porters, as bale's tensor
 * conveyor: PE (z, y, x) = z * k^2 + y * k + x (node z * k + y, local rank x)
 * sends to (z', y', x') through the local porter to (z, y, y'), then the remote
 * porter (among the PEs (j, x, y) of every group j) to (z', y', y), then the
 * local porter of that node to the destination. The remote porter's
 * nonblock_progress completes its puts (shmem_quiet) and signals their
 * destinations; called for one rank, it does so only when a put to that rank is
 * in flight (else it returns false), as bale's. A push into a full buffer that cannot be sent
 * yet returns convey_FAIL and the caller retries, as with the real library.
 * Elastic conveyors (convey_new_elastic) carry items of any size up to a bound
 * (convey_epush / convey_epull, 0-byte items included). Built as a STATIC
 * library linked into the test programs, as bale builds it.
 *
 * Unlike bale, a freed conveyor's memory is kept (its methods then return
 * convey_error_STATE), so that the bad-input tests' pushes after convey_free
 * are an error return rather than undefined behaviour. With
 * STANDIN_CONVEY_BAD_FROM=<n> every n-th successful pull reports a source PE
 * outside the job (a fault the tests inject). With STANDIN_CONVEY_YIELD=1 an
 * advance with nothing to pull yields the CPU (for more PEs than cores). */
#ifndef STANDIN_CONVEY_H
#define STANDIN_CONVEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* bale 3.0's values: FAIL and DONE are 0, OK is 1; errors are negative. */
enum convey_status { convey_DONE = 0, convey_FAIL = 0, convey_OK = 1, convey_NEAR = 2 };

enum convey_error {
  convey_error_OFLO = -10,  /* item larger than the conveyor's bound */
  convey_error_MISFIT = -9, /* next item is not of the pull's size */
  convey_error_RIGID = -8,  /* elastic operation on a rigid conveyor */
  convey_error_RANGE = -4,  /* PE out of range */
  convey_error_NULL = -3,   /* a NULL conveyor */
  convey_error_STATE = -1,  /* wrong state (e.g. used after convey_free) */
};

/* What convey_epull delivers: the item's size, a pointer to it (valid until
 * the next pull) and the PE that pushed it. */
typedef struct {
  size_t bytes;
  void *data;
  int64_t from;
} convey_item_t;

typedef struct convey convey_t;

convey_t *convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options);
/* An elastic conveyor: items up to `max_bytes` (bale's signature; `alloc` unused). */
convey_t *convey_new_elastic(size_t item_bound, size_t max_bytes, size_t n_local,
                             const void *alloc, uint64_t options);
int convey_begin(convey_t *c, size_t item_size, size_t align);
int convey_push(convey_t *c, const void *item, int64_t pe);
int convey_pull(convey_t *c, void *item, int64_t *from);
int convey_epush(convey_t *c, size_t bytes, const void *item, int64_t pe);
int convey_epull(convey_t *c, convey_item_t *result);
int convey_advance(convey_t *c, bool done);
int convey_free(convey_t *c);

/* The stand-in's own count of what its porters sent, per hop destination PE and
 * path (0 = local memcpy through shmem_ptr, 1 = shmem_putmem_nbi, 2 = the
 * signals nonblock_progress put after its shmem_quiet), summed over every
 * conveyor of the process: buffers and bytes (16-byte header + packets: an
 * 8-byte routing tag in multi-hop conveyors, and the item), signals and their
 * 8 bytes each. */
void standin_convey_physical(int path, int64_t pe, uint64_t *buffers, uint64_t *bytes);

/* Calls of the porters' nonblock_progress, and those that completed the puts
 * in flight (shmem_quiet, then the signals). */
void standin_convey_progress(uint64_t *calls, uint64_t *forced);

/* Prints the stand-in's counts, one line each (`line` prints a line at once):
 * "physical <me> <local|remote|progress> <pe> <buffers> <bytes>" per path and
 * PE, and "progress <me> <calls> <forced>". */
static inline void standin_convey_print(int me, int npes, int (*line)(const char *, ...)) {
  static const char *const paths[3] = {"local", "remote", "progress"};
  for (int path = 0; path < 3; path++)
    for (int d = 0; d < npes; d++) {
      uint64_t b, n;
      standin_convey_physical(path, d, &b, &n);
      line("physical %d %s %d %llu %llu\n", me, paths[path], d, (unsigned long long)b,
           (unsigned long long)n);
    }
  uint64_t calls, forced;
  standin_convey_progress(&calls, &forced);
  line("progress %d %llu %llu\n", me, (unsigned long long)calls, (unsigned long long)forced);
}

#endif

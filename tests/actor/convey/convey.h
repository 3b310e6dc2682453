/* A stand-in for bale's Conveyors library, written for kprof's tests from the
 * library's public description (no code of bale's): the same public entry names
 * and the same structure. Public `convey_*` entries dispatch through the
 * conveyor's method table; a porter moves full buffers either through a
 * shmem_ptr address (memcpy into the peer's symmetric buffer, an atomic store as
 * the signal) or, between "nodes" (forced with CONVEY_NLOCAL=1), with
 * shmem_putmem_nbi, completed later by shmem_quiet and a signal put. A push into
 * a full buffer that cannot be sent yet returns convey_FAIL and the caller
 * retries, as with the real library. Built as a STATIC library linked into the
 * test programs, as bale builds it. */
#ifndef STANDIN_CONVEY_H
#define STANDIN_CONVEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum convey_status { convey_FAIL = -1, convey_OK = 0 };

typedef struct convey convey_t;

convey_t *convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options);
int convey_begin(convey_t *c, size_t item_size, size_t align);
int convey_push(convey_t *c, const void *item, int64_t pe);
int convey_pull(convey_t *c, void *item, int64_t *from);
bool convey_advance(convey_t *c, bool done);
int convey_free(convey_t *c);

/* The stand-in's own count of what its porter sent, per destination PE and path
 * (0 = local memcpy through shmem_ptr, 1 = shmem_putmem_nbi), summed over every
 * conveyor of the process: buffers and bytes (16-byte header + items). */
void standin_convey_physical(int path, int64_t pe, uint64_t *buffers, uint64_t *bytes);

#endif

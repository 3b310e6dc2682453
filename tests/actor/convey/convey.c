/* Stand-in Conveyors: see convey.h. One hop, one buffer per (source, destination)
 * pair; the destination owns a symmetric inbox slot per source, a signal word per
 * source (bytes in the slot, 0 = empty) and each source a credit word per
 * destination (1 = the destination's slot for it is free). */
#include "convey.h"

#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16 /* bytes of a buffer's header (source, item count) */
#define MAX_PES 64

struct porter;

/* The porter's methods, as bale reaches them: through a table, with bale's
 * signatures (dest: porter-relative, here the PE; level and signal unused). */
struct porter_methods {
  void (*send)(struct porter *p, int dest, uint64_t level, size_t n_bytes, const char *buf,
               uint64_t signal);
  void (*progress)(struct porter *p, int dest);
};

struct porter {
  const struct porter_methods *m;
  int me, npes;
  size_t slot_bytes;
  char *inbox;               /* symmetric: npes slots of slot_bytes, by source */
  long long *signal;         /* symmetric: bytes waiting from each source */
  long long *credit;         /* symmetric: 1 when my slot at each dest is free */
  long long *finished;       /* symmetric: PEs that finished sending */
  char *peer_inbox[MAX_PES]; /* shmem_ptr of my slot in each peer's inbox (local path) */
  long long *peer_signal[MAX_PES];
  long long *peer_credit[MAX_PES];
  long long pending[MAX_PES]; /* remote path: bytes put, not yet signalled */
};

/* The conveyor's methods: the public entries jump through this table. */
struct convey_methods {
  int (*begin)(convey_t *c, size_t item_size, size_t align);
  int (*push)(convey_t *c, const void *item, int64_t pe);
  int (*pull)(convey_t *c, void *item, int64_t *from);
  bool (*advance)(convey_t *c, bool done);
  int (*free)(convey_t *c);
};

struct convey {
  const struct convey_methods *_class_;
  size_t capacity, item_size;
  struct porter porter;
  char *out[MAX_PES];     /* send buffer per destination: header + items */
  size_t out_n[MAX_PES];  /* items in it */
  size_t in_pos[MAX_PES]; /* next item to pull from each source's slot */
  int next_src;
  bool done_sent;
  bool force_remote;
};

static uint64_t phys_buffers[2][MAX_PES], phys_bytes[2][MAX_PES];

void standin_convey_physical(int path, int64_t pe, uint64_t *buffers, uint64_t *bytes) {
  *buffers = phys_buffers[path][pe];
  *bytes = phys_bytes[path][pe];
}

/* --- porter --- */

static void local_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                       const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  memcpy(p->peer_inbox[dest], buf, n_bytes);
  __atomic_store_n(p->peer_signal[dest], (long long)n_bytes, __ATOMIC_RELEASE);
  phys_buffers[0][dest]++;
  phys_bytes[0][dest] += n_bytes;
}

static void local_progress(struct porter *p, int dest) { (void)p, (void)dest; }

static void nonblock_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                          const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  shmem_putmem_nbi(p->inbox + (size_t)p->me * p->slot_bytes, buf, n_bytes, dest);
  p->pending[dest] = (long long)n_bytes;
  phys_buffers[1][dest]++;
  phys_bytes[1][dest] += n_bytes;
}

/* Completes every outstanding put, then signals their destinations. */
static void nonblock_progress(struct porter *p, int dest) {
  (void)dest;
  shmem_quiet();
  for (int d = 0; d < p->npes; d++) {
    if (p->pending[d]) {
      shmem_longlong_p(&p->signal[p->me], p->pending[d], d);
      p->pending[d] = 0;
    }
  }
}

static const struct porter_methods local_porter = {local_send, local_progress};
static const struct porter_methods remote_porter = {nonblock_send, nonblock_progress};

/* --- conveyor methods --- */

static int simple_begin(convey_t *c, size_t item_size, size_t align) {
  (void)align;
  struct porter *p = &c->porter;
  c->item_size = item_size;
  p->slot_bytes = HEADER + c->capacity * item_size;
  p->inbox = shmem_malloc((size_t)p->npes * p->slot_bytes);
  p->signal = shmem_calloc((size_t)p->npes, sizeof(long long));
  p->credit = shmem_calloc((size_t)p->npes, sizeof(long long));
  p->finished = shmem_calloc(1, sizeof(long long));
  if (!p->inbox || !p->signal || !p->credit || !p->finished) return -2;
  for (int d = 0; d < p->npes; d++) {
    p->credit[d] = 1;
    c->out[d] = malloc(p->slot_bytes);
    c->out_n[d] = 0;
    c->in_pos[d] = 0;
    p->pending[d] = 0;
  }
  p->m = &local_porter;
  for (int d = 0; d < p->npes && !c->force_remote; d++) {
    p->peer_inbox[d] = shmem_ptr(p->inbox + (size_t)p->me * p->slot_bytes, d);
    p->peer_signal[d] = shmem_ptr(&p->signal[p->me], d);
    p->peer_credit[d] = shmem_ptr(&p->credit[p->me], d);
    if (!p->peer_inbox[d] || !p->peer_signal[d] || !p->peer_credit[d]) c->force_remote = true;
  }
  if (c->force_remote) p->m = &remote_porter;
  c->done_sent = false;
  shmem_barrier_all();
  return convey_OK;
}

/* Sends the buffer for `pe` if its slot there is free. */
static bool try_send(convey_t *c, int pe) {
  struct porter *p = &c->porter;
  if (c->out_n[pe] == 0) return true;
  if (!__atomic_load_n(&p->credit[pe], __ATOMIC_ACQUIRE) || p->pending[pe]) return false;
  uint64_t *hdr = (uint64_t *)c->out[pe];
  hdr[0] = (uint64_t)p->me;
  hdr[1] = c->out_n[pe];
  p->credit[pe] = 0;
  p->m->send(p, pe, 0, HEADER + c->out_n[pe] * c->item_size, c->out[pe], 1);
  c->out_n[pe] = 0;
  return true;
}

static int simple_push(convey_t *c, const void *item, int64_t pe) {
  if (pe < 0 || pe >= c->porter.npes) return -3;
  /* The buffer is the source of a put still in flight: not writable yet. */
  if (c->porter.pending[pe]) return convey_FAIL;
  if (c->out_n[pe] == c->capacity && (!try_send(c, (int)pe) || c->porter.pending[pe]))
    return convey_FAIL;
  memcpy(c->out[pe] + HEADER + c->out_n[pe] * c->item_size, item, c->item_size);
  c->out_n[pe]++;
  return convey_OK;
}

/* Gives my slot for `src` back to it. */
static void return_credit(convey_t *c, int src) {
  struct porter *p = &c->porter;
  if (c->force_remote)
    shmem_longlong_p(&p->credit[p->me], 1, src);
  else
    __atomic_store_n(p->peer_credit[src], 1, __ATOMIC_RELEASE);
}

static int simple_pull(convey_t *c, void *item, int64_t *from) {
  struct porter *p = &c->porter;
  for (int k = 0; k < p->npes; k++) {
    int src = (c->next_src + k) % p->npes;
    long long n = __atomic_load_n(&p->signal[src], __ATOMIC_ACQUIRE);
    if (!n) continue;
    char *slot = p->inbox + (size_t)src * p->slot_bytes;
    uint64_t count = ((uint64_t *)slot)[1];
    memcpy(item, slot + HEADER + c->in_pos[src] * c->item_size, c->item_size);
    if (from) *from = src;
    if (++c->in_pos[src] == count) {
      c->in_pos[src] = 0;
      __atomic_store_n(&p->signal[src], 0, __ATOMIC_RELAXED);
      return_credit(c, src);
      c->next_src = src + 1;
    }
    return convey_OK;
  }
  return convey_FAIL;
}

/* Returns false once every PE is done and everything sent was pulled. */
static bool simple_advance(convey_t *c, bool done) {
  struct porter *p = &c->porter;
  p->m->progress(p, -1);
  bool all_sent = true;
  for (int d = 0; d < p->npes; d++) all_sent &= try_send(c, d);
  if (done && all_sent && !c->done_sent) {
    /* Finished once every buffer I sent was consumed: all credits back. */
    bool all_back = true;
    for (int d = 0; d < p->npes; d++)
      all_back &= __atomic_load_n(&p->credit[d], __ATOMIC_ACQUIRE) && !p->pending[d];
    if (all_back) {
      for (int d = 0; d < p->npes; d++) shmem_longlong_atomic_inc(p->finished, d);
      c->done_sent = true;
    }
  }
  if (c->force_remote) shmem_quiet();
  if (!c->done_sent) return true;
  if (shmem_longlong_atomic_fetch(p->finished, p->me) < p->npes) return true;
  for (int s = 0; s < p->npes; s++)
    if (__atomic_load_n(&p->signal[s], __ATOMIC_ACQUIRE)) return true;
  return false;
}

static int simple_free(convey_t *c) {
  struct porter *p = &c->porter;
  shmem_barrier_all();
  for (int d = 0; d < p->npes; d++) free(c->out[d]);
  shmem_free(p->inbox);
  shmem_free(p->signal);
  shmem_free(p->credit);
  shmem_free(p->finished);
  free(c);
  return convey_OK;
}

static const struct convey_methods simple_methods = {
    simple_begin, simple_push, simple_pull, simple_advance, simple_free,
};

/* --- public entries: dispatch through the method table --- */

convey_t *convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options) {
  (void)n_local, (void)n_buffers, (void)options;
  convey_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->_class_ = &simple_methods;
  c->capacity = capacity ? capacity : 64;
  c->porter.me = shmem_my_pe();
  c->porter.npes = shmem_n_pes();
  if (c->porter.npes > MAX_PES) {
    free(c);
    return NULL;
  }
  const char *nlocal = getenv("CONVEY_NLOCAL");
  c->force_remote = nlocal && atoi(nlocal) == 1;
  return c;
}

int convey_begin(convey_t *c, size_t item_size, size_t align) {
  return c->_class_->begin(c, item_size, align);
}
int convey_push(convey_t *c, const void *item, int64_t pe) { return c->_class_->push(c, item, pe); }
int convey_pull(convey_t *c, void *item, int64_t *from) { return c->_class_->pull(c, item, from); }
bool convey_advance(convey_t *c, bool done) { return c->_class_->advance(c, done); }
int convey_free(convey_t *c) { return c->_class_->free(c); }

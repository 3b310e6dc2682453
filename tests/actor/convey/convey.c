/* Stand-in Conveyors: see convey.h. One hop, one buffer per (source, destination)
 * pair; the destination owns a symmetric inbox slot per source, a signal word per
 * source (bytes in the slot, 0 = empty) and each source a credit word per
 * destination (1 = the destination's slot for it is free). A buffer is a 16-byte
 * header (source, items) and its items: `item_size` bytes each, or in an elastic
 * conveyor an 8-byte length and the item padded to 8 bytes. */
#include "convey.h"

#include <sched.h>
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16 /* bytes of a buffer's header (source, item count) */
#define MAX_PES 64

struct porter;

/* The porter's methods, as bale reaches them: through a table, with bale's
 * signatures (dest: porter-relative, here the PE; level and signal unused;
 * true: done). */
struct porter_methods {
  bool (*send)(struct porter *p, int dest, uint64_t level, size_t n_bytes, const char *buf,
               uint64_t signal);
  bool (*progress)(struct porter *p, int dest);
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


/* The conveyor's methods, laid out as bale 3.0's table (the public entries jump
 * through it: push at +8, pull +0x10, advance +0x20, begin +0x28, free +0x38,
 * epush +0x58, epull +0x60); the slots the stand-in has no use for are NULL. */
struct convey_methods {
  const struct convey_methods *_super_;
  int (*push)(convey_t *c, const void *item, int64_t pe);
  int (*pull)(convey_t *c, void *item, int64_t *from);
  int (*unpull)(convey_t *c);
  int (*advance)(convey_t *c, bool done);
  int (*begin)(convey_t *c, size_t item_size, size_t align);
  int (*reset)(convey_t *c);
  int (*free)(convey_t *c);
  int64_t (*statistic)(convey_t *c, int which);
  const char *(*error_string)(convey_t *c, int error);
  void *(*apull)(convey_t *c, int64_t *from);
  int (*epush)(convey_t *c, size_t bytes, const void *item, int64_t pe);
  int (*epull)(convey_t *c, convey_item_t *result);
};

enum state { DORMANT, WORKING, FREED };

struct convey {
  const struct convey_methods *_class_;
  enum state state;
  bool elastic;
  size_t capacity, item_size, max_bytes;
  size_t cap_bytes; /* bytes of items a buffer holds */
  struct porter porter;
  char *out[MAX_PES];       /* send buffer per destination: header + items */
  size_t out_n[MAX_PES];    /* items in it */
  size_t out_bytes[MAX_PES]; /* bytes of items in it */
  size_t in_pos[MAX_PES];   /* byte offset of the next item in each source's slot */
  size_t in_n[MAX_PES];     /* items pulled from it */
  int release;              /* 1 + a source whose emptied slot is given back at the next call */
  int next_src;
  bool done_sent;
  bool force_remote;
  uint64_t bad_from, pulled; /* STANDIN_CONVEY_BAD_FROM, successful pulls */
  bool yield;                /* STANDIN_CONVEY_YIELD */
};

static uint64_t phys_buffers[2][MAX_PES], phys_bytes[2][MAX_PES];

void standin_convey_physical(int path, int64_t pe, uint64_t *buffers, uint64_t *bytes) {
  *buffers = phys_buffers[path][pe];
  *bytes = phys_bytes[path][pe];
}

/* --- porter --- */

static bool local_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                       const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  memcpy(p->peer_inbox[dest], buf, n_bytes);
  __atomic_store_n(p->peer_signal[dest], (long long)n_bytes, __ATOMIC_RELEASE);
  phys_buffers[0][dest]++;
  phys_bytes[0][dest] += n_bytes;
  return true;
}

static bool local_progress(struct porter *p, int dest) {
  (void)p, (void)dest;
  return true;
}

static bool nonblock_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                          const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  shmem_putmem_nbi(p->inbox + (size_t)p->me * p->slot_bytes, buf, n_bytes, dest);
  p->pending[dest] = (long long)n_bytes;
  phys_buffers[1][dest]++;
  phys_bytes[1][dest] += n_bytes;
  return true;
}

/* Completes every outstanding put, then signals their destinations. */
static bool nonblock_progress(struct porter *p, int dest) {
  (void)dest;
  shmem_quiet();
  for (int d = 0; d < p->npes; d++) {
    if (p->pending[d]) {
      shmem_longlong_p(&p->signal[p->me], p->pending[d], d);
      p->pending[d] = 0;
    }
  }
  return true;
}

static const struct porter_methods local_porter = {local_send, local_progress};
static const struct porter_methods remote_porter = {nonblock_send, nonblock_progress};

/* --- conveyor methods --- */

/* Bytes an item of `bytes` takes in a buffer. */
static size_t record_bytes(const convey_t *c, size_t bytes) {
  return c->elastic ? 8 + ((bytes + 7) & ~(size_t)7) : bytes;
}

static int simple_begin(convey_t *c, size_t item_size, size_t align) {
  (void)align;
  if (c->state != DORMANT) return convey_error_STATE;
  struct porter *p = &c->porter;
  c->item_size = item_size;
  c->cap_bytes = c->capacity * record_bytes(c, c->elastic ? c->max_bytes : item_size);
  p->slot_bytes = HEADER + c->cap_bytes;
  p->inbox = shmem_malloc((size_t)p->npes * p->slot_bytes);
  p->signal = shmem_calloc((size_t)p->npes, sizeof(long long));
  p->credit = shmem_calloc((size_t)p->npes, sizeof(long long));
  p->finished = shmem_calloc(1, sizeof(long long));
  if (!p->inbox || !p->signal || !p->credit || !p->finished) return -7;
  for (int d = 0; d < p->npes; d++) {
    p->credit[d] = 1;
    c->out[d] = malloc(p->slot_bytes);
    c->out_n[d] = c->out_bytes[d] = 0;
    c->in_pos[d] = c->in_n[d] = 0;
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
  c->release = 0;
  c->state = WORKING;
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
  /* The porter's answer is what the caller goes by (kprof's hook must keep it). */
  if (!p->m->send(p, pe, 0, HEADER + c->out_bytes[pe], c->out[pe], 1)) {
    p->credit[pe] = 1;
    return false;
  }
  c->out_n[pe] = c->out_bytes[pe] = 0;
  return true;
}

/* Appends an item of `bytes` for `pe`, sending the full buffer first. */
static int put_item(convey_t *c, const void *item, size_t bytes, int64_t pe) {
  if (c->state != WORKING) return convey_error_STATE;
  if (pe < 0 || pe >= c->porter.npes) return convey_error_RANGE;
  /* The buffer is the source of a put still in flight: not writable yet. */
  if (c->porter.pending[pe]) return convey_FAIL;
  size_t need = record_bytes(c, bytes);
  if (c->out_bytes[pe] + need > c->cap_bytes &&
      (!try_send(c, (int)pe) || c->porter.pending[pe]))
    return convey_FAIL;
  char *dst = c->out[pe] + HEADER + c->out_bytes[pe];
  if (c->elastic) {
    uint64_t n = bytes;
    memcpy(dst, &n, 8);
    dst += 8;
  }
  if (bytes) memcpy(dst, item, bytes);
  c->out_bytes[pe] += need;
  c->out_n[pe]++;
  return convey_OK;
}

static int simple_push(convey_t *c, const void *item, int64_t pe) {
  return put_item(c, item, c->item_size, pe);
}

static int simple_epush(convey_t *c, size_t bytes, const void *item, int64_t pe) {
  if (!c->elastic) return convey_error_RIGID;
  if (bytes > c->max_bytes) return convey_error_OFLO;
  return put_item(c, item, bytes, pe);
}

/* Gives my slot for `src` back to it. */
static void return_credit(convey_t *c, int src) {
  struct porter *p = &c->porter;
  if (c->force_remote)
    shmem_longlong_p(&p->credit[p->me], 1, src);
  else
    __atomic_store_n(p->peer_credit[src], 1, __ATOMIC_RELEASE);
}

/* Gives back the slot emptied by the previous pull (whose item the caller
 * may have read in place until now). */
static void release_slot(convey_t *c) {
  if (c->release) {
    return_credit(c, c->release - 1);
    c->release = 0;
  }
}

/* The next item to pull: its source (-1: none), address and size. */
static int next_item(convey_t *c, char **data, size_t *bytes) {
  struct porter *p = &c->porter;
  for (int k = 0; k < p->npes; k++) {
    int src = (c->next_src + k) % p->npes;
    if (!__atomic_load_n(&p->signal[src], __ATOMIC_ACQUIRE)) continue;
    char *rec = p->inbox + (size_t)src * p->slot_bytes + HEADER + c->in_pos[src];
    if (c->elastic) {
      uint64_t n;
      memcpy(&n, rec, 8);
      *bytes = n;
      *data = rec + 8;
    } else {
      *bytes = c->item_size;
      *data = rec;
    }
    return src;
  }
  return -1;
}

/* The item of `src` was pulled: the slot is emptied after its last item. */
static int64_t consume(convey_t *c, int src, size_t bytes) {
  struct porter *p = &c->porter;
  uint64_t count = ((uint64_t *)(p->inbox + (size_t)src * p->slot_bytes))[1];
  c->in_pos[src] += record_bytes(c, bytes);
  if (++c->in_n[src] == count) {
    c->in_pos[src] = c->in_n[src] = 0;
    __atomic_store_n(&p->signal[src], 0, __ATOMIC_RELAXED);
    c->release = src + 1;
    c->next_src = src + 1;
  }
  if (c->bad_from && ++c->pulled % c->bad_from == 0) return p->npes + 7;
  return src;
}

static int simple_pull(convey_t *c, void *item, int64_t *from) {
  if (c->state != WORKING) return convey_error_STATE;
  release_slot(c);
  char *data;
  size_t bytes;
  int src = next_item(c, &data, &bytes);
  if (src < 0) return convey_FAIL;
  if (bytes != c->item_size) return convey_error_MISFIT;
  memcpy(item, data, bytes);
  int64_t f = consume(c, src, bytes);
  if (from) *from = f;
  return convey_OK;
}

static int simple_epull(convey_t *c, convey_item_t *result) {
  if (c->state != WORKING) return convey_error_STATE;
  if (!c->elastic) return convey_error_RIGID;
  release_slot(c);
  char *data;
  size_t bytes;
  int src = next_item(c, &data, &bytes);
  if (src < 0) return convey_FAIL;
  result->bytes = bytes;
  result->data = data;
  result->from = consume(c, src, bytes);
  return convey_OK;
}

/* convey_OK while active, convey_DONE once every PE is done and everything
 * sent was pulled. */
static int simple_advance(convey_t *c, bool done) {
  if (c->state != WORKING) return convey_error_STATE;
  struct porter *p = &c->porter;
  release_slot(c);
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
  /* Nothing to pull: with STANDIN_CONVEY_YIELD=1, let the other PEs of an
   * oversubscribed node run (the tests run 4 busy-polling PEs on fewer cores). */
  if (c->yield) {
    bool incoming = false;
    for (int s = 0; s < p->npes && !incoming; s++)
      incoming = __atomic_load_n(&p->signal[s], __ATOMIC_ACQUIRE) != 0;
    if (!incoming) sched_yield();
  }
  if (!c->done_sent) return convey_OK;
  if (shmem_longlong_atomic_fetch(p->finished, p->me) < p->npes) return convey_OK;
  for (int s = 0; s < p->npes; s++)
    if (__atomic_load_n(&p->signal[s], __ATOMIC_ACQUIRE)) return convey_OK;
  return convey_DONE;
}

/* What a freed conveyor answers (see convey.h). */
static int dead_push(convey_t *c, const void *item, int64_t pe) {
  (void)c, (void)item, (void)pe;
  return convey_error_STATE;
}
static int dead_pull(convey_t *c, void *item, int64_t *from) {
  (void)c, (void)item, (void)from;
  return convey_error_STATE;
}
static int dead_advance(convey_t *c, bool done) {
  (void)c, (void)done;
  return convey_error_STATE;
}
static int dead_begin(convey_t *c, size_t item_size, size_t align) {
  (void)c, (void)item_size, (void)align;
  return convey_error_STATE;
}
static int dead_free(convey_t *c) {
  (void)c;
  return convey_error_STATE;
}
static int dead_epush(convey_t *c, size_t bytes, const void *item, int64_t pe) {
  (void)c, (void)bytes, (void)item, (void)pe;
  return convey_error_STATE;
}
static int dead_epull(convey_t *c, convey_item_t *result) {
  (void)c, (void)result;
  return convey_error_STATE;
}

static const struct convey_methods dead_methods = {
    .push = dead_push, .pull = dead_pull, .advance = dead_advance, .begin = dead_begin,
    .free = dead_free, .epush = dead_epush, .epull = dead_epull,
};

static int simple_free(convey_t *c) {
  struct porter *p = &c->porter;
  if (c->state == WORKING) {
    shmem_barrier_all();
    release_slot(c);
    for (int d = 0; d < p->npes; d++) free(c->out[d]);
    shmem_free(p->inbox);
    shmem_free(p->signal);
    shmem_free(p->credit);
    shmem_free(p->finished);
  }
  /* Kept, answering errors (see convey.h). */
  c->state = FREED;
  c->_class_ = &dead_methods;
  return convey_OK;
}

static const struct convey_methods simple_methods = {
    .push = simple_push, .pull = simple_pull, .advance = simple_advance,
    .begin = simple_begin, .free = simple_free, .epush = simple_epush,
    .epull = simple_epull,
};

/* --- public entries: dispatch through the method table --- */

static convey_t *make(size_t capacity, bool elastic, size_t max_bytes) {
  convey_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->_class_ = &simple_methods;
  c->state = DORMANT;
  c->elastic = elastic;
  c->max_bytes = max_bytes;
  c->capacity = capacity ? capacity : 64;
  c->porter.me = shmem_my_pe();
  c->porter.npes = shmem_n_pes();
  if (c->porter.npes > MAX_PES) {
    free(c);
    return NULL;
  }
  const char *nlocal = getenv("CONVEY_NLOCAL");
  c->force_remote = nlocal && atoi(nlocal) == 1;
  const char *bad = getenv("STANDIN_CONVEY_BAD_FROM");
  c->bad_from = bad ? strtoull(bad, NULL, 10) : 0;
  const char *yield = getenv("STANDIN_CONVEY_YIELD");
  c->yield = yield && atoi(yield) == 1;
  return c;
}

convey_t *convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options) {
  (void)n_local, (void)n_buffers, (void)options;
  return make(capacity, false, 0);
}

convey_t *convey_new_elastic(size_t item_bound, size_t max_bytes, size_t n_local,
                             const void *alloc, uint64_t options) {
  (void)item_bound, (void)n_local, (void)alloc, (void)options;
  return make(64, true, max_bytes);
}

/* As in bale, these three check their argument and state before dispatching
 * (so they are not bare dispatches: gcc starts them with `test %rdi,%rdi; je`). */
int convey_begin(convey_t *c, size_t item_size, size_t align) {
  if (c == NULL) return convey_error_NULL;
  if (c->state != DORMANT) return convey_error_STATE;
  return c->_class_->begin(c, item_size, align);
}
int convey_push(convey_t *c, const void *item, int64_t pe) { return c->_class_->push(c, item, pe); }
int convey_pull(convey_t *c, void *item, int64_t *from) { return c->_class_->pull(c, item, from); }
int convey_epush(convey_t *c, size_t bytes, const void *item, int64_t pe) {
  return c->_class_->epush(c, bytes, item, pe);
}
int convey_epull(convey_t *c, convey_item_t *result) { return c->_class_->epull(c, result); }
int convey_advance(convey_t *c, bool done) {
  if (c == NULL) return convey_error_NULL;
  if (c->state == DORMANT) return convey_error_STATE;
  int result = c->_class_->advance(c, done);
  return result < 0 ? convey_error_STATE : result;
}
int convey_free(convey_t *c) {
  if (c == NULL) return convey_OK;
  return c->_class_->free(c);
}

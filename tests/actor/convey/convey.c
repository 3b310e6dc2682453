/* Stand-in Conveyors: see convey.h. A conveyor has one porter (one hop), two
 * (two hops: local, then remote) or three (local, remote, local). A porter has one buffer per (source,
 * destination) pair of its ranks; the destination owns a symmetric inbox slot per
 * source rank and a signal word per source rank (buffers that source has put in
 * the slot so far), each source a credit word per destination rank (buffers the
 * destination has taken from its slot so far: the slot is free when that equals
 * the buffers sent). The words only grow and only their owner's peers write them:
 * no PE clears a word that another PE writes, which Open MPI 4.1's OpenSHMEM
 * over UCX did not always keep (a cleared credit or signal seen set again, about
 * once in 50 runs of 8 oversubscribed PEs). A buffer is a 16-byte header (source rank, packets) and its
 * packets: an 8-byte routing tag in a two-hop conveyor, then the item
 * (`item_size` bytes, or in an elastic conveyor an 8-byte length and the item
 * padded to 8 bytes). */
#include "convey.h"

#include <sched.h>
#include <shmem.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16 /* bytes of a buffer's header (source rank, packet count) */
#define TAG 8     /* bytes of a routing tag */
#define MAX_PES 64

struct porter;

/* The porter's methods, as bale reaches them: through a table, with bale's
 * signatures (dest: porter-relative, a rank; level and signal unused;
 * true: done). */
struct porter_methods {
  bool (*send)(struct porter *p, int dest, uint64_t level, size_t n_bytes, const char *buf,
               uint64_t signal);
  bool (*progress)(struct porter *p, int dest);
};

/* Its first fields are laid out as bale 3.0's porter_t (through `relative`, at
 * byte 64): kprof maps local_send's porter-relative destination to a PE with
 * them (relative[dest]), as bale's own profiling does. */
struct porter {
  const struct porter_methods *m;
  size_t tag_bytes;     /* routing tag per packet: 0 or TAG */
  size_t item_bytes;    /* bytes of a rigid item */
  size_t packet_bytes;  /* largest packet: tag + item record */
  size_t buffer_bytes;  /* a buffer (and an inbox slot): header + packets */
  size_t buffer_stride; /* between inbox slots */
  int n_ranks;          /* PEs it moves buffers among */
  int my_rank;          /* this PE's rank among them */
  int abundance, opcode; /* unused (bale's) */
  int32_t *relative;    /* PE of each rank */
  /* The stand-in's own. */
  int path;                  /* 0: memcpy through shmem_ptr, 1: shmem_putmem_nbi */
  size_t cap_bytes;          /* bytes of packets a buffer holds */
  char *inbox;               /* symmetric: n_ranks slots, by source rank */
  long long *signal;         /* symmetric: buffers each source rank put in my inbox */
  long long *credit;         /* symmetric: buffers each dest rank took from my slot */
  long long *finished;       /* symmetric: ranks that finished sending */
  char *peer_inbox[MAX_PES]; /* shmem_ptr of my slot in each rank's inbox (local path) */
  long long *peer_signal[MAX_PES];
  long long *peer_credit[MAX_PES];
  long long pending[MAX_PES]; /* remote path: bytes put, not yet signalled */
  long long sent[MAX_PES];    /* buffers sent to each dest rank */
  long long taken[MAX_PES];   /* buffers taken from each source rank's slot */
  char *out[MAX_PES];         /* send buffer per dest rank: header + packets */
  size_t out_n[MAX_PES];      /* packets in it */
  size_t out_bytes[MAX_PES];  /* bytes of packets in it */
  size_t in_pos[MAX_PES];     /* byte offset of the next packet in each source's slot */
  size_t in_n[MAX_PES];       /* packets taken from it */
  int release;                /* 1 + a source rank whose emptied slot is given back */
  int next_src;
  bool done_sent; /* told every rank it finished sending */
};

_Static_assert(offsetof(struct porter, n_ranks) == 48 && offsetof(struct porter, my_rank) == 52 &&
                   offsetof(struct porter, relative) == 64,
               "bale 3.0's porter_t layout");

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
  int me, npes;
  int order;   /* 1: one hop; 2: local, remote; 3: local, remote, local */
  int n_local; /* PEs per node (two and three hops) */
  bool force_remote; /* one hop through shmem_putmem_nbi (CONVEY_NLOCAL=1) */
  struct porter porters[3];
  uint64_t bad_from, pulled; /* STANDIN_CONVEY_BAD_FROM, successful pulls */
  bool yield;                /* STANDIN_CONVEY_YIELD */
};

static uint64_t phys_buffers[3][MAX_PES], phys_bytes[3][MAX_PES];
static uint64_t progress_calls, progress_forced;

void standin_convey_physical(int path, int64_t pe, uint64_t *buffers, uint64_t *bytes) {
  *buffers = phys_buffers[path][pe];
  *bytes = phys_bytes[path][pe];
}

void standin_convey_progress(uint64_t *calls, uint64_t *forced) {
  *calls = progress_calls;
  *forced = progress_forced;
}

/* --- porter --- */

static bool local_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                       const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  memcpy(p->peer_inbox[dest], buf, n_bytes);
  __atomic_store_n(p->peer_signal[dest], p->sent[dest], __ATOMIC_RELEASE);
  phys_buffers[0][p->relative[dest]]++;
  phys_bytes[0][p->relative[dest]] += n_bytes;
  return true;
}

static bool local_progress(struct porter *p, int dest) {
  (void)p, (void)dest;
  return true;
}

static bool nonblock_send(struct porter *p, int dest, uint64_t level, size_t n_bytes,
                          const char *buf, uint64_t signal) {
  (void)level, (void)signal;
  shmem_putmem_nbi(p->inbox + (size_t)p->my_rank * p->buffer_stride, buf, n_bytes,
                   p->relative[dest]);
  p->pending[dest] = (long long)n_bytes;
  phys_buffers[1][p->relative[dest]]++;
  phys_bytes[1][p->relative[dest]] += n_bytes;
  return true;
}

/* As bale's: for one rank (`dest` >= 0) nothing unless a put to it is in
 * flight (false); else (or for every rank, `dest` < 0) completes every
 * outstanding put with shmem_quiet, then signals their destinations (true). */
static bool nonblock_progress(struct porter *p, int dest) {
  progress_calls++;
  if (dest >= 0 && !p->pending[dest]) return false;
  progress_forced++;
  shmem_quiet();
  for (int r = 0; r < p->n_ranks; r++) {
    if (p->pending[r]) {
      shmem_longlong_p(&p->signal[p->my_rank], p->sent[r], p->relative[r]);
      phys_buffers[2][p->relative[r]]++;
      phys_bytes[2][p->relative[r]] += sizeof(long long);
      p->pending[r] = 0;
    }
  }
  return true;
}

static const struct porter_methods local_porter = {local_send, local_progress};
static const struct porter_methods remote_porter = {nonblock_send, nonblock_progress};

/* Bytes an item of `bytes` takes in a packet (after its tag). */
static size_t record_bytes(const convey_t *c, size_t bytes) {
  return c->elastic ? 8 + ((bytes + 7) & ~(size_t)7) : bytes;
}

/* Sets porter `p` up (collective: every PE sets up the same porters in the same
 * order) over `n_ranks` PEs `relative`, this PE being rank `my_rank`. */
static int porter_setup(convey_t *c, struct porter *p, int n_ranks, int my_rank,
                        const int32_t *relative, bool remote, size_t tag_bytes) {
  p->tag_bytes = tag_bytes;
  p->item_bytes = c->item_size;
  p->packet_bytes = tag_bytes + record_bytes(c, c->elastic ? c->max_bytes : c->item_size);
  p->cap_bytes = c->capacity * p->packet_bytes;
  p->buffer_bytes = p->buffer_stride = HEADER + p->cap_bytes;
  p->n_ranks = n_ranks;
  p->my_rank = my_rank;
  p->relative = malloc((size_t)n_ranks * sizeof *p->relative);
  p->inbox = shmem_malloc((size_t)n_ranks * p->buffer_stride);
  p->signal = shmem_calloc((size_t)n_ranks, sizeof(long long));
  p->credit = shmem_calloc((size_t)n_ranks, sizeof(long long));
  p->finished = shmem_calloc(1, sizeof(long long));
  if (!p->relative || !p->inbox || !p->signal || !p->credit || !p->finished) return -7;
  for (int r = 0; r < n_ranks; r++) {
    p->relative[r] = relative[r];
    p->sent[r] = p->taken[r] = 0;
    p->out[r] = malloc(p->buffer_bytes);
    p->out_n[r] = p->out_bytes[r] = 0;
    p->in_pos[r] = p->in_n[r] = 0;
    p->pending[r] = 0;
  }
  for (int r = 0; r < n_ranks && !remote; r++) {
    p->peer_inbox[r] = shmem_ptr(p->inbox + (size_t)my_rank * p->buffer_stride, relative[r]);
    p->peer_signal[r] = shmem_ptr(&p->signal[my_rank], relative[r]);
    p->peer_credit[r] = shmem_ptr(&p->credit[my_rank], relative[r]);
    if (!p->peer_inbox[r] || !p->peer_signal[r] || !p->peer_credit[r]) remote = true;
  }
  p->path = remote;
  p->m = remote ? &remote_porter : &local_porter;
  p->done_sent = false;
  p->release = 0;
  p->next_src = 0;
  return convey_OK;
}

static void porter_free(struct porter *p) {
  for (int r = 0; r < p->n_ranks; r++) free(p->out[r]);
  free(p->relative);
  shmem_free(p->inbox);
  shmem_free(p->signal);
  shmem_free(p->credit);
  shmem_free(p->finished);
}

/* --- conveyor methods --- */

static int simple_begin(convey_t *c, size_t item_size, size_t align) {
  (void)align;
  if (c->state != DORMANT) return convey_error_STATE;
  c->item_size = item_size;
  int32_t rel[MAX_PES];
  int rc;
  if (c->order == 1) {
    for (int r = 0; r < c->npes; r++) rel[r] = r;
    rc = porter_setup(c, &c->porters[0], c->npes, c->me, rel, c->force_remote, 0);
  } else if (c->order == 3) {
    /* PE = (z, y, x) = z * L^2 + y * L + x (node z * L + y, local rank x).
     * Hops 1 and 3 among my node's PEs (rank x); hop 2 among the PEs (j, x, y)
     * of every group j (rank z: that porter's table does not hold this PE
     * unless x = y, as in bale's tensor conveyor). */
    int L = c->n_local, x = c->me % L, y = (c->me / L) % L, z = c->me / (L * L);
    for (int i = 0; i < L; i++) rel[i] = (z * L + y) * L + i;
    rc = porter_setup(c, &c->porters[0], L, x, rel, false, TAG);
    if (rc == convey_OK) rc = porter_setup(c, &c->porters[2], L, x, rel, false, TAG);
    for (int j = 0; j < c->npes / (L * L); j++) rel[j] = j * L * L + x * L + y;
    if (rc == convey_OK)
      rc = porter_setup(c, &c->porters[1], c->npes / (L * L), z, rel, true, TAG);
  } else {
    /* PE = node * n_local + local rank; hop 1 among my node's PEs, hop 2 among
     * the PEs of my local rank on every node. */
    int L = c->n_local, x = c->me % L, y = c->me / L;
    for (int i = 0; i < L; i++) rel[i] = y * L + i;
    rc = porter_setup(c, &c->porters[0], L, x, rel, false, TAG);
    for (int j = 0; j < c->npes / L; j++) rel[j] = j * L + x;
    if (rc == convey_OK) rc = porter_setup(c, &c->porters[1], c->npes / L, y, rel, true, TAG);
  }
  if (rc != convey_OK) return rc;
  c->state = WORKING;
  shmem_barrier_all();
  return convey_OK;
}

/* Whether rank `r` took every buffer sent to it (my slot there is free). */
static bool slot_free(const struct porter *p, int r) {
  return __atomic_load_n(&p->credit[r], __ATOMIC_ACQUIRE) == p->sent[r];
}

/* Sends the buffer for rank `r` if its slot there is free. */
static bool try_send(struct porter *p, int r) {
  if (p->out_n[r] == 0) return true;
  /* As bale's porter, first lets the porter complete a put in flight to r. */
  p->m->progress(p, r);
  if (!slot_free(p, r) || p->pending[r]) return false;
  uint64_t *hdr = (uint64_t *)p->out[r];
  hdr[0] = (uint64_t)p->my_rank;
  hdr[1] = p->out_n[r];
  p->sent[r]++;
  /* The porter's answer is what the caller goes by (kprof's hook must keep it). */
  if (!p->m->send(p, r, 0, HEADER + p->out_bytes[r], p->out[r], 1)) {
    p->sent[r]--;
    return false;
  }
  p->out_n[r] = p->out_bytes[r] = 0;
  return true;
}

/* Appends a packet (`tag`, then an item of `bytes`) for rank `r` of porter `p`,
 * sending the full buffer first. */
static int append(convey_t *c, struct porter *p, int r, uint64_t tag, const void *item,
                  size_t bytes) {
  /* The buffer is the source of a put still in flight: not writable yet. */
  if (p->pending[r]) return convey_FAIL;
  size_t need = p->tag_bytes + record_bytes(c, bytes);
  if (p->out_bytes[r] + need > p->cap_bytes && (!try_send(p, r) || p->pending[r]))
    return convey_FAIL;
  char *dst = p->out[r] + HEADER + p->out_bytes[r];
  if (p->tag_bytes) {
    memcpy(dst, &tag, TAG);
    dst += TAG;
  }
  if (c->elastic) {
    uint64_t n = bytes;
    memcpy(dst, &n, 8);
    dst += 8;
  }
  if (bytes) memcpy(dst, item, bytes);
  p->out_bytes[r] += need;
  p->out_n[r]++;
  return convey_OK;
}

/* Routes an item for `pe` into the first porter: one hop straight to it; two
 * hops to the PE of my node with its local rank, tagged with its node; three
 * hops (`pe` = (z', y', x')) to the PE of my node with local rank y', tagged
 * with (z', x'). */
static int put_item(convey_t *c, const void *item, size_t bytes, int64_t pe) {
  if (c->state != WORKING) return convey_error_STATE;
  if (pe < 0 || pe >= c->npes) return convey_error_RANGE;
  if (c->order == 1) return append(c, &c->porters[0], (int)pe, 0, item, bytes);
  int64_t L = c->n_local;
  if (c->order == 3)
    return append(c, &c->porters[0], (int)(pe / L % L), (uint64_t)(pe / (L * L) * L + pe % L),
                  item, bytes);
  return append(c, &c->porters[0], (int)(pe % L), (uint64_t)(pe / L), item, bytes);
}

/* The next hop of a packet that porter k delivered from its rank `src` with
 * `tag`: the rank of porter k + 1 it goes to and its tag there. Two hops:
 * to the destination's node (the tag), tagged with the origin's local rank
 * (src). Three hops, after the first (tag (z', x'), from origin (z, y, x) with
 * src = x, here (z, y, y')): to group z' (landing on (z', y', y)), tagged (x',
 * x); after the second (tag (x', x), src = z): to local rank x', tagged (z, x). */
static int next_hop(const convey_t *c, int k, int src, uint64_t tag, uint64_t *next) {
  uint64_t L = (uint64_t)c->n_local;
  if (c->order == 2) {
    *next = (uint64_t)src;
    return (int)tag;
  }
  if (k == 0) {
    *next = tag % L * L + (uint64_t)src;
    return (int)(tag / L);
  }
  *next = (uint64_t)src * L + tag % L;
  return (int)(tag / L);
}

static int simple_push(convey_t *c, const void *item, int64_t pe) {
  return put_item(c, item, c->item_size, pe);
}

static int simple_epush(convey_t *c, size_t bytes, const void *item, int64_t pe) {
  if (!c->elastic) return convey_error_RIGID;
  if (bytes > c->max_bytes) return convey_error_OFLO;
  return put_item(c, item, bytes, pe);
}

/* Gives my slot for source rank `src` of porter `p` back to it: tells it how
 * many of its buffers were taken. */
static void return_credit(struct porter *p, int src) {
  if (p->path)
    shmem_longlong_p(&p->credit[p->my_rank], p->taken[src], p->relative[src]);
  else
    __atomic_store_n(p->peer_credit[src], p->taken[src], __ATOMIC_RELEASE);
}

/* Whether source rank `src` put a buffer in my inbox that I have not taken. */
static bool waiting(const struct porter *p, int src) {
  return __atomic_load_n(&p->signal[src], __ATOMIC_ACQUIRE) > p->taken[src];
}

/* Gives back the slot emptied by the previous take (whose item the caller may
 * have read in place until now). */
static void release_slot(struct porter *p) {
  if (p->release) {
    return_credit(p, p->release - 1);
    p->release = 0;
  }
}

/* Whether a buffer waits in porter `p`'s inbox. */
static bool incoming(struct porter *p) {
  for (int s = 0; s < p->n_ranks; s++)
    if (waiting(p, s)) return true;
  return false;
}

/* The next packet of porter `p`'s inbox: its source rank (-1: none), tag, item
 * address and size. */
static int next_item(convey_t *c, struct porter *p, uint64_t *tag, char **data, size_t *bytes) {
  for (int k = 0; k < p->n_ranks; k++) {
    int src = (p->next_src + k) % p->n_ranks;
    if (!waiting(p, src)) continue;
    char *rec = p->inbox + (size_t)src * p->buffer_stride + HEADER + p->in_pos[src];
    *tag = 0;
    if (p->tag_bytes) {
      memcpy(tag, rec, TAG);
      rec += TAG;
    }
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

/* The packet of `src` was taken: the slot is emptied after its last one. */
static void consume(convey_t *c, struct porter *p, int src, size_t bytes) {
  uint64_t count = ((uint64_t *)(p->inbox + (size_t)src * p->buffer_stride))[1];
  p->in_pos[src] += p->tag_bytes + record_bytes(c, bytes);
  if (++p->in_n[src] == count) {
    p->in_pos[src] = p->in_n[src] = 0;
    p->taken[src]++;
    p->release = src + 1;
    p->next_src = src + 1;
  }
}

/* The PE that pushed a packet pulled from source rank `src` with `tag`: two
 * hops, (node src, local rank tag); three, (z, src, x) from tag (z, x). */
static int64_t origin(convey_t *c, int src, uint64_t tag) {
  int64_t L = c->n_local;
  int64_t from = c->order == 1   ? src
                 : c->order == 2 ? (int64_t)src * L + (int64_t)tag
                                 : (int64_t)tag / L * L * L + (int64_t)src * L + (int64_t)tag % L;
  if (c->bad_from && ++c->pulled % c->bad_from == 0) return c->npes + 7;
  return from;
}

static int simple_pull(convey_t *c, void *item, int64_t *from) {
  if (c->state != WORKING) return convey_error_STATE;
  struct porter *p = &c->porters[c->order - 1];
  release_slot(p);
  char *data;
  size_t bytes;
  uint64_t tag;
  int src = next_item(c, p, &tag, &data, &bytes);
  if (src < 0) return convey_FAIL;
  if (bytes != c->item_size) return convey_error_MISFIT;
  memcpy(item, data, bytes);
  consume(c, p, src, bytes);
  int64_t f = origin(c, src, tag);
  if (from) *from = f;
  return convey_OK;
}

static int simple_epull(convey_t *c, convey_item_t *result) {
  if (c->state != WORKING) return convey_error_STATE;
  if (!c->elastic) return convey_error_RIGID;
  struct porter *p = &c->porters[c->order - 1];
  release_slot(p);
  char *data;
  size_t bytes;
  uint64_t tag;
  int src = next_item(c, p, &tag, &data, &bytes);
  if (src < 0) return convey_FAIL;
  result->bytes = bytes;
  result->data = data;
  consume(c, p, src, bytes);
  result->from = origin(c, src, tag);
  return convey_OK;
}

/* Moves what porter k delivered here into porter k + 1, toward its next hop
 * (next_hop). */
static void pivot(convey_t *c, int k) {
  struct porter *in = &c->porters[k], *out = &c->porters[k + 1];
  for (;;) {
    char *data;
    size_t bytes;
    uint64_t tag, next;
    int src = next_item(c, in, &tag, &data, &bytes);
    if (src < 0) return;
    int rank = next_hop(c, k, src, tag, &next);
    if (append(c, out, rank, next, data, bytes) != convey_OK) return;
    consume(c, in, src, bytes);
    release_slot(in);
  }
}

/* Sends every non-empty buffer of `p` that can go; true when none is left. */
static bool send_all(struct porter *p) {
  bool all = true;
  for (int r = 0; r < p->n_ranks; r++) all &= try_send(p, r);
  return all;
}

/* Once this PE has nothing more for porter `p` (`input_done`, every buffer sent)
 * and every buffer it sent was taken (all credits back), tells every rank. */
static void finish_sending(struct porter *p, bool input_done) {
  if (!input_done || p->done_sent) return;
  for (int r = 0; r < p->n_ranks; r++)
    if (!slot_free(p, r) || p->pending[r]) return;
  for (int r = 0; r < p->n_ranks; r++) shmem_longlong_atomic_inc(p->finished, p->relative[r]);
  p->done_sent = true;
}

/* Whether every rank of `p` finished sending to this PE and all was taken. */
static bool all_received(convey_t *c, struct porter *p) {
  return p->done_sent && shmem_longlong_atomic_fetch(p->finished, c->me) >= p->n_ranks &&
         !incoming(p);
}

/* convey_OK while active, convey_DONE once every PE is done and everything
 * sent was pulled. */
static int simple_advance(convey_t *c, bool done) {
  if (c->state != WORKING) return convey_error_STATE;
  struct porter *first = &c->porters[0], *last = &c->porters[c->order - 1];
  release_slot(last);
  bool remote = false;
  for (int k = 0; k < c->order; k++) {
    c->porters[k].m->progress(&c->porters[k], -1);
    remote |= c->porters[k].path;
  }
  finish_sending(first, done && send_all(first));
  for (int k = 1; k < c->order; k++) {
    pivot(c, k - 1);
    bool sent = send_all(&c->porters[k]);
    finish_sending(&c->porters[k], sent && all_received(c, &c->porters[k - 1]));
  }
  if (remote) shmem_quiet();
  /* Nothing to pull: with STANDIN_CONVEY_YIELD=1, let the other PEs of an
   * oversubscribed node run (the tests run 4 busy-polling PEs on fewer cores). */
  bool idle = true;
  for (int k = 0; k < c->order; k++) idle &= !incoming(&c->porters[k]);
  if (c->yield && idle) sched_yield();
  return all_received(c, last) ? convey_DONE : convey_OK;
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
  if (c->state == WORKING) {
    shmem_barrier_all();
    for (int k = 0; k < c->order; k++) {
      release_slot(&c->porters[k]);
      porter_free(&c->porters[k]);
    }
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

static convey_t *make(size_t capacity, size_t n_local, bool elastic, size_t max_bytes) {
  convey_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->_class_ = &simple_methods;
  c->state = DORMANT;
  c->elastic = elastic;
  c->max_bytes = max_bytes;
  c->capacity = capacity ? capacity : 64;
  c->me = shmem_my_pe();
  c->npes = shmem_n_pes();
  if (c->npes > MAX_PES) {
    free(c);
    return NULL;
  }
  /* PEs per node: the argument, else CONVEY_NLOCAL, else all (one node). One
   * node: one local hop; one PE per node: one remote hop; else two hops, or
   * three with CONVEY_ORDER=3 when the square of the PEs per node divides the
   * PEs (bale's tensor conveyor, which takes two hops instead when there are
   * no more PEs than that square: the stand-in keeps three, so that 4 PEs can
   * test them). */
  const char *env = getenv("CONVEY_NLOCAL");
  long nl = n_local ? (long)n_local : env ? atol(env) : c->npes;
  const char *order = getenv("CONVEY_ORDER");
  c->order = 1;
  if (nl == 1 || (nl > 1 && nl < c->npes && c->npes % nl != 0)) {
    c->force_remote = true;
  } else if (nl > 1 && nl < c->npes) {
    c->order = order && atoi(order) == 3 && c->npes % (nl * nl) == 0 ? 3 : 2;
    c->n_local = (int)nl;
  }
  const char *bad = getenv("STANDIN_CONVEY_BAD_FROM");
  c->bad_from = bad ? strtoull(bad, NULL, 10) : 0;
  const char *yield = getenv("STANDIN_CONVEY_YIELD");
  c->yield = yield && atoi(yield) == 1;
  return c;
}

convey_t *convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options) {
  (void)n_buffers, (void)options;
  return make(capacity, n_local, false, 0);
}

convey_t *convey_new_elastic(size_t item_bound, size_t max_bytes, size_t n_local,
                             const void *alloc, uint64_t options) {
  (void)item_bound, (void)alloc, (void)options;
  return make(64, n_local, true, max_bytes);
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

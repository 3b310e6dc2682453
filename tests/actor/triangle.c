/* Triangle count, FA-BSP style (the ActorProf case study's program): the lower
 * triangle L of a random graph's adjacency matrix is spread over the PEs by rows,
 * 1D-cyclic (row i on PE i % npes) or 1D-range (contiguous blocks of rows). For
 * every owned row i and every pair of its nonzeros k < j, the PE sends the
 * 16-byte message (j, k) to the owner of row j, whose handler scans row j for k:
 * a triangle (i, j, k) when found. Row i holds about p*i nonzeros, so it sends
 * about (p*i)^2/2 messages: under the range distribution the last PE sends most
 * (about 37 times the first PE's on 4 PEs) while the cyclic one is balanced; the
 * receivers' work (the handlers' scans) is imbalanced too, peaking in the middle
 * blocks.
 *
 * Prints its own count of logical sends per destination, the stand-in's physical
 * count, its phase time, its handlers' work (messages handled and row entries
 * scanned), the triangles it found and the total a serial count gives.
 *
 *   triangle <rows> <edge probability, per mille> <cyclic|range> */
#include <shmem.h>
#include <string.h>

#include "convey/convey.h"
#include "fabsp.h"

/* Whether the edge (i, j), j < i, is in the graph: the same on every PE. */
static int edge(uint64_t i, uint64_t j, uint64_t per_mille) {
  uint64_t s = i * 1000003u + j;
  return fabsp_rand(&s) % 1000 < per_mille;
}

struct graph {
  int64_t n;
  int64_t *off; /* row i: col[off[i] .. off[i+1]), increasing */
  int64_t *col;
};

static struct graph build(int64_t n, uint64_t per_mille) {
  struct graph g = {n, calloc((size_t)n + 1, sizeof(int64_t)), NULL};
  int64_t nnz = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) nnz += edge((uint64_t)i, (uint64_t)j, per_mille);
  g.col = malloc((size_t)(nnz ? nnz : 1) * sizeof(int64_t));
  nnz = 0;
  for (int64_t i = 0; i < n; i++) {
    g.off[i] = nnz;
    for (int64_t j = 0; j < i; j++)
      if (edge((uint64_t)i, (uint64_t)j, per_mille)) g.col[nnz++] = j;
  }
  g.off[n] = nnz;
  return g;
}

/* The handler's scan: whether k is in row j (increasing; stops past k). */
static int has(const struct graph *g, int64_t j, int64_t k, uint64_t *steps) {
  for (int64_t e = g->off[j]; e < g->off[j + 1]; e++) {
    (*steps)++;
    if (g->col[e] == k) return 1;
    if (g->col[e] > k) return 0;
  }
  return 0;
}

int main(int argc, char **argv) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int64_t n = argc > 1 ? atol(argv[1]) : 600;
  uint64_t per_mille = argc > 2 ? (uint64_t)atol(argv[2]) : 40;
  int range = argc > 3 && strcmp(argv[3], "range") == 0;
  struct graph g = build(n, per_mille);
  int64_t block = (n + npes - 1) / npes;
#define OWNER(r) (range ? (int64_t)((r) / block) : (int64_t)((r) % npes))

  uint64_t sent[64] = {0}, handled = 0, steps = 0, found = 0;
  convey_t *c = convey_new(64, 0, 1, 0);
  uint64_t t0 = fabsp_now_ns();
  if (!c || convey_begin(c, 2 * sizeof(int64_t), 8) != convey_OK) {
    fprintf(stderr, "convey setup failed\n");
    return 2;
  }
  /* The sender's position: row i, nonzeros a (j) and b (k, b < a). */
  int64_t i = 0, a = 1, b = 0;
  while (i < n && OWNER(i) != me) i++;
  for (;;) {
    bool more = i < n;
    if (convey_advance(c, !more) == convey_DONE) break;
    while (i < n) {
      int64_t lo = g.off[i];
      if (a >= g.off[i + 1] - lo) {
        do i++;
        while (i < n && OWNER(i) != me);
        a = 1, b = 0;
        continue;
      }
      int64_t msg[2] = {g.col[lo + a], g.col[lo + b]};
      int64_t pe = OWNER(msg[0]);
      if (convey_push(c, msg, pe) != convey_OK) break;
      sent[pe]++;
      if (++b == a) a++, b = 0;
    }
    int64_t got[2], from;
    while (convey_pull(c, got, &from) == convey_OK) {
      found += (uint64_t)has(&g, got[0], got[1], &steps);
      handled++;
    }
  }
  convey_free(c);
  uint64_t t1 = fabsp_now_ns();

  uint64_t serial = 0, ignore = 0;
  for (int64_t r = 0; r < n; r++)
    for (int64_t x = g.off[r] + 1; x < g.off[r + 1]; x++)
      for (int64_t y = g.off[r]; y < x; y++) serial += (uint64_t)has(&g, g.col[x], g.col[y], &ignore);

  for (int d = 0; d < npes; d++)
    FABSP_LINE("logical %d 0 %d %" PRIu64 " %" PRIu64 "\n", me, d, sent[d], sent[d] * 16);
  standin_convey_print(me, npes, fabsp_line);
  FABSP_LINE("phase %d %" PRIu64 "\n", me, t1 - t0);
  FABSP_LINE("work %d %" PRIu64 " %" PRIu64 "\n", me, handled, steps);
  FABSP_LINE("result %d %" PRIu64 " %" PRIu64 "\n", me, found, serial);
  free(g.off), free(g.col);
  shmem_finalize();
  return 0;
}

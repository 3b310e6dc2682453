/* kprof_actor_wrap.c - link-time wrappers of Conveyors' public entries for
 * kprof's HClib-Actor plugin. Compile into the program and link with
 * -Wl,--wrap=convey_new,--wrap=convey_begin,--wrap=convey_push,
 * --wrap=convey_pull,--wrap=convey_advance,--wrap=convey_free,
 * --wrap=convey_epush,--wrap=convey_epull (see kprof_actor.h). The prototypes are Conveyors' (bale 3.0); convey_t stays
 * opaque. Each wrapper forwards to the real entry and, when
 * libkprof_actor.so is in the process, reports the call to it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kprof_actor.h"

typedef struct convey convey_t;

/* Conveyors' convey_item_t (what convey_epull fills), by layout. */
struct kprof_actor__item {
  size_t bytes;
  void *data;
  int64_t from;
};

convey_t *__real_convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options);
int __real_convey_begin(convey_t *c, size_t item_size, size_t align);
int __real_convey_push(convey_t *c, const void *item, int64_t pe);
int __real_convey_pull(convey_t *c, void *item, int64_t *from);
int __real_convey_advance(convey_t *c, bool done);
int __real_convey_free(convey_t *c);
int __real_convey_epush(convey_t *c, size_t bytes, const void *item, int64_t pe);
int __real_convey_epull(convey_t *c, struct kprof_actor__item *result);

convey_t *__wrap_convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options);
int __wrap_convey_begin(convey_t *c, size_t item_size, size_t align);
int __wrap_convey_push(convey_t *c, const void *item, int64_t pe);
int __wrap_convey_pull(convey_t *c, void *item, int64_t *from);
int __wrap_convey_advance(convey_t *c, bool done);
int __wrap_convey_free(convey_t *c);
int __wrap_convey_epush(convey_t *c, size_t bytes, const void *item, int64_t pe);
int __wrap_convey_epull(convey_t *c, struct kprof_actor__item *result);

static const struct kprof_actor_wrap_hooks *kprof_actor__table;
static void (*kprof_actor__enter)(void *conveyor, int op);
static int kprof_actor__looked;

/* The plugin's table, looked up once (NULL: no kprof, or an older plugin). */
static const struct kprof_actor_wrap_hooks *kprof_actor__hooks(void) {
  if (__builtin_expect(__atomic_load_n(&kprof_actor__looked, __ATOMIC_ACQUIRE), 1))
    return kprof_actor__table;
  const struct kprof_actor_wrap_hooks *h = NULL;
  void *f = dlsym(RTLD_DEFAULT, "kprof_actor_wrap_hooks_v1");
  if (f) {
    h = ((const struct kprof_actor_wrap_hooks *(*)(void))f)();
    if (h && (h->version != KPROF_ACTOR_WRAP_VERSION ||
              h->size < sizeof(struct kprof_actor_wrap_hooks)))
      h = NULL;
  }
  kprof_actor__table = h;
  if (h && h->size >= offsetof(struct kprof_actor_wrap_hooks, enter) + sizeof h->enter)
    kprof_actor__enter = h->enter;
  __atomic_store_n(&kprof_actor__looked, 1, __ATOMIC_RELEASE);
  return h;
}

/* Without the breakdown (t0 == 0) only pushes and pulls that did something
 * (OK, or an error to count), begins and frees matter: pushes and pulls that
 * returned convey_FAIL (0) and advances are not reported. */
static inline int kprof_actor__skip(int op, long rc) {
  return op == KPROF_ACTOR_ADVANCE ||
         ((op == KPROF_ACTOR_PUSH || op == KPROF_ACTOR_PULL || op == KPROF_ACTOR_EPUSH ||
           op == KPROF_ACTOR_EPULL) &&
          rc == 0);
}

/* The clock before an entry (0 without the breakdown); tells the plugin the
 * entry starts when it asked to know. */
static inline uint64_t kprof_actor__start(const struct kprof_actor_wrap_hooks *h, void *conv,
                                          int op) {
  if (!h->timing) return 0;
  uint64_t t0 = kprof_actor_ticks();
  if (__builtin_expect(kprof_actor__enter != NULL, 0)) kprof_actor__enter(conv, op);
  return t0;
}

/* Runs CALL between the reports: the current conveyor set, the clock read. */
#define KPROF_ACTOR_AROUND(conv, op, pe, arg, rc_expr, CALL) \
  const struct kprof_actor_wrap_hooks *h = kprof_actor__hooks(); \
  if (!h) return CALL;                                           \
  uint64_t t0 = kprof_actor__start(h, (void *)(conv), op);       \
  *h->current = (void *)(conv);                                  \
  __typeof__(CALL) rc = CALL;                                    \
  *h->current = NULL;                                            \
  if (!t0 && kprof_actor__skip(op, (long)(rc_expr))) return rc;  \
  h->leave((void *)(conv), op, (long)(rc_expr), pe, arg, t0);    \
  return rc

convey_t *__wrap_convey_new(size_t capacity, size_t n_local, size_t n_buffers, uint64_t options) {
  const struct kprof_actor_wrap_hooks *h = kprof_actor__hooks();
  if (!h) return __real_convey_new(capacity, n_local, n_buffers, options);
  uint64_t t0 = h->timing ? kprof_actor_ticks() : 0; /* no segment: outside the phase */
  convey_t *c = __real_convey_new(capacity, n_local, n_buffers, options);
  h->leave(c, KPROF_ACTOR_NEW, c != NULL, 0, 0, t0);
  return c;
}

int __wrap_convey_begin(convey_t *c, size_t item_size, size_t align) {
  KPROF_ACTOR_AROUND(c, KPROF_ACTOR_BEGIN, 0, item_size, rc,
                     __real_convey_begin(c, item_size, align));
}

int __wrap_convey_push(convey_t *c, const void *item, int64_t pe) {
  KPROF_ACTOR_AROUND(c, KPROF_ACTOR_PUSH, pe, 0, rc, __real_convey_push(c, item, pe));
}

int __wrap_convey_pull(convey_t *c, void *item, int64_t *from) {
  int64_t src = -1;
  int64_t *where = from ? from : &src;
  const struct kprof_actor_wrap_hooks *h = kprof_actor__hooks();
  if (!h) return __real_convey_pull(c, item, from);
  uint64_t t0 = kprof_actor__start(h, (void *)c, KPROF_ACTOR_PULL);
  *h->current = (void *)c;
  int rc = __real_convey_pull(c, item, where);
  *h->current = NULL;
  if (!t0 && kprof_actor__skip(KPROF_ACTOR_PULL, rc)) return rc;
  h->leave(c, KPROF_ACTOR_PULL, rc, *where, 0, t0);
  return rc;
}

int __wrap_convey_advance(convey_t *c, bool done) {
  KPROF_ACTOR_AROUND(c, KPROF_ACTOR_ADVANCE, 0, done, rc, __real_convey_advance(c, done));
}

int __wrap_convey_free(convey_t *c) {
  KPROF_ACTOR_AROUND(c, KPROF_ACTOR_FREE, 0, 0, rc, __real_convey_free(c));
}

int __wrap_convey_epush(convey_t *c, size_t bytes, const void *item, int64_t pe) {
  KPROF_ACTOR_AROUND(c, KPROF_ACTOR_EPUSH, pe, bytes, rc, __real_convey_epush(c, bytes, item, pe));
}

int __wrap_convey_epull(convey_t *c, struct kprof_actor__item *result) {
  const struct kprof_actor_wrap_hooks *h = kprof_actor__hooks();
  if (!h) return __real_convey_epull(c, result);
  uint64_t t0 = kprof_actor__start(h, (void *)c, KPROF_ACTOR_EPULL);
  *h->current = (void *)c;
  int rc = __real_convey_epull(c, result);
  *h->current = NULL;
  if (!t0 && kprof_actor__skip(KPROF_ACTOR_EPULL, rc)) return rc;
  int ok = rc == 1 && result; /* convey_OK: *result was filled */
  h->leave(c, KPROF_ACTOR_EPULL, rc, ok ? result->from : -1, ok ? result->bytes : 0, t0);
  return rc;
}

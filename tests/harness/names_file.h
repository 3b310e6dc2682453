/*
 * names_file.h - the names a test hands a harness's `names` scenario: the file
 * that an environment variable names, each name ended by a NUL byte (any other
 * bytes, any length; trailing bytes without a NUL are no name). Shared by
 * kokkos_host.c, names_annotate.c, ../raja/raja_host.cpp and
 * ../openacc/harness.c; written by kprof_tests::names (tests/src/names.rs).
 */
#ifndef KPROF_TESTS_NAMES_FILE_H
#define KPROF_TESTS_NAMES_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *buf;
  size_t len;
  size_t at;
} names_file;

/* Reads the whole file named by the variable `var`; exits 3 (saying so on
 * stderr, prefixed by `who`) when it cannot. */
static inline names_file names_file_read(const char *var, const char *who) {
  names_file nf = {NULL, 0, 0};
  const char *path = getenv(var);
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f) {
    fprintf(stderr, "%s: cannot read %s\n", who, var);
    exit(3);
  }
  size_t cap = 1 << 16, got;
  nf.buf = (char *)malloc(cap);
  while (nf.buf && (got = fread(nf.buf + nf.len, 1, cap - nf.len, f)) > 0) {
    nf.len += got;
    if (nf.len == cap) nf.buf = (char *)realloc(nf.buf, cap *= 2);
  }
  fclose(f);
  if (!nf.buf) {
    fprintf(stderr, "%s: out of memory reading %s\n", who, var);
    exit(3);
  }
  return nf;
}

/* The next name (NUL-terminated, inside the file's buffer), or NULL after the
 * last. */
static inline const char *names_file_next(names_file *nf) {
  if (nf->at >= nf->len) return NULL;
  const char *name = nf->buf + nf->at;
  size_t n = strnlen(name, nf->len - nf->at);
  if (n == nf->len - nf->at) return NULL; /* no NUL: not a name */
  nf->at += n + 1;
  return name;
}

static inline void names_file_free(names_file *nf) {
  free(nf->buf);
  nf->buf = NULL;
}

#endif

/*
 * names_annotate.c - the names in the file NAMES_FILE (names_file.h: each ended by
 * a NUL byte, any other bytes, any length) through every entry point of the
 * annotation API (kprof.h) that takes one. Name i (from 0):
 *   kprof_region_begin(NAME) { kprof_counter(NAME, i); kprof_message(NAME,
 *   KPROF_SEND, peer i, 1 message, i + 1 bytes) } kprof_region_end(NAME);
 *   kprof_event(NAME); kprof_metadata(NAME, NAME).
 * Then prints "names <n> sum <sum of the name lengths>" on stdout (what the
 * program computed, unchanged by the tool). Exits 3 when the file cannot be
 * read. Used by tests/tests/inputs_mutated.rs.
 */
#include <stdio.h>
#include <string.h>

#include "kprof.h"
#include "names_file.h"

int main(void) {
  names_file nf = names_file_read("NAMES_FILE", "names_annotate");
  unsigned n = 0;
  unsigned long long sum = 0;
  for (const char *name; (name = names_file_next(&nf)) != NULL; n++) {
    kprof_region_begin(name);
    kprof_counter(name, (double)n);
    kprof_message(name, KPROF_SEND, n, 1, n + 1);
    kprof_region_end(name);
    kprof_event(name);
    kprof_metadata(name, name);
    sum += strlen(name);
  }
  names_file_free(&nf);
  printf("names %u sum %llu\n", n, sum);
  return 0;
}

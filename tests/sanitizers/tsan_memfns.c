/* __tsan_memcpy, __tsan_memmove and __tsan_memset for a ThreadSanitizer runtime
 * older than the compiler that instrumented kprof's libraries (scripts/tsan.sh).
 *
 * Rust's nightly LLVM makes instrumented code call these instead of memcpy,
 * memmove and memset; the runtime of GCC 12 and LLVM 14 (the ones that exist as a
 * shared library to preload) predates them. Each forwards to the libc function,
 * which that runtime intercepts with the same range check, so the accesses are
 * still seen. Preloaded after the runtime, so the calls below resolve to its
 * interceptors. */
#include <stddef.h>
#include <string.h>

void *__tsan_memcpy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }

void *__tsan_memmove(void *dst, const void *src, size_t n) { return memmove(dst, src, n); }

void *__tsan_memset(void *dst, int c, size_t n) { return memset(dst, c, n); }

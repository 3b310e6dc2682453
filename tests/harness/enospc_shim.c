/*
 * enospc_shim.c - a full disk for one directory, for tests/tests/traces.rs. Loaded
 * with LD_PRELOAD; files opened under $SHIM_DIR share a disk of $SHIM_BYTES bytes:
 * a write() writes what still fits (a short write, as a real disk does) and fails
 * with ENOSPC once nothing does, posix_fallocate() that does not fit fails with
 * ENOSPC, and unlink() of a file there, or ftruncate() of one to a smaller size, gives its bytes
 * back. Everything else goes to the C library untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 4096

static atomic_char tracked[MAX_FDS];
static atomic_llong used;

static const char *dir(void) {
    const char *d = getenv("SHIM_DIR");
    return d && *d ? d : NULL;
}

static long long capacity(void) {
    const char *b = getenv("SHIM_BYTES");
    return b ? atoll(b) : 0;
}

static int under_dir(const char *path) {
    const char *d = dir();
    return d && path && strncmp(path, d, strlen(d)) == 0;
}

/* Takes `n` bytes of the disk, or says there is no room. */
static int take(long long n) {
    long long cap = capacity();
    long long now = atomic_load(&used);
    do {
        if (now + n > cap)
            return 0;
    } while (!atomic_compare_exchange_weak(&used, &now, now + n));
    return 1;
}

/* Takes up to `n` bytes of the disk; returns how many. */
static long long take_some(long long n) {
    long long cap = capacity();
    long long now = atomic_load(&used);
    long long got;
    do {
        got = cap - now < n ? cap - now : n;
        if (got <= 0)
            return 0;
    } while (!atomic_compare_exchange_weak(&used, &now, now + got));
    return got;
}

static void track(int fd, const char *path) {
    if (fd >= 0 && fd < MAX_FDS)
        atomic_store(&tracked[fd], (char)under_dir(path));
}

static int is_tracked(int fd) {
    return fd >= 0 && fd < MAX_FDS && atomic_load(&tracked[fd]);
}

#define NEXT(name) static __typeof__(name) *next; if (!next) next = dlsym(RTLD_NEXT, #name)

/* open() and open64(): the mode comes only with O_CREAT. */
#define OPEN_TRACKED(name)                                \
    int name(const char *path, int flags, ...) {          \
        NEXT(name);                                       \
        va_list ap;                                       \
        va_start(ap, flags);                              \
        mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE \
            ? va_arg(ap, mode_t) : 0;                     \
        va_end(ap);                                       \
        int fd = next(path, flags, mode);                 \
        track(fd, path);                                  \
        return fd;                                        \
    }

OPEN_TRACKED(open)
OPEN_TRACKED(open64)

int close(int fd) {
    NEXT(close);
    if (fd >= 0 && fd < MAX_FDS)
        atomic_store(&tracked[fd], 0);
    return next(fd);
}

ssize_t write(int fd, const void *buf, size_t n) {
    NEXT(write);
    if (!is_tracked(fd) || n == 0)
        return next(fd, buf, n);
    long long got = take_some((long long)n);
    if (got == 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t r = next(fd, buf, (size_t)got);
    if (r < got)
        atomic_fetch_sub(&used, got - (r < 0 ? 0 : r));
    return r;
}

static int fallocate_common(int fd, off_t off, off_t len, int (*real)(int, off_t, off_t)) {
    (void)off;
    if (is_tracked(fd) && !take((long long)len))
        return ENOSPC;
    return real(fd, off, len);
}

#define FALLOCATE_TRACKED(name)                            \
    int name(int fd, off_t off, off_t len) {               \
        NEXT(name);                                        \
        return fallocate_common(fd, off, len, next);       \
    }

FALLOCATE_TRACKED(posix_fallocate)
FALLOCATE_TRACKED(posix_fallocate64)

int unlink(const char *path) {
    NEXT(unlink);
    struct stat st;
    int gives_back = under_dir(path) && stat(path, &st) == 0;
    int r = next(path);
    if (r == 0 && gives_back)
        atomic_fetch_sub(&used, (long long)st.st_size);
    return r;
}

static int ftruncate_common(int fd, off_t len, int (*real)(int, off_t)) {
    struct stat st;
    int gives_back = is_tracked(fd) && fstat(fd, &st) == 0 && st.st_size > len;
    int r = real(fd, len);
    if (r == 0 && gives_back)
        atomic_fetch_sub(&used, (long long)(st.st_size - len));
    return r;
}

#define FTRUNCATE_TRACKED(name)                            \
    int name(int fd, off_t len) {                          \
        NEXT(name);                                        \
        return ftruncate_common(fd, len, next);            \
    }

FTRUNCATE_TRACKED(ftruncate)
FTRUNCATE_TRACKED(ftruncate64)

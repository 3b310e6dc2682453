/*
 * cupti_standin.c - a stand-in libcupti.so for testing kprof's CUDA plugin on
 * machines without a GPU or a CUDA driver.
 *
 * Written here from CUPTI's documented API and compiled against NVIDIA's REAL
 * CUPTI headers (from PyPI's wheels, installed by tests/setup.sh; never
 * committed): every function below is defined with the prototype the header
 * declares, so the compiler checks the symbols and signatures, and every record
 * is the header's own struct, so the layouts are the real ones for the CUPTI
 * version the headers are from (CUpti_ActivityKernel9 for CUDA 12.9,
 * CUpti_ActivityKernel13 for CUDA 13.5, ...).
 *
 * It implements exactly the CUPTI functions kprof's CUDA plugin resolves (see
 * the contract of issue 19): cuptiGetVersion, cuptiGetResultString,
 * cuptiSubscribe, cuptiUnsubscribe, cuptiEnableDomain, cuptiEnableCallback,
 * cuptiActivityRegisterCallbacks, cuptiActivityEnable, cuptiActivityDisable,
 * cuptiActivityGetNextRecord, cuptiActivityGetNumDroppedRecords,
 * cuptiActivityFlushAll, cuptiGetTimestamp, cuptiFinalize. Their behaviour is
 * CUPTI's as documented:
 *   - one subscriber; its callback is called synchronously on the thread of the
 *     API call, at enter and exit, when its domain or callback id is enabled,
 *     with a correlationData slot shared by the enter and the exit;
 *   - records are written only for enabled activity kinds, into buffers the
 *     client's request callback gives (8-byte aligned records, at most
 *     maxNumRecords when it is not 0); a declined request (NULL or too small)
 *     drops the record and counts it for cuptiActivityGetNumDroppedRecords,
 *     which resets the count;
 *   - filled buffers are returned through the completion callback with context
 *     NULL and a meaningless stream id (global buffers, as since CUDA 6), from
 *     a thread of the stand-in's own (standin_complete) or from the caller of
 *     cuptiActivityFlushAll; cuptiActivityGetNextRecord walks them, returning
 *     CUPTI_ERROR_MAX_LIMIT_REACHED after the last record.
 *
 * The scenario comes from the program through the control API of
 * cupti_standin.h. Environment:
 *   STANDIN_CUPTI_VERSION    what cuptiGetVersion returns (default: the header's
 *                            CUPTI_API_VERSION)
 *   STANDIN_CLOCK_OFFSET_NS  the stand-in's clock is CLOCK_MONOTONIC plus this
 *                            (default 1700000000000000000, about CLOCK_REALTIME,
 *                            which is what a real CUPTI's timestamps look like):
 *                            a tool must convert, not assume the same clock
 *   STANDIN_FAIL             "<cupti function>:<CUptiResult>": that function
 *                            fails with that result (e.g. cuptiSubscribe:35)
 *   STANDIN_LOG              a file the stand-in appends one line to for every
 *                            call it reports, record it writes or drops and
 *                            buffer it completes (times in CLOCK_MONOTONIC ns):
 *                            what the test compares kprof's output with
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_standin.h"

/* The record layouts of this header's CUPTI version (the kinds' documentation
 * in cupti_activity.h names them). */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel13 KernelRecord;
typedef CUpti_ActivityMemcpy7 MemcpyRecord;
typedef CUpti_ActivityMemset5 MemsetRecord;
#else
typedef CUpti_ActivityKernel9 KernelRecord;
typedef CUpti_ActivityMemcpy6 MemcpyRecord;
typedef CUpti_ActivityMemset4 MemsetRecord;
#endif
typedef CUpti_ActivityMemcpyPtoP4 PeerRecord;
typedef CUpti_ActivityMemory4 MemoryRecord;
typedef CUpti_ActivitySynchronization2 SyncRecord;
typedef CUpti_ActivityOverhead3 OverheadRecord;

#define EXPORT __attribute__((visibility("default")))
/* The stream id given to the completion callback: deprecated ("always NULL"),
 * and CUPTI 13.0 passes an arbitrary value there; a client must not use it. */
#define COMPLETION_STREAM 0xf00df00du
#define MAX_BUFFERS 4096
#define MAX_DEPTH 64

/* One buffer the client gave: where each record starts, for
 * cuptiActivityGetNextRecord. */
struct buffer {
    uint8_t *base;
    size_t size, used, max_records, nrec, cap, cursor;
    size_t *offsets;
    uint64_t seq;
    int state; /* 0 unused, 1 filling, 2 filled, 3 completing/completed */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc subscriber_cb;
static void *subscriber_data;
static int subscribed;
static int domain_on[CUPTI_CB_DOMAIN_SIZE];
static unsigned char runtime_on[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static unsigned char driver_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
static CUpti_BuffersCallbackRequestFunc request_fn;
static CUpti_BuffersCallbackCompleteFunc complete_fn;
static unsigned char kind_on[CUPTI_ACTIVITY_KIND_COUNT];
static struct buffer buffers[MAX_BUFFERS];
static struct buffer *filling;
static uint64_t next_seq;
static size_t dropped;
static int finalized;
static FILE *log_file;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static uint64_t clock_offset = 1700000000000000000ull;
static char fail_function[64];
static CUptiResult fail_result;

static void read_env(void) {
    const char *v = getenv("STANDIN_CLOCK_OFFSET_NS");
    if (v && *v)
        clock_offset = strtoull(v, NULL, 10);
    v = getenv("STANDIN_FAIL");
    const char *colon = v ? strchr(v, ':') : NULL;
    if (colon && (size_t)(colon - v) < sizeof fail_function) {
        memcpy(fail_function, v, (size_t)(colon - v));
        fail_result = (CUptiResult)atoi(colon + 1);
    }
    v = getenv("STANDIN_LOG");
    if (v && *v) {
        log_file = fopen(v, "a");
        if (log_file)
            setvbuf(log_file, NULL, _IOLBF, 0);
    }
}

static void env(void) { pthread_once(&env_once, read_env); }

/* The result `function` must return instead of working (STANDIN_FAIL), or
 * CUPTI_SUCCESS. */
static CUptiResult injected(const char *function) {
    env();
    return fail_function[0] && strcmp(fail_function, function) == 0 ? fail_result
                                                                      : CUPTI_SUCCESS;
}

#define FAIL_IF_INJECTED(f)                                                              \
    do {                                                                                 \
        CUptiResult r_ = injected(f);                                                    \
        if (r_ != CUPTI_SUCCESS)                                                         \
            return r_;                                                                   \
    } while (0)

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
    env();
    if (!log_file)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&log_lock);
    vfprintf(log_file, fmt, ap);
    fputc('\n', log_file);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
}

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A CLOCK_MONOTONIC time on the stand-in's clock. */
static uint64_t on_clock(uint64_t monotonic) {
    env();
    return monotonic + clock_offset;
}

/* ------------------------------------------------------------ CUPTI's API */

EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
    FAIL_IF_INJECTED("cuptiGetVersion");
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *v = getenv("STANDIN_CUPTI_VERSION");
    *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str) {
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    switch (result) {
#define NAME(r)                                                                          \
    case r:                                                                              \
        *str = #r;                                                                       \
        return CUPTI_SUCCESS;
        NAME(CUPTI_SUCCESS)
        NAME(CUPTI_ERROR_INVALID_PARAMETER)
        NAME(CUPTI_ERROR_INVALID_DEVICE)
        NAME(CUPTI_ERROR_INVALID_CONTEXT)
        NAME(CUPTI_ERROR_INVALID_OPERATION)
        NAME(CUPTI_ERROR_OUT_OF_MEMORY)
        NAME(CUPTI_ERROR_HARDWARE)
        NAME(CUPTI_ERROR_API_NOT_IMPLEMENTED)
        NAME(CUPTI_ERROR_MAX_LIMIT_REACHED)
        NAME(CUPTI_ERROR_NOT_READY)
        NAME(CUPTI_ERROR_NOT_COMPATIBLE)
        NAME(CUPTI_ERROR_NOT_INITIALIZED)
        NAME(CUPTI_ERROR_INVALID_HANDLE)
        NAME(CUPTI_ERROR_INVALID_KIND)
        NAME(CUPTI_ERROR_DISABLED)
        NAME(CUPTI_ERROR_NOT_SUPPORTED)
        NAME(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED)
        NAME(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        NAME(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        NAME(CUPTI_ERROR_UNKNOWN)
#undef NAME
    default:
        *str = NULL;
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                           CUpti_CallbackFunc callback, void *userdata) {
    FAIL_IF_INJECTED("cuptiSubscribe");
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_SUCCESS;
    if (subscribed) {
        r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    } else {
        subscribed = 1;
        finalized = 0;
        subscriber_cb = callback;
        subscriber_data = userdata;
        /* An opaque, non-NULL handle. */
        *subscriber = (CUpti_SubscriberHandle)&subscriber_cb;
    }
    pthread_mutex_unlock(&lock);
    logf_("subscribe result=%d", (int)r);
    return r;
}

static int is_subscriber(CUpti_SubscriberHandle h) {
    return subscribed && h == (CUpti_SubscriberHandle)&subscriber_cb;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    FAIL_IF_INJECTED("cuptiUnsubscribe");
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (is_subscriber(subscriber)) {
        subscribed = 0;
        subscriber_cb = NULL;
        memset(domain_on, 0, sizeof domain_on);
        memset(runtime_on, 0, sizeof runtime_on);
        memset(driver_on, 0, sizeof driver_on);
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    logf_("unsubscribe result=%d", (int)r);
    return r;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
                                              CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain) {
    FAIL_IF_INJECTED("cuptiEnableDomain");
    if ((int)domain <= (int)CUPTI_CB_DOMAIN_INVALID || (int)domain >= CUPTI_CB_DOMAIN_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (is_subscriber(subscriber)) {
        domain_on[domain] = enable != 0;
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
            memset(runtime_on, enable != 0, sizeof runtime_on);
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
            memset(driver_on, enable != 0, sizeof driver_on);
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    logf_("enable_domain domain=%d enable=%u result=%d", (int)domain, enable, (int)r);
    return r;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
                                                CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain,
                                                CUpti_CallbackId cbid) {
    FAIL_IF_INJECTED("cuptiEnableCallback");
    pthread_mutex_lock(&lock);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (is_subscriber(subscriber)) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) {
            runtime_on[cbid] = enable != 0;
            r = CUPTI_SUCCESS;
        } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
                   cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) {
            driver_on[cbid] = enable != 0;
            r = CUPTI_SUCCESS;
        } else if ((int)domain > (int)CUPTI_CB_DOMAIN_INVALID &&
                   (int)domain < CUPTI_CB_DOMAIN_SIZE) {
            /* Other domains: the stand-in reports nothing in them. */
            r = CUPTI_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
    FAIL_IF_INJECTED("cuptiActivityRegisterCallbacks");
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    request_fn = funcBufferRequested;
    complete_fn = funcBufferCompleted;
    pthread_mutex_unlock(&lock);
    logf_("register_callbacks");
    return CUPTI_SUCCESS;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, int on) {
    if ((int)kind <= (int)CUPTI_ACTIVITY_KIND_INVALID || (int)kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&lock);
    kind_on[kind] = (unsigned char)on;
    pthread_mutex_unlock(&lock);
    logf_("activity_%s kind=%d", on ? "enable" : "disable", (int)kind);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    FAIL_IF_INJECTED("cuptiActivityEnable");
    return set_kind(kind, 1);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    FAIL_IF_INJECTED("cuptiActivityDisable");
    return set_kind(kind, 0);
}

static struct buffer *find_buffer(const uint8_t *base) {
    for (size_t i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i].state != 0 && buffers[i].base == base)
            return &buffers[i];
    return NULL;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
                                                       size_t validBufferSizeBytes,
                                                       CUpti_Activity **record) {
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    CUptiResult r;
    struct buffer *b = find_buffer(buffer);
    if (!b) {
        r = CUPTI_ERROR_INVALID_KIND;
    } else {
        size_t next = 0;
        if (*record) {
            size_t at = (size_t)((uint8_t *)*record - buffer);
            if (b->cursor < b->nrec && b->offsets[b->cursor] == at) {
                next = b->cursor + 1;
            } else {
                next = b->nrec + 1; /* not a record of this buffer */
                for (size_t i = 0; i < b->nrec; i++)
                    if (b->offsets[i] == at)
                        next = i + 1;
            }
        }
        if (next > b->nrec) {
            r = CUPTI_ERROR_INVALID_PARAMETER;
        } else if (next == b->nrec || b->offsets[next] >= validBufferSizeBytes) {
            r = CUPTI_ERROR_MAX_LIMIT_REACHED;
        } else {
            b->cursor = next;
            *record = (CUpti_Activity *)(buffer + b->offsets[next]);
            r = CUPTI_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                              uint32_t streamId,
                                                              size_t *count) {
    (void)context;
    (void)streamId;
    FAIL_IF_INJECTED("cuptiActivityGetNumDroppedRecords");
    if (!count)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&lock);
    *count = dropped;
    dropped = 0;
    pthread_mutex_unlock(&lock);
    if (*count)
        logf_("dropped_read n=%zu", *count);
    return CUPTI_SUCCESS;
}

/* Takes every filled buffer (and the one being filled) for completion, in
 * order of their first record, into `out`; returns how many. */
static size_t take_filled(struct buffer **out, int newest_first) {
    size_t n = 0;
    pthread_mutex_lock(&lock);
    if (filling) {
        filling->state = 2;
        filling = NULL;
    }
    for (size_t i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i].state == 2) {
            buffers[i].state = 3;
            out[n++] = &buffers[i];
        }
    pthread_mutex_unlock(&lock);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && (out[j - 1]->seq > out[j]->seq) != !!newest_first; j--) {
            struct buffer *t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void complete_all(struct buffer **list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        struct buffer *b = list[i];
        logf_("complete seq=%" PRIu64 " records=%zu bytes=%zu", b->seq, b->nrec, b->used);
        /* The client owns the buffer again from here: it may walk it and give it
         * back in a later request, which starts its record list anew. */
        complete_fn(NULL, COMPLETION_STREAM, b->base, b->size, b->used);
    }
}

static struct buffer *completing[MAX_BUFFERS];

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    FAIL_IF_INJECTED("cuptiActivityFlushAll");
    if (!complete_fn)
        return CUPTI_ERROR_INVALID_OPERATION;
    /* Every record the stand-in writes is complete: the default and the forced
     * flush both deliver every buffer. */
    struct buffer **list = calloc(MAX_BUFFERS, sizeof *list);
    if (!list)
        return CUPTI_ERROR_OUT_OF_MEMORY;
    size_t n = take_filled(list, 0);
    logf_("flush flag=%u buffers=%zu", flag, n);
    complete_all(list, n);
    free(list);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
    FAIL_IF_INJECTED("cuptiGetTimestamp");
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = on_clock(monotonic_ns());
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) {
    FAIL_IF_INJECTED("cuptiFinalize");
    pthread_mutex_lock(&lock);
    finalized = 1;
    subscribed = 0;
    subscriber_cb = NULL;
    memset(kind_on, 0, sizeof kind_on);
    pthread_mutex_unlock(&lock);
    logf_("finalize");
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------- the control API */

/* Whether a record of `aligned` bytes goes into buffer `b` after those it holds. */
static int fits(const struct buffer *b, size_t aligned) {
    return b->used + aligned <= b->size && (!b->max_records || b->nrec < b->max_records);
}

/* Puts a record of `size` bytes into the buffer being filled, asking the
 * client for one when there is none or it is full; drops and counts it when the
 * client declines. Records of a disabled kind are not written (check_kind). The
 * client's request callback runs without the stand-in's lock held (it may call
 * CUPTI), on the thread that needs the buffer. */
static void emit(const void *rec, size_t size, int check_kind, const char *what) {
    CUpti_ActivityKind kind;
    memcpy(&kind, rec, sizeof kind);
    size_t aligned = (size + 7) & ~(size_t)7;
    for (;;) {
        pthread_mutex_lock(&lock);
        if (!request_fn || !complete_fn || finalized ||
            (check_kind && ((int)kind >= CUPTI_ACTIVITY_KIND_COUNT || !kind_on[kind]))) {
            pthread_mutex_unlock(&lock);
            logf_("not_recorded kind=%d %s", (int)kind, what);
            return;
        }
        struct buffer *b = filling;
        if (b && fits(b, aligned)) {
            if (b->nrec == b->cap) {
                b->cap = b->cap ? 2 * b->cap : 256;
                b->offsets = realloc(b->offsets, b->cap * sizeof *b->offsets);
                if (!b->offsets)
                    abort();
            }
            memcpy(b->base + b->used, rec, size);
            memset(b->base + b->used + size, 0, aligned - size);
            b->offsets[b->nrec++] = b->used;
            b->used += aligned;
            uint64_t seq = b->seq;
            pthread_mutex_unlock(&lock);
            logf_("record buffer=%" PRIu64 " kind=%d %s", seq, (int)kind, what);
            return;
        }
        if (b) {
            b->state = 2;
            filling = NULL;
        }
        CUpti_BuffersCallbackRequestFunc request = request_fn;
        pthread_mutex_unlock(&lock);

        uint8_t *base = NULL;
        size_t bsize = 0, max_records = 0;
        request(&base, &bsize, &max_records);

        pthread_mutex_lock(&lock);
        if (!base || bsize < aligned || ((uintptr_t)base & 7)) {
            dropped++;
            pthread_mutex_unlock(&lock);
            logf_("drop reason=no_buffer kind=%d %s", (int)kind, what);
            return;
        }
        b = find_buffer(base);
        for (size_t i = 0; i < MAX_BUFFERS && !b; i++)
            if (buffers[i].state == 0)
                b = &buffers[i];
        if (!b) {
            fprintf(stderr, "cupti_standin: more than %d buffers\n", MAX_BUFFERS);
            abort();
        }
        /* Another thread may have installed a buffer meanwhile: it is filled. */
        if (filling) {
            filling->state = 2;
        }
        b->base = base;
        b->size = bsize;
        b->used = 0;
        b->nrec = 0;
        b->cursor = 0;
        b->max_records = max_records;
        b->seq = next_seq++;
        b->state = 1;
        filling = b;
        uint64_t seq = b->seq;
        pthread_mutex_unlock(&lock);
        logf_("request seq=%" PRIu64 " size=%zu max_records=%zu", seq, bsize, max_records);
    }
}

/* The correlationData slots of the calls open on this thread. */
static __thread uint64_t correlation_data[MAX_DEPTH];
static __thread int depth;

EXPORT void standin_api(int domain, uint32_t cbid, const char *function, const char *symbol,
                        uint32_t correlation, int site) {
    static const int ok = 0; /* cudaSuccess / CUDA_SUCCESS */
    /* The call's parameters: the stand-in has none to give (zeros). */
    static const uint64_t params[32];
    if (site == CUPTI_API_ENTER) {
        logf_("api enter domain=%d fn=%s corr=%u t=%" PRIu64, domain, function, correlation,
              monotonic_ns());
        if (depth < MAX_DEPTH)
            correlation_data[depth] = 0;
        depth++;
    }
    uint64_t *slot = depth >= 1 && depth <= MAX_DEPTH ? &correlation_data[depth - 1] : NULL;
    pthread_mutex_lock(&lock);
    CUpti_CallbackFunc cb = subscribed ? subscriber_cb : NULL;
    void *data = subscriber_data;
    int on = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE &&
              runtime_on[cbid]) ||
             (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE &&
              driver_on[cbid]);
    pthread_mutex_unlock(&lock);
    if (cb && on) {
        CUpti_CallbackData d;
        memset(&d, 0, sizeof d);
        d.callbackSite = site == CUPTI_API_ENTER ? CUPTI_API_ENTER : CUPTI_API_EXIT;
        d.functionName = function;
        d.functionParams = params;
        d.functionReturnValue = site == CUPTI_API_EXIT ? (void *)&ok : NULL;
        d.symbolName = symbol;
        d.context = (CUcontext)(uintptr_t)0xc0de0000;
        d.contextUid = 1;
        d.correlationData = slot;
        d.correlationId = correlation;
        cb(data, (CUpti_CallbackDomain)domain, (CUpti_CallbackId)cbid, &d);
    }
    if (site != CUPTI_API_ENTER) {
        if (depth > 0)
            depth--;
        logf_("api exit domain=%d fn=%s corr=%u t=%" PRIu64, domain, function, correlation,
              monotonic_ns());
    }
}

EXPORT void standin_kernel(const struct standin_kernel_desc *k) {
    KernelRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.registersPerThread = k->registers;
    r.start = on_clock(k->start);
    r.end = on_clock(k->end);
    r.completed = r.end;
    r.queued = on_clock(k->start);
    r.submitted = on_clock(k->start);
    r.deviceId = k->device;
    r.contextId = 1;
    r.streamId = k->stream;
    r.gridX = k->grid[0];
    r.gridY = k->grid[1];
    r.gridZ = k->grid[2];
    r.blockX = k->block[0];
    r.blockY = k->block[1];
    r.blockZ = k->block[2];
    r.staticSharedMemory = k->static_shared;
    r.dynamicSharedMemory = k->dynamic_shared;
    r.correlationId = k->correlation;
    r.gridId = (int64_t)k->correlation;
    /* CUPTI's name lives as long as the process: so does this copy. */
    r.name = strdup(k->name);
    char what[512];
    snprintf(what, sizeof what,
             "kernel name=%s dev=%u stream=%u corr=%u start=%" PRIu64 " end=%" PRIu64, k->name,
             k->device, k->stream, k->correlation, k->start, k->end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_memcpy(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                           uint64_t bytes, uint32_t device, uint32_t stream, uint32_t correlation,
                           uint32_t runtime_correlation, uint64_t start, uint64_t end) {
    MemcpyRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = copy_kind;
    r.srcKind = src_kind;
    r.dstKind = dst_kind;
    r.bytes = bytes;
    r.start = on_clock(start);
    r.end = on_clock(end);
    r.deviceId = device;
    r.contextId = 1;
    r.streamId = stream;
    r.correlationId = correlation;
    r.runtimeCorrelationId = runtime_correlation;
    r.copyCount = 1;
    char what[256];
    snprintf(what, sizeof what,
             "memcpy copy_kind=%u bytes=%" PRIu64 " dev=%u stream=%u corr=%u start=%" PRIu64
             " end=%" PRIu64,
             copy_kind, bytes, device, stream, correlation, start, end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_memcpy_peer(uint64_t bytes, uint32_t src_device, uint32_t dst_device,
                                uint32_t device, uint32_t stream, uint32_t correlation,
                                uint64_t start, uint64_t end) {
    PeerRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.bytes = bytes;
    r.start = on_clock(start);
    r.end = on_clock(end);
    r.deviceId = device;
    r.contextId = 1;
    r.streamId = stream;
    r.srcDeviceId = src_device;
    r.srcContextId = 1 + src_device;
    r.dstDeviceId = dst_device;
    r.dstContextId = 1 + dst_device;
    r.correlationId = correlation;
    char what[256];
    snprintf(what, sizeof what,
             "memcpy_peer bytes=%" PRIu64 " src=%u dst=%u dev=%u stream=%u corr=%u start=%" PRIu64
             " end=%" PRIu64,
             bytes, src_device, dst_device, device, stream, correlation, start, end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_memset(uint32_t value, uint64_t bytes, uint16_t memory_kind,
                           uint32_t device, uint32_t stream, uint32_t correlation,
                           uint64_t start, uint64_t end) {
    MemsetRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = value;
    r.bytes = bytes;
    r.start = on_clock(start);
    r.end = on_clock(end);
    r.deviceId = device;
    r.contextId = 1;
    r.streamId = stream;
    r.correlationId = correlation;
    r.memoryKind = memory_kind;
    char what[256];
    snprintf(what, sizeof what,
             "memset bytes=%" PRIu64 " dev=%u stream=%u corr=%u start=%" PRIu64 " end=%" PRIu64,
             bytes, device, stream, correlation, start, end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_memory2(int operation, int memory_kind, uint64_t address, uint64_t bytes,
                            uint32_t device, uint32_t stream, uint32_t correlation,
                            uint64_t timestamp) {
    MemoryRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = (CUpti_ActivityMemoryOperationType)operation;
    r.memoryKind = (CUpti_ActivityMemoryKind)memory_kind;
    r.correlationId = correlation;
    r.address = address;
    r.bytes = bytes;
    r.timestamp = on_clock(timestamp);
    r.PC = 0x401000;
    r.processId = (uint32_t)getpid();
    r.deviceId = device;
    r.contextId = 1;
    r.streamId = stream;
    char what[256];
    snprintf(what, sizeof what,
             "memory2 op=%d memory_kind=%d address=0x%" PRIx64 " bytes=%" PRIu64
             " dev=%u corr=%u t=%" PRIu64,
             operation, memory_kind, address, bytes, device, correlation, timestamp);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_sync(int type, uint32_t context, uint32_t stream, uint32_t correlation,
                         uint64_t start, uint64_t end) {
    SyncRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = (CUpti_ActivitySynchronizationType)type;
    r.start = on_clock(start);
    r.end = on_clock(end);
    r.correlationId = correlation;
    r.contextId = context;
    r.streamId = stream;
    r.cudaEventId = 0;
    char what[256];
    snprintf(what, sizeof what,
             "sync type=%d ctx=%u stream=%u corr=%u start=%" PRIu64 " end=%" PRIu64, type,
             context, stream, correlation, start, end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_overhead(int kind, uint64_t start, uint64_t end) {
    OverheadRecord r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    r.overheadKind = (CUpti_ActivityOverheadKind)kind;
    r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    r.objectId.pt.processId = (uint32_t)getpid();
    r.start = on_clock(start);
    r.end = on_clock(end);
    char what[128];
    snprintf(what, sizeof what, "overhead kind=%d start=%" PRIu64 " end=%" PRIu64, kind, start,
             end);
    emit(&r, sizeof r, 1, what);
}

EXPORT void standin_unknown(uint32_t kind, uint32_t size) {
    union {
        CUpti_Activity head;
        uint64_t bytes[64];
    } rec;
    if (size < sizeof rec.head || size > sizeof rec)
        size = sizeof rec;
    memset(&rec, 0, sizeof rec);
    rec.head.kind = (CUpti_ActivityKind)kind;
    char what[64];
    snprintf(what, sizeof what, "unknown kind=%u size=%u", kind, size);
    emit(&rec, size, 0, what);
}

EXPORT void standin_drop(size_t n) {
    pthread_mutex_lock(&lock);
    dropped += n;
    pthread_mutex_unlock(&lock);
    logf_("drop reason=injected n=%zu", n);
}

EXPORT void standin_seal(void) {
    pthread_mutex_lock(&lock);
    if (filling) {
        filling->state = 2;
        filling = NULL;
    }
    pthread_mutex_unlock(&lock);
}

struct completion {
    struct buffer **list;
    size_t n;
};

static void *completion_thread(void *arg) {
    struct completion *c = arg;
    complete_all(c->list, c->n);
    return NULL;
}

EXPORT size_t standin_complete(int newest_first) {
    if (!complete_fn)
        return 0;
    struct completion c = {completing, 0};
    c.n = take_filled(completing, newest_first);
    pthread_t t;
    if (pthread_create(&t, NULL, completion_thread, &c) != 0)
        completion_thread(&c);
    else
        pthread_join(t, NULL);
    return c.n;
}

/*
 * rocprofiler_standin.c - a stand-in librocprofiler-sdk.so for testing kprof's
 * ROCm plugin on machines without an AMD GPU or ROCm, written here from
 * rocprofiler-sdk's public documentation (types: rocprofiler_standin.h).
 *
 * Toward a tool it behaves as rocprofiler-sdk does:
 *   - at standin_init (what the SDK does when the HIP runtime registers with
 *     it) it opens each library of ROCP_TOOL_LIBRARIES (':'-separated) with
 *     dlopen(RTLD_GLOBAL | RTLD_LAZY), as the SDK's registration does, calls its
 *     rocprofiler_configure(ROCPROFILER_VERSION, version string, priority,
 *     &client_id), keeps a copy of the result, calls its initialize(finalize
 *     function, tool_data), and from then on refuses configuration calls
 *     (CONFIGURATION_LOCKED); at exit (atexit, registered after the tools were
 *     configured) it calls each tool's finalize(tool_data) once;
 *   - contexts, buffers and services: callback tracing (HIP runtime API, code
 *     objects) calls the tool's callback synchronously on the calling thread,
 *     enter and exit sharing one user data slot, for started contexts only;
 *     buffer tracing (kernel dispatch, memory copy, memory allocation) writes
 *     records into the buffer of the service's context, delivered in batches to
 *     the buffer callback from a thread of the stand-in's own (standin_complete)
 *     or by rocprofiler_flush_buffer, which returns once they are delivered, with
 *     the records dropped since the last delivery as drop_count;
 *   - rocprofiler_get_timestamp and every record time are on the stand-in's
 *     clock: CLOCK_MONOTONIC + STANDIN_CLOCK_OFFSET_NS (default 5e17).
 *
 * Environment:
 *   ROCP_TOOL_LIBRARIES   the tools
 *   STANDIN_FAIL          "<function>:<status>": that function fails
 *   STANDIN_LOG           a file the stand-in appends one line to for every
 *                         call it reports, record it writes and batch it
 *                         delivers (times in CLOCK_MONOTONIC ns)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rocprofiler_standin.h"

#define EXPORT __attribute__((visibility("default")))
/* SDK 1.0's correlation ids name the call that made this one: a value a tool
 * reading the 0.x layout would take for the record's kind. */
#ifdef STANDIN_SDK_1
#define STANDIN_ANCESTOR(c) ((c).ancestor = 7)
#else
#define STANDIN_ANCESTOR(c) ((void)0)
#endif
#ifdef STANDIN_SDK_1
#define VERSION_MAJOR 1
#define VERSION_MINOR 0
#define VERSION_PATCH 0
#define VERSION_STRING "1.0.0"
#else
#define VERSION_MAJOR 0
#define VERSION_MINOR 6
#define VERSION_PATCH 0
#define VERSION_STRING "0.6.0"
#endif
#define MAX_CONTEXTS 8
#define MAX_BUFFERS 8
#define MAX_TOOLS 8
#define MAX_DEPTH 64

struct context {
    int used, started;
    rocprofiler_callback_tracing_cb_t callback[ROCPROFILER_CALLBACK_TRACING_LAST];
    void *callback_data[ROCPROFILER_CALLBACK_TRACING_LAST];
    uint64_t buffer_of[ROCPROFILER_BUFFER_TRACING_LAST]; /* buffer id, 0 none */
};

struct batch {
    rocprofiler_record_header_t **headers;
    size_t n, cap;
    struct batch *next;
};

struct buffer {
    int used;
    uint64_t context;
    rocprofiler_buffer_tracing_cb_t callback;
    void *data;
    struct batch *filling;
    struct batch *filled; /* oldest first */
    uint64_t dropped;
    uint64_t batches;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct context contexts[MAX_CONTEXTS + 1];
static struct buffer buffers[MAX_BUFFERS + 1];
static int init_status; /* 0 not yet, -1 configuring, 1 locked */
static struct {
    rocprofiler_tool_configure_result_t result;
    rocprofiler_client_id_t id;
    int finalized;
} tools[MAX_TOOLS];
static int ntools;
static FILE *log_file;
static uint64_t clock_offset = 500000000000000000ull;
static char fail_function[96];
static rocprofiler_status_t fail_status;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const char *const hip_names[STANDIN_HIP_OPS] = {
    [STANDIN_hipMalloc] = "hipMalloc",
    [STANDIN_hipFree] = "hipFree",
    [STANDIN_hipMemcpy] = "hipMemcpy",
    [STANDIN_hipMemcpyAsync] = "hipMemcpyAsync",
    [STANDIN_hipLaunchKernel] = "hipLaunchKernel",
    [STANDIN_hipDeviceSynchronize] = "hipDeviceSynchronize",
};

static standin_agent_t agents[STANDIN_AGENTS];

static void read_env(void) {
    const char *v = getenv("STANDIN_CLOCK_OFFSET_NS");
    if (v && *v)
        clock_offset = strtoull(v, NULL, 10);
    v = getenv("STANDIN_FAIL");
    const char *colon = v ? strchr(v, ':') : NULL;
    if (colon && (size_t)(colon - v) < sizeof fail_function) {
        memcpy(fail_function, v, (size_t)(colon - v));
        fail_status = atoi(colon + 1);
    }
    v = getenv("STANDIN_LOG");
    if (v && *v) {
        log_file = fopen(v, "a");
        if (log_file)
            setvbuf(log_file, NULL, _IOLBF, 0);
    }
    for (int i = 0; i < STANDIN_AGENTS; i++) {
        agents[i].size = sizeof agents[i];
        agents[i].id.handle = 0x1000u * (uint64_t)(i + 1);
        agents[i].type = i == STANDIN_CPU ? ROCPROFILER_AGENT_TYPE_CPU : ROCPROFILER_AGENT_TYPE_GPU;
    }
}

static void env(void) { pthread_once(&env_once, read_env); }

static rocprofiler_status_t injected(const char *function) {
    env();
    return fail_function[0] && strcmp(fail_function, function) == 0 ? fail_status
                                                                      : ROCPROFILER_STATUS_SUCCESS;
}

#define FAIL_IF_INJECTED()                                                               \
    do {                                                                                 \
        rocprofiler_status_t r_ = injected(__func__);                                    \
        if (r_ != ROCPROFILER_STATUS_SUCCESS)                                            \
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

static uint64_t on_clock(uint64_t monotonic) {
    env();
    return monotonic + clock_offset;
}

/* ------------------------------------------------- rocprofiler-sdk's API */

EXPORT rocprofiler_status_t rocprofiler_get_timestamp(uint64_t *ts) {
    FAIL_IF_INJECTED();
    if (!ts)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    *ts = on_clock(monotonic_ns());
    return ROCPROFILER_STATUS_SUCCESS;
}

EXPORT const char *rocprofiler_get_status_string(rocprofiler_status_t status) {
    switch (status) {
    case ROCPROFILER_STATUS_SUCCESS:
        return "ROCPROFILER_STATUS_SUCCESS";
    case ROCPROFILER_STATUS_ERROR:
        return "ROCPROFILER_STATUS_ERROR";
    case ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND:
        return "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND";
    case ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND:
        return "ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND";
    case ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND:
        return "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND";
    case ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND:
        return "ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND";
    case ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED:
        return "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED";
    case ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED:
        return "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED";
    case ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI:
        return "ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI";
    case ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT:
        return "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT";
    default:
        return NULL;
    }
}

EXPORT rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t *id) {
    FAIL_IF_INJECTED();
    if (!id)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (init_status > 0)
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    pthread_mutex_lock(&lock);
    rocprofiler_status_t r = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    for (uint64_t i = 1; i <= MAX_CONTEXTS; i++)
        if (!contexts[i].used) {
            contexts[i].used = 1;
            id->handle = i;
            r = ROCPROFILER_STATUS_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    logf_("create_context result=%d", r);
    return r;
}

static struct context *find_context(rocprofiler_context_id_t id) {
    return id.handle >= 1 && id.handle <= MAX_CONTEXTS && contexts[id.handle].used
               ? &contexts[id.handle]
               : NULL;
}

EXPORT rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t id) {
    FAIL_IF_INJECTED();
    pthread_mutex_lock(&lock);
    struct context *c = find_context(id);
    if (c)
        c->started = 1;
    pthread_mutex_unlock(&lock);
    logf_("start_context ctx=%" PRIu64, id.handle);
    return c ? ROCPROFILER_STATUS_SUCCESS : ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
}

EXPORT rocprofiler_status_t rocprofiler_configure_callback_tracing_service(
    rocprofiler_context_id_t id, int kind, const int32_t *operations, size_t operations_count,
    rocprofiler_callback_tracing_cb_t callback, void *callback_args) {
    FAIL_IF_INJECTED();
    (void)operations;
    (void)operations_count;
    if (init_status > 0)
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    if (kind <= 0 || kind >= ROCPROFILER_CALLBACK_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    pthread_mutex_lock(&lock);
    struct context *c = find_context(id);
    rocprofiler_status_t r = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (c && c->callback[kind]) {
        r = ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    } else if (c) {
        c->callback[kind] = callback;
        c->callback_data[kind] = callback_args;
        r = ROCPROFILER_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    logf_("callback_service kind=%d result=%d", kind, r);
    return r;
}

EXPORT rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t id, size_t size,
                                                      size_t watermark, int policy,
                                                      rocprofiler_buffer_tracing_cb_t callback,
                                                      void *callback_data,
                                                      rocprofiler_buffer_id_t *buffer_id) {
    FAIL_IF_INJECTED();
    if (!callback || !buffer_id)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (init_status > 0)
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    pthread_mutex_lock(&lock);
    rocprofiler_status_t r = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (find_context(id)) {
        r = ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
        for (uint64_t i = 1; i <= MAX_BUFFERS; i++)
            if (!buffers[i].used) {
                buffers[i].used = 1;
                buffers[i].context = id.handle;
                buffers[i].callback = callback;
                buffers[i].data = callback_data;
                buffer_id->handle = i;
                r = ROCPROFILER_STATUS_SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    logf_("create_buffer size=%zu watermark=%zu policy=%d result=%d", size, watermark, policy, r);
    return r;
}

EXPORT rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(
    rocprofiler_context_id_t id, int kind, const int32_t *operations, size_t operations_count,
    rocprofiler_buffer_id_t buffer_id) {
    FAIL_IF_INJECTED();
    (void)operations;
    (void)operations_count;
    if (init_status > 0)
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    if (kind <= 0 || kind >= ROCPROFILER_BUFFER_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    pthread_mutex_lock(&lock);
    struct context *c = find_context(id);
    rocprofiler_status_t r = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (c && (buffer_id.handle < 1 || buffer_id.handle > MAX_BUFFERS ||
              !buffers[buffer_id.handle].used)) {
        r = ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
    } else if (c && c->buffer_of[kind]) {
        r = ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    } else if (c) {
        c->buffer_of[kind] = buffer_id.handle;
        r = ROCPROFILER_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    logf_("buffer_service kind=%d result=%d", kind, r);
    return r;
}

EXPORT rocprofiler_status_t rocprofiler_query_callback_tracing_kind_operation_name(
    int kind, int32_t operation, const char **name, uint64_t *name_len) {
    FAIL_IF_INJECTED();
    if (kind != ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    if (operation <= 0 || operation >= STANDIN_HIP_OPS)
        return ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
    if (name)
        *name = hip_names[operation];
    if (name_len)
        *name_len = strlen(hip_names[operation]);
    return ROCPROFILER_STATUS_SUCCESS;
}

EXPORT rocprofiler_status_t
rocprofiler_query_available_agents(int version, rocprofiler_query_available_agents_cb_t callback,
                                   size_t agent_size, void *user_data) {
    FAIL_IF_INJECTED();
    env();
    if (version != ROCPROFILER_AGENT_INFO_VERSION_0 || !callback)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (agent_size > sizeof(standin_agent_t))
        return ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI;
    const void *list[STANDIN_AGENTS];
    for (int i = 0; i < STANDIN_AGENTS; i++)
        list[i] = &agents[i];
    return callback(version, list, STANDIN_AGENTS, user_data);
}

/* Delivers every filled batch of buffer `b` (and the one being filled) to its
 * callback, oldest or newest first. Called without the lock. */
static size_t deliver(uint64_t b, int newest_first) {
    struct buffer *buf = &buffers[b];
    pthread_mutex_lock(&lock);
    if (buf->filling) {
        struct batch **tail = &buf->filled;
        while (*tail)
            tail = &(*tail)->next;
        *tail = buf->filling;
        buf->filling = NULL;
    }
    struct batch *list = buf->filled;
    buf->filled = NULL;
    uint64_t dropped = buf->dropped;
    buf->dropped = 0;
    pthread_mutex_unlock(&lock);
    struct batch *order[4096];
    size_t n = 0;
    for (struct batch *x = list; x && n < 4096; x = x->next)
        order[n++] = x;
    for (size_t i = 0; i < n; i++) {
        struct batch *x = order[newest_first ? n - 1 - i : i];
        logf_("complete batch=%p records=%zu dropped=%" PRIu64, (void *)x, x->n,
              i == 0 ? dropped : 0);
        rocprofiler_context_id_t ctx = {buf->context};
        rocprofiler_buffer_id_t id = {b};
        buf->callback(ctx, id, x->headers, x->n, buf->data, i == 0 ? dropped : 0);
    }
    if (n == 0 && dropped) {
        rocprofiler_context_id_t ctx = {buf->context};
        rocprofiler_buffer_id_t id = {b};
        buf->callback(ctx, id, NULL, 0, buf->data, dropped);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < order[i]->n; j++) {
            free(order[i]->headers[j]->payload);
            free(order[i]->headers[j]);
        }
        free(order[i]->headers);
        free(order[i]);
    }
    return n;
}

struct delivery {
    uint64_t buffer;
    int newest_first;
    size_t n;
};

static void *delivery_thread(void *arg) {
    struct delivery *d = arg;
    d->n += deliver(d->buffer, d->newest_first);
    return NULL;
}

/* Delivers from a thread of the stand-in's own, as the SDK's buffer thread. */
static size_t deliver_on_thread(uint64_t b, int newest_first) {
    struct delivery d = {b, newest_first, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, delivery_thread, &d) != 0)
        delivery_thread(&d);
    else
        pthread_join(t, NULL);
    return d.n;
}

EXPORT rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t id) {
    FAIL_IF_INJECTED();
    if (id.handle < 1 || id.handle > MAX_BUFFERS || !buffers[id.handle].used)
        return ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
    size_t n = deliver_on_thread(id.handle, 0);
    logf_("flush buffer=%" PRIu64 " batches=%zu", id.handle, n);
    return ROCPROFILER_STATUS_SUCCESS;
}

/* ------------------------------------------------ registration of tools */

static void client_finalize(rocprofiler_client_id_t id) {
    for (int i = 0; i < ntools; i++)
        if (tools[i].id.handle == id.handle && !tools[i].finalized) {
            tools[i].finalized = 1;
            if (tools[i].result.finalize) {
                logf_("finalize tool=%d", i);
                tools[i].result.finalize(tools[i].result.tool_data);
            }
        }
}

static void at_exit(void) {
    for (int i = 0; i < ntools; i++)
        client_finalize(tools[i].id);
}

EXPORT void standin_init(void) {
    static int done;
    if (done)
        return;
    done = 1;
    env();
    init_status = -1;
    const char *libs = getenv("ROCP_TOOL_LIBRARIES");
    char *copy = libs ? strdup(libs) : NULL;
    char *save = NULL;
    for (char *path = copy ? strtok_r(copy, ":", &save) : NULL; path && ntools < MAX_TOOLS;
         path = strtok_r(NULL, ":", &save)) {
        void *h = dlopen(path, RTLD_GLOBAL | RTLD_LAZY);
        if (!h) {
            logf_("tool_load_failed path=%s", path);
            continue;
        }
        rocprofiler_configure_func_t configure =
            (rocprofiler_configure_func_t)(uintptr_t)dlsym(h, "rocprofiler_configure");
        if (!configure)
            continue;
        /* The client id: a name the tool may set, and the SDK's handle. */
#ifdef STANDIN_SDK_1
        rocprofiler_client_id_t id = {sizeof id, NULL, (uint32_t)ntools};
#else
        rocprofiler_client_id_t id = {NULL, (uint32_t)ntools};
#endif
        memcpy(&tools[ntools].id, &id, sizeof id);
        rocprofiler_tool_configure_result_t *r =
            configure(10000 * VERSION_MAJOR + 100 * VERSION_MINOR + VERSION_PATCH,
                      VERSION_STRING, (uint32_t)ntools, &tools[ntools].id);
        logf_("configure tool=%d result=%s name=%s", ntools, r ? "set" : "null",
              tools[ntools].id.name ? tools[ntools].id.name : "-");
        if (!r)
            continue;
        memcpy(&tools[ntools].result, r, sizeof *r);
        ntools++;
    }
    free(copy);
    for (int i = 0; i < ntools; i++)
        if (tools[i].result.initialize) {
            int rc = tools[i].result.initialize(client_finalize, tools[i].result.tool_data);
            logf_("initialize tool=%d result=%d", i, rc);
        }
    init_status = 1;
    atexit(at_exit);
}

/* ------------------------------------------------------- the control API */

/* The tool callback of `kind` in a started context (one is enough here). */
static rocprofiler_callback_tracing_cb_t callback_of(int kind, void **data,
                                                     rocprofiler_context_id_t *ctx) {
    pthread_mutex_lock(&lock);
    rocprofiler_callback_tracing_cb_t cb = NULL;
    for (uint64_t i = 1; i <= MAX_CONTEXTS && !cb; i++)
        if (contexts[i].used && contexts[i].started && contexts[i].callback[kind]) {
            cb = contexts[i].callback[kind];
            *data = contexts[i].callback_data[kind];
            ctx->handle = i;
        }
    pthread_mutex_unlock(&lock);
    return cb;
}

EXPORT void standin_kernel_symbol(uint64_t kernel_id, const char *symbol) {
    logf_("kernel_symbol id=%" PRIu64 " name=%s", kernel_id, symbol);
    void *data = NULL;
    rocprofiler_context_id_t ctx = {0};
    rocprofiler_callback_tracing_cb_t cb =
        callback_of(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT, &data, &ctx);
    if (!cb)
        return;
    rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.kernel_id = kernel_id;
    p.code_object_id = 1;
    /* The SDK's name lives as long as the code object: so does this copy. */
    p.kernel_name = strdup(symbol);
    p.kernel_object = 0x7000 + kernel_id;
    p.sgpr_count = 16;
    p.arch_vgpr_count = 32 + (uint32_t)kernel_id;
    rocprofiler_callback_tracing_record_t r;
    memset(&r, 0, sizeof r);
    r.context_id = ctx;
    r.thread_id = (uint64_t)gettid();
    STANDIN_ANCESTOR(r.correlation_id);
    r.kind = ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT;
    r.operation = ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER;
    r.phase = ROCPROFILER_CALLBACK_PHASE_ENTER;
    r.payload = &p;
    rocprofiler_user_data_t u = {0};
    cb(r, &u, data);
}

/* The user data slots of the HIP calls open on this thread. */
static __thread rocprofiler_user_data_t slots[MAX_DEPTH];
static __thread int depth;

EXPORT void standin_hip(int op, int phase, uint64_t correlation) {
    const char *name = op > 0 && op < STANDIN_HIP_OPS ? hip_names[op] : "?";
    if (phase == ROCPROFILER_CALLBACK_PHASE_ENTER) {
        logf_("api enter fn=%s corr=%" PRIu64 " t=%" PRIu64, name, correlation, monotonic_ns());
        if (depth < MAX_DEPTH)
            slots[depth].value = 0;
        depth++;
    }
    rocprofiler_user_data_t *slot = depth >= 1 && depth <= MAX_DEPTH ? &slots[depth - 1] : NULL;
    void *data = NULL;
    rocprofiler_context_id_t ctx = {0};
    rocprofiler_callback_tracing_cb_t cb =
        callback_of(ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, &data, &ctx);
    if (cb && slot) {
        rocprofiler_callback_tracing_record_t r;
        memset(&r, 0, sizeof r);
        r.context_id = ctx;
        r.thread_id = (uint64_t)gettid();
        r.correlation_id.internal = correlation;
        STANDIN_ANCESTOR(r.correlation_id);
        r.kind = ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API;
        r.operation = op;
        r.phase = phase;
        r.payload = NULL; /* the call's arguments: none here */
        cb(r, slot, data);
    }
    if (phase != ROCPROFILER_CALLBACK_PHASE_ENTER) {
        if (depth > 0)
            depth--;
        logf_("api exit fn=%s corr=%" PRIu64 " t=%" PRIu64, name, correlation, monotonic_ns());
    }
}

/* Puts a record (header kind `kind`) into the batch being filled of the buffer
 * that service `route` of a started context writes to. */
static void emit_to(int route, uint32_t kind, const void *record, size_t size, const char *what) {
    pthread_mutex_lock(&lock);
    uint64_t b = 0;
    for (uint64_t i = 1; i <= MAX_CONTEXTS && !b; i++)
        if (contexts[i].used && contexts[i].started && route > 0 &&
            route < ROCPROFILER_BUFFER_TRACING_LAST)
            b = contexts[i].buffer_of[route];
    if (!b) {
        pthread_mutex_unlock(&lock);
        logf_("not_recorded kind=%u %s", kind, what);
        return;
    }
    struct buffer *buf = &buffers[b];
    if (!buf->filling) {
        buf->filling = calloc(1, sizeof *buf->filling);
        if (!buf->filling)
            abort();
        buf->batches++;
    }
    struct batch *x = buf->filling;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 64;
        x->headers = realloc(x->headers, x->cap * sizeof *x->headers);
        if (!x->headers)
            abort();
    }
    rocprofiler_record_header_t *h = malloc(sizeof *h);
    void *payload = malloc(size);
    if (!h || !payload)
        abort();
    memcpy(payload, record, size);
    h->category = ROCPROFILER_BUFFER_CATEGORY_TRACING;
    h->kind = kind;
    h->payload = payload;
    x->headers[x->n++] = h;
    uint64_t batch = buf->batches;
    pthread_mutex_unlock(&lock);
    logf_("record batch=%" PRIu64 " %s", batch, what);
}

/* A record of buffer tracing `kind`, into its service's buffer. */
static void emit(int kind, const void *record, size_t size, const char *what) {
    emit_to(kind, (uint32_t)kind, record, size, what);
}

static uint64_t agent_handle(int agent) {
    env();
    return agent >= 0 && agent < STANDIN_AGENTS ? agents[agent].id.handle : 0xdead;
}

EXPORT void standin_dispatch(uint64_t correlation, int agent, uint64_t queue, uint64_t kernel_id,
                             const uint32_t grid[3], const uint32_t workgroup[3], uint32_t lds,
                             uint32_t scratch, uint64_t start, uint64_t end) {
    static uint64_t dispatch_id;
    rocprofiler_buffer_tracing_kernel_dispatch_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH;
    r.operation = ROCPROFILER_KERNEL_DISPATCH_COMPLETE;
    r.correlation_id.internal = correlation;
    r.thread_id = (uint64_t)gettid();
    r.start_timestamp = on_clock(start);
    r.end_timestamp = on_clock(end);
    r.dispatch_info.size = offsetof(rocprofiler_kernel_dispatch_info_t, reserved_padding);
    r.dispatch_info.agent_id.handle = agent_handle(agent);
    r.dispatch_info.queue_id.handle = queue;
    r.dispatch_info.kernel_id = kernel_id;
    r.dispatch_info.dispatch_id = ++dispatch_id;
    r.dispatch_info.private_segment_size = scratch;
    r.dispatch_info.group_segment_size = lds;
    r.dispatch_info.workgroup_size.x = workgroup[0];
    r.dispatch_info.workgroup_size.y = workgroup[1];
    r.dispatch_info.workgroup_size.z = workgroup[2];
    r.dispatch_info.grid_size.x = grid[0];
    r.dispatch_info.grid_size.y = grid[1];
    r.dispatch_info.grid_size.z = grid[2];
    char what[256];
    snprintf(what, sizeof what,
             "kernel kernel_id=%" PRIu64 " agent=%d queue=%#" PRIx64 " corr=%" PRIu64
             " start=%" PRIu64 " end=%" PRIu64,
             kernel_id, agent, queue, correlation, start, end);
    emit(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, &r, sizeof r, what);
}

EXPORT void standin_copy(uint64_t correlation, int operation, int src_agent, int dst_agent,
                         uint64_t bytes, uint64_t start, uint64_t end) {
    rocprofiler_buffer_tracing_memory_copy_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = ROCPROFILER_BUFFER_TRACING_MEMORY_COPY;
    r.operation = operation;
    r.correlation_id.internal = correlation;
    r.thread_id = (uint64_t)gettid();
    r.start_timestamp = on_clock(start);
    r.end_timestamp = on_clock(end);
    r.dst_agent_id.handle = agent_handle(dst_agent);
    r.src_agent_id.handle = agent_handle(src_agent);
    r.bytes = bytes;
    char what[256];
    snprintf(what, sizeof what,
             "copy op=%d src=%d dst=%d bytes=%" PRIu64 " corr=%" PRIu64 " start=%" PRIu64
             " end=%" PRIu64,
             operation, src_agent, dst_agent, bytes, correlation, start, end);
    emit(ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, &r, sizeof r, what);
}

EXPORT void standin_memory(uint64_t correlation, int operation, int agent, uint64_t address,
                           uint64_t bytes, uint64_t t) {
    rocprofiler_buffer_tracing_memory_allocation_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION;
    r.operation = operation;
    r.correlation_id.internal = correlation;
    STANDIN_ANCESTOR(r.correlation_id);
    r.thread_id = (uint64_t)gettid();
    r.start_timestamp = on_clock(t);
    r.end_timestamp = on_clock(t + 1000);
    r.agent_id.handle = agent_handle(agent);
    r.address = address;
    r.allocation_size = bytes;
    char what[256];
    snprintf(what, sizeof what,
             "memory op=%d agent=%d address=%#" PRIx64 " bytes=%" PRIu64 " corr=%" PRIu64,
             operation, agent, address, bytes, correlation);
    emit(ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION, &r, sizeof r, what);
}

EXPORT void standin_unknown(uint32_t kind) {
    /* Into the kernel dispatch service's buffer, whatever its kind (a newer
     * SDK's record). */
    uint64_t rec[8] = {sizeof rec, kind};
    char what[64];
    snprintf(what, sizeof what, "unknown kind=%u", kind);
    emit_to(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, kind, rec, sizeof rec, what);
}

EXPORT void standin_drop(uint64_t n) {
    pthread_mutex_lock(&lock);
    for (uint64_t i = 1; i <= MAX_BUFFERS; i++)
        if (buffers[i].used) {
            buffers[i].dropped += n;
            break;
        }
    pthread_mutex_unlock(&lock);
    logf_("drop n=%" PRIu64, n);
}

EXPORT void standin_seal(void) {
    pthread_mutex_lock(&lock);
    for (uint64_t i = 1; i <= MAX_BUFFERS; i++) {
        struct buffer *buf = &buffers[i];
        if (buf->used && buf->filling) {
            struct batch **tail = &buf->filled;
            while (*tail)
                tail = &(*tail)->next;
            *tail = buf->filling;
            buf->filling = NULL;
        }
    }
    pthread_mutex_unlock(&lock);
}

EXPORT size_t standin_complete(int newest_first) {
    size_t n = 0;
    for (uint64_t i = 1; i <= MAX_BUFFERS; i++)
        if (buffers[i].used)
            n += deliver_on_thread(i, newest_first);
    return n;
}

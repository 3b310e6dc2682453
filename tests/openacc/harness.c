/*
 * harness.c - drives kprof's OpenACC plugin through the real profiling ABI with
 * the events a host-fallback run never produces (device data, transfers,
 * launches, waits) and with bad inputs. Used by tests/tests/openacc.rs.
 *
 * Usage: harness dlopen <plugin.so> <scenario>
 *        harness linked <scenario>
 *
 * dlopen: loads the plugin as libgomp does for ACC_PROFLIB: dlopen(RTLD_LAZY),
 *   dlsym("acc_register_library"), one call with the harness's register,
 *   unregister and lookup functions.
 * linked: the plugin is linked into this program (DT_NEEDED); its constructor finds
 *   the `acc_prof_register` this program exports (-rdynamic), as it finds libgomp's.
 *   The harness then ALSO calls acc_register_library through dlsym(RTLD_DEFAULT):
 *   the plugin must not register a second time.
 *
 * The harness keeps the registered callback per event, as a runtime does, and
 * dispatches every event to the callback registered for it (as libgomp does, a
 * callback registered for one event may be called with structures of that event
 * only; the `bad` scenario calls them with inconsistent ones on purpose).
 * Prints "registrations <n> events <first>..<last>" on stdout.
 *
 * Scenarios:
 *   device  a realistic device run (NVIDIA-style, device 1, see run_device)
 *   bad     NULL pointers, short valid_bytes, unknown event types, ends without
 *           starts, unknown frees (see run_bad)
 *   names   the names in the file ACC_HARNESS_NAMES (../harness/names_file.h: each
 *           ended by a NUL byte, any other bytes, any length) wherever the runtime
 *           hands the tool a string: name i (from 0) is the source file, the
 *           function and (line i + 1) of a compute construct, in it the kernel
 *           name of a launch and the variable name of an 8-byte device allocation
 *           at 0x7f0001000000 + 8 i, never freed (see run_names). Prints
 *           "names <n>" on stdout after the registrations line.
 */
#include <kprof_acc_prof.h>

#include "../harness/names_file.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(acc_prof_info) == 72, "acc_prof_info layout");
_Static_assert(sizeof(acc_event_info) == 56, "acc_event_info layout");
_Static_assert(sizeof(acc_data_event_info) == 56, "acc_data_event_info layout");
_Static_assert(sizeof(acc_launch_event_info) == 56, "acc_launch_event_info layout");
_Static_assert(sizeof(acc_other_event_info) == 24, "acc_other_event_info layout");
_Static_assert(sizeof(acc_api_info) == 40, "acc_api_info layout");
_Static_assert(offsetof(acc_prof_info, async) == 24, "async offset");
_Static_assert(offsetof(acc_prof_info, src_file) == 40, "src_file offset");
_Static_assert(offsetof(acc_data_event_info, tool_info) == 16, "tool_info offset");
_Static_assert(offsetof(acc_launch_event_info, num_gangs) == 32, "num_gangs offset");

static acc_prof_callback callbacks[acc_ev_last];
static int registrations;
static int first_event = -1, last_event = -1;

static void reg(acc_event_t ev, acc_prof_callback cb, acc_register_t how)
{
    if (how != acc_reg || (int)ev <= 0 || ev >= acc_ev_last) {
        fprintf(stderr, "harness: unexpected registration %d %d\n", (int)ev, (int)how);
        exit(3);
    }
    if (callbacks[ev] != NULL) {
        fprintf(stderr, "harness: event %d registered twice\n", (int)ev);
        exit(3);
    }
    callbacks[ev] = cb;
    registrations++;
    if (first_event < 0 || (int)ev < first_event)
        first_event = (int)ev;
    if ((int)ev > last_event)
        last_event = (int)ev;
}

static void unreg(acc_event_t ev, acc_prof_callback cb, acc_register_t how)
{
    (void)cb;
    fprintf(stderr, "harness: unexpected unregistration %d %d\n", (int)ev, (int)how);
    exit(3);
}

static acc_query_fn lookup(const char *name)
{
    (void)name;
    return NULL;
}

/* What libgomp exports: found by the linked plugin's constructor. */
void acc_prof_register(acc_event_t ev, acc_prof_callback cb, acc_register_t how)
{
    reg(ev, cb, how);
}

/* ------------------------------------------------------------ event builders */

static acc_api_info api = {
    .device_api = acc_device_api_cuda,
    .valid_bytes = sizeof(acc_api_info),
    .device_type = acc_device_nvidia,
};

/* The device run's current queue and source location. */
static long cur_async = KPROF_ACC_ASYNC_SYNC;
static const char *cur_file = "/home/user/src/saxpy.c";
static const char *cur_func = "saxpy";
static int cur_line = 12;

static acc_prof_info prof(acc_event_t ev)
{
    acc_prof_info p;
    memset(&p, 0, sizeof p);
    p.event_type = ev;
    p.valid_bytes = sizeof p;
    p.version = 201711;
    p.device_type = acc_device_nvidia;
    p.device_number = 1;
    p.thread_id = 0;
    p.async = cur_async;
    p.async_queue = cur_async < 0 ? 0 : cur_async;
    p.src_file = cur_file;
    p.func_name = cur_func;
    p.line_no = cur_line;
    p.end_line_no = cur_line + 3;
    p.func_line_no = 5;
    p.func_end_line_no = 40;
    return p;
}

static void fire(acc_prof_info *p, acc_event_info *e)
{
    acc_prof_callback cb = callbacks[p->event_type];
    if (cb)
        cb(p, e, &api);
}

/* A start/end pair of an "other" event; the runtime keeps tool_info between them. */
static void other_pair(acc_event_t start, acc_construct_t parent, int implicit,
                       void (*inside)(void))
{
    acc_event_info e;
    memset(&e, 0, sizeof e);
    e.other_event.event_type = start;
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    e.other_event.parent_construct = parent;
    e.other_event.implicit = implicit;
    acc_prof_info p = prof(start);
    fire(&p, &e);
    if (inside)
        inside();
    acc_prof_info q = prof(start + 1);
    e.other_event.event_type = start + 1;
    fire(&q, &e);
}

static acc_data_event_info data_info(acc_event_t ev, const char *var, size_t bytes,
                                     const void *host, const void *dev)
{
    acc_data_event_info d;
    memset(&d, 0, sizeof d);
    d.event_type = ev;
    d.valid_bytes = sizeof d;
    d.parent_construct = acc_construct_parallel;
    d.implicit = 1;
    d.var_name = var;
    d.bytes = bytes;
    d.host_ptr = host;
    d.device_ptr = dev;
    return d;
}

static void data_event(acc_event_t ev, const char *var, size_t bytes, const void *host,
                       const void *dev)
{
    acc_event_info e;
    e.data_event = data_info(ev, var, bytes, host, dev);
    acc_prof_info p = prof(ev);
    fire(&p, &e);
}

/* An upload or download: start and end with the same structure (tool_info kept). */
static void transfer(acc_event_t start, const char *var, size_t bytes, const void *host,
                     const void *dev)
{
    acc_event_info e;
    e.data_event = data_info(start, var, bytes, host, dev);
    acc_prof_info p = prof(start);
    fire(&p, &e);
    e.data_event.event_type = start + 1;
    acc_prof_info q = prof(start + 1);
    fire(&q, &e);
}

static void launch(const char *kernel, size_t gangs, size_t workers, size_t vector)
{
    acc_event_info e;
    memset(&e, 0, sizeof e);
    e.launch_event.event_type = acc_ev_enqueue_launch_start;
    e.launch_event.valid_bytes = sizeof(acc_launch_event_info);
    e.launch_event.parent_construct = acc_construct_parallel;
    e.launch_event.kernel_name = kernel;
    e.launch_event.num_gangs = gangs;
    e.launch_event.num_workers = workers;
    e.launch_event.vector_length = vector;
    acc_prof_info p = prof(acc_ev_enqueue_launch_start);
    fire(&p, &e);
    e.launch_event.event_type = acc_ev_enqueue_launch_end;
    acc_prof_info q = prof(acc_ev_enqueue_launch_end);
    fire(&q, &e);
}

/* ------------------------------------------------------------ device scenario */

#define NX 1000
static float hx[NX], hy[NX];
/* Fake device addresses. */
#define DX ((const void *)0x7f0000100000)
#define DY ((const void *)0x7f0000200000)
#define DT ((const void *)0x7f0000300000)

static void enter_xy(void)
{
    data_event(acc_ev_alloc, "x", sizeof hx, hx, DX);
    data_event(acc_ev_create, "x", sizeof hx, hx, DX);
    transfer(acc_ev_enqueue_upload_start, "x", sizeof hx, hx, DX);
    data_event(acc_ev_alloc, "y", sizeof hy, hy, DY);
    data_event(acc_ev_create, "y", sizeof hy, hy, DY);
    transfer(acc_ev_enqueue_upload_start, "y", sizeof hy, hy, DY);
}

static void exit_xy(void)
{
    transfer(acc_ev_enqueue_download_start, "y", sizeof hy, hy, DY);
    data_event(acc_ev_delete, "x", sizeof hx, hx, DX);
    data_event(acc_ev_free, "x", sizeof hx, hx, DX);
    data_event(acc_ev_delete, "y", sizeof hy, hy, DY);
    data_event(acc_ev_free, "y", sizeof hy, hy, DY);
}

static void saxpy_launch(void) { launch("saxpy_12_gpu", 32, 1, 128); }

static void compute_body(void)
{
    other_pair(acc_ev_enter_data_start, acc_construct_parallel, 1, enter_xy);
    saxpy_launch();
    other_pair(acc_ev_exit_data_start, acc_construct_parallel, 1, exit_xy);
}

static void async_body(void) { launch("scale_30_gpu", 8, 1, 32); }

static void run_device(void)
{
    /* acc_init by the first construct. */
    other_pair(acc_ev_device_init_start, acc_construct_parallel, 1, NULL);
    /* 3 x `#pragma acc parallel loop copyin(x) copy(y)` at saxpy.c:12. */
    for (int i = 0; i < 3; i++)
        other_pair(acc_ev_compute_construct_start, acc_construct_parallel, 0, compute_body);
    /* `#pragma acc parallel loop async(2)` at saxpy.c:30, then `#pragma acc wait(2)`
       at :33, on queue 2. */
    cur_async = 2;
    cur_line = 30;
    other_pair(acc_ev_compute_construct_start, acc_construct_parallel, 0, async_body);
    cur_line = 33;
    other_pair(acc_ev_wait_start, acc_construct_wait, 0, NULL);
    cur_async = KPROF_ACC_ASYNC_SYNC;
    /* `#pragma acc enter data create(tmp)` at :40 never exited: a leak of 2048 bytes. */
    cur_line = 40;
    acc_event_info e;
    memset(&e, 0, sizeof e);
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    e.other_event.parent_construct = acc_construct_enter_data;
    e.other_event.event_type = acc_ev_enter_data_start;
    acc_prof_info p = prof(acc_ev_enter_data_start);
    fire(&p, &e);
    data_event(acc_ev_alloc, "tmp", 2048, hx, DT);
    data_event(acc_ev_create, "tmp", 2048, hx, DT);
    e.other_event.event_type = acc_ev_enter_data_end;
    p = prof(acc_ev_enter_data_end);
    fire(&p, &e);
    /* acc_shutdown at exit, then the runtime's last event. */
    cur_file = NULL;
    cur_func = NULL;
    cur_line = -1;
    other_pair(acc_ev_device_shutdown_start, acc_construct_shutdown, 0, NULL);
    acc_prof_info s = prof(acc_ev_runtime_shutdown);
    memset(&e, 0, sizeof e);
    e.other_event.event_type = acc_ev_runtime_shutdown;
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    e.other_event.parent_construct = acc_construct_runtime_api;
    fire(&s, &e);
}

/* ------------------------------------------------------------ bad inputs */

static void run_bad(void)
{
    acc_prof_callback cb = callbacks[acc_ev_compute_construct_start];
    acc_prof_callback cb_end = callbacks[acc_ev_compute_construct_end];
    acc_event_info e;
    acc_prof_info p;
    cur_file = NULL;
    cur_func = NULL;
    cur_line = -1;

    /* 1. All NULL: nothing to go on (event type 0: an unknown event). */
    cb(NULL, NULL, NULL);

    /* 2. NULL acc_prof_info: the event type comes from acc_event_info; no device. */
    memset(&e, 0, sizeof e);
    e.other_event.event_type = acc_ev_compute_construct_start;
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    e.other_event.parent_construct = acc_construct_kernels;
    cb(NULL, &e, NULL);
    e.other_event.event_type = acc_ev_compute_construct_end;
    cb_end(NULL, &e, NULL);

    /* 3. NULL acc_event_info: no tool_info, so pairing by the innermost instance. */
    p = prof(acc_ev_compute_construct_start);
    cb(&p, NULL, NULL);
    p = prof(acc_ev_compute_construct_end);
    cb_end(&p, NULL, NULL);

    /* 4. An older runtime: acc_prof_info valid up to device_number (20 bytes), the
       rest garbage that must not be read; acc_event_info without tool_info. */
    p = prof(acc_ev_compute_construct_start);
    p.valid_bytes = 20;
    p.async = 77;
    p.src_file = (const char *)0x1;
    p.func_name = (const char *)0x1;
    memset(&e, 0, sizeof e);
    e.other_event.event_type = acc_ev_compute_construct_start;
    e.other_event.valid_bytes = 12;
    e.other_event.parent_construct = acc_construct_serial;
    e.other_event.tool_info = (void *)0x1;
    cb(&p, &e, NULL);
    p.event_type = acc_ev_compute_construct_end;
    e.other_event.event_type = acc_ev_compute_construct_end;
    cb_end(&p, &e, NULL);

    /* 5. A data event whose structure ends after `bytes` (40): var_name is read,
       host_ptr/device_ptr are garbage and must not be. An upload of 512 bytes. */
    cur_async = KPROF_ACC_ASYNC_SYNC;
    memset(&e, 0, sizeof e);
    e.data_event = data_info(acc_ev_enqueue_upload_start, "short", 512, (void *)0x1, (void *)0x1);
    e.data_event.valid_bytes = 40;
    p = prof(acc_ev_enqueue_upload_start);
    callbacks[acc_ev_enqueue_upload_start](&p, &e, NULL);
    e.data_event.event_type = acc_ev_enqueue_upload_end;
    p = prof(acc_ev_enqueue_upload_end);
    callbacks[acc_ev_enqueue_upload_end](&p, &e, NULL);

    /* 6. A launch without a kernel name and with a structure ending before the
       launch shape (32 bytes). */
    memset(&e, 0, sizeof e);
    e.launch_event.event_type = acc_ev_enqueue_launch_start;
    e.launch_event.valid_bytes = 32;
    e.launch_event.num_gangs = 5;
    p = prof(acc_ev_enqueue_launch_start);
    callbacks[acc_ev_enqueue_launch_start](&p, &e, NULL);
    e.launch_event.event_type = acc_ev_enqueue_launch_end;
    p = prof(acc_ev_enqueue_launch_end);
    callbacks[acc_ev_enqueue_launch_end](&p, &e, NULL);

    /* 7. Unknown event types through a registered callback: 26 and 1000. */
    memset(&e, 0, sizeof e);
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    p = prof(acc_ev_compute_construct_start);
    p.event_type = (acc_event_t)26;
    cb(&p, &e, NULL);
    p.event_type = (acc_event_t)1000;
    cb(&p, &e, NULL);

    /* 8. Ends without starts (tool_info NULL): compute, update, download. */
    memset(&e, 0, sizeof e);
    e.other_event.event_type = acc_ev_compute_construct_end;
    e.other_event.valid_bytes = sizeof(acc_other_event_info);
    p = prof(acc_ev_compute_construct_end);
    cb_end(&p, &e, NULL);
    e.other_event.event_type = acc_ev_update_end;
    p = prof(acc_ev_update_end);
    callbacks[acc_ev_update_end](&p, &e, NULL);
    memset(&e, 0, sizeof e);
    e.data_event = data_info(acc_ev_enqueue_download_end, "nothing", 8, hx, DX);
    p = prof(acc_ev_enqueue_download_end);
    callbacks[acc_ev_enqueue_download_end](&p, &e, NULL);

    /* 9. A free of device memory never allocated, and a NULL variable name. */
    data_event(acc_ev_free, NULL, 64, hx, (const void *)0x7f0000900000);
    /* 10. An allocation with a NULL variable name, freed. */
    data_event(acc_ev_alloc, NULL, 96, hy, DY);
    data_event(acc_ev_free, NULL, 96, hy, DY);
}

/* ------------------------------------------------------------ names */

static const char *cur_name;
static unsigned cur_index;

static void names_body(void)
{
    launch(cur_name, 1, 1, 1);
    data_event(acc_ev_alloc, cur_name, 8, hx,
               (const void *)(uintptr_t)(0x7f0001000000u + 8u * cur_index));
}

static void run_names(void)
{
    names_file nf = names_file_read("ACC_HARNESS_NAMES", "harness");
    unsigned n = 0;
    for (const char *name; (name = names_file_next(&nf)) != NULL; n++) {
        cur_file = name;
        cur_func = name;
        cur_line = (int)n + 1;
        cur_name = name;
        cur_index = n;
        other_pair(acc_ev_compute_construct_start, acc_construct_parallel, 0, names_body);
    }
    names_file_free(&nf);
    printf("names %u\n", n);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: harness dlopen <plugin.so> <scenario> | linked <scenario>\n");
        return 2;
    }
    const char *scenario;
    typedef void (*register_library_fn)(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func);
    if (strcmp(argv[1], "dlopen") == 0 && argc >= 4) {
        void *h = dlopen(argv[2], RTLD_LAZY);
        if (!h) {
            fprintf(stderr, "harness: %s\n", dlerror());
            return 2;
        }
        register_library_fn f = (register_library_fn)dlsym(h, "acc_register_library");
        if (!f) {
            fprintf(stderr, "harness: no acc_register_library\n");
            return 2;
        }
        f(reg, unreg, lookup);
        scenario = argv[3];
    } else if (strcmp(argv[1], "linked") == 0) {
        /* The constructor has run already. A runtime that also called
           acc_register_library must not get a second registration. */
        register_library_fn f =
            (register_library_fn)dlsym(RTLD_DEFAULT, "acc_register_library");
        if (!f) {
            fprintf(stderr, "harness: the plugin is not linked in\n");
            return 2;
        }
        f(reg, unreg, lookup);
        scenario = argv[2];
    } else {
        fprintf(stderr, "harness: unknown mode %s\n", argv[1]);
        return 2;
    }
    printf("registrations %d events %d..%d\n", registrations, first_event, last_event);
    if (registrations == 0)
        return 0;
    if (strcmp(scenario, "device") == 0)
        run_device();
    else if (strcmp(scenario, "bad") == 0)
        run_bad();
    else if (strcmp(scenario, "names") == 0)
        run_names();
    else if (strcmp(scenario, "none") != 0) {
        fprintf(stderr, "harness: unknown scenario %s\n", scenario);
        return 2;
    }
    return 0;
}

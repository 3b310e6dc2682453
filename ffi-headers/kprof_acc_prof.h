/*
 * kprof_acc_prof.h - the OpenACC profiling interface (OpenACC 2.7, chapter 5
 * "Profiling Interface"), written for kprof from the specification.
 *
 * It declares the types a tool library and a runtime exchange: the event numbers,
 * the three structures passed to every callback (acc_prof_info, acc_event_info,
 * acc_api_info), and the registration functions. Layouts are the x86-64 LP64 ones;
 * every structure starts with its event type and `valid_bytes`, the number of bytes
 * of the structure the runtime filled (a runtime implementing an older version of
 * the interface passes a smaller value: a tool reads only the fields that lie
 * entirely within valid_bytes).
 *
 * The names are the specification's. Do not include this header together with a
 * runtime's own <openacc.h> or <acc_prof.h> (they declare the same names).
 */
#ifndef KPROF_ACC_PROF_H
#define KPROF_ACC_PROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Events. A tool registers one callback per event it wants. */
typedef enum acc_event_t {
    acc_ev_none = 0,
    acc_ev_device_init_start = 1,
    acc_ev_device_init_end = 2,
    acc_ev_device_shutdown_start = 3,
    acc_ev_device_shutdown_end = 4,
    acc_ev_runtime_shutdown = 5,
    acc_ev_create = 6,
    acc_ev_delete = 7,
    acc_ev_alloc = 8,
    acc_ev_free = 9,
    acc_ev_enter_data_start = 10,
    acc_ev_enter_data_end = 11,
    acc_ev_exit_data_start = 12,
    acc_ev_exit_data_end = 13,
    acc_ev_update_start = 14,
    acc_ev_update_end = 15,
    acc_ev_compute_construct_start = 16,
    acc_ev_compute_construct_end = 17,
    acc_ev_enqueue_launch_start = 18,
    acc_ev_enqueue_launch_end = 19,
    acc_ev_enqueue_upload_start = 20,
    acc_ev_enqueue_upload_end = 21,
    acc_ev_enqueue_download_start = 22,
    acc_ev_enqueue_download_end = 23,
    acc_ev_wait_start = 24,
    acc_ev_wait_end = 25,
    acc_ev_last = 26
} acc_event_t;

/* Device types (acc_device_t of the OpenACC API). */
typedef enum acc_device_t {
    acc_device_none = 0,
    acc_device_default = 1,
    acc_device_host = 2,
    acc_device_not_host = 4,
    acc_device_nvidia = 5,
    acc_device_radeon = 8
} acc_device_t;

/* The construct (or API routine) that caused an event. */
typedef enum acc_construct_t {
    acc_construct_parallel = 0,
    acc_construct_kernels = 1,
    acc_construct_loop = 2,
    acc_construct_data = 3,
    acc_construct_enter_data = 4,
    acc_construct_exit_data = 5,
    acc_construct_host_data = 6,
    acc_construct_atomic = 7,
    acc_construct_declare = 8,
    acc_construct_init = 9,
    acc_construct_shutdown = 10,
    acc_construct_set = 11,
    acc_construct_update = 12,
    acc_construct_routine = 13,
    acc_construct_wait = 14,
    acc_construct_runtime_api = 15,
    acc_construct_serial = 16
} acc_construct_t;

/* The device API behind acc_api_info. */
typedef enum acc_device_api {
    acc_device_api_none = 0,
    acc_device_api_cuda = 1,
    acc_device_api_opencl = 2,
    acc_device_api_coi = 3,
    acc_device_api_other = 4
} acc_device_api;

/* How a callback is (un)registered. */
typedef enum acc_register_t {
    acc_reg = 0,
    acc_toggle = 1,
    acc_toggle_per_thread = 2
} acc_register_t;

/* Values of `async` for operations without an async clause / with a bare one. */
#define KPROF_ACC_ASYNC_NOVAL (-1)
#define KPROF_ACC_ASYNC_SYNC (-2)

/* First argument of every callback: where and on what the event happened. 72 bytes. */
typedef struct acc_prof_info {
    acc_event_t event_type;  /*  0 */
    int valid_bytes;         /*  4 */
    int version;             /*  8: _OPENACC of the runtime */
    acc_device_t device_type; /* 12 */
    int device_number;       /* 16 */
    int thread_id;           /* 20: -1 when unknown */
    long async;              /* 24: the async argument, or a KPROF_ACC_ASYNC_* value */
    long async_queue;        /* 32: the runtime's queue for it */
    const char *src_file;    /* 40: NULL when unknown */
    const char *func_name;   /* 48: NULL when unknown */
    int line_no;             /* 56: -1 when unknown */
    int end_line_no;         /* 60 */
    int func_line_no;        /* 64 */
    int func_end_line_no;    /* 68 */
} acc_prof_info;

/* Data events (create, delete, alloc, free, enter/exit data, update,
 * enqueue upload/download). 56 bytes. */
typedef struct acc_data_event_info {
    acc_event_t event_type;           /*  0 */
    int valid_bytes;                  /*  4 */
    acc_construct_t parent_construct; /*  8 */
    int implicit;                     /* 12: 1 for implicit data clauses */
    void *tool_info;                  /* 16: set by the tool at a start event, passed back at its end */
    const char *var_name;             /* 24: NULL when unknown */
    size_t bytes;                     /* 32 */
    const void *host_ptr;             /* 40 */
    const void *device_ptr;           /* 48 */
} acc_data_event_info;

/* Kernel launch events. 56 bytes. */
typedef struct acc_launch_event_info {
    acc_event_t event_type;           /*  0 */
    int valid_bytes;                  /*  4 */
    acc_construct_t parent_construct; /*  8 */
    int implicit;                     /* 12 */
    void *tool_info;                  /* 16 */
    const char *kernel_name;          /* 24 */
    size_t num_gangs;                 /* 32 */
    size_t num_workers;               /* 40 */
    size_t vector_length;             /* 48 */
} acc_launch_event_info;

/* Every other event. 24 bytes. */
typedef struct acc_other_event_info {
    acc_event_t event_type;           /*  0 */
    int valid_bytes;                  /*  4 */
    acc_construct_t parent_construct; /*  8 */
    int implicit;                     /* 12 */
    void *tool_info;                  /* 16 */
} acc_other_event_info;

/* Second argument of every callback: the event-specific part. 56 bytes. */
typedef union acc_event_info {
    acc_event_t event_type;
    acc_data_event_info data_event;
    acc_launch_event_info launch_event;
    acc_other_event_info other_event;
} acc_event_info;

/* Third argument of every callback: the device API in use. 40 bytes. */
typedef struct acc_api_info {
    acc_device_api device_api;  /*  0 */
    int valid_bytes;            /*  4 */
    acc_device_t device_type;   /*  8 */
    int vendor;                 /* 12 */
    const void *device_handle;  /* 16 */
    const void *context_handle; /* 24 */
    const void *async_handle;   /* 32 */
} acc_api_info;

typedef void (*acc_prof_callback)(acc_prof_info *, acc_event_info *, acc_api_info *);
typedef void (*acc_prof_reg)(acc_event_t, acc_prof_callback, acc_register_t);
typedef void (*acc_query_fn)(void);
typedef acc_query_fn (*acc_prof_lookup_func)(const char *);

/* Exported by a tool library; called by the runtime once, when it loads the library
 * from ACC_PROFLIB, with its register, unregister and lookup functions. */
void acc_register_library(acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup);

#ifdef __cplusplus
}
#endif

#endif /* KPROF_ACC_PROF_H */

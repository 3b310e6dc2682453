/*
 * kp_core_api.h - the C mirror of libkprof_core.so's plugin table, for the test
 * programs that drive the core directly (trace_driver.c, in_place.c). It follows
 * abi/src/lib.rs (struct CoreApi) field by field, in order, through call
 * (the last field of ABI 1 today; a core's table is at least sizeof(kp_core_api)
 * bytes when its `size` says so).
 */
#ifndef KP_CORE_API_H
#define KP_CORE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *backend;
  uint32_t index;
  uint32_t instance;
} kp_device_desc;

typedef struct {
  const char *ptr;
  size_t max_len;
} kp_space_name;

typedef struct {
  kp_space_name space;
  const char *label;
} kp_copy_end;

typedef struct {
  uint64_t guid;
  uint64_t node;
} kp_site;

typedef struct {
  const char *key;
  uint64_t value;
} kp_activity_arg;

#define KP_ACTIVITY_ARGS 10

typedef struct {
  uint32_t size;
  uint8_t kind;
  uint8_t direction;
  uint8_t nargs;
  uint16_t dev;
  const char *name;
  uint64_t start_ns;
  uint64_t end_ns;
  kp_site site;
  uint64_t flow_from;
  uint64_t bytes;
  kp_activity_arg args[KP_ACTIVITY_ARGS];
} kp_activity;

typedef struct {
  size_t size;
  uint32_t version;
  bool (*attach)(const char *plugin);
  bool (*configure)(const char *arg);
  int32_t (*option_flag)(const char *name);
  const char *(*help)(void);
  void (*finalize)(void);
  uint16_t (*device)(const kp_device_desc *desc);
  uint64_t (*begin)(uint8_t kind, const char *name, uint16_t dev, uint64_t parent);
  void (*end)(uint8_t kind, uint64_t guid);
  void (*instant)(uint8_t kind, const char *name, uint64_t a, uint64_t b);
  void (*alloc)(kp_space_name space, const char *label, uint64_t ptr, uint64_t bytes);
  void (*free)(kp_space_name space, const char *label, uint64_t ptr, uint64_t bytes);
  uint64_t (*copy_begin)(kp_copy_end dst, kp_copy_end src, uint64_t bytes);
  uint32_t (*section_create)(const char *name);
  void (*section_start)(uint32_t id);
  void (*section_stop)(uint32_t id);
  void (*section_destroy)(uint32_t id);
  void (*metadata)(const char *key, const char *value);
  void (*anomaly)(uint32_t which);
  void (*thread_name)(const char *name);
  uint64_t (*begin_at)(uint8_t kind, uint64_t codeptr, uint16_t dev, uint64_t parent);
  void (*edge)(uint8_t kind, uint64_t from, uint64_t to);
  uint64_t (*begin_transfer)(uint8_t kind, uint64_t codeptr, uint16_t dev, uint64_t parent,
                             uint64_t bytes, uint32_t direction);
  void (*arg)(const char *key, uint64_t value);
  uint64_t (*begin_transfer_named)(uint8_t kind, const char *name, uint16_t dev,
                                   uint64_t parent, uint64_t bytes, uint32_t direction);
  uint64_t (*begin_static)(uint8_t kind, const char *name, uint16_t dev, uint64_t parent);
  uint64_t (*begin_at_arg)(uint8_t kind, uint64_t codeptr, uint16_t dev, uint64_t parent,
                           const char *key, uint64_t value);
  uint64_t (*now_ns)(void);
  kp_site (*site)(void);
  void (*activity)(const kp_activity *a);
  bool (*on_flush)(void (*flush)(void));
  bool (*gpu_activity)(int32_t set);
  void (*device_cost)(uint64_t ns);
  void (*arg_static)(const char *key, uint64_t value);
  void (*instant_static)(uint8_t kind, const char *name, uint64_t a, uint64_t b);
  bool (*extension)(const char *name, const char *json, const char *summary);
  uint8_t *(*job_profile)(uint64_t rank, size_t *len);
  uint8_t *(*job_fold)(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                       size_t *len);
  int32_t (*job_write)(const uint8_t *form, size_t len);
  void (*job_done)(int32_t merged);
  void (*job_free)(uint8_t *form, size_t len);
  uint64_t (*stamp)(void);
  void (*call)(const void *call);
  void (*end_at)(uint8_t kind, uint64_t guid, uint64_t at);
  void (*libraries_loaded)(void);
} kp_core_api;

/* The table's layout as abi/src/lib.rs has it on x86-64 and aarch64. */
_Static_assert(sizeof(kp_activity) == 72 + 16 * KP_ACTIVITY_ARGS, "kp_activity");
_Static_assert(offsetof(kp_activity, dev) == 8, "kp_activity.dev");
_Static_assert(offsetof(kp_activity, site) == 40, "kp_activity.site");
_Static_assert(offsetof(kp_activity, args) == 72, "kp_activity.args");
_Static_assert(offsetof(kp_core_api, attach) == 16, "kp_core_api.attach");
_Static_assert(offsetof(kp_core_api, gpu_activity) == 16 + 30 * 8, "kp_core_api.gpu_activity");
_Static_assert(sizeof(kp_core_api) == 16 + 44 * 8, "kp_core_api");

extern const kp_core_api *kprof_core_api(uint32_t version);

#endif

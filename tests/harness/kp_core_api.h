/*
 * kp_core_api.h - the C mirror of libkprof_core.so's plugin table, for the test
 * programs that drive the core directly (trace_driver.c, in_place.c). It follows
 * abi/src/lib.rs (struct CoreApi) field by field, in order, up to the last field
 * these programs use.
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
} kp_core_api;

extern const kp_core_api *kprof_core_api(uint32_t version);

#endif

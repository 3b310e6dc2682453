/*
 * second_tool.c - a minimal Kokkos tool used as the SECOND entry of
 * KOKKOS_TOOLS_LIBS="libkprof.so;libsecond_tool.so" (tool chaining).
 *
 * It counts every callback it receives and, at kokkosp_finalize_library, writes the
 * counts as `key=value` lines to the file named by $SECOND_TOOL_OUT:
 *
 *   init, init_load_seq, init_interface_version, finalize, parse_args, print_help,
 *   request_tool_settings, provide_tool_programming_interface,
 *   begin_parallel_for, end_parallel_for, begin_parallel_reduce, end_parallel_reduce,
 *   begin_parallel_scan, end_parallel_scan, begin_fence, end_fence, push_region,
 *   pop_region, create_section, start_section, stop_section, destroy_section,
 *   profile_event, declare_metadata, allocate_data, deallocate_data, begin_deep_copy,
 *   end_deep_copy, dual_view_sync, dual_view_modify,
 *   watched      begin_parallel_* calls whose name equals $SECOND_TOOL_WATCH
 *   foreign_ids  end_* / section calls with an id this tool never handed out (a
 *                forwarder must give each tool back its own kID / handle / secID)
 *   declare_output_type, declare_input_type, request_values, begin_context,
 *   end_context, declare_optimization_goal   (the tuning callbacks; not exported
 *                when built with -DSECOND_TOOL_NO_TUNING)
 *   tuning_mismatches  tuning calls whose arguments differ from what kokkos_host's
 *                `tuning` scenario passes (see there)
 *
 * As a tuning tool it answers kokkosp_request_values by setting the single output
 * value to 64 (one of the scenario's candidates 32, 64, 128).
 *
 * It answers requires_global_fencing = false in kokkosp_request_tool_settings.
 *
 * Written for kprof's tests from the public Kokkos Tools interface description.
 */
#include "kokkosp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  C_INIT, C_FINALIZE, C_PARSE_ARGS, C_PRINT_HELP, C_SETTINGS, C_TPI,
  C_BEGIN_FOR, C_END_FOR, C_BEGIN_REDUCE, C_END_REDUCE, C_BEGIN_SCAN, C_END_SCAN,
  C_BEGIN_FENCE, C_END_FENCE, C_PUSH, C_POP, C_CREATE_SECTION, C_START_SECTION,
  C_STOP_SECTION, C_DESTROY_SECTION, C_EVENT, C_METADATA, C_ALLOC, C_DEALLOC,
  C_BEGIN_DEEP_COPY, C_END_DEEP_COPY, C_DV_SYNC, C_DV_MODIFY, C_WATCHED, C_FOREIGN,
  C_DECL_OUT, C_DECL_IN, C_REQUEST, C_BEGIN_CTX, C_END_CTX, C_GOAL, C_TUNING_BAD,
  C_COUNT
};

static const char *const names[C_COUNT] = {
    "init", "finalize", "parse_args", "print_help", "request_tool_settings",
    "provide_tool_programming_interface", "begin_parallel_for", "end_parallel_for",
    "begin_parallel_reduce", "end_parallel_reduce", "begin_parallel_scan",
    "end_parallel_scan", "begin_fence", "end_fence", "push_region", "pop_region",
    "create_section", "start_section", "stop_section", "destroy_section",
    "profile_event", "declare_metadata", "allocate_data", "deallocate_data",
    "begin_deep_copy", "end_deep_copy", "dual_view_sync", "dual_view_modify", "watched",
    "foreign_ids", "declare_output_type", "declare_input_type", "request_values",
    "begin_context", "end_context", "declare_optimization_goal", "tuning_mismatches"};

static unsigned long counts[C_COUNT];
static int load_seq = -1;
static unsigned long long interface_version;
static unsigned long long next_id;
static unsigned int next_section;

#define ID_TAG 0x5EC0000000000000ULL
#define ID_MASK 0xFFF0000000000000ULL
#define SEC_TAG 0x7A000000u
#define SEC_MASK 0xFF000000u

static void bump(int c) { __atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED); }

static uint64_t new_id(void) {
  return ID_TAG | (__atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED) + 1);
}

static void check_id(uint64_t id) {
  if ((id & ID_MASK) != ID_TAG) bump(C_FOREIGN);
}

static void check_section(uint32_t id) {
  if ((id & SEC_MASK) != SEC_TAG) bump(C_FOREIGN);
}

static void watch(const char *name) {
  const char *w = getenv("SECOND_TOOL_WATCH");
  if (w && name && strcmp(w, name) == 0) bump(C_WATCHED);
}

void kokkosp_init_library(const int loadSeq, const uint64_t interfaceVer,
                          const uint32_t devInfoCount,
                          Kokkos_Profiling_KokkosPDeviceInfo *deviceInfo) {
  (void)devInfoCount;
  (void)deviceInfo;
  bump(C_INIT);
  load_seq = loadSeq;
  interface_version = (unsigned long long)interfaceVer;
}

void kokkosp_finalize_library(void) {
  bump(C_FINALIZE);
  const char *path = getenv("SECOND_TOOL_OUT");
  if (!path) return;
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "init_load_seq=%d\n", load_seq);
  fprintf(f, "init_interface_version=%llu\n", interface_version);
  for (int i = 0; i < C_COUNT; i++) fprintf(f, "%s=%lu\n", names[i], counts[i]);
  fclose(f);
}

void kokkosp_parse_args(int argc, char **argv) {
  (void)argc;
  (void)argv;
  bump(C_PARSE_ARGS);
}

void kokkosp_print_help(char *exe) {
  (void)exe;
  bump(C_PRINT_HELP);
}

void kokkosp_request_tool_settings(const uint32_t num, Kokkos_Tools_ToolSettings *settings) {
  (void)num;
  /* Like any low-overhead tool: no global fences (keeps chained counts exact). */
  settings->requires_global_fencing = false;
  bump(C_SETTINGS);
}

void kokkosp_provide_tool_programming_interface(const uint32_t num_actions,
                                                Kokkos_Tools_ToolProgrammingInterface tpi) {
  (void)num_actions;
  (void)tpi;
  bump(C_TPI);
}

void kokkosp_begin_parallel_for(const char *name, const uint32_t devID, uint64_t *kID) {
  (void)devID;
  bump(C_BEGIN_FOR);
  watch(name);
  *kID = new_id();
}
void kokkosp_end_parallel_for(const uint64_t kID) {
  bump(C_END_FOR);
  check_id(kID);
}
void kokkosp_begin_parallel_reduce(const char *name, const uint32_t devID, uint64_t *kID) {
  (void)devID;
  bump(C_BEGIN_REDUCE);
  watch(name);
  *kID = new_id();
}
void kokkosp_end_parallel_reduce(const uint64_t kID) {
  bump(C_END_REDUCE);
  check_id(kID);
}
void kokkosp_begin_parallel_scan(const char *name, const uint32_t devID, uint64_t *kID) {
  (void)devID;
  bump(C_BEGIN_SCAN);
  watch(name);
  *kID = new_id();
}
void kokkosp_end_parallel_scan(const uint64_t kID) {
  bump(C_END_SCAN);
  check_id(kID);
}
void kokkosp_begin_fence(const char *name, const uint32_t devID, uint64_t *handle) {
  (void)name;
  (void)devID;
  bump(C_BEGIN_FENCE);
  *handle = new_id();
}
void kokkosp_end_fence(const uint64_t handle) {
  bump(C_END_FENCE);
  check_id(handle);
}
void kokkosp_push_profile_region(const char *name) {
  (void)name;
  bump(C_PUSH);
}
void kokkosp_pop_profile_region(void) { bump(C_POP); }
void kokkosp_create_profile_section(const char *name, uint32_t *secID) {
  (void)name;
  bump(C_CREATE_SECTION);
  *secID = SEC_TAG | (__atomic_fetch_add(&next_section, 1, __ATOMIC_RELAXED) + 1);
}
void kokkosp_start_profile_section(const uint32_t secID) {
  bump(C_START_SECTION);
  check_section(secID);
}
void kokkosp_stop_profile_section(const uint32_t secID) {
  bump(C_STOP_SECTION);
  check_section(secID);
}
void kokkosp_destroy_profile_section(const uint32_t secID) {
  bump(C_DESTROY_SECTION);
  check_section(secID);
}
void kokkosp_profile_event(const char *name) {
  (void)name;
  bump(C_EVENT);
}
void kokkosp_declare_metadata(const char *key, const char *value) {
  (void)key;
  (void)value;
  bump(C_METADATA);
}
void kokkosp_allocate_data(const Kokkos_Profiling_SpaceHandle handle, const char *label,
                           const void *ptr, const uint64_t size) {
  (void)handle;
  (void)label;
  (void)ptr;
  (void)size;
  bump(C_ALLOC);
}
void kokkosp_deallocate_data(const Kokkos_Profiling_SpaceHandle handle, const char *label,
                             const void *ptr, const uint64_t size) {
  (void)handle;
  (void)label;
  (void)ptr;
  (void)size;
  bump(C_DEALLOC);
}
void kokkosp_begin_deep_copy(Kokkos_Profiling_SpaceHandle dst_handle, const char *dst_name,
                             const void *dst_ptr, Kokkos_Profiling_SpaceHandle src_handle,
                             const char *src_name, const void *src_ptr, uint64_t size) {
  (void)dst_handle;
  (void)dst_name;
  (void)dst_ptr;
  (void)src_handle;
  (void)src_name;
  (void)src_ptr;
  (void)size;
  bump(C_BEGIN_DEEP_COPY);
}
void kokkosp_end_deep_copy(void) { bump(C_END_DEEP_COPY); }
void kokkosp_dual_view_sync(const char *label, const void *ptr, bool to_device) {
  (void)label;
  (void)ptr;
  (void)to_device;
  bump(C_DV_SYNC);
}
void kokkosp_dual_view_modify(const char *label, const void *ptr, bool on_device) {
  (void)label;
  (void)ptr;
  (void)on_device;
  bump(C_DV_MODIFY);
}

#ifndef SECOND_TOOL_NO_TUNING
/* ---- tuning: what kokkos_host's `tuning` scenario passes ---- */

static void expect(int ok) {
  if (!ok) bump(C_TUNING_BAD);
}

void kokkosp_declare_output_type(const char *name, const size_t id,
                                 Kokkos_Tools_VariableInfo *info) {
  bump(C_DECL_OUT);
  expect(name && strcmp(name, "team_size") == 0 && id == 1 && info &&
         info->type == kokkos_value_int64 && info->valueQuantity == kokkos_value_set &&
         info->candidates.set.size == 3 && info->candidates.set.values.int_value[2] == 128);
}

void kokkosp_declare_input_type(const char *name, const size_t id,
                                Kokkos_Tools_VariableInfo *info) {
  bump(C_DECL_IN);
  expect(name && strcmp(name, "kernel_name") == 0 && id == 2 && info &&
         info->type == kokkos_value_string);
}

void kokkosp_request_values(const size_t contextId, const size_t numContextVariables,
                            const Kokkos_Tools_VariableValue *contextValues,
                            const size_t numTuningVariables,
                            Kokkos_Tools_VariableValue *tuningValues) {
  bump(C_REQUEST);
  expect(contextId == 1 && numContextVariables == 1 && contextValues[0].type_id == 2 &&
         strcmp(contextValues[0].value.string_value, "axpy") == 0 &&
         numTuningVariables == 1 && tuningValues[0].type_id == 1 &&
         tuningValues[0].value.int_value == 128);
  if (numTuningVariables >= 1) tuningValues[0].value.int_value = 64;
}

void kokkosp_begin_context(const size_t contextId) {
  bump(C_BEGIN_CTX);
  expect(contextId == 1);
}

void kokkosp_end_context(const size_t contextId, Kokkos_Tools_VariableValue value) {
  bump(C_END_CTX);
  expect(contextId == 1 && value.type_id == 3 && value.value.double_value == 1.5);
}

void kokkosp_declare_optimization_goal(const size_t contextId,
                                       const Kokkos_Tools_OptimizationGoal goal) {
  bump(C_GOAL);
  expect(contextId == 1 && goal.type_id == 3 && goal.goal == Kokkos_Tools_Minimize);
}
#endif /* SECOND_TOOL_NO_TUNING */

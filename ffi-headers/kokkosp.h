/*
 * kokkosp.h - C declarations of the Kokkos Tools interface ("KokkosP").
 *
 * Written for kprof from the public description of the Kokkos Tools interface
 * (the documented callback names, argument lists and struct layouts, as measured
 * on real Kokkos 4.6.01 and 3.4.01 on Linux x86-64: see
 * shared/reference/kokkos-tools.md). No Kokkos or kokkos-tools source was copied.
 *
 * A Kokkos tool is a shared library exporting some of the extern "C" functions
 * declared below; Kokkos dlopen()s it (RTLD_NOW | RTLD_GLOBAL) and looks every
 * callback up by name with dlsym(). A callback the tool does not export is never
 * called. All callbacks return void.
 *
 * Interface versions (2nd argument of kokkosp_init_library): 20240906 (Kokkos
 * 4.5+), 20211015 (3.6 - 4.4), 20210623 (3.5), 20210225 (3.4). The struct
 * layouts are the same for all of them.
 *
 * Define KOKKOSP_NO_PROTOTYPES to get only the types (e.g. in a loader).
 */
#ifndef KPROF_KOKKOSP_H
#define KPROF_KOKKOSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define KOKKOSP_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define KOKKOSP_ALIGNOF(t) alignof(t)
#else
#define KOKKOSP_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define KOKKOSP_ALIGNOF(t) _Alignof(t)
#endif

/* Interface versions passed to kokkosp_init_library. */
#define KOKKOSP_INTERFACE_VERSION_4_5 UINT64_C(20240906)
#define KOKKOSP_INTERFACE_VERSION_3_6 UINT64_C(20211015)
#define KOKKOSP_INTERFACE_VERSION_3_5 UINT64_C(20210623)
#define KOKKOSP_INTERFACE_VERSION_3_4 UINT64_C(20210225)

/* ---- device ids (uint32): type in bits 31..24, device index in 23..17, instance
 * in 16..0 (0 = global / reserved; default host instances are 1). ---- */
#define KOKKOSP_DEVICE_SERIAL 0u
#define KOKKOSP_DEVICE_OPENMP 1u
#define KOKKOSP_DEVICE_CUDA 2u
#define KOKKOSP_DEVICE_HIP 3u
#define KOKKOSP_DEVICE_OPENMPTARGET 4u
#define KOKKOSP_DEVICE_HPX 5u
#define KOKKOSP_DEVICE_THREADS 6u
#define KOKKOSP_DEVICE_SYCL 7u
#define KOKKOSP_DEVICE_OPENACC 8u
#define KOKKOSP_DEVID(type, index, instance)                                   \
  ((uint32_t)(((uint32_t)(type) << 24) | (((uint32_t)(index)&0x7fu) << 17) |   \
              ((uint32_t)(instance)&0x1ffffu)))

/* ---- core structs ---- */

/* Device info passed to kokkosp_init_library (Kokkos passes count 0 and NULL). */
typedef struct Kokkos_Profiling_KokkosPDeviceInfo {
  size_t deviceID;
} Kokkos_Profiling_KokkosPDeviceInfo;

/* A memory space name ("Host", "Cuda", ...), NUL-terminated, passed BY VALUE. */
typedef struct Kokkos_Profiling_SpaceHandle {
  char name[64];
} Kokkos_Profiling_SpaceHandle;

/* Answer of kokkosp_request_tool_settings. Kokkos sets requires_global_fencing
 * to true before the call. */
typedef struct Kokkos_Tools_ToolSettings {
  bool requires_global_fencing;
  bool padding[255];
} Kokkos_Tools_ToolSettings;

/* Generic function pointer used for the reserved slots. */
typedef void (*Kokkos_Tools_functionPointer)(void);

/* fence(devID): runs a global fence; may be called from inside a callback. */
typedef void (*Kokkos_Tools_toolInvokedFenceFunction)(const uint32_t);

/* Actions Kokkos offers to the tool, passed BY VALUE. The padding slots are NOT
 * zeroed by Kokkos: a tool must not read them. */
typedef struct Kokkos_Tools_ToolProgrammingInterface {
  Kokkos_Tools_toolInvokedFenceFunction fence;
  Kokkos_Tools_functionPointer padding[31];
} Kokkos_Tools_ToolProgrammingInterface;

/* ---- tuning structs (looked up only when Kokkos_ENABLE_TUNING=ON) ---- */

enum Kokkos_Tools_VariableInfo_ValueType {
  kokkos_value_double = 0,
  kokkos_value_int64 = 1,
  kokkos_value_string = 2
};

enum Kokkos_Tools_VariableInfo_StatisticalCategory {
  kokkos_value_categorical = 0,
  kokkos_value_ordinal = 1,
  kokkos_value_interval = 2,
  kokkos_value_ratio = 3
};

enum Kokkos_Tools_VariableInfo_CandidateValueType {
  kokkos_value_set = 0,
  kokkos_value_range = 1,
  kokkos_value_unbounded = 2
};

enum Kokkos_Tools_OptimizationType {
  Kokkos_Tools_Minimize = 0,
  Kokkos_Tools_Maximize = 1
};

typedef union Kokkos_Tools_VariableInfo_ValueUnion {
  int64_t int_value;
  double double_value;
  char string_value[64];
} Kokkos_Tools_VariableInfo_ValueUnion;

typedef union Kokkos_Tools_VariableInfo_ValueUnionSet {
  int64_t *int_value;
  double *double_value;
  char (*string_value)[64];
} Kokkos_Tools_VariableInfo_ValueUnionSet;

typedef struct Kokkos_Tools_ValueSet {
  size_t size;
  Kokkos_Tools_VariableInfo_ValueUnionSet values;
} Kokkos_Tools_ValueSet;

typedef struct Kokkos_Tools_OptimzationGoal {
  size_t type_id;
  enum Kokkos_Tools_OptimizationType goal;
} Kokkos_Tools_OptimizationGoal;

typedef struct Kokkos_Tools_ValueRange {
  Kokkos_Tools_VariableInfo_ValueUnion lower;
  Kokkos_Tools_VariableInfo_ValueUnion upper;
  Kokkos_Tools_VariableInfo_ValueUnion step;
  bool openLower;
  bool openUpper;
} Kokkos_Tools_ValueRange;

typedef union Kokkos_Tools_VariableInfo_SetOrRange {
  Kokkos_Tools_ValueSet set;
  Kokkos_Tools_ValueRange range;
} Kokkos_Tools_VariableInfo_SetOrRange;

typedef struct Kokkos_Tools_VariableInfo {
  enum Kokkos_Tools_VariableInfo_ValueType type;
  enum Kokkos_Tools_VariableInfo_StatisticalCategory category;
  enum Kokkos_Tools_VariableInfo_CandidateValueType valueQuantity;
  Kokkos_Tools_VariableInfo_SetOrRange candidates;
  void *toolProvidedInfo;
} Kokkos_Tools_VariableInfo;

typedef struct Kokkos_Tools_VariableValue {
  size_t type_id;
  Kokkos_Tools_VariableInfo_ValueUnion value;
  Kokkos_Tools_VariableInfo *metadata;
} Kokkos_Tools_VariableValue;

/* ---- layout checks (x86-64 / LP64, as measured on real Kokkos) ---- */
#if defined(__LP64__) || defined(_LP64)
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Profiling_KokkosPDeviceInfo) == 8, "KokkosPDeviceInfo size");
KOKKOSP_STATIC_ASSERT(KOKKOSP_ALIGNOF(Kokkos_Profiling_KokkosPDeviceInfo) == 8, "KokkosPDeviceInfo align");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Profiling_SpaceHandle) == 64, "SpaceHandle size");
KOKKOSP_STATIC_ASSERT(KOKKOSP_ALIGNOF(Kokkos_Profiling_SpaceHandle) == 1, "SpaceHandle align");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_ToolSettings) == 256, "ToolSettings size");
KOKKOSP_STATIC_ASSERT(KOKKOSP_ALIGNOF(Kokkos_Tools_ToolSettings) == 1, "ToolSettings align");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ToolSettings, requires_global_fencing) == 0, "ToolSettings field");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_ToolProgrammingInterface) == 256, "ToolProgrammingInterface size");
KOKKOSP_STATIC_ASSERT(KOKKOSP_ALIGNOF(Kokkos_Tools_ToolProgrammingInterface) == 8, "ToolProgrammingInterface align");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ToolProgrammingInterface, fence) == 0, "ToolProgrammingInterface fence");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_VariableInfo_ValueUnion) == 64, "ValueUnion size");
KOKKOSP_STATIC_ASSERT(KOKKOSP_ALIGNOF(Kokkos_Tools_VariableInfo_ValueUnion) == 8, "ValueUnion align");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_VariableInfo_ValueUnionSet) == 8, "ValueUnionSet size");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_ValueSet) == 16, "ValueSet size");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ValueSet, values) == 8, "ValueSet values");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_OptimizationGoal) == 16, "OptimizationGoal size");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_OptimizationGoal, goal) == 8, "OptimizationGoal goal");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_ValueRange) == 200, "ValueRange size");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ValueRange, upper) == 64, "ValueRange upper");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ValueRange, step) == 128, "ValueRange step");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ValueRange, openLower) == 192, "ValueRange openLower");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_ValueRange, openUpper) == 193, "ValueRange openUpper");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_VariableInfo) == 224, "VariableInfo size");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableInfo, category) == 4, "VariableInfo category");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableInfo, valueQuantity) == 8, "VariableInfo valueQuantity");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableInfo, candidates) == 16, "VariableInfo candidates");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableInfo, toolProvidedInfo) == 216, "VariableInfo toolProvidedInfo");
KOKKOSP_STATIC_ASSERT(sizeof(Kokkos_Tools_VariableValue) == 80, "VariableValue size");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableValue, value) == 8, "VariableValue value");
KOKKOSP_STATIC_ASSERT(offsetof(Kokkos_Tools_VariableValue, metadata) == 72, "VariableValue metadata");
KOKKOSP_STATIC_ASSERT(sizeof(enum Kokkos_Tools_VariableInfo_ValueType) == 4, "enum size");
#endif

/* ---- callback function-pointer types (what the loader stores after dlsym) ---- */

typedef void (*Kokkos_Profiling_initFunction)(const int loadSeq, const uint64_t interfaceVer,
                                              const uint32_t devInfoCount,
                                              Kokkos_Profiling_KokkosPDeviceInfo *deviceInfo);
typedef void (*Kokkos_Profiling_finalizeFunction)(void);
typedef void (*Kokkos_Profiling_parseArgsFunction)(int argc, char **argv);
typedef void (*Kokkos_Profiling_printHelpFunction)(char *exe);
typedef void (*Kokkos_Tools_requestToolSettingsFunction)(const uint32_t num,
                                                         Kokkos_Tools_ToolSettings *settings);
typedef void (*Kokkos_Tools_provideToolProgrammingInterfaceFunction)(
    const uint32_t num_actions, Kokkos_Tools_ToolProgrammingInterface tpi);
typedef void (*Kokkos_Profiling_beginFunction)(const char *name, const uint32_t devID,
                                               uint64_t *kID);
typedef void (*Kokkos_Profiling_endFunction)(const uint64_t kID);
typedef void (*Kokkos_Profiling_beginFenceFunction)(const char *name, const uint32_t devID,
                                                    uint64_t *handle);
typedef void (*Kokkos_Profiling_endFenceFunction)(const uint64_t handle);
typedef void (*Kokkos_Profiling_pushFunction)(const char *name);
typedef void (*Kokkos_Profiling_popFunction)(void);
typedef void (*Kokkos_Profiling_createProfileSectionFunction)(const char *name, uint32_t *secID);
typedef void (*Kokkos_Profiling_startProfileSectionFunction)(const uint32_t secID);
typedef void (*Kokkos_Profiling_stopProfileSectionFunction)(const uint32_t secID);
typedef void (*Kokkos_Profiling_destroyProfileSectionFunction)(const uint32_t secID);
typedef void (*Kokkos_Profiling_profileEventFunction)(const char *name);
typedef void (*Kokkos_Profiling_declareMetadataFunction)(const char *key, const char *value);
typedef void (*Kokkos_Profiling_allocateDataFunction)(const Kokkos_Profiling_SpaceHandle handle,
                                                      const char *label, const void *ptr,
                                                      const uint64_t size);
typedef void (*Kokkos_Profiling_deallocateDataFunction)(const Kokkos_Profiling_SpaceHandle handle,
                                                        const char *label, const void *ptr,
                                                        const uint64_t size);
typedef void (*Kokkos_Profiling_beginDeepCopyFunction)(
    Kokkos_Profiling_SpaceHandle dst_handle, const char *dst_name, const void *dst_ptr,
    Kokkos_Profiling_SpaceHandle src_handle, const char *src_name, const void *src_ptr,
    uint64_t size);
typedef void (*Kokkos_Profiling_endDeepCopyFunction)(void);
typedef void (*Kokkos_Profiling_dualViewSyncFunction)(const char *label, const void *ptr,
                                                      bool to_device);
typedef void (*Kokkos_Profiling_dualViewModifyFunction)(const char *label, const void *ptr,
                                                        bool on_device);
/* tuning */
typedef void (*Kokkos_Tools_outputTypeDeclarationFunction)(const char *name, const size_t id,
                                                           Kokkos_Tools_VariableInfo *info);
typedef void (*Kokkos_Tools_inputTypeDeclarationFunction)(const char *name, const size_t id,
                                                          Kokkos_Tools_VariableInfo *info);
typedef void (*Kokkos_Tools_requestValueFunction)(const size_t contextId,
                                                  const size_t numContextVariables,
                                                  const Kokkos_Tools_VariableValue *contextValues,
                                                  const size_t numTuningVariables,
                                                  Kokkos_Tools_VariableValue *tuningValues);
typedef void (*Kokkos_Tools_contextBeginFunction)(const size_t contextId);
typedef void (*Kokkos_Tools_contextEndFunction)(const size_t contextId,
                                                Kokkos_Tools_VariableValue value);
typedef void (*Kokkos_Tools_optimizationGoalDeclarationFunction)(
    const size_t contextId, const Kokkos_Tools_OptimizationGoal goal);

/* ---- the symbols a tool exports ---- */
#ifndef KOKKOSP_NO_PROTOTYPES
void kokkosp_init_library(const int loadSeq, const uint64_t interfaceVer,
                          const uint32_t devInfoCount,
                          Kokkos_Profiling_KokkosPDeviceInfo *deviceInfo);
void kokkosp_finalize_library(void);
void kokkosp_parse_args(int argc, char **argv);
void kokkosp_print_help(char *exe);
void kokkosp_request_tool_settings(const uint32_t num, Kokkos_Tools_ToolSettings *settings);
void kokkosp_provide_tool_programming_interface(const uint32_t num_actions,
                                                Kokkos_Tools_ToolProgrammingInterface tpi);
void kokkosp_begin_parallel_for(const char *name, const uint32_t devID, uint64_t *kID);
void kokkosp_end_parallel_for(const uint64_t kID);
void kokkosp_begin_parallel_reduce(const char *name, const uint32_t devID, uint64_t *kID);
void kokkosp_end_parallel_reduce(const uint64_t kID);
void kokkosp_begin_parallel_scan(const char *name, const uint32_t devID, uint64_t *kID);
void kokkosp_end_parallel_scan(const uint64_t kID);
void kokkosp_begin_fence(const char *name, const uint32_t devID, uint64_t *handle);
void kokkosp_end_fence(const uint64_t handle);
void kokkosp_push_profile_region(const char *name);
void kokkosp_pop_profile_region(void);
void kokkosp_create_profile_section(const char *name, uint32_t *secID);
void kokkosp_start_profile_section(const uint32_t secID);
void kokkosp_stop_profile_section(const uint32_t secID);
void kokkosp_destroy_profile_section(const uint32_t secID);
void kokkosp_profile_event(const char *name);
void kokkosp_declare_metadata(const char *key, const char *value);
void kokkosp_allocate_data(const Kokkos_Profiling_SpaceHandle handle, const char *label,
                           const void *ptr, const uint64_t size);
void kokkosp_deallocate_data(const Kokkos_Profiling_SpaceHandle handle, const char *label,
                             const void *ptr, const uint64_t size);
void kokkosp_begin_deep_copy(Kokkos_Profiling_SpaceHandle dst_handle, const char *dst_name,
                             const void *dst_ptr, Kokkos_Profiling_SpaceHandle src_handle,
                             const char *src_name, const void *src_ptr, uint64_t size);
void kokkosp_end_deep_copy(void);
void kokkosp_dual_view_sync(const char *label, const void *ptr, bool to_device);
void kokkosp_dual_view_modify(const char *label, const void *ptr, bool on_device);
/* tuning (looked up only when Kokkos_ENABLE_TUNING=ON) */
void kokkosp_declare_output_type(const char *name, const size_t id,
                                 Kokkos_Tools_VariableInfo *info);
void kokkosp_declare_input_type(const char *name, const size_t id,
                                Kokkos_Tools_VariableInfo *info);
void kokkosp_request_values(const size_t contextId, const size_t numContextVariables,
                            const Kokkos_Tools_VariableValue *contextValues,
                            const size_t numTuningVariables,
                            Kokkos_Tools_VariableValue *tuningValues);
void kokkosp_begin_context(const size_t contextId);
void kokkosp_end_context(const size_t contextId, Kokkos_Tools_VariableValue value);
void kokkosp_declare_optimization_goal(const size_t contextId,
                                       const Kokkos_Tools_OptimizationGoal goal);
#endif /* KOKKOSP_NO_PROTOTYPES */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KPROF_KOKKOSP_H */

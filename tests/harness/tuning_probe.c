/*
 * tuning_probe.c - a Kokkos tool that checks the tuning calls it sees, chained after
 * kprof (KOKKOS_PROFILE_LIBRARY="libkprof.so;libtuning_probe.so"). kprof answers
 * kokkosp_request_values first and forwards the call, so the values this probe sees
 * are kprof's. It never changes them.
 *
 * At kokkosp_finalize_library it writes `key=value` lines to $TUNING_PROBE_OUT:
 *   outputs_declared   output variables declared
 *   begin_contexts, end_contexts, requests   calls seen
 *   values             output values seen in requests
 *   in_set             of those, values within their variable's declared candidates
 *                      (a set member; or in a range: above/below its bounds, a bound
 *                      only when closed, a whole number of steps from the lower
 *                      bound when the step is not 0)
 *   undeclared         values of variables never declared as outputs
 *   distinct           distinct (variable, value) pairs seen
 */
#include "kokkosp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARS 256
#define MAX_DISTINCT 4096

static struct {
  size_t id;
  Kokkos_Tools_VariableInfo info;
  int64_t *ints;   /* copy of a set's values */
  double *doubles;
  char (*strings)[64];
} vars[MAX_VARS];
static int nvars;
static unsigned long declared, begins, ends, requests, values, in_set, undeclared;
static struct {
  size_t id;
  char value[64];
} seen[MAX_DISTINCT];
static int nseen;

void kokkosp_init_library(const int loadSeq, const uint64_t interfaceVer,
                          const uint32_t devInfoCount,
                          Kokkos_Profiling_KokkosPDeviceInfo *deviceInfo) {
  (void)loadSeq;
  (void)interfaceVer;
  (void)devInfoCount;
  (void)deviceInfo;
}

void kokkosp_finalize_library(void) {
  const char *path = getenv("TUNING_PROBE_OUT");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f) return;
  fprintf(f,
          "outputs_declared=%lu\nbegin_contexts=%lu\nend_contexts=%lu\nrequests=%lu\n"
          "values=%lu\nin_set=%lu\nundeclared=%lu\ndistinct=%d\n",
          declared, begins, ends, requests, values, in_set, undeclared, nseen);
  fclose(f);
}

void kokkosp_declare_output_type(const char *name, const size_t id,
                                 Kokkos_Tools_VariableInfo *info) {
  (void)name;
  declared++;
  if (nvars >= MAX_VARS || info == NULL) return;
  vars[nvars].id = id;
  vars[nvars].info = *info;
  if (info->valueQuantity == kokkos_value_set && info->candidates.set.size > 0) {
    size_t n = info->candidates.set.size;
    if (info->type == kokkos_value_int64) {
      vars[nvars].ints = malloc(n * sizeof(int64_t));
      memcpy(vars[nvars].ints, info->candidates.set.values.int_value, n * sizeof(int64_t));
    } else if (info->type == kokkos_value_double) {
      vars[nvars].doubles = malloc(n * sizeof(double));
      memcpy(vars[nvars].doubles, info->candidates.set.values.double_value, n * sizeof(double));
    } else {
      vars[nvars].strings = malloc(n * 64);
      memcpy(vars[nvars].strings, info->candidates.set.values.string_value, n * 64);
    }
  }
  nvars++;
}

void kokkosp_declare_input_type(const char *name, const size_t id,
                                Kokkos_Tools_VariableInfo *info) {
  (void)name;
  (void)id;
  (void)info;
}

static double number(const Kokkos_Tools_VariableInfo *info,
                     const Kokkos_Tools_VariableInfo_ValueUnion *v) {
  return info->type == kokkos_value_int64 ? (double)v->int_value : v->double_value;
}

static int within(int k, const Kokkos_Tools_VariableInfo_ValueUnion *v) {
  const Kokkos_Tools_VariableInfo *info = &vars[k].info;
  if (info->valueQuantity == kokkos_value_unbounded) return 1;
  if (info->valueQuantity == kokkos_value_set) {
    for (size_t i = 0; i < info->candidates.set.size; i++) {
      if (info->type == kokkos_value_int64 && vars[k].ints[i] == v->int_value) return 1;
      if (info->type == kokkos_value_double && vars[k].doubles[i] == v->double_value) return 1;
      if (info->type == kokkos_value_string &&
          strncmp(vars[k].strings[i], v->string_value, 64) == 0)
        return 1;
    }
    return 0;
  }
  const Kokkos_Tools_ValueRange *r = &info->candidates.range;
  double x = number(info, v), lo = number(info, &r->lower), hi = number(info, &r->upper);
  double step = number(info, &r->step);
  double eps = 1e-9 * fmax(1.0, fabs(hi - lo));
  if (x < lo - eps || x > hi + eps) return 0;
  if (r->openLower && fabs(x - lo) <= eps) return 0;
  if (r->openUpper && fabs(x - hi) <= eps) return 0;
  if (step > 0) {
    double k_steps = (x - lo) / step;
    if (fabs(k_steps - round(k_steps)) > 1e-6) return 0;
  }
  return 1;
}

void kokkosp_request_values(const size_t contextId, const size_t numContextVariables,
                            const Kokkos_Tools_VariableValue *contextValues,
                            const size_t numTuningVariables,
                            Kokkos_Tools_VariableValue *tuningValues) {
  (void)contextId;
  (void)numContextVariables;
  (void)contextValues;
  requests++;
  for (size_t i = 0; i < numTuningVariables; i++) {
    values++;
    int k = -1;
    for (int j = 0; j < nvars; j++)
      if (vars[j].id == tuningValues[i].type_id) k = j;
    if (k < 0) {
      undeclared++;
      continue;
    }
    if (within(k, &tuningValues[i].value)) in_set++;
    char text[64];
    if (vars[k].info.type == kokkos_value_string)
      snprintf(text, sizeof text, "%.63s", tuningValues[i].value.string_value);
    else
      snprintf(text, sizeof text, "%.17g", number(&vars[k].info, &tuningValues[i].value));
    int known = 0;
    for (int j = 0; j < nseen; j++)
      if (seen[j].id == tuningValues[i].type_id && strcmp(seen[j].value, text) == 0) known = 1;
    if (!known && nseen < MAX_DISTINCT) {
      seen[nseen].id = tuningValues[i].type_id;
      strcpy(seen[nseen].value, text);
      nseen++;
    }
  }
}

void kokkosp_begin_context(const size_t contextId) {
  (void)contextId;
  begins++;
}

void kokkosp_end_context(const size_t contextId, Kokkos_Tools_VariableValue value) {
  (void)contextId;
  (void)value;
  ends++;
}

void kokkosp_declare_optimization_goal(const size_t contextId,
                                       const Kokkos_Tools_OptimizationGoal goal) {
  (void)contextId;
  (void)goal;
}

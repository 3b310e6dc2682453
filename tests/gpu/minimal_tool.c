/* The smallest useful CUPTI tool, as a baseline for kprof's cost per launch: an
 * injection library (CUDA_INJECTION64_PATH) that enables kernel activity records
 * into 8 MiB buffers it discards, and flushes them at exit. MINIMAL_CALLBACKS=1
 * also subscribes an empty callback to the runtime and driver API domains (CUPTI's
 * own cost of the callback API, without a tool doing anything in it;
 * MINIMAL_CALLBACKS=runtime: the runtime API domain only);
 * MINIMAL_KINDS=all also records every activity kind kprof records (copies, sets,
 * device memory, synchronizations, CUPTI's overhead), so that what CUPTI costs
 * for those is in the baseline too.
 *
 *   gcc -O2 -shared -fPIC -I<CUPTI include> -I<CUDA include> minimal_tool.c \
 *       -o libminimal_tool.so -L<CUPTI lib> -lcupti
 */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t records;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max) {
  *size = 8u << 20;
  *buffer = aligned_alloc(8, *size);
  *max = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid) {
  CUpti_Activity *r = NULL;
  (void)ctx;
  (void)stream;
  (void)size;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) records++;
  free(buffer);
}

static void CUPTIAPI on_api(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                            const void *data) {
  (void)u;
  (void)d;
  (void)id;
  (void)data;
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  fprintf(stderr, "minimal tool: %llu records\n", (unsigned long long)records);
}

int InitializeInjection(void) {
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  const char *kinds = getenv("MINIMAL_KINDS");
  if (kinds && strcmp(kinds, "all") == 0) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD);
  }
  const char *cb = getenv("MINIMAL_CALLBACKS");
  if (cb && (cb[0] == '1' || strcmp(cb, "runtime") == 0)) {
    CUpti_SubscriberHandle s;
    cuptiSubscribe(&s, on_api, NULL);
    cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (cb[0] == '1')
      cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  atexit(at_exit);
  return 1;
}

/* The minimal CUPTI tool the launch benchmark compares kprof with: loaded the same
 * way (CUDA_INJECTION64_PATH, InitializeInjection), it records kernel and memcpy
 * activities into 8 MiB buffers and only counts them (no callbacks, no
 * correlation, no output but one line at exit). What any activity-based GPU tool
 * pays at least. Built against the CUPTI headers of the CUDA toolkit (bench.sh).
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long records;

static void CUPTIAPI request(uint8_t **buffer, size_t *size, size_t *max_records) {
    *size = 8u << 20;
    *buffer = aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                              size_t valid) {
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) records++;
    free(buffer);
}

static void at_exit(void) {
    cuptiActivityFlushAll(1);
    fprintf(stderr, "min_cupti_tool: %lu activity records\n", records);
}

int InitializeInjection(void) {
    if (cuptiActivityRegisterCallbacks(request, complete) != CUPTI_SUCCESS) return 0;
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    atexit(at_exit);
    return 1;
}

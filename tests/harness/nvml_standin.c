/* A stand-in for NVML (libnvidia-ml.so.1) for tests/tests/system_sampling.rs, on
 * machines without an NVIDIA driver: compiled against NVML's real header (the
 * nvidia-nvml-dev wheel, installed by tests/scripts/install-cupti.sh), so its
 * functions have NVML's own signatures. kprof's sampler loads it through
 * KPROF_NVML_LIB as it loads the driver's library.
 *
 * Three devices: 0 and 1 report their power, 2 answers NVML_ERROR_NOT_SUPPORTED.
 * The k-th power query of device i (k = 1, 2, ...) answers (100 + i) W + k * 10 mW,
 * so a test knows which query each value came from. KPROF_TEST_NVML=init_fail
 * makes nvmlInit_v2 fail with NVML_ERROR_DRIVER_NOT_LOADED. When
 * KPROF_TEST_NVML_LOG names a file, nvmlInit_v2 and nvmlShutdown each append a
 * line to it ("init", "shutdown").
 */
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nvmlDevice_st {
    unsigned int index;
    unsigned int queries;
};

static struct nvmlDevice_st devices[3] = {{0, 0}, {1, 0}, {2, 0}};
static int initialized;

static void log_line(const char *what) {
    const char *path = getenv("KPROF_TEST_NVML_LOG");
    if (!path) {
        return;
    }
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n", what);
        fclose(f);
    }
}

nvmlReturn_t nvmlInit_v2(void) {
    const char *mode = getenv("KPROF_TEST_NVML");
    if (mode && strcmp(mode, "init_fail") == 0) {
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    initialized++;
    log_line("init");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (initialized == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    initialized--;
    log_line("shutdown");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (!initialized) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (!deviceCount) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *deviceCount = 3;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialized) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (index >= 3 || !device) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
    if (!initialized) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (!device || !power || device < devices || device >= devices + 3) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (device->index == 2) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    device->queries++;
    *power = (100 + device->index) * 1000 + device->queries * 10;
    return NVML_SUCCESS;
}

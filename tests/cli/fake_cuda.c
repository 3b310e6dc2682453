/* Stands for a CUDA program built with nvcc's default static runtime, which loads
 * the driver by name (dlopen("libcuda.so.1")): prints whether a driver was found and
 * the injection library the CUDA driver would load. Built with -DSHARED_CUDART it
 * calls a function of a stand-in shared libcudart instead. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SHARED_CUDART
int cudaRuntimeGetVersion(int *version);
#endif

int main(void) {
#ifdef SHARED_CUDART
  int v = 0;
  cudaRuntimeGetVersion(&v);
  printf("runtime %d\n", v);
#else
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY);
  printf("driver %s\n", driver ? "found" : "absent");
#endif
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  printf("CUDA_INJECTION64_PATH=%s\n", inj ? inj : "(unset)");
  return 0;
}

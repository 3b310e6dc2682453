// The real-GPU check of nesting and flows: kprof annotation regions around
// launches on two streams, copies both ways, a leak, and CUDA events around each
// kernel, printed as "event <kernel> <rep> <ns>" so a kprof profile's device times
// can be compared with them. Linked with libkprof_core.so (ffi-headers/kprof.h);
// run with CUDA_INJECTION64_PATH=.../libkprof_cuda.so (see check.sh).
//
//   annotated [reps]        default 5
#include <cstdio>
#include <cstdlib>

#include <kprof.h>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
                   cudaGetErrorString(e_));                                         \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__global__ void axpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

template <typename T>
__global__ void scale(T* y, T a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] *= a;
}

static float elapsed_ns(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms * 1e6f;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int n = 1 << 24;
  const size_t bytes = n * sizeof(float);
  float* host = static_cast<float*>(std::malloc(bytes));
  for (int i = 0; i < n; ++i) host[i] = 1.0f;
  float *x = nullptr, *y = nullptr, *z = nullptr, *leak = nullptr;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&z, bytes));
  CHECK(cudaMalloc(&leak, 3 << 20));  // never freed: the leak kprof must report
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  cudaEvent_t e[4];
  for (auto& ev : e) CHECK(cudaEventCreate(&ev));

  kprof_region_begin("upload");
  CHECK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, host, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(z, host, bytes, cudaMemcpyHostToDevice));
  kprof_region_end("upload");
  for (int r = 0; r < reps; ++r) {
    kprof_region_begin("step");
    CHECK(cudaEventRecord(e[0], s1));
    axpy<<<(n + 255) / 256, 256, 0, s1>>>(n, 2.0f, x, y);
    CHECK(cudaEventRecord(e[1], s1));
    kprof_region_begin("rescale");
    CHECK(cudaEventRecord(e[2], s2));
    scale<float><<<1024, 256, 0, s2>>>(z, 0.5f, n);
    CHECK(cudaEventRecord(e[3], s2));
    kprof_region_end("rescale");
    kprof_region_end("step");
    CHECK(cudaDeviceSynchronize());
    std::printf("event axpy %d %.0f\n", r, elapsed_ns(e[0], e[1]));
    std::printf("event scale %d %.0f\n", r, elapsed_ns(e[2], e[3]));
  }
  kprof_region_begin("download");
  CHECK(cudaMemcpy(host, y, bytes, cudaMemcpyDeviceToHost));
  kprof_region_end("download");
  std::printf("y[0] = %g\n", host[0]);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(z));
  std::free(host);
  return 0;
}

// A small CUDA program to check kprof's CUDA plugin on a real GPU (see
// tests/gpu/README.md): two kernels on two streams timed with CUDA events, copies
// both ways (pageable and pinned), a memset, a device allocation never freed, and
// a loop of empty launches whose host cost per launch it prints.
//
//   nvcc -O2 -o streams tests/gpu/streams.cu
//   ./streams [launches]            # without kprof
//   CUDA_INJECTION64_PATH=.../libkprof_cuda.so KPROF_CUDA_DEBUG=1 ./streams 10
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e = (x);                                                          \
    if (e != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
                   cudaGetErrorString(e));                                        \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

__global__ void axpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int k = 0; k < 64; ++k) y[i] = a * x[i] + y[i];
  }
}

template <typename T>
__global__ void scale(T* v, T f, int n) {
  extern __shared__ unsigned char tile[];
  int i = (blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y) +
          threadIdx.y * blockDim.x + threadIdx.x;
  tile[threadIdx.x % 1024] = 1;
  if (i < n) {
    for (int k = 0; k < 64; ++k) v[i] = v[i] * f + T(tile[threadIdx.x % 1024]);
  }
}

__global__ void empty() {}

int main(int argc, char** argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int n = 1 << 22;
  const size_t bytes = n * sizeof(float);

  float* host = static_cast<float*>(std::malloc(bytes));
  for (int i = 0; i < n; ++i) host[i] = 1.0f;
  float* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, bytes));
  float *x = nullptr, *y = nullptr, *leak = nullptr;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&leak, 1 << 20));  // never freed: the leak kprof must report

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  cudaEvent_t a0, a1, b0, b1;
  CHECK(cudaEventCreate(&a0));
  CHECK(cudaEventCreate(&a1));
  CHECK(cudaEventCreate(&b0));
  CHECK(cudaEventCreate(&b1));

  CHECK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));  // pageable HtoD
  CHECK(cudaMemset(y, 0, bytes));

  for (int rep = 0; rep < 3; ++rep) {
    CHECK(cudaEventRecord(a0, s1));
    axpy<<<n / 256, 256, 0, s1>>>(n, 2.0f, x, y);
    CHECK(cudaEventRecord(a1, s1));
    CHECK(cudaEventRecord(b0, s2));
    scale<float><<<dim3(n / 256 / 2, 2, 1), dim3(128, 2, 1), 1024, s2>>>(x, 0.5f, n);
    CHECK(cudaEventRecord(b1, s2));
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamSynchronize(s2));
    float ta = 0, tb = 0;
    CHECK(cudaEventElapsedTime(&ta, a0, a1));
    CHECK(cudaEventElapsedTime(&tb, b0, b1));
    std::printf("events: axpy %d: %.1f us, scale %d: %.1f us\n", rep, ta * 1e3, rep,
                tb * 1e3);
  }

  CHECK(cudaMemcpyAsync(pinned, y, bytes, cudaMemcpyDeviceToHost, s1));  // pinned DtoH
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaMemcpy(host, y, bytes, cudaMemcpyDeviceToHost));  // pageable DtoH
  std::printf("y[0] = %g\n", host[0]);

  // Host cost of a launch: many empty kernels, timed on the host.
  CHECK(cudaDeviceSynchronize());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) empty<<<1, 32, 0, s2>>>();
  auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaDeviceSynchronize());
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  std::printf("launch loop: %d launches, %.0f ns per launch\n", launches,
              launches ? ns / launches : 0.0);

  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  std::free(host);
  return 0;
}

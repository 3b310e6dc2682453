// Host cost of a kernel launch: batches of launches of an empty kernel, each batch
// timed on the host and then drained (untimed), so the launch queue never fills and
// the time is the launch call's own. Run with and without a tool injected
// (CUDA_INJECTION64_PATH) to get what the tool adds per launch; see bench.sh.
//
//   launch_bench [launches] [batch]     prints "launch_ns <host ns per launch>"
#include <cstdio>
#include <cstdlib>
#include <ctime>

__global__ void empty_kernel() {}

static double now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long launches = argc > 1 ? atol(argv[1]) : 200000;
    long batch = argc > 2 ? atol(argv[2]) : 256;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "launch_bench: no CUDA device\n");
        return 1;
    }
    for (int i = 0; i < 2000; i++) empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    double host = 0;
    for (long done = 0; done < launches; done += batch) {
        double t0 = now_ns();
        for (long i = 0; i < batch; i++) empty_kernel<<<1, 1>>>();
        host += now_ns() - t0;
        cudaDeviceSynchronize();
    }
    long n = (launches + batch - 1) / batch * batch;
    printf("launch_ns %.1f\n", host / n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

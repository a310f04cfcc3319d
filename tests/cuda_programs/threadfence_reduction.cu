// NVIDIA's threadFenceReduction pattern: each block writes its partial sum, __threadfence() makes it visible, and
// the block that takes the last ticket from atomicInc sums all partials and resets the counter for the next run.
#include "check.h"

__device__ unsigned int retired = 0;

__global__ void sum_single_pass(const float *in, float *partials, float *result, int n)
{
    extern __shared__ float shared[];
    __shared__ bool last_block;
    float value = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) value += in[i];
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = shared[0];
        __threadfence();
        unsigned ticket = atomicInc(&retired, gridDim.x);
        last_block = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last_block) {
        float total = 0;
        for (int b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += partials[b];
        shared[threadIdx.x] = total;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            *result = shared[0];
            retired = 0;
        }
    }
}

int main()
{
    const int n = 1 << 14, threads = 128, blocks = 24;
    float *h = (float *)malloc(n * sizeof(float)), *d_in, *d_partials, *d_result, result[2];
    double want = 0;
    for (int i = 0; i < n; i++) { h[i] = (float)((i % 64) - 31) / 8.0f; want += h[i]; }
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_partials, blocks * sizeof(float)));
    CHECK(cudaMalloc(&d_result, sizeof(float)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    for (int run = 0; run < 2; run++) {
        CHECK(cudaMemset(d_result, 0xff, sizeof(float)));
        sum_single_pass<<<blocks, threads, threads * sizeof(float)>>>(d_in, d_partials, d_result, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(&result[run], d_result, sizeof(float), cudaMemcpyDeviceToHost));
    }
    unsigned counter = 1;
    CHECK(cudaMemcpyFromSymbol(&counter, retired, sizeof(counter)));
    printf("GPU sum %.3f and %.3f, CPU sum %.3f, ticket counter %u\n", result[0], result[1], want, counter);
    int pass = result[0] == (float)want && result[1] == result[0] && counter == 0;
    printf(pass ? "PASS\n" : "FAIL\n");
    return !pass;
}

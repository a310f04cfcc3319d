// Sum reduction: a shared-memory tree per block, warp shuffles for the last 32, one atomicAdd per block.
#include "check.h"

__inline__ __device__ int warp_sum(int value)
{
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_down_sync(0xffffffff, value, offset);
    return value;
}

__global__ void reduce(const int *in, int *out, int n)
{
    extern __shared__ int partial[];
    int tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    int value = (i < n ? in[i] : 0) + (i + blockDim.x < n ? in[i + blockDim.x] : 0);
    partial[tid] = value;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 32; stride /= 2) {
        if (tid < stride)
            partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        int sum = warp_sum(partial[tid]);
        if (tid == 0)
            atomicAdd(out, sum);
    }
}

int main()
{
    const int n = 100000, threads = 256;
    int *h = (int *)malloc(n * sizeof(int));
    long long want = 0;
    for (int i = 0; i < n; i++) { h[i] = (i * 37) % 101 - 50; want += h[i]; }
    int *d_in, *d_out, result = 0;
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0, sizeof(int)));
    int blocks = (n + threads * 2 - 1) / (threads * 2);
    reduce<<<blocks, threads, threads * sizeof(int)>>>(d_in, d_out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&result, d_out, sizeof(int), cudaMemcpyDeviceToHost));
    printf("sum %d (host %lld) over %d blocks\n", result, want, blocks);
    printf(result == want ? "PASS\n" : "FAIL\n");
    return result != want;
}

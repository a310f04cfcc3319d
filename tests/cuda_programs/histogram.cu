// A 64-bin histogram: per-block bins in shared memory (atomicAdd), merged into global bins (atomicAdd).
#include "check.h"
#define BINS 64

__global__ void histogram(const unsigned char *data, int n, unsigned int *bins)
{
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i] % BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}

int main()
{
    const int n = 50000;
    unsigned char *h = (unsigned char *)malloc(n);
    unsigned int want[BINS] = {0}, got[BINS];
    unsigned int seed = 12345;
    for (int i = 0; i < n; i++) { seed = seed * 1103515245u + 12345u; h[i] = (seed >> 16) & 0xff; want[h[i] % BINS]++; }
    unsigned char *d; unsigned int *bins;
    CHECK(cudaMalloc(&d, n)); CHECK(cudaMalloc(&bins, sizeof got));
    CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(bins, 0, sizeof got));
    histogram<<<16, 128>>>(d, n, bins);
    CHECK(cudaMemcpy(got, bins, sizeof got, cudaMemcpyDeviceToHost));
    int wrong = 0; unsigned total = 0;
    for (int b = 0; b < BINS; b++) { wrong += got[b] != want[b]; total += got[b]; }
    printf("bin 0: %u, bin 63: %u, total %u\n", got[0], got[63], total);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

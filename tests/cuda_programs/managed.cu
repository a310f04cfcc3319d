// Unified memory: cudaMallocManaged buffers and a __managed__ variable, read and written by host and kernel.
#include "check.h"

__managed__ int launches_seen;

__global__ void square(int *values, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) values[i] = values[i] * values[i];
    if (i == 0) launches_seen += 1;
}

int main()
{
    const int n = 1000;
    int *values;
    CHECK(cudaMallocManaged(&values, n * sizeof(int)));
    for (int i = 0; i < n; i++) values[i] = i - 500;
    launches_seen = 10;
    square<<<(n + 255) / 256, 256>>>(values, n);
    CHECK(cudaDeviceSynchronize());
    square<<<1, 32>>>(values + 499, 3);
    CHECK(cudaDeviceSynchronize());
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        long long want = (long long)(i - 500) * (i - 500);
        if (i >= 499 && i < 502) want = want * want;
        wrong += values[i] != want;
    }
    cudaPointerAttributes attributes;
    CHECK(cudaPointerGetAttributes(&attributes, values));
    printf("values[0] = %d, values[999] = %d, launches_seen = %d, managed pointer: %s\n", values[0], values[999],
           launches_seen, attributes.type == cudaMemoryTypeManaged ? "yes" : "no");
    wrong += launches_seen != 12 || attributes.type != cudaMemoryTypeManaged;
    CHECK(cudaFree(values));
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// Two streams of asynchronous copies and launches on pinned memory, timed with events.
#include "check.h"

__global__ void scale(float *x, int n, float factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}

int main()
{
    const int n = 4096, half = n / 2;
    float *h;
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    for (int i = 0; i < n; i++) h[i] = i;
    float *d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    cudaStream_t streams[2];
    cudaEvent_t start, stop;
    for (int s = 0; s < 2; s++) CHECK(cudaStreamCreate(&streams[s]));
    CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start, 0));
    for (int s = 0; s < 2; s++) {
        CHECK(cudaMemcpyAsync(d + s * half, h + s * half, half * sizeof(float), cudaMemcpyHostToDevice, streams[s]));
        scale<<<(half + 255) / 256, 256, 0, streams[s]>>>(d + s * half, half, s ? 3.0f : 2.0f);
        CHECK(cudaMemcpyAsync(h + s * half, d + s * half, half * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
    }
    CHECK(cudaEventRecord(stop, 0));
    CHECK(cudaEventSynchronize(stop));
    for (int s = 0; s < 2; s++) CHECK(cudaStreamSynchronize(streams[s]));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += h[i] != i * (i < half ? 2.0f : 3.0f);
    printf("h[1] = %.0f, h[4095] = %.0f, elapsed time %s\n", h[1], h[n - 1], ms >= 0 ? "measured" : "negative");
    CHECK(cudaStreamQuery(streams[0]));
    for (int s = 0; s < 2; s++) CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop));
    CHECK(cudaFreeHost(h)); CHECK(cudaFree(d));
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// Mapped pinned memory written by a kernel through cudaHostGetDevicePointer, and a pitched 2D copy round trip.
#include "check.h"

__global__ void fill(int *out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 3 * i; }

__global__ void add_row_index(float *image, size_t pitch, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) {
        float *row = (float *)((char *)image + y * pitch);
        row[x] += y;
    }
}

int main()
{
    const int n = 500, width = 100, height = 7;
    int *host, *device_view;
    CHECK(cudaHostAlloc(&host, n * sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&device_view, host, 0));
    fill<<<(n + 127) / 128, 128>>>(device_view, n);
    CHECK(cudaDeviceSynchronize());
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += host[i] != 3 * i;
    static float image[height][width];
    for (int y = 0; y < height; y++) for (int x = 0; x < width; x++) image[y][x] = x;
    float *pitched; size_t pitch;
    CHECK(cudaMallocPitch((void **)&pitched, &pitch, width * sizeof(float), height));
    CHECK(cudaMemcpy2D(pitched, pitch, image, width * sizeof(float), width * sizeof(float), height,
                       cudaMemcpyHostToDevice));
    add_row_index<<<dim3(1, height), 128>>>(pitched, pitch, width, height);
    CHECK(cudaMemcpy2D(image, width * sizeof(float), pitched, pitch, width * sizeof(float), height,
                       cudaMemcpyDeviceToHost));
    for (int y = 0; y < height; y++) for (int x = 0; x < width; x++) wrong += image[y][x] != x + y;
    printf("host[499] = %d, pitch >= row: %s, image[6][99] = %.0f\n", host[n - 1],
           pitch >= width * sizeof(float) ? "yes" : "no", image[6][99]);
    CHECK(cudaFreeHost(host)); CHECK(cudaFree(pitched));
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// Vector addition with an error check after every call and after the launch.
#include "check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main()
{
    const int n = 5000;
    float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
    float *c = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) { a[i] = i * 0.5f; b[i] = 1000.0f - i; }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, n * sizeof(float), cudaMemcpyHostToDevice));
    int threads = 256, blocks = (n + threads - 1) / threads;
    add<<<blocks, threads>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) wrong++;
    printf("blocks %d, threads %d, c[4999] = %.1f\n", blocks, threads, c[n - 1]);
    CHECK(cudaFree(da)); CHECK(cudaFree(db)); CHECK(cudaFree(dc));
    printf(wrong ? "FAIL: %d wrong\n" : "PASS\n", wrong);
    return wrong ? 1 : 0;
}

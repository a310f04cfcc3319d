// Matrix transposes timed with CUDA events, in the manner of NVIDIA's transpose sample: a copy, a naive transpose
// and a tiled transpose through shared memory with a padding column, each checked against the host's.
#include "check.h"

#define TILE 32
#define ROWS 8

__global__ void copy(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) out[(y + j) * width + x] = in[(y + j) * width + x];
}

__global__ void transpose_naive(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) out[x * height + y + j] = in[(y + j) * width + x];
}

__global__ void transpose_tiled(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main()
{
    const int width = 96, height = 72, size = width * height * sizeof(float);
    float *h = (float *)malloc(size), *result = (float *)malloc(size), *d_in, *d_out;
    for (int i = 0; i < width * height; i++) h[i] = (float)i;
    CHECK(cudaMalloc(&d_in, size));
    CHECK(cudaMalloc(&d_out, size));
    CHECK(cudaMemcpy(d_in, h, size, cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    dim3 grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE), block(TILE, ROWS);
    const char *names[] = {"copy", "naive transpose", "tiled transpose"};
    void (*kernels[])(float *, const float *, int, int) = {copy, transpose_naive, transpose_tiled};
    int failures = 0;
    for (int k = 0; k < 3; k++) {
        CHECK(cudaMemset(d_out, 0, size));
        CHECK(cudaEventRecord(start, 0));
        kernels[k]<<<grid, block>>>(d_out, d_in, width, height);
        CHECK(cudaEventRecord(stop, 0));
        CHECK(cudaEventSynchronize(stop));
        float ms = -1;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        CHECK(cudaMemcpy(result, d_out, size, cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++)
                wrong += k == 0 ? result[y * width + x] != h[y * width + x] : result[x * height + y] != h[y * width + x];
        printf("%-16s %s (time measured: %s)\n", names[k], wrong ? "wrong" : "correct", ms > 0 ? "yes" : "no");
        failures += wrong != 0 || !(ms > 0);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    printf(failures ? "FAIL\n" : "PASS\n");
    return failures != 0;
}

// In the manner of NVIDIA's matrixMul sample: a templated shared-memory tiled product C = A * B (block size 16 or
// 32 chosen at run time), a warm-up launch, timed launches between CUDA events, GFlop/s from the measured time,
// and the sample's relative-error check against the expected value of every element.
#include <cmath>
#include "check.h"

template <int BLOCK_SIZE>
__global__ void matrix_mul(float *C, const float *A, const float *B, int wA, int wB)
{
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by, aEnd = aBegin + wA - 1, aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx, bStep = BLOCK_SIZE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[wB * BLOCK_SIZE * by + BLOCK_SIZE * bx + wB * ty + tx] = Csub;
}

static int run(int block_size)
{
    const int hA = 2 * block_size, wA = 4 * block_size, wB = 2 * block_size;
    const float valB = 0.01f;
    size_t sizeA = hA * wA * sizeof(float), sizeB = wA * wB * sizeof(float), sizeC = hA * wB * sizeof(float);
    float *h_A, *h_B, *h_C, *d_A, *d_B, *d_C;
    CHECK(cudaMallocHost(&h_A, sizeA));
    CHECK(cudaMallocHost(&h_B, sizeB));
    CHECK(cudaMallocHost(&h_C, sizeC));
    for (int i = 0; i < hA * wA; i++) h_A[i] = 1.0f;
    for (int i = 0; i < wA * wB; i++) h_B[i] = valB;
    CHECK(cudaMalloc(&d_A, sizeA));
    CHECK(cudaMalloc(&d_B, sizeB));
    CHECK(cudaMalloc(&d_C, sizeC));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaMemcpyAsync(d_A, h_A, sizeA, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(d_B, h_B, sizeB, cudaMemcpyHostToDevice, stream));
    dim3 threads(block_size, block_size), grid(wB / threads.x, hA / threads.y);
    if (block_size == 16) matrix_mul<16><<<grid, threads, 0, stream>>>(d_C, d_A, d_B, wA, wB);
    else matrix_mul<32><<<grid, threads, 0, stream>>>(d_C, d_A, d_B, wA, wB);
    CHECK(cudaStreamSynchronize(stream));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const int iterations = 3;
    CHECK(cudaEventRecord(start, stream));
    for (int j = 0; j < iterations; j++) {
        if (block_size == 16) matrix_mul<16><<<grid, threads, 0, stream>>>(d_C, d_A, d_B, wA, wB);
        else matrix_mul<32><<<grid, threads, 0, stream>>>(d_C, d_A, d_B, wA, wB);
    }
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float msec_total = 0;
    CHECK(cudaEventElapsedTime(&msec_total, start, stop));
    double gflops = 2.0 * hA * wA * wB * 1e-9 / (msec_total / iterations / 1000.0);
    CHECK(cudaMemcpyAsync(h_C, d_C, sizeC, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    bool correct = true;
    const double eps = 1.e-6;
    for (int i = 0; i < hA * wB; i++) {
        double rel_err = fabs(h_C[i] - wA * valB) / fabs((double)wA * valB);
        if (rel_err > eps) {
            printf("Error! Matrix[%05d]=%.8f, ref=%.8f error term is > %E\n", i, h_C[i], wA * valB, eps);
            correct = false;
        }
    }
    printf("block %d: MatrixA(%d,%d), MatrixB(%d,%d), C[0] = %.4f, performance measured: %s\n", block_size, wA, hA,
           wB, wA, h_C[0], gflops > 0 ? "yes" : "no");
    CHECK(cudaFreeHost(h_A));
    CHECK(cudaFreeHost(h_B));
    CHECK(cudaFreeHost(h_C));
    CHECK(cudaFree(d_A));
    CHECK(cudaFree(d_B));
    CHECK(cudaFree(d_C));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(stream));
    return correct && gflops > 0;
}

int main()
{
    int ok = run(16) && run(32);
    printf(ok ? "Result = PASS\n" : "Result = FAIL\n");
    return ok ? 0 : 1;
}

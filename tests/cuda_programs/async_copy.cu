// Asynchronous copies into shared memory as NVIDIA's globalToShmemAsyncCopy and simpleAWBarrier samples write them:
// cuda::memcpy_async completing on a cuda::barrier (cp.async + cp.async.mbarrier.arrive + mbarrier try_wait), and
// a two-stage cuda::pipeline (cp.async commit and wait groups) double-buffering the tiles of a row sum.
// nvcc flags: -arch=sm_90
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include "check.h"
namespace cg = cooperative_groups;

#define TILE 128

__global__ void reverse_tiles(const float *in, float *out)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> barrier;
    __shared__ float tile[TILE];
    cg::thread_block block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&barrier, block.size());
    block.sync();
    cuda::memcpy_async(block, tile, in + blockIdx.x * TILE, sizeof(float) * TILE, barrier);
    barrier.arrive_and_wait();
    out[blockIdx.x * TILE + threadIdx.x] = 2 * tile[TILE - 1 - threadIdx.x];
}

__global__ void row_sums(const float *in, float *sums, int tiles)
{
    __shared__ float stage[2][TILE];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    const float *row = in + blockIdx.x * tiles * TILE;
    float sum = 0;
    pipe.producer_acquire();
    cuda::memcpy_async(&stage[0][threadIdx.x], &row[threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    for (int t = 0; t < tiles; t++) {
        if (t + 1 < tiles) {
            pipe.producer_acquire();
            cuda::memcpy_async(&stage[(t + 1) % 2][threadIdx.x], &row[(t + 1) * TILE + threadIdx.x], sizeof(float),
                               pipe);
            pipe.producer_commit();
        }
        if (t + 1 < tiles) cuda::pipeline_consumer_wait_prior<1>(pipe);
        else cuda::pipeline_consumer_wait_prior<0>(pipe);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int k = 0; k < TILE; k++) sum += stage[t % 2][k];
        __syncthreads();
        pipe.consumer_release();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

int main()
{
    const int blocks = 3, tiles = 4, n = blocks * tiles * TILE;
    float *h = (float *)malloc(n * sizeof(float)), reversed[blocks * TILE], sums[blocks], *d_in, *d_out, *d_sums;
    for (int i = 0; i < n; i++) h[i] = (float)(i % 97) - 40.0f;
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_out, sizeof(reversed)));
    CHECK(cudaMalloc(&d_sums, sizeof(sums)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    reverse_tiles<<<blocks, TILE>>>(d_in, d_out);
    CHECK(cudaGetLastError());
    row_sums<<<blocks, TILE>>>(d_in, d_sums, tiles);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(reversed, d_out, sizeof(reversed), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sums, d_sums, sizeof(sums), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int b = 0; b < blocks; b++) {
        for (int t = 0; t < TILE; t++) wrong += reversed[b * TILE + t] != 2 * h[b * TILE + TILE - 1 - t];
        float want = 0;
        for (int k = 0; k < tiles * TILE; k++) want += h[b * tiles * TILE + k];
        wrong += sums[b] != want;
    }
    printf("reversed[0] = %g, row sums %g %g %g\n", reversed[0], sums[0], sums[1], sums[2]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

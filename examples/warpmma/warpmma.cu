// Tensor-core and asynchronous-barrier code written the way CUDA C++ programmers write it:
// nvcuda::wmma fragments (load, mma, store, element-wise scaling) and mbarrier arrive/wait
// through cuda::barrier, plus double-precision mma.sync from inline PTX.
#include <cuda/barrier>
#include <mma.h>
using namespace nvcuda;

// C = alpha * A (16x16, row-major half) * B (16x16, col-major half) + C, one warp per 16x16 tile.
__global__ void wmmaGemm(const half *a, const half *b, float *c, int tiles, float alpha)
{
    int tile = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (tile >= tiles) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a + tile * 256, 16);
    wmma::load_matrix_sync(fb, b + tile * 256, 16);
    wmma::load_matrix_sync(fc, c + tile * 256, 16, wmma::mem_row_major);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::mma_sync(acc, fa, fb, acc);
    for (int i = 0; i < acc.num_elements; i++) acc.x[i] = alpha * acc.x[i] + fc.x[i];
    wmma::store_matrix_sync(c + tile * 256, acc, 16, wmma::mem_row_major);
}

// 32x8x16 shape with a half accumulator, stored column-major.
__global__ void wmmaHalf(const half *a, const half *b, half *c)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> acc;
    wmma::fill_fragment(acc, __float2half(0.5f));
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 32, wmma::mem_col_major);
}

// Producer warps fill a shared stage, arrive on a barrier; consumer warps wait on it and reduce.
__global__ void barrierStages(const int *in, int *out, int stages)
{
    __shared__ int buffer[128];
    #pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> ready;
    if (threadIdx.x == 0) init(&ready, blockDim.x);
    __syncthreads();
    int total = 0;
    for (int s = 0; s < stages; s++) {
        if (threadIdx.x < 128) buffer[threadIdx.x] = in[s * 128 + threadIdx.x] * (s + 1);
        ready.arrive_and_wait();
        if (threadIdx.x >= 128) total += buffer[threadIdx.x - 128] + buffer[255 - threadIdx.x];
        ready.arrive_and_wait();
    }
    if (threadIdx.x >= 128) out[threadIdx.x - 128] = total;
}

// Double-precision tensor-core product m8n8k4 through inline PTX, one warp.
__global__ void mmaF64(const double *a, const double *b, double *d)
{
    int lane = threadIdx.x;
    int group = lane >> 2, tig = lane & 3;
    double fa = a[group * 4 + tig];
    double fb = b[tig * 8 + group];
    double c0 = 0.25, c1 = -0.5, d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%4, %5};"
                 : "=d"(d0), "=d"(d1) : "d"(fa), "d"(fb), "d"(c0), "d"(c1));
    d[group * 8 + tig * 2] = d0;
    d[group * 8 + tig * 2 + 1] = d1;
}

// Double-precision tensor cores (as NVIDIA's dmmaTensorCoreGemm uses them): wmma m8n8k4 f64 fragments, a 16x16
// product accumulated over k in steps of 4, one warp per 8x8 output tile, against the host's product.
// nvcc flags: -arch=sm_90
#include <cmath>
#include <mma.h>
#include "check.h"
using namespace nvcuda;

const int M = 16, N = 16, K = 12;

__global__ void dmma(const double *a, const double *b, double *c)
{
    int tile = threadIdx.x / 32, row = tile / (N / 8) * 8, col = tile % (N / 8) * 8;
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
    wmma::fill_fragment(acc, 1.0);
    for (int k = 0; k < K; k += 4) {
        wmma::load_matrix_sync(fa, a + row * K + k, K);
        wmma::load_matrix_sync(fb, b + k * N + col, N);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + row * N + col, acc, N, wmma::mem_row_major);
}

int main()
{
    double a[M * K], b[K * N], c[M * N], *d_a, *d_b, *d_c;
    for (int i = 0; i < M * K; i++) a[i] = (i % 13) * 0.25 - 1.5;
    for (int i = 0; i < K * N; i++) b[i] = 1.0 / ((i % 7) + 1);
    CHECK(cudaMalloc(&d_a, sizeof(a)));
    CHECK(cudaMalloc(&d_b, sizeof(b)));
    CHECK(cudaMalloc(&d_c, sizeof(c)));
    CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
    dmma<<<1, 32 * (M / 8) * (N / 8)>>>(d_a, d_b, d_c);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c, d_c, sizeof(c), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 1.0;
            for (int k = 0; k < K; k++) want += a[i * K + k] * b[k * N + j];
            wrong += fabs(c[i * N + j] - want) > 1e-12 * (1 + fabs(want));
        }
    printf("c[0][0] = %.6f, c[15][15] = %.6f\n", c[0], c[M * N - 1]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

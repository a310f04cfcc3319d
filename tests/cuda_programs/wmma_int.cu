// Integer tensor cores through mma.h: a 32x32 = (32x16 s8) x (16x32 u8 as s8) product in 16x16x16 tiles with s32
// accumulators, one warp per output tile, against the host's sums.
#include <mma.h>
#include "check.h"
using namespace nvcuda;

const int M = 32, N = 32, K = 32;

__global__ void imma(const signed char *a, const signed char *b, const int *c, int *d)
{
    int tile = blockIdx.x * blockDim.x / 32 + threadIdx.x / 32, row = tile / (N / 16) * 16, col = tile % (N / 16) * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
    wmma::load_matrix_sync(acc, c + row * N + col, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, a + row * K + k, K);
        wmma::load_matrix_sync(fb, b + col * K + k, K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(d + row * N + col, acc, N, wmma::mem_row_major);
}

int main()
{
    signed char h_a[M * K], h_b[N * K];
    int h_c[M * N], h_d[M * N];
    for (int i = 0; i < M * K; i++) h_a[i] = (signed char)((i * 37) % 256 - 128);
    for (int i = 0; i < N * K; i++) h_b[i] = (signed char)((i * 91 + 5) % 255 - 127);
    for (int i = 0; i < M * N; i++) h_c[i] = i * 1000 - 500000;
    signed char *d_a, *d_b;
    int *d_c, *d_d;
    CHECK(cudaMalloc(&d_a, sizeof(h_a)));
    CHECK(cudaMalloc(&d_b, sizeof(h_b)));
    CHECK(cudaMalloc(&d_c, sizeof(h_c)));
    CHECK(cudaMalloc(&d_d, sizeof(h_d)));
    CHECK(cudaMemcpy(d_a, h_a, sizeof(h_a), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, h_b, sizeof(h_b), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_c, h_c, sizeof(h_c), cudaMemcpyHostToDevice));
    imma<<<2, 64>>>(d_a, d_b, d_c, d_d);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_d, d_d, sizeof(h_d), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int want = h_c[i * N + j];
            for (int k = 0; k < K; k++) want += h_a[i * K + k] * h_b[j * K + k];
            wrong += h_d[i * N + j] != want;
        }
    printf("d[0][0] = %d, d[31][31] = %d\n", h_d[0], h_d[M * N - 1]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

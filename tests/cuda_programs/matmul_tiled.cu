// Matrix multiply with 16x16 shared-memory tiles, checked against the host.
#include "check.h"
#define TILE 16

__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int k = t * TILE + threadIdx.x;
        As[threadIdx.y][threadIdx.x] = (row < M && k < K) ? A[row * K + k] : 0.0f;
        k = t * TILE + threadIdx.y;
        Bs[threadIdx.y][threadIdx.x] = (k < K && col < N) ? B[k * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += As[threadIdx.y][i] * Bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

int main()
{
    const int M = 40, N = 36, K = 50;
    static float A[M * K], B[K * N], C[M * N];
    for (int i = 0; i < M * K; i++) A[i] = (i % 7) - 3;
    for (int i = 0; i < K * N; i++) B[i] = (i % 5) * 0.5f;
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, sizeof A)); CHECK(cudaMalloc(&dB, sizeof B)); CHECK(cudaMalloc(&dC, sizeof C));
    CHECK(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul<<<grid, block>>>(dA, dB, dC, M, N, K);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            float want = 0;
            for (int k = 0; k < K; k++) want += A[r * K + k] * B[k * N + c];
            if (want != C[r * N + c]) wrong++;
        }
    printf("C[0][0] = %.1f, C[39][35] = %.1f\n", C[0], C[M * N - 1]);
    printf(wrong ? "FAIL: %d wrong\n" : "PASS\n", wrong);
    return wrong != 0;
}

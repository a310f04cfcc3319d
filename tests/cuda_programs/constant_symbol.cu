// A polynomial with coefficients in __constant__ memory (cudaMemcpyToSymbol) and a __device__ counter read back
// with cudaMemcpyFromSymbol and through cudaGetSymbolAddress.
#include "check.h"

__constant__ float coefficients[4];
__device__ unsigned int evaluated;

__global__ void polynomial(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = ((coefficients[3] * v + coefficients[2]) * v + coefficients[1]) * v + coefficients[0];
        atomicAdd(&evaluated, 1u);
    }
}

int main()
{
    const int n = 300;
    float hx[n], hy[n], c[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    for (int i = 0; i < n; i++) hx[i] = (i - 150) / 50.0f;
    float *x, *y;
    CHECK(cudaMalloc(&x, sizeof hx)); CHECK(cudaMalloc(&y, sizeof hy));
    CHECK(cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyToSymbol(coefficients, c, sizeof c));
    unsigned int zero = 0, count = 0, through_address = 0;
    CHECK(cudaMemcpyToSymbol(evaluated, &zero, sizeof zero));
    polynomial<<<(n + 127) / 128, 128>>>(x, y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyFromSymbol(&count, evaluated, sizeof count));
    unsigned int *address;
    CHECK(cudaGetSymbolAddress((void **)&address, evaluated));
    CHECK(cudaMemcpy(&through_address, address, sizeof through_address, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        float v = hx[i], want = ((c[3] * v + c[2]) * v + c[1]) * v + c[0];
        if (fabsf(want - hy[i]) > 1e-5f * (1 + fabsf(want))) wrong++;
    }
    printf("y[0] = %.4f, evaluated %u times (%u through the symbol's address)\n", hy[0], count, through_address);
    wrong += count != n || through_address != n;
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

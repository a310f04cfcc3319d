// A template kernel with more than 48 KB of dynamic shared memory, opted in with cudaFuncSetAttribute (without, the
// H100 refuses the launch with cudaErrorInvalidValue).
#include "check.h"

template <typename T>
__global__ void reverse(T *data, int n)
{
    extern __shared__ unsigned char raw[];
    T *buffer = reinterpret_cast<T *>(raw);
    for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = data[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] = buffer[n - 1 - i];
}

int main()
{
    const int n = 16384;  // 64 KB of floats, 128 KB of doubles
    float *hf = (float *)malloc(n * sizeof(float));
    double *hd = (double *)malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) { hf[i] = i; hd[i] = -i; }
    float *df; double *dd;
    CHECK(cudaMalloc(&df, n * sizeof(float))); CHECK(cudaMalloc(&dd, n * sizeof(double)));
    CHECK(cudaMemcpy(df, hf, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dd, hd, n * sizeof(double), cudaMemcpyHostToDevice));
    reverse<float><<<1, 256, n * sizeof(float)>>>(df, n);
    cudaError_t refused = cudaGetLastError();
    CHECK(cudaFuncSetAttribute(reverse<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, n * sizeof(float)));
    CHECK(cudaFuncSetAttribute(reverse<double>, cudaFuncAttributeMaxDynamicSharedMemorySize, n * sizeof(double)));
    reverse<float><<<1, 256, n * sizeof(float)>>>(df, n);
    CHECK(cudaGetLastError());
    reverse<double><<<1, 256, n * sizeof(double)>>>(dd, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hf, df, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd, dd, n * sizeof(double), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += hf[i] != n - 1 - i || hd[i] != -(n - 1 - i);
    printf("without opting in: %s; after: hf[0] = %.0f, hd[0] = %.0f\n", cudaGetErrorName(refused), hf[0], hd[0]);
    wrong += refused != cudaErrorInvalidValue;
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

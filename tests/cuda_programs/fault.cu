// A kernel that writes past the end of its buffer: the launch returns cudaSuccess, the next synchronising call the
// sticky cudaErrorIllegalAddress, and every call after it too.
#include <cstdio>

__global__ void overrun(int *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i + n * 4096] = i;
}

int main()
{
    int *data;
    cudaMalloc(&data, 64 * sizeof(int));
    overrun<<<1, 64>>>(data, 64);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    cudaError_t after = cudaMemset(data, 0, 64 * sizeof(int));
    printf("launch: %s\n", cudaGetErrorName(launch));
    printf("synchronize: %s (%s)\n", cudaGetErrorName(sync), cudaGetErrorString(sync));
    printf("next call: %s\n", cudaGetErrorName(after));
    return sync == cudaErrorIllegalAddress ? 3 : 0;
}

// Device printf from a few threads, then a device-side assert that fails in one thread.
#include <cassert>
#include <cstdio>

__global__ void hello(int value)
{
    if (threadIdx.x < 3)
        printf("block %d thread %d says %d (%.2f)\n", blockIdx.x, threadIdx.x, value + threadIdx.x, value * 0.5);
}

__global__ void checked(const int *data)
{
    assert(data[threadIdx.x] >= 0);
}

int main()
{
    printf("host before the kernels\n");
    hello<<<2, 32>>>(40);
    cudaDeviceSynchronize();
    int h[32], *d;
    for (int i = 0; i < 32; i++) h[i] = i == 17 ? -1 : i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    checked<<<1, 32>>>(d);
    cudaError_t status = cudaDeviceSynchronize();
    printf("after the assert: %s\n", cudaGetErrorName(status));
    return status == cudaErrorAssert ? 0 : 1;
}

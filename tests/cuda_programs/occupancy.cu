// In the manner of NVIDIA's simpleOccupancy: the block size from cudaOccupancyMaxPotentialBlockSize, the blocks per
// multiprocessor from cudaOccupancyMaxActiveBlocksPerMultiprocessor, the theoretical occupancy they give, a launch
// with that configuration, and cudaFuncGetAttributes of the kernel.
#include "check.h"

__global__ void square(int *array, int count)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < count) array[i] *= array[i];
}

int main()
{
    const int count = 5000;
    int min_grid = 0, block_size = 0, active_blocks = 0, device = 0;
    cudaDeviceProp properties;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaGetDeviceProperties(&properties, device));
    CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block_size, square, 0, count));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active_blocks, square, block_size, 0));
    double occupancy = (double)(active_blocks * block_size / properties.warpSize) /
                       (properties.maxThreadsPerMultiProcessor / properties.warpSize);
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, square));
    printf("block size %d, minimum grid %d, %d blocks per SM, theoretical occupancy %.0f%%\n", block_size, min_grid,
           active_blocks, occupancy * 100);
    printf("attributes: max threads per block %d, registers %s, ptx version %d\n", attributes.maxThreadsPerBlock,
           attributes.numRegs > 0 ? "counted" : "none", attributes.ptxVersion);
    int *h = (int *)malloc(count * sizeof(int)), *d;
    for (int i = 0; i < count; i++) h[i] = i - 2500;
    CHECK(cudaMalloc(&d, count * sizeof(int)));
    CHECK(cudaMemcpy(d, h, count * sizeof(int), cudaMemcpyHostToDevice));
    square<<<(count + block_size - 1) / block_size, block_size>>>(d, count);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, d, count * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = block_size <= 0 || block_size > 1024 || block_size % 32 || active_blocks <= 0 || occupancy > 1.0;
    for (int i = 0; i < count; i++) wrong += h[i] != (i - 2500) * (i - 2500);
    printf(wrong ? "Test failed\n" : "Test PASSED\n");
    return wrong != 0;
}

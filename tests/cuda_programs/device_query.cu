// What a device-query program asks: properties, attributes, a kernel's attributes and its occupancy.
#include "check.h"

__global__ void work(float *x) { x[threadIdx.x] += 1.0f; }

int main()
{
    int count = 0, version = 0, runtime = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaDriverGetVersion(&version));
    CHECK(cudaRuntimeGetVersion(&runtime));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int clock = 0, sms = 0;
    CHECK(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, work));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, work, 256, 0));
    size_t free_bytes = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total));
    printf("devices: %d\n", count);
    printf("compute capability %d.%d, %d SMs (attribute %d), warp %d, max threads per block %d\n", prop.major,
           prop.minor, prop.multiProcessorCount, sms, prop.warpSize, prop.maxThreadsPerBlock);
    printf("shared memory per block %zu, opt-in %zu, per SM %zu\n", prop.sharedMemPerBlock,
           prop.sharedMemPerBlockOptin, prop.sharedMemPerMultiprocessor);
    printf("max grid %d x %d x %d, L2 %d bytes, managed memory %d, total memory matches: %s\n", prop.maxGridSize[0],
           prop.maxGridSize[1], prop.maxGridSize[2], prop.l2CacheSize, prop.managedMemory,
           total == prop.totalGlobalMem ? "yes" : "no");
    printf("work: max threads %d, blocks per SM at 256 threads: %d\n", attributes.maxThreadsPerBlock, blocks);
    printf("clock rate reported: %s, driver >= runtime: %s\n", clock > 0 ? "yes" : "no", version >= runtime ? "yes" : "no");
    int bad = cudaSetDevice(1) == cudaSuccess;
    printf("cudaSetDevice(1): %s\n", cudaGetErrorName(cudaGetLastError()));
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad;
}

// 256-bin byte histogram: each block counts into a shared-memory histogram with shared atomics,
// then adds its bins into the global histogram with global atomics. Launch with 256 threads
// per block.

#define BINS 256

__global__ void histogram(const unsigned char *buffer, int size, unsigned int *histo)
{
    __shared__ unsigned int temp[BINS];
    temp[threadIdx.x] = 0;
    __syncthreads();

    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&temp[buffer[i]], 1);
        i += stride;
    }
    __syncthreads();

    atomicAdd(&histo[threadIdx.x], temp[threadIdx.x]);
}

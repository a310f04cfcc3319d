// extern "C" byte histogram (no mangled name: SASS parameters are inferred from the constant bank). Listing:
// nvcc -cubin -arch=sm_90 -O3 histogram_extern_c.cu; cuobjdump -sass histogram_extern_c.cubin > histogram_extern_c.sm_90.sass
#define BINS 256
extern "C" __global__ void histogram(const unsigned char *buffer, int size, unsigned int *histo)
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

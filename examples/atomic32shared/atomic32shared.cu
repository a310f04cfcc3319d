// Shared-memory atomics, listing 8-1 (atomic32Shared.cu) of The CUDA Handbook, section 8.1.5
// (cuda-handbook-8.1-memory.zh.txt). Launch with blockDim.x * sizeof(int) bytes of dynamic
// shared memory. sum is unused, as in the book.

__global__ void Return32(int *sum, int *out, const int *pIn)
{
    extern __shared__ int s[];
    s[threadIdx.x] = pIn[threadIdx.x];
    __syncthreads();
    (void) atomicAdd(&s[threadIdx.x], *pIn);
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

// Every thread adds into s[0]: all lanes of a warp contend for one word.
__global__ void Return32One(int *sum, int *out, const int *pIn)
{
    extern __shared__ int s[];
    s[threadIdx.x] = pIn[threadIdx.x];
    __syncthreads();
    (void) atomicAdd(&s[0], *pIn);
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

// Kernels that fault on the GPU; each launch stops with a CUDA error instead of completing.

// The example from "CUDA中的存储空间修饰符" (memory-space-specifiers.zh.txt) that does not work:
// array1 starts 254 bytes into dynamic shared memory, so its floats are not 4-byte aligned.
// Launch with 512 bytes of dynamic shared memory.
__global__ void misalignedShared(float *out)
{
    extern __shared__ float array[];
    short *array0 = (short *)array;
    float *array1 = (float *)&array0[127];
    array0[threadIdx.x] = threadIdx.x;
    array1[threadIdx.x] = 2.0f * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = array1[(threadIdx.x + 1) % blockDim.x] + array0[threadIdx.x];
}

// Writes offset ints past the start of buf, far beyond its end when offset is large.
__global__ void outOfBoundsWrite(int *buf, int offset)
{
    buf[offset + threadIdx.x] = threadIdx.x;
}

// Launch with p = 0.
__global__ void nullRead(const int *p, int *out)
{
    out[threadIdx.x] = p[threadIdx.x];
}

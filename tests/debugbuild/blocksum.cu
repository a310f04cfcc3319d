// A small kernel for the source-level debugger tests: arguments, locals, a struct read through a pointer, two
// function-scope __shared__ arrays (one 2-D), an inlined helper, a .func call and atomicAdd. Built with
// `nvcc -G` (DWARF variables) and `nvcc -lineinfo -O3` (inlined_at chains) into the .ptx files beside it.
struct Point { float x; int y; };

__device__ __forceinline__ float square(float v)
{
    float r = v * v;
    return r;
}

__device__ __noinline__ float scaled(const Point *p, float k)
{
    return p->x * k + p->y;
}

__global__ void blocksum(const float *in, float *out, const Point *pts, int n)
{
    __shared__ float s[64];
    __shared__ float tile[8][8];
    int tx = threadIdx.x % 8;
    int ty = threadIdx.x / 8;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    float sum = square(v);
    const Point *p = &pts[threadIdx.x % 4];
    sum += scaled(p, 2.0f);
    s[threadIdx.x] = sum;
    tile[ty][tx] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int k = 0; k < 64; ++k)
            total += s[k] + tile[k / 8][k % 8];
        atomicAdd(out, total);
    }
}

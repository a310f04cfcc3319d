// CUDA math-library functions as nvcc inlines them (libdevice): sinf, expf, logf, powf, sqrtf,
// erff, tanhf, double sin/exp/log/pow, integer hashing and a warp-shuffle scan — ordinary kernels
// whose PTX is long chains of fma, ex2.approx, lg2.approx, rcp and integer ops.
#include <cstdint>

__global__ void floatMath(const float *x, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[8 * i + 0] = sinf(v);
    out[8 * i + 1] = cosf(v);
    out[8 * i + 2] = expf(v * 0.25f);
    out[8 * i + 3] = logf(fabsf(v) + 1e-3f);
    out[8 * i + 4] = powf(fabsf(v), 1.7f);
    out[8 * i + 5] = sqrtf(fabsf(v));
    out[8 * i + 6] = erff(v * 0.5f);
    out[8 * i + 7] = tanhf(v);
}

__global__ void fastMath(const float *x, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[4 * i + 0] = __sinf(v);
    out[4 * i + 1] = __expf(v * 0.25f);
    out[4 * i + 2] = __logf(fabsf(v) + 1e-3f);
    out[4 * i + 3] = __fdividef(v, 3.0f + fabsf(v));
}

__global__ void doubleMath(const double *x, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    out[5 * i + 0] = sin(v);
    out[5 * i + 1] = exp(v * 0.25);
    out[5 * i + 2] = log(fabs(v) + 1e-3);
    out[5 * i + 3] = pow(fabs(v), 1.7);
    out[5 * i + 4] = sqrt(fabs(v)) / (1.0 + v * v);
}

__device__ uint32_t hash32(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

__global__ void intMix(const uint32_t *seed, uint32_t *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t h = hash32(seed[i] + i);
    uint64_t wide = (uint64_t)h * 0x9E3779B97F4A7C15ULL;
    out[4 * i + 0] = h;
    out[4 * i + 1] = (uint32_t)(wide >> 29) ^ __brev(h);
    out[4 * i + 2] = (h % 97u) + (h / 1000003u) + __popc(h) * __clz(h | 1);
    out[4 * i + 3] = (uint32_t)((int32_t)h >> 7) + (uint32_t)(((int64_t)(int32_t)h * -7) >> 13);
}

__global__ void warpScan(const int *in, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int lane = threadIdx.x & 31;
    for (int offset = 1; offset < 32; offset <<= 1) {
        int t = __shfl_up_sync(0xffffffff, v, offset);
        if (lane >= offset) v += t;
    }
    __shared__ int warpTotals[32];
    if (lane == 31) warpTotals[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        int w = threadIdx.x < (blockDim.x >> 5) ? warpTotals[threadIdx.x] : 0;
        for (int offset = 1; offset < 32; offset <<= 1) {
            int t = __shfl_up_sync(0xffffffff, w, offset);
            if (lane >= offset) w += t;
        }
        warpTotals[threadIdx.x] = w;
    }
    __syncthreads();
    if (threadIdx.x >= 32) v += warpTotals[(threadIdx.x >> 5) - 1];
    out[i] = v;
}

__global__ void bitonicSort(int *data)
{
    extern __shared__ int s[];
    unsigned t = threadIdx.x;
    s[t] = data[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned partner = t ^ j;
            if (partner > t) {
                bool ascending = (t & k) == 0;
                int a = s[t], b = s[partner];
                if ((a > b) == ascending) { s[t] = b; s[partner] = a; }
            }
            __syncthreads();
        }
    }
    data[blockIdx.x * blockDim.x + t] = s[t];
}

__global__ void stencil2d(const float *in, float *out, int width, int height)
{
    __shared__ float tile[18][18];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
    auto at = [&](int xx, int yy) { xx = min(max(xx, 0), width - 1); yy = min(max(yy, 0), height - 1); return in[yy * width + xx]; };
    tile[ly][lx] = at(x, y);
    if (threadIdx.x == 0) tile[ly][0] = at(x - 1, y);
    if (threadIdx.x == 15) tile[ly][17] = at(x + 1, y);
    if (threadIdx.y == 0) tile[0][lx] = at(x, y - 1);
    if (threadIdx.y == 15) tile[17][lx] = at(x, y + 1);
    __syncthreads();
    out[y * width + x] = 0.5f * tile[ly][lx] + 0.125f * (tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx]);
}

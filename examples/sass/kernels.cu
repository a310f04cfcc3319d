// Kernels that are not elsewhere in examples/, for checking gpuemu's SASS path on cuobjdump output:
// compiled with nvcc 13 to sm_90 and sm_75 cubins and dumped with cuobjdump -sass (make_listings.sh).
// tests/test_sass.py runs the dumps and compares with numpy references of these exact computations.

#include <cuda_fp16.h>

#define FULL 0xffffffffu

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// Warp-shuffle sum, one shared atomic per warp, one global atomic per block.
__global__ void reduceShfl(const int *in, int *out, int n)
{
    __shared__ int blockSum;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) blockSum = 0;
    __syncthreads();
    int v = i < n ? in[i] : 0;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL, v, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(&blockSum, v);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, blockSum);
}

// The SDK's coalesced transpose: 32x32 tiles padded to 33 columns, 32x8 threads per block.
__global__ void transposeCoalesced(float *odata, const float *idata, int width, int height)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Hillis-Steele inclusive scan of one block (blockDim.x <= 256) with a double buffer.
__global__ void scanBlock(const int *in, int *out)
{
    __shared__ int buffer[2][256];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    int current = 0;
    buffer[0][t] = in[base + t];
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        int value = buffer[current][t];
        if (t >= offset) value += buffer[current][t - offset];
        buffer[1 - current][t] = value;
        current = 1 - current;
        __syncthreads();
    }
    out[base + t] = buffer[current][t];
}

// 64 bins of unsigned short samples: shared atomics, then one global atomic per bin and block.
__global__ void histogram64(const unsigned short *samples, unsigned int *bins, int n)
{
    __shared__ unsigned int local[64];
    if (threadIdx.x < 64) local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[(samples[i] * 7u) % 64u], 1u);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// Radius-3 stencil with a shared halo; blockDim.x == 128.
__global__ void stencil1d(const int *in, int *out, int n)
{
    __shared__ int window[128 + 6];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + 3;
    window[l] = g < n ? in[g] : 0;
    if (threadIdx.x < 3) {
        window[l - 3] = g >= 3 && g - 3 < n ? in[g - 3] : 0;
        window[l + 128] = g + 128 < n ? in[g + 128] : 0;
    }
    __syncthreads();
    int sum = 0;
    for (int k = -3; k <= 3; ++k) sum += (k + 4) * window[l + k];
    if (g < n) out[g] = sum;
}

// Integer division, remainders, min/max/abs, shifts and bit intrinsics.
__global__ void intMath(const int *a, const int *b, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    unsigned int ux = (unsigned int)x, uy = (unsigned int)y | 1u;
    int *o = out + 12 * i;
    o[0] = y != 0 ? x / y : -1;
    o[1] = y != 0 ? x % y : -1;
    o[2] = (int)(ux / uy);
    o[3] = (int)(ux % uy);
    o[4] = min(x, y) + max(x, y) * 3;
    o[5] = abs(x) ^ (x >> 3);
    o[6] = (int)(ux >> (y & 31)) + (x << (y & 15));
    o[7] = __popc(ux) + 100 * __clz(x);
    o[8] = (int)__brev(ux);
    o[9] = __ffs(x);
    o[10] = __mulhi(x, y);
    o[11] = (int)__umulhi(ux, uy);
}

// IEEE-exact float work: division, square root, rounding, min/max, fma, conversions.
__global__ void floatMath(const float *x, const float *y, float *out, int *iout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float *o = out + 8 * i;
    o[0] = a / b;
    o[1] = sqrtf(fabsf(a));
    o[2] = fminf(a, b) - fmaxf(a, b);
    o[3] = fmaf(a, b, -a);
    o[4] = floorf(a) + ceilf(b) * 0.5f;
    o[5] = truncf(a) - rintf(b);
    o[6] = copysignf(a * a, b);
    o[7] = (float)(int)b + (float)(unsigned int)(a > 0.0f ? a : 0.0f);
    iout[2 * i] = __float2int_rn(a * 3.0f);
    iout[2 * i + 1] = (int)(a * 1000.0f);
}

__global__ void doubleMath(const double *x, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    out[3 * i] = v * v + 1.0 / v;
    out[3 * i + 1] = sqrt(fabs(v));
    out[3 * i + 2] = fma(v, 3.0, -1.5) + (double)(float)v;
}

// Votes, ballots and barrier counts.
__global__ void votes(const int *in, unsigned int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int positive = in[i] > 0;
    unsigned int ballot = __ballot_sync(FULL, positive);
    int count = __syncthreads_count(positive);
    int any = __any_sync(FULL, in[i] > 100);
    int all = __all_sync(FULL, in[i] > -1000);
    out[4 * i] = ballot;
    out[4 * i + 1] = __popc(ballot) + 1000 * count;
    out[4 * i + 2] = any * 2 + all;
    out[4 * i + 3] = __syncthreads_or(in[i] == 7) + 2 * __syncthreads_and(in[i] != 0);
}

// Global atomics of several kinds, and a CAS loop.
__global__ void atomicsMix(const int *in, int *cells, unsigned int *counter)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    atomicMax(&cells[0], v);
    atomicMin(&cells[1], v);
    atomicAnd(&cells[2], ~(1 << (i & 31)));
    atomicOr(&cells[3], 1 << (v & 31));
    atomicXor(&cells[4], v);
    atomicInc(counter, 1000u);
    int old = cells[5], assumed;
    do {
        assumed = old;
        old = atomicCAS(&cells[5], assumed, assumed + (v & 7));
    } while (old != assumed);
}

// 64-bit integer arithmetic, including division (a call to a runtime subroutine).
__global__ void wideMath(const long long *a, const long long *b, long long *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long x = a[i], y = b[i];
    unsigned long long ux = (unsigned long long)x;
    out[6 * i] = x * y + (x >> 5);
    out[6 * i + 1] = y != 0 ? x / y : 0;
    out[6 * i + 2] = y != 0 ? x % y : 0;
    out[6 * i + 3] = (long long)(ux >> (y & 63)) ^ (x << 7);
    out[6 * i + 4] = x < y ? x : y;
    out[6 * i + 5] = (long long)(ux * 0x9E3779B97F4A7C15ull);
}

// float4 loads and stores, a 2-D grid.
__global__ void scale2d(const float4 *in, float4 *out, int width, float s)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    float4 v = in[y * width + x];
    out[y * width + x] = make_float4(v.x * s, v.y + s, v.z - s, v.w * v.x);
}

// Half-precision conversions and arithmetic.
__global__ void halves(const float *in, float *out, unsigned short *bits, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half h = __float2half(in[i]);
    __half g = __hadd(h, __float2half(1.5f));
    bits[i] = __half_as_ushort(g);
    out[i] = __half2float(h) * 2.0f;
}

// Dynamic shared memory as bytes and shorts, with a loop whose trip count comes from a parameter.
__global__ void bytesAndShorts(const unsigned char *in, unsigned short *out, int rounds)
{
    extern __shared__ unsigned char raw[];
    unsigned short *words = (unsigned short *)(raw + 256);
    int t = threadIdx.x;
    raw[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    unsigned short acc = 0;
    for (int r = 0; r < rounds; ++r)
        acc = (unsigned short)(acc * 31 + raw[(t + r) & 255]);
    words[t] = acc;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = words[255 - t];
}

// A switch and early exits in divergent code.
__global__ void branches(const int *in, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int r;
    switch (v & 3) {
    case 0: r = v * 2; break;
    case 1: r = v - 7; break;
    case 2: r = v ^ 0x55; break;
    default: r = -v; break;
    }
    if (v < -50) return;
    while (r > 1000) r -= 999;
    out[i] = r;
}

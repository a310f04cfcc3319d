// Kernels of the kinds NVIDIA's CUDA samples teach: the reduction ladder, a threadfence reduction, transposes,
// a tiled matrix multiply, histograms, scans, sorting networks, a merge sort, a separable convolution, the fast
// Walsh transform, Black-Scholes and an n-body step. Written for gpuemu's corpus; small sizes.
#include <cuda_runtime.h>
#include <math.h>

// ---- reductions ------------------------------------------------------------------------------------------

// interleaved addressing with a modulo test (divergent warps)
template <class T>
__global__ void reduce_interleaved(const T* in, T* out, unsigned n) {
    extern __shared__ unsigned char raw[];
    T* data = reinterpret_cast<T*>(raw);
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    data[tid] = i < n ? in[i] : T(0);
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) data[tid] += data[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = data[0];
}

// interleaved addressing with a strided index (shared-memory bank conflicts)
template <class T>
__global__ void reduce_strided(const T* in, T* out, unsigned n) {
    extern __shared__ unsigned char raw[];
    T* data = reinterpret_cast<T*>(raw);
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    data[tid] = i < n ? in[i] : T(0);
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        unsigned index = 2 * s * tid;
        if (index < blockDim.x) data[index] += data[index + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = data[0];
}

// sequential addressing, the first add during the load
template <class T>
__global__ void reduce_first_add(const T* in, T* out, unsigned n) {
    extern __shared__ unsigned char raw[];
    T* data = reinterpret_cast<T*>(raw);
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    T sum = i < n ? in[i] : T(0);
    if (i + blockDim.x < n) sum += in[i + blockDim.x];
    data[tid] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) data[tid] = sum = sum + data[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

// the last warp unrolled with shuffles
template <class T>
__global__ void reduce_warp_unrolled(const T* in, T* out, unsigned n) {
    extern __shared__ unsigned char raw[];
    T* data = reinterpret_cast<T*>(raw);
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    T sum = i < n ? in[i] : T(0);
    if (i + blockDim.x < n) sum += in[i + blockDim.x];
    data[tid] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) data[tid] = sum = sum + data[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        if (blockDim.x >= 64) sum += data[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

// block size known at compile time, every loop unrolled; several elements per thread (grid-stride)
template <class T, unsigned BLOCK, bool POW2>
__global__ void reduce_complete(const T* in, T* out, unsigned n) {
    __shared__ T data[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned grid = BLOCK * 2 * gridDim.x;
    T sum = T(0);
    unsigned i = blockIdx.x * BLOCK * 2 + threadIdx.x;
    while (i < n) {
        sum += in[i];
        if (POW2 || i + BLOCK < n) sum += in[i + BLOCK];
        i += grid;
    }
    data[tid] = sum;
    __syncthreads();
    if (BLOCK >= 512 && tid < 256) data[tid] = sum = sum + data[tid + 256];
    __syncthreads();
    if (BLOCK >= 256 && tid < 128) data[tid] = sum = sum + data[tid + 128];
    __syncthreads();
    if (BLOCK >= 128 && tid < 64) data[tid] = sum = sum + data[tid + 64];
    __syncthreads();
    if (tid < 32) {
        if (BLOCK >= 64) sum += data[tid + 32];
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

template __global__ void reduce_interleaved<int>(const int*, int*, unsigned);
template __global__ void reduce_interleaved<float>(const float*, float*, unsigned);
template __global__ void reduce_strided<float>(const float*, float*, unsigned);
template __global__ void reduce_first_add<float>(const float*, float*, unsigned);
template __global__ void reduce_warp_unrolled<float>(const float*, float*, unsigned);
template __global__ void reduce_warp_unrolled<double>(const double*, double*, unsigned);
template __global__ void reduce_complete<float, 128, true>(const float*, float*, unsigned);
template __global__ void reduce_complete<int, 256, false>(const int*, int*, unsigned);

// every block reduces its part; the last block to finish (counted with atomicInc after a fence) adds the parts
__device__ unsigned retired_blocks = 0;

__global__ void reduce_threadfence(const float* in, float* partial, float* total, unsigned n) {
    __shared__ float data[128];
    __shared__ bool last;
    unsigned tid = threadIdx.x;
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) sum += in[i];
    data[tid] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) data[tid] += data[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = data[0];
        __threadfence();
        unsigned ticket = atomicInc(&retired_blocks, gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        float s = 0.0f;
        for (unsigned i = tid; i < gridDim.x; i += blockDim.x) s += ((volatile float*)partial)[i];
        data[tid] = s;
        __syncthreads();
        for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (tid < stride) data[tid] += data[tid + stride];
            __syncthreads();
        }
        if (tid == 0) {
            total[0] = data[0];
            retired_blocks = 0;
        }
    }
}

// ---- transposes (32×32 tiles, 32×8 threads) ---------------------------------------------------------------

#define TILE 32
#define ROWS 8

__global__ void transpose_naive(float* out, const float* in, int width, int height) {
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[x * height + y + j] = in[(y + j) * width + x];
}

__global__ void transpose_coalesced(float* out, const float* in, int width, int height) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_padded_diagonal(float* out, const float* in, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int bx, by;
    if (width == height) {
        by = blockIdx.x;
        bx = (blockIdx.x + blockIdx.y) % gridDim.x;
    } else {
        int linear = blockIdx.x + gridDim.x * blockIdx.y;
        by = linear % gridDim.y;
        bx = ((linear / gridDim.y) + by) % gridDim.x;
    }
    int x = bx * TILE + threadIdx.x, y = by * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = by * TILE + threadIdx.x;
    y = bx * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// ---- matrix multiply: C = A·B with 16×16 tiles in shared memory ---------------------------------------------

template <int BLOCK>
__global__ void matrix_mul(float* C, const float* A, const float* B, int wA, int wB) {
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK];
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK * by, aEnd = aBegin + wA - 1, bBegin = BLOCK * bx;
    float c = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += BLOCK, b += BLOCK * wB) {
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k) c += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[wB * BLOCK * by + BLOCK * bx + wB * ty + tx] = c;
}

template __global__ void matrix_mul<16>(float*, const float*, const float*, int, int);

// ---- histograms ---------------------------------------------------------------------------------------------

// the plain byte histogram: shared atomics, then global atomics
__global__ void histogram(const unsigned char* data, int size, unsigned* bins) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}

// one sub-histogram per warp, 4 bytes per load, merged into a per-block histogram (no global atomics)
#define WARPS_PER_BLOCK 4
__global__ void histogram256_per_warp(unsigned* block_bins, const unsigned* data, int words) {
    __shared__ unsigned sub[WARPS_PER_BLOCK][256];
    unsigned* mine = sub[threadIdx.x / 32];
    for (int b = threadIdx.x; b < WARPS_PER_BLOCK * 256; b += blockDim.x) (&sub[0][0])[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += blockDim.x * gridDim.x) {
        unsigned word = data[i];
        atomicAdd(&mine[word & 0xff], 1u);
        atomicAdd(&mine[(word >> 8) & 0xff], 1u);
        atomicAdd(&mine[(word >> 16) & 0xff], 1u);
        atomicAdd(&mine[word >> 24], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned sum = 0;
        for (int w = 0; w < WARPS_PER_BLOCK; ++w) sum += sub[w][b];
        block_bins[blockIdx.x * 256 + b] = sum;
    }
}

// 64 bins of the top six bits; per-thread byte counters in shared memory, flushed before they can overflow
__global__ void histogram64_byte_counters(unsigned* block_bins, const unsigned char* data, int size) {
    extern __shared__ unsigned char counters[];  // [64][blockDim.x]
    for (int b = 0; b < 64; ++b) counters[b * blockDim.x + threadIdx.x] = 0;
    __syncthreads();
    int per_thread = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x) {
        counters[(data[i] >> 2) * blockDim.x + threadIdx.x]++;
        ++per_thread;
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x) {
        unsigned sum = 0;
        for (int t = 0; t < blockDim.x; ++t) sum += counters[b * blockDim.x + ((t + b) % blockDim.x)];
        block_bins[blockIdx.x * 64 + b] = sum;
    }
}

// ---- scans ----------------------------------------------------------------------------------------------------

#define BANKS_LOG 5
#define PAD(i) ((i) >> BANKS_LOG)

// work-efficient exclusive scan of 2·blockDim elements per block (up-sweep, down-sweep), padded against conflicts
__global__ void scan_blelloch(float* out, float* block_sums, const float* in) {
    extern __shared__ float tree[];
    int tid = threadIdx.x, n = 2 * blockDim.x;
    const float* x = in + blockIdx.x * n;
    int ai = tid, bi = tid + n / 2;
    tree[ai + PAD(ai)] = x[ai];
    tree[bi + PAD(bi)] = x[bi];
    int offset = 1;
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            tree[b + PAD(b)] += tree[a + PAD(a)];
        }
        offset *= 2;
    }
    if (tid == 0) {
        block_sums[blockIdx.x] = tree[n - 1 + PAD(n - 1)];
        tree[n - 1 + PAD(n - 1)] = 0.0f;
    }
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            float t = tree[a + PAD(a)];
            tree[a + PAD(a)] = tree[b + PAD(b)];
            tree[b + PAD(b)] += t;
        }
    }
    __syncthreads();
    out[blockIdx.x * n + ai] = tree[ai + PAD(ai)];
    out[blockIdx.x * n + bi] = tree[bi + PAD(bi)];
}

// inclusive scan: shuffles within each warp, the warp totals scanned by the first warp
template <class T>
__global__ void scan_warp_shuffle(T* out, const T* in, int n) {
    __shared__ T warp_totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    T value = i < n ? in[i] : T(0);
    for (int offset = 1; offset < 32; offset *= 2) {
        T up = __shfl_up_sync(0xffffffffu, value, offset);
        if (lane >= offset) value += up;
    }
    if (lane == 31) warp_totals[warp] = value;
    __syncthreads();
    if (warp == 0) {
        T total = lane < blockDim.x / 32 ? warp_totals[lane] : T(0);
        for (int offset = 1; offset < 32; offset *= 2) {
            T up = __shfl_up_sync(0xffffffffu, total, offset);
            if (lane >= offset) total += up;
        }
        warp_totals[lane] = total;
    }
    __syncthreads();
    if (warp > 0) value += warp_totals[warp - 1];
    if (i < n) out[i] = value;
}

template __global__ void scan_warp_shuffle<int>(int*, const int*, int);
template __global__ void scan_warp_shuffle<float>(float*, const float*, int);

// ---- sorting networks ----------------------------------------------------------------------------------------

static __device__ __forceinline__ void compare_swap(unsigned& key_a, unsigned& val_a, unsigned& key_b,
                                                    unsigned& val_b, bool ascending) {
    if ((key_a > key_b) == ascending) {
        unsigned t = key_a; key_a = key_b; key_b = t;
        t = val_a; val_a = val_b; val_b = t;
    }
}

// bitonic sort of 2·blockDim key-value pairs per block in shared memory
__global__ void bitonic_sort(unsigned* keys_out, unsigned* vals_out, const unsigned* keys_in, const unsigned* vals_in,
                             int ascending) {
    extern __shared__ unsigned shared[];
    int n = 2 * blockDim.x;
    unsigned* keys = shared;
    unsigned* vals = shared + n;
    int base = blockIdx.x * n, tid = threadIdx.x;
    keys[tid] = keys_in[base + tid];
    vals[tid] = vals_in[base + tid];
    keys[tid + n / 2] = keys_in[base + tid + n / 2];
    vals[tid + n / 2] = vals_in[base + tid + n / 2];
    for (int size = 2; size < n; size <<= 1) {
        bool direction = ascending ^ ((tid & (size / 2)) != 0);
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            int pos = 2 * tid - (tid & (stride - 1));
            compare_swap(keys[pos], vals[pos], keys[pos + stride], vals[pos + stride], direction);
        }
    }
    for (int stride = n / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        int pos = 2 * tid - (tid & (stride - 1));
        compare_swap(keys[pos], vals[pos], keys[pos + stride], vals[pos + stride], ascending);
    }
    __syncthreads();
    keys_out[base + tid] = keys[tid];
    vals_out[base + tid] = vals[tid];
    keys_out[base + tid + n / 2] = keys[tid + n / 2];
    vals_out[base + tid + n / 2] = vals[tid + n / 2];
}

// Batcher's odd-even merge sort of 2·blockDim keys per block
__global__ void odd_even_merge_sort(unsigned* keys_out, const unsigned* keys_in) {
    extern __shared__ unsigned keys[];
    int n = 2 * blockDim.x, base = blockIdx.x * n, tid = threadIdx.x;
    keys[tid] = keys_in[base + tid];
    keys[tid + n / 2] = keys_in[base + tid + n / 2];
    for (int size = 2; size <= n; size <<= 1) {
        int stride = size / 2;
        int offset = tid & (stride - 1);
        {
            __syncthreads();
            int pos = 2 * tid - offset;
            unsigned a = keys[pos], b = keys[pos + stride];
            if (a > b) { keys[pos] = b; keys[pos + stride] = a; }
        }
        for (stride >>= 1; stride > 0; stride >>= 1) {
            __syncthreads();
            int pos = 2 * tid - (tid & (stride - 1));
            if (offset >= stride) {
                unsigned a = keys[pos - stride], b = keys[pos];
                if (a > b) { keys[pos - stride] = b; keys[pos] = a; }
            }
        }
    }
    __syncthreads();
    keys_out[base + tid] = keys[tid];
    keys_out[base + tid + n / 2] = keys[tid + n / 2];
}

// ---- merge sort: runs merged by each element's rank in the other run (stable) -----------------------------

static __device__ int rank_in(const unsigned* run, int length, unsigned key, bool inclusive) {
    int low = 0, high = length;
    while (low < high) {
        int mid = (low + high) / 2;
        bool before = inclusive ? run[mid] <= key : run[mid] < key;
        if (before) low = mid + 1; else high = mid;
    }
    return low;
}

// sorts blockDim keys per block: bottom-up, every merge by ranks
__global__ void merge_sort_block(unsigned* keys_out, unsigned* vals_out, const unsigned* keys_in) {
    extern __shared__ unsigned buffers[];
    unsigned* keys = buffers;
    unsigned* vals = buffers + blockDim.x;
    unsigned* next_keys = buffers + 2 * blockDim.x;
    unsigned* next_vals = buffers + 3 * blockDim.x;
    int tid = threadIdx.x, base = blockIdx.x * blockDim.x;
    keys[tid] = keys_in[base + tid];
    vals[tid] = base + tid;
    for (int width = 1; width < blockDim.x; width *= 2) {
        __syncthreads();
        int pair = tid / (2 * width), start = pair * 2 * width;
        bool left = tid - start < width;
        int own = left ? tid - start : tid - start - width;
        const unsigned* other = keys + (left ? start + width : start);
        int rank = rank_in(other, width, keys[tid], !left);
        int target = start + own + rank;
        next_keys[target] = keys[tid];
        next_vals[target] = vals[tid];
        __syncthreads();
        keys[tid] = next_keys[tid];
        vals[tid] = next_vals[tid];
    }
    __syncthreads();
    keys_out[base + tid] = keys[tid];
    vals_out[base + tid] = vals[tid];
}

// one global merge pass: pairs of sorted runs of `width` keys into runs of 2·width
__global__ void merge_pass(unsigned* out, const unsigned* in, int width, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int start = i / (2 * width) * 2 * width;
    bool left = i - start < width;
    int own = left ? i - start : i - start - width;
    int other_start = left ? start + width : start;
    int other_length = min(width, max(0, n - other_start));
    int rank = rank_in(in + other_start, other_length, in[i], !left);
    out[start + own + rank] = in[i];
}

// ---- separable convolution (radius 8, coefficients in constant memory) ------------------------------------------

#define RADIUS 8
__constant__ float c_kernel[2 * RADIUS + 1];

// rows: 16×4 threads, each loads its pixel and the halo on both sides
__global__ void convolution_rows(float* out, const float* in, int width, int height) {
    __shared__ float tile[4][16 * 3];
    int x0 = blockIdx.x * 16, y = blockIdx.y * 4 + threadIdx.y;
    for (int k = threadIdx.x; k < 48; k += 16) {
        int x = x0 - 16 + k;
        tile[threadIdx.y][k] = x >= 0 && x < width ? in[y * width + x] : 0.0f;
    }
    __syncthreads();
    float sum = 0.0f;
#pragma unroll
    for (int j = -RADIUS; j <= RADIUS; ++j) sum += c_kernel[RADIUS - j] * tile[threadIdx.y][16 + threadIdx.x + j];
    out[y * width + x0 + threadIdx.x] = sum;
}

// columns: 16×16 threads, a 16-row halo above and below
__global__ void convolution_columns(float* out, const float* in, int width, int height) {
    __shared__ float tile[48][17];
    int x = blockIdx.x * 16 + threadIdx.x, y0 = blockIdx.y * 16;
    for (int k = threadIdx.y; k < 48; k += 16) {
        int y = y0 - 16 + k;
        tile[k][threadIdx.x] = y >= 0 && y < height ? in[y * width + x] : 0.0f;
    }
    __syncthreads();
    float sum = 0.0f;
#pragma unroll
    for (int j = -RADIUS; j <= RADIUS; ++j) sum += c_kernel[RADIUS - j] * tile[16 + threadIdx.y + j][threadIdx.x];
    out[(y0 + threadIdx.y) * width + x] = sum;
}

// ---- fast Walsh-Hadamard transform ---------------------------------------------------------------------------

// 2·blockDim points per block, radix-2 butterflies in shared memory
__global__ void fwt_shared(float* data, int log2n) {
    extern __shared__ float s[];
    int n = 1 << log2n, base = blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = data[base + i];
    for (int stride = n / 2; stride >= 1; stride >>= 1) {
        __syncthreads();
        for (int pair = threadIdx.x; pair < n / 2; pair += blockDim.x) {
            int lo = (pair / stride) * 2 * stride + pair % stride, hi = lo + stride;
            float a = s[lo], b = s[hi];
            s[lo] = a + b;
            s[hi] = a - b;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) data[base + i] = s[i];
}

// one radix-4 step in global memory (two strides at once), as a large transform's outer passes do
__global__ void fwt_radix4_step(float* data, int stride) {
    int pos = blockIdx.x * blockDim.x + threadIdx.x;
    int lo = (pos / stride) * 4 * stride + pos % stride;
    float d0 = data[lo], d1 = data[lo + stride], d2 = data[lo + 2 * stride], d3 = data[lo + 3 * stride];
    float t = d0; d0 = d0 + d2; d2 = t - d2;
    t = d1; d1 = d1 + d3; d3 = t - d3;
    t = d0; d0 = d0 + d1; d1 = t - d1;
    t = d2; d2 = d2 + d3; d3 = t - d3;
    data[lo] = d0; data[lo + stride] = d1; data[lo + 2 * stride] = d2; data[lo + 3 * stride] = d3;
}

// ---- Black-Scholes and n-body -------------------------------------------------------------------------------

static __device__ __forceinline__ float normal_cdf(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    const float inv_sqrt_2pi = 0.39894228040143267793994605993438f;
    float k = __fdividef(1.0f, 1.0f + 0.2316419f * fabsf(d));
    float cnd = inv_sqrt_2pi * __expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - cnd : cnd;
}

__global__ void black_scholes(float* call, float* put, const float* price, const float* strike, const float* years,
                              float riskfree, float volatility, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float s = price[i], x = strike[i], t = years[i];
        float sqrt_t = sqrtf(t);
        float d1 = __fdividef(__logf(s / x) + (riskfree + 0.5f * volatility * volatility) * t, volatility * sqrt_t);
        float d2 = d1 - volatility * sqrt_t;
        float cnd1 = normal_cdf(d1), cnd2 = normal_cdf(d2);
        float discount = expf(-riskfree * t);
        call[i] = s * cnd1 - x * discount * cnd2;
        put[i] = x * discount * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
}

// accelerations from every body, 64-body tiles in shared memory, softened
__global__ void nbody_forces(float4* accel, const float4* bodies, int n, float softening2) {
    __shared__ float4 tile[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = bodies[i];
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int start = 0; start < n; start += 64) {
        tile[threadIdx.x] = bodies[start + threadIdx.x];
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < 64; ++j) {
            float4 other = tile[j];
            float3 r = make_float3(other.x - me.x, other.y - me.y, other.z - me.z);
            float dist2 = r.x * r.x + r.y * r.y + r.z * r.z + softening2;
            float inv = rsqrtf(dist2);
            float s = other.w * inv * inv * inv;
            a.x += r.x * s;
            a.y += r.y * s;
            a.z += r.z * s;
        }
        __syncthreads();
    }
    accel[i] = make_float4(a.x, a.y, a.z, 0.0f);
}

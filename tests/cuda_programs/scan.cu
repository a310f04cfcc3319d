// An exclusive prefix sum of a large array in three kernels, as NVIDIA's scan samples do it: a work-efficient
// (Blelloch) scan of each block's 2*256 elements in shared memory with padding against bank conflicts, a scan of
// the block sums, and a uniform add of each block's offset.
#include "check.h"

#define THREADS 256
#define ELEMENTS (2 * THREADS)
#define PAD(i) ((i) + ((i) >> 5))

__global__ void scan_blocks(const unsigned *in, unsigned *out, unsigned *sums, int n)
{
    __shared__ unsigned temp[PAD(ELEMENTS) + 1];
    int t = threadIdx.x, base = blockIdx.x * ELEMENTS;
    int a = t, b = t + THREADS;
    temp[PAD(a)] = base + a < n ? in[base + a] : 0;
    temp[PAD(b)] = base + b < n ? in[base + b] : 0;
    int offset = 1;
    for (int d = ELEMENTS / 2; d > 0; d /= 2, offset *= 2) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            temp[PAD(bi)] += temp[PAD(ai)];
        }
    }
    if (t == 0) {
        if (sums) sums[blockIdx.x] = temp[PAD(ELEMENTS - 1)];
        temp[PAD(ELEMENTS - 1)] = 0;
    }
    for (int d = 1; d < ELEMENTS; d *= 2) {
        offset /= 2;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            unsigned left = temp[PAD(ai)];
            temp[PAD(ai)] = temp[PAD(bi)];
            temp[PAD(bi)] += left;
        }
    }
    __syncthreads();
    if (base + a < n) out[base + a] = temp[PAD(a)];
    if (base + b < n) out[base + b] = temp[PAD(b)];
}

__global__ void add_offsets(unsigned *out, const unsigned *offsets, int n)
{
    int i = blockIdx.x * ELEMENTS + threadIdx.x;
    unsigned offset = offsets[blockIdx.x];
    if (i < n) out[i] += offset;
    if (i + THREADS < n) out[i + THREADS] += offset;
}

int main()
{
    const int n = 100000, blocks = (n + ELEMENTS - 1) / ELEMENTS;
    unsigned *h = (unsigned *)malloc(n * sizeof(unsigned)), *result = (unsigned *)malloc(n * sizeof(unsigned));
    for (int i = 0; i < n; i++) h[i] = (i * 2654435761u) >> 28;
    unsigned *d_in, *d_out, *d_sums, *d_offsets;
    CHECK(cudaMalloc(&d_in, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_sums, blocks * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_offsets, blocks * sizeof(unsigned)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    scan_blocks<<<blocks, THREADS>>>(d_in, d_out, d_sums, n);
    scan_blocks<<<1, THREADS>>>(d_sums, d_offsets, NULL, blocks);
    add_offsets<<<blocks, THREADS>>>(d_out, d_offsets, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(result, d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned running = 0;
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        wrong += result[i] != running;
        running += h[i];
    }
    printf("%d elements in %d blocks, out[n-1] = %u\n", n, blocks, result[n - 1]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

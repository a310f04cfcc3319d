// Warp intrinsics NVIDIA's samples use: __any_sync/__all_sync/__ballot_sync (simpleVoteIntrinsics), warp-aggregated
// atomics through coalesced groups and labeled_partition (warpAggregatedAtomicsCG), half2 arithmetic
// (fp16ScalarProduct) and clock64 around a loop (clock).
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include "check.h"
namespace cg = cooperative_groups;

__global__ void votes(unsigned *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[3 * t] = __any_sync(0xffffffff, t % 67 == 5);
    out[3 * t + 1] = __all_sync(0xffffffff, t % 64 < 60);
    out[3 * t + 2] = __ballot_sync(0xffffffff, (t & 1) || t % 32 == 4);
}

__global__ void filter_positive(const int *in, int *out, int *counts, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || in[i] <= 0) return;
    cg::coalesced_group active = cg::coalesced_threads();
    int base = 0;
    if (active.thread_rank() == 0) base = atomicAdd(&counts[0], active.size());
    base = active.shfl(base, 0);
    out[base + active.thread_rank()] = in[i];
    cg::coalesced_group bucket = cg::labeled_partition(active, in[i] % 4);
    if (bucket.thread_rank() == 0) atomicAdd(&counts[1 + in[i] % 4], bucket.size());
}

__global__ void half_dot(const __half2 *a, const __half2 *b, float *out)
{
    int i = threadIdx.x;
    __half2 product = __hmul2(a[i], b[i]);
    __half2 fused = __hfma2(a[i], b[i], product);
    out[i] = __low2float(fused) + __high2float(fused);
}

__global__ void timed(long long *cycles, int *sink)
{
    long long start = clock64();
    int x = 0;
    for (int k = 0; k < 100; k++) x += k * threadIdx.x;
    sink[threadIdx.x] = x;
    cycles[threadIdx.x] = clock64() - start;
}

int main()
{
    int wrong = 0;
    unsigned votes_out[3 * 128], *d_votes;
    CHECK(cudaMalloc(&d_votes, sizeof(votes_out)));
    votes<<<2, 64>>>(d_votes);
    CHECK(cudaMemcpy(votes_out, d_votes, sizeof(votes_out), cudaMemcpyDeviceToHost));
    for (int t = 0; t < 128; t++) {
        int warp = t / 32, any = 0, all = 1;
        unsigned ballot = 0;
        for (int l = 0; l < 32; l++) {
            int u = warp * 32 + l;
            any |= u % 67 == 5;
            all &= u % 64 < 60;
            ballot |= (unsigned)((u & 1) || u % 32 == 4) << l;
        }
        wrong += votes_out[3 * t] != (unsigned)any || votes_out[3 * t + 1] != (unsigned)all ||
                 votes_out[3 * t + 2] != ballot;
    }

    const int n = 300;
    int in[n], out[n], counts[5], *d_in, *d_out, *d_counts, positive = 0, buckets[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        in[i] = (i * 37) % 11 - 3;
        if (in[i] > 0) { positive++; buckets[in[i] % 4]++; }
    }
    CHECK(cudaMalloc(&d_in, sizeof(in)));
    CHECK(cudaMalloc(&d_out, sizeof(out)));
    CHECK(cudaMalloc(&d_counts, sizeof(counts)));
    CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_counts, 0, sizeof(counts)));
    filter_positive<<<3, 128>>>(d_in, d_out, d_counts, n);
    CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(counts, d_counts, sizeof(counts), cudaMemcpyDeviceToHost));
    wrong += counts[0] != positive;
    for (int k = 0; k < 4; k++) wrong += counts[1 + k] != buckets[k];
    int histogram_in[8] = {0}, histogram_out[8] = {0};
    for (int i = 0; i < n; i++) if (in[i] > 0) histogram_in[in[i]]++;
    for (int i = 0; i < positive; i++) histogram_out[out[i] & 7]++;
    for (int k = 0; k < 8; k++) wrong += histogram_in[k] != histogram_out[k];

    __half2 a[32], b[32], *d_a, *d_b;
    float dots[32], *d_dots;
    for (int i = 0; i < 32; i++) {
        a[i] = __floats2half2_rn(i, -i);
        b[i] = __floats2half2_rn(0.5f, 2.0f);
    }
    CHECK(cudaMalloc(&d_a, sizeof(a)));
    CHECK(cudaMalloc(&d_b, sizeof(b)));
    CHECK(cudaMalloc(&d_dots, sizeof(dots)));
    CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
    half_dot<<<1, 32>>>(d_a, d_b, d_dots);
    CHECK(cudaMemcpy(dots, d_dots, sizeof(dots), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) wrong += dots[i] != i * 0.5f * 2 + -i * 2.0f * 2;

    long long cycles[32], *d_cycles;
    int *d_sink;
    CHECK(cudaMalloc(&d_cycles, sizeof(cycles)));
    CHECK(cudaMalloc(&d_sink, 32 * sizeof(int)));
    timed<<<1, 32>>>(d_cycles, d_sink);
    CHECK(cudaMemcpy(cycles, d_cycles, sizeof(cycles), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) wrong += cycles[i] <= 0;
    printf("ballot of warp 0: 0x%08x, %d positive in buckets %d %d %d %d, dot[31] = %g, cycles counted: %s\n",
           votes_out[2], counts[0], counts[1], counts[2], counts[3], counts[4], dots[31], cycles[0] > 0 ? "yes" : "no");
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// A warp reduction with __shfl_down_sync over partial member masks, as NVIDIA's reduction sample writes its last
// stage: the mask is __ballot_sync of the lanes that hold data, so the final warp of a ragged array has fewer
// lanes; plus a 16-lane tile reduction whose mask names only its half of the warp.
#include "check.h"

__global__ void ragged_sum(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mask = __ballot_sync(0xffffffff, i < n);
    if (i >= n) return;
    int value = in[i];
    for (int offset = 16; offset > 0; offset /= 2) {
        int other = __shfl_down_sync(mask, value, offset);
        if ((threadIdx.x % 32) + offset < 32 && (mask >> ((threadIdx.x % 32) + offset) & 1)) value += other;
    }
    if (threadIdx.x % 32 == 0) atomicAdd(out, value);
}

__global__ void half_warp_sums(const int *in, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    int value = in[i];
    for (int offset = 8; offset > 0; offset /= 2) value += __shfl_down_sync(mask, value, offset, 16);
    if (lane % 16 == 0) out[i / 16] = value;
}

int main()
{
    const int n = 1000, blocks = (n + 127) / 128;
    int h_in[blocks * 128], sums[blocks * 8], total = 0, *d_in, *d_total, *d_sums;
    long long want = 0;
    for (int i = 0; i < blocks * 128; i++) h_in[i] = (i * 7) % 23 - 11;
    for (int i = 0; i < n; i++) want += h_in[i];
    CHECK(cudaMalloc(&d_in, sizeof(h_in)));
    CHECK(cudaMalloc(&d_total, sizeof(int)));
    CHECK(cudaMalloc(&d_sums, sizeof(sums)));
    CHECK(cudaMemcpy(d_in, h_in, sizeof(h_in), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_total, 0, sizeof(int)));
    ragged_sum<<<blocks, 128>>>(d_in, d_total, n);
    half_warp_sums<<<blocks, 128>>>(d_in, d_sums);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sums, d_sums, sizeof(sums), cudaMemcpyDeviceToHost));
    int wrong = total != want;
    for (int g = 0; g < blocks * 8; g++) {
        int s = 0;
        for (int k = 0; k < 16; k++) s += h_in[16 * g + k];
        wrong += sums[g] != s;
    }
    printf("ragged sum %d (host %lld), half-warp sum[62] = %d\n", total, want, sums[62]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// Inline PTX as CUB writes it: shfl.sync.up with its predicate output (r|p) and scoped unprefixed registers, an
// inclusive scan per warp, compared with the host's.
#include "check.h"

__device__ __forceinline__ unsigned scan_step(unsigned value, int offset)
{
    unsigned result;
    asm volatile("{ .reg .u32 r0; .reg .pred p; shfl.sync.up.b32 r0|p, %1, %2, 0, 0xffffffff; @p add.u32 r0, r0, %1;"
                 " mov.u32 %0, r0; }" : "=r"(result) : "r"(value), "r"(offset));
    return result;
}

__device__ __forceinline__ unsigned lane_id()
{
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

__global__ void warp_scan(const unsigned *in, unsigned *out, unsigned *lanes)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned value = in[i];
    for (int offset = 1; offset < 32; offset *= 2) value = scan_step(value, offset);
    out[i] = value;
    lanes[i] = lane_id();
}

int main()
{
    const int n = 256;
    unsigned h_in[n], h_out[n], h_lanes[n], *d_in, *d_out, *d_lanes;
    for (int i = 0; i < n; i++) h_in[i] = (i * 2654435761u) >> 20;
    CHECK(cudaMalloc(&d_in, sizeof(h_in)));
    CHECK(cudaMalloc(&d_out, sizeof(h_out)));
    CHECK(cudaMalloc(&d_lanes, sizeof(h_lanes)));
    CHECK(cudaMemcpy(d_in, h_in, sizeof(h_in), cudaMemcpyHostToDevice));
    warp_scan<<<2, 128>>>(d_in, d_out, d_lanes);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_lanes, d_lanes, sizeof(h_lanes), cudaMemcpyDeviceToHost));
    int wrong = 0;
    unsigned running = 0;
    for (int i = 0; i < n; i++) {
        running = (i % 32 == 0 ? 0 : running) + h_in[i];
        wrong += h_out[i] != running || h_lanes[i] != (unsigned)(i % 32);
    }
    printf("scan of warp 7 ends at %u\n", h_out[255]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

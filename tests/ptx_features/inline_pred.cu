// Inline PTX with its own scoped registers named without '%' and the predicate output of shfl.sync (`r0|p`),
// as CUB's warp scans write it: an inclusive warp scan that adds only where the source lane was in range.
__device__ __forceinline__ unsigned scan_step(unsigned value, int offset) {
    unsigned result;
    asm volatile("{ .reg .u32 r0; .reg .pred p; shfl.sync.up.b32 r0|p, %1, %2, 0, 0xffffffff; @p add.u32 r0, r0, %1;"
                 " mov.u32 %0, r0; }" : "=r"(result) : "r"(value), "r"(offset));
    return result;
}

__global__ void inline_scan(unsigned* out, const unsigned* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned value = in[i];
    for (int offset = 1; offset < 32; offset *= 2) value = scan_step(value, offset);
    out[i] = value;
}

// the predicate of an idx shuffle with a clamp that puts some sources out of range, and a sink for the value
__global__ void shfl_predicate_only(unsigned* out, const unsigned* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned valid, value;
    asm volatile("{ .reg .pred q; .reg .u32 v; shfl.sync.idx.b32 v|q, %2, %3, 0x0f, 0xffffffff; selp.u32 %0, 1, 0, q;"
                 " mov.u32 %1, v; }" : "=r"(valid), "=r"(value) : "r"(in[i]), "r"((i * 7) % 32));
    out[2 * i] = valid;
    out[2 * i + 1] = value;
}

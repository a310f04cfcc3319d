// Warp-synchronous instructions whose member mask is narrower than the warp: what shfl.sync returns from a lane
// outside its mask (the last steps of a reduction over a few lanes), and redux/vote/match over a partial mask.
// Values are lane * 100 + 7 so that every result names the lane it came from.

// lanes below `members` shuffle down with the mask of those lanes; the other lanes of the warp exist and hold
// their own value, but run the other branch. out[lane * 5 + step] is what lane got at offset 16, 8, 4, 2, 1;
// preds[lane * 5 + step] is the in-range predicate.
__global__ void shfl_down_outside_mask(int* out, int* preds, int members) {
    int lane = threadIdx.x % 32;
    int value = lane * 100 + 7;
    if (lane < members) {
        unsigned mask = members == 32 ? 0xffffffffu : (1u << members) - 1;
        int step = 0;
        for (int offset = 16; offset > 0; offset /= 2, ++step) {
            int got, valid;
            asm volatile("{ .reg .pred p; shfl.sync.down.b32 %0|p, %2, %3, 0x1f, %4; selp.u32 %1, 1, 0, p; }"
                         : "=r"(got), "=r"(valid) : "r"(value), "r"(offset), "r"(mask));
            out[threadIdx.x * 5 + step] = got;
            preds[threadIdx.x * 5 + step] = valid;
        }
    } else {
        out[threadIdx.x * 5] = -value;
    }
}

// the same with the lanes outside the mask gone: launched with fewer than 32 threads, or with those lanes exited
__global__ void shfl_down_exited_lanes(int* out, int members) {
    int lane = threadIdx.x % 32;
    if (lane >= members) return;
    int value = lane * 100 + 7;
    unsigned mask = members == 32 ? 0xffffffffu : (1u << members) - 1;
    int step = 0;
    for (int offset = 16; offset > 0; offset /= 2, ++step) out[threadIdx.x * 5 + step] = __shfl_down_sync(mask, value, offset);
}

// idx, up and bfly reads of lanes outside the mask
__global__ void shfl_modes_outside_mask(int* out, int members) {
    int lane = threadIdx.x % 32;
    int value = lane * 100 + 7;
    if (lane < members) {
        unsigned mask = (1u << members) - 1;
        out[threadIdx.x * 4 + 0] = __shfl_sync(mask, value, (lane + members) % 32);
        out[threadIdx.x * 4 + 1] = __shfl_up_sync(mask, value, 1);
        out[threadIdx.x * 4 + 2] = __shfl_xor_sync(mask, value, 16);
        out[threadIdx.x * 4 + 3] = __shfl_down_sync(mask, value, members);
    }
}

// a float block reduction whose last warp step runs on blockDim / 32 lanes with their ballot as the mask
__global__ void reduce_final_warp_ballot(float* out, const float* in, unsigned n) {
    __shared__ float partial[32];
    unsigned tid = threadIdx.x;
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) sum += in[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (tid % 32 == 0) partial[tid / 32] = sum;
    __syncthreads();
    unsigned warps = blockDim.x / 32;
    unsigned ballot = __ballot_sync(0xffffffffu, tid < warps);
    if (tid < warps) {
        sum = partial[tid];
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(ballot, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

// redux, vote and match where each half-warp (or each group of equal keys) names only its own lanes
__global__ void partial_mask_collectives(unsigned* out, const unsigned* keys) {
    unsigned lane = threadIdx.x % 32;
    unsigned key = keys[threadIdx.x];
    unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    unsigned* row = out + threadIdx.x * 8;
    row[0] = __reduce_add_sync(half, key);
    row[1] = __reduce_max_sync(half, key);
    row[2] = __reduce_or_sync(half, key);
    row[3] = __ballot_sync(half, key & 1);
    row[4] = __all_sync(half, key & 2) | (__any_sync(half, key & 4) << 1);
    unsigned group = __match_any_sync(0xffffffffu, key % 4);
    row[5] = __reduce_add_sync(group, key);
    int all_same;
    row[6] = __match_all_sync(half, key % 2, &all_same);
    row[7] = all_same;
}

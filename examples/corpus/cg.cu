// Cooperative groups as the samples and LLM kernels use them: tile reductions with cg::reduce, tile scans,
// coalesced groups in divergent code, 64-thread tiles (block_tile_memory), labeled partitions and
// memcpy_async into shared memory. Written for gpuemu's corpus; small sizes.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

namespace cg = cooperative_groups;

// block sum: cg::reduce per 32-thread tile, the tile sums reduced by the first tile
__global__ void cg_reduce_tiles(float* out, const float* in, int n) {
    __shared__ float sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    float value = 0.0f;
    for (int i = block.group_index().x * block.size() + block.thread_rank(); i < n; i += block.size() * gridDim.x)
        value += in[i];
    value = cg::reduce(tile, value, cg::plus<float>());
    if (tile.thread_rank() == 0) sums[tile.meta_group_rank()] = value;
    block.sync();
    if (tile.meta_group_rank() == 0) {
        value = tile.thread_rank() < tile.meta_group_size() ? sums[tile.thread_rank()] : 0.0f;
        value = cg::reduce(tile, value, cg::plus<float>());
        if (tile.thread_rank() == 0) out[block.group_index().x] = value;
    }
}

// per-16-thread-tile inclusive and exclusive scans, and the tile maximum
__global__ void cg_tile_scan(int* inclusive, int* exclusive, int* maxima, const int* in) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int value = in[i];
    inclusive[i] = cg::inclusive_scan(tile, value);
    exclusive[i] = cg::exclusive_scan(tile, value, cg::bit_xor<int>());
    int top = cg::reduce(tile, value, cg::greater<int>());
    if (tile.thread_rank() == 0) maxima[i / 16] = top;
}

// stream compaction inside each warp: the lanes that pass form a coalesced group and take consecutive slots
__global__ void cg_coalesced_compact(float* out, int* counts, const float* in, float threshold) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = i / 32;
    float value = in[i];
    if (value > threshold) {
        cg::coalesced_group active = cg::coalesced_threads();
        out[warp * 32 + active.thread_rank()] = value * 2.0f;
        if (active.thread_rank() == 0) counts[warp] = active.size();
        float sum = cg::reduce(active, value, cg::plus<float>());
        if (active.thread_rank() == active.size() - 1) out[warp * 32 + 31] += sum;
    }
}

// 64-thread tiles (their scratch in the block's reserved shared memory) reducing and broadcasting
__global__ void cg_tile64(unsigned* out, const unsigned* in) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned value = in[i];
    unsigned total = cg::reduce(tile, value, cg::plus<unsigned>());
    unsigned first = tile.shfl(value, 0);
    unsigned voted = tile.any(value & 1) + 2 * tile.all(value & 2);
    out[i] = total ^ (first << 3) ^ voted ^ (tile.meta_group_rank() << 28);
}

// lanes grouped by a key (labeled_partition), each group's sum and size
__global__ void cg_labeled(int* sums, int* sizes, const int* keys, const int* values) {
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    cg::coalesced_group group = cg::labeled_partition(warp, keys[i]);
    sums[i] = cg::reduce(group, values[i], cg::plus<int>());
    sizes[i] = group.size() * 100 + group.thread_rank();
}

// tiles of the input (n + 2 values) brought into shared memory with memcpy_async, then a 3-point stencil
__global__ void cg_memcpy_stencil(float* out, const float* in, int n) {
    extern __shared__ float window[];
    cg::thread_block block = cg::this_thread_block();
    int base = blockIdx.x * blockDim.x;
    int count = min((int)blockDim.x, n - base) + 2;
    cg::memcpy_async(block, window, in + base, sizeof(float) * count);
    cg::wait(block);
    int i = base + threadIdx.x;
    if (i < n) out[i] = 0.25f * window[threadIdx.x] + 0.5f * window[threadIdx.x + 1] + 0.25f * window[threadIdx.x + 2];
}

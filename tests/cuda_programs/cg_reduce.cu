// Cooperative groups: a thread_block, 32-lane tiles with cg::reduce and a tile shuffle, coalesced_threads() in a
// divergent branch, and a grid-wide reduction with this_grid().sync() under cudaLaunchCooperativeKernel.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "check.h"
namespace cg = cooperative_groups;

__global__ void tile_sums(const int *in, int *tile_totals, int *odd_counts, int *maxima)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x, value = in[i];
    int total = cg::reduce(tile, value, cg::plus<int>());
    int biggest = cg::reduce(tile, value, cg::greater<int>());
    int first = tile.shfl(value, 0);
    if (tile.thread_rank() == 0) {
        tile_totals[i / 32] = total;
        maxima[i / 32] = biggest - first;
    }
    if (value % 2) {
        cg::coalesced_group odd = cg::coalesced_threads();
        if (odd.thread_rank() == 0) odd_counts[i / 32] = odd.size();
    }
}

__global__ void grid_sum(const int *in, int *partials, int *total, int n)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ int shared[256];
    int sum = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += in[i];
    shared[block.thread_rank()] = sum;
    block.sync();
    for (int stride = block.size() / 2; stride > 0; stride /= 2) {
        if (block.thread_rank() < stride) shared[block.thread_rank()] += shared[block.thread_rank() + stride];
        block.sync();
    }
    if (block.thread_rank() == 0) partials[blockIdx.x] = shared[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        int all = 0;
        for (int b = 0; b < gridDim.x; b++) all += partials[b];
        *total = all;
    }
}

int main()
{
    const int blocks = 4, threads = 256, n = blocks * threads, tiles = n / 32;
    int h[n], totals[tiles], odd[tiles], maxima[tiles], *d_in, *d_totals, *d_odd, *d_maxima, *d_partials, *d_total;
    for (int i = 0; i < n; i++) h[i] = (i * 131) % 97 - 40;
    CHECK(cudaMalloc(&d_in, sizeof(h)));
    CHECK(cudaMalloc(&d_totals, sizeof(totals)));
    CHECK(cudaMalloc(&d_odd, sizeof(odd)));
    CHECK(cudaMalloc(&d_maxima, sizeof(maxima)));
    CHECK(cudaMalloc(&d_partials, blocks * sizeof(int)));
    CHECK(cudaMalloc(&d_total, sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, sizeof(h), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_odd, 0, sizeof(odd)));
    tile_sums<<<blocks, threads>>>(d_in, d_totals, d_odd, d_maxima);
    CHECK(cudaGetLastError());
    int count = n;
    void *arguments[] = {&d_in, &d_partials, &d_total, &count};
    CHECK(cudaLaunchCooperativeKernel((void *)grid_sum, blocks, threads, arguments, 0, 0));
    int total = 0;
    CHECK(cudaMemcpy(totals, d_totals, sizeof(totals), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(odd, d_odd, sizeof(odd), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(maxima, d_maxima, sizeof(maxima), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0, want_total = 0;
    for (int t = 0; t < tiles; t++) {
        int sum = 0, odd_count = 0, biggest = -1000;
        for (int k = 0; k < 32; k++) {
            int v = h[32 * t + k];
            sum += v;
            odd_count += v % 2 != 0;
            biggest = v > biggest ? v : biggest;
        }
        wrong += totals[t] != sum || odd[t] != odd_count || maxima[t] != biggest - h[32 * t];
        want_total += sum;
    }
    wrong += total != want_total;
    printf("tile 0: sum %d, odd lanes %d; grid total %d (host %d)\n", totals[0], odd[0], total, want_total);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

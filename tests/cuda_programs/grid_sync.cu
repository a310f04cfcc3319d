// Cooperative groups: a grid-wide barrier between two phases, launched with cudaLaunchCooperativeKernel and with
// cudaLaunchKernelEx's cooperative attribute.
#include <cooperative_groups.h>
#include "check.h"
namespace cg = cooperative_groups;

__global__ void two_phases(int *data, int *sums, int n)
{
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    if (i < n) data[i] = i + 1;
    grid.sync();
    if (i < n) {
        int mirror = n - 1 - i;
        sums[i] = data[i] + data[mirror];
    }
}

int main()
{
    int device = 0, supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, device));
    const int threads = 64, blocks = 4, n = threads * blocks;
    int *data, *sums, h[n];
    CHECK(cudaMalloc(&data, n * sizeof(int))); CHECK(cudaMalloc(&sums, n * sizeof(int)));
    int count = n;
    void *args[] = {&data, &sums, &count};
    CHECK(cudaLaunchCooperativeKernel((void *)two_phases, blocks, threads, args, 0, 0));
    CHECK(cudaMemcpy(h, sums, sizeof h, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += h[i] != n + 1;
    CHECK(cudaMemset(sums, 0, n * sizeof(int)));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeCooperative;
    attribute.val.cooperative = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, two_phases, data, sums, count));
    CHECK(cudaMemcpy(h, sums, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) wrong += h[i] != n + 1;
    printf("cooperative launch supported: %d, sums[0] = %d, sums[%d] = %d\n", supported, h[0], n - 1, h[n - 1]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

// Recursive device functions in a whole program: Fibonacci, a depth-first walk of an implicit tree and a
// recursive quicksort of a small per-thread array, with the per-thread stack raised through cudaDeviceSetLimit.
#include "check.h"

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ unsigned walk(unsigned node, unsigned limit)
{
    if (node >= limit) return 0;
    return node ^ (walk(2 * node + 1, limit) + 3 * walk(2 * node + 2, limit));
}

__device__ void quicksort(int *a, int lo, int hi)
{
    if (lo >= hi) return;
    int pivot = a[(lo + hi) / 2], i = lo, j = hi;
    while (i <= j) {
        while (a[i] < pivot) i++;
        while (a[j] > pivot) j--;
        if (i <= j) { int t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    quicksort(a, lo, j);
    quicksort(a, i, hi);
}

__global__ void recurse(int *fibs, unsigned *walks, int *sorted, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fibs[i] = fib(i % 16);
    walks[i] = walk(0, 1 + i % 40);
    int *mine = sorted + 16 * i;
    quicksort(mine, 0, 15);
}

static int host_fib(int n) { return n < 2 ? n : host_fib(n - 1) + host_fib(n - 2); }
static unsigned host_walk(unsigned node, unsigned limit)
{
    return node >= limit ? 0 : node ^ (host_walk(2 * node + 1, limit) + 3 * host_walk(2 * node + 2, limit));
}

int main()
{
    const int n = 64;
    size_t stack = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    int h_sorted[16 * n], *d_fibs, *d_sorted;
    unsigned *d_walks;
    for (int i = 0; i < 16 * n; i++) h_sorted[i] = (i * 7919) % 61 - 30;
    CHECK(cudaMalloc(&d_fibs, n * sizeof(int)));
    CHECK(cudaMalloc(&d_walks, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_sorted, sizeof(h_sorted)));
    CHECK(cudaMemcpy(d_sorted, h_sorted, sizeof(h_sorted), cudaMemcpyHostToDevice));
    recurse<<<2, 32>>>(d_fibs, d_walks, d_sorted, n);
    CHECK(cudaGetLastError());
    int fibs[n], sorted[16 * n];
    unsigned walks[n];
    CHECK(cudaMemcpy(fibs, d_fibs, sizeof(fibs), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(walks, d_walks, sizeof(walks), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sorted, d_sorted, sizeof(sorted), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        wrong += fibs[i] != host_fib(i % 16) || walks[i] != host_walk(0, 1 + i % 40);
        for (int k = 1; k < 16; k++) wrong += sorted[16 * i + k - 1] > sorted[16 * i + k];
    }
    printf("stack limit %zu, fib(15) = %d, walk(0, 40) = %u\n", stack, fibs[15], walks[39]);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}

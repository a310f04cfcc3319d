// Recursive device functions: plain, mutual, with a local array whose address the next level reads after
// writing its own, and one deep enough to overflow the stack.

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ __noinline__ bool is_odd(unsigned n);
__device__ __noinline__ bool is_even(unsigned n) { return n == 0 ? true : is_odd(n - 1); }
__device__ __noinline__ bool is_odd(unsigned n) { return n == 0 ? false : is_even(n - 1); }

// each level keeps four values in a local array and hands the next level a pointer to them; the next level
// fills its own array before it reads the caller's, so the two frames must not overlap
__device__ __noinline__ int nested_frames(const int* outer, int depth, int seed) {
    volatile int mine[4];
    for (int i = 0; i < 4; ++i) mine[i] = seed * 7 + i * depth;
    int below = depth > 0 ? nested_frames((const int*)mine, depth - 1, seed + 1) : 0;
    int sum = below;
    for (int i = 0; i < 4; ++i) sum += outer[i] * (i + 1) - mine[i];
    return sum;
}

// depth-first sum over an implicit binary tree, divergent depths per thread
__device__ __noinline__ unsigned tree_walk(unsigned node, unsigned limit) {
    if (node >= limit) return 0;
    return node ^ (tree_walk(2 * node + 1, limit) + 3 * tree_walk(2 * node + 2, limit));
}

// a frame of its own at every level (ptxas cannot turn it into a loop): deep enough, it overflows the stack
__device__ __noinline__ unsigned long long deep(unsigned long long n, unsigned long long acc) {
    volatile unsigned long long keep[2];
    keep[0] = n;
    keep[1] = acc;
    if (n == 0) return acc;
    unsigned long long below = deep(n - 1, acc * 3 + n);
    return below ^ (keep[0] + keep[1]);
}

__global__ void recursion_fib(int* out, const int* n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = fib(n[i]);
}

__global__ void recursion_mutual(int* out, const unsigned* n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = is_even(n[i]) ? 2 : (is_odd(n[i]) ? 1 : 0);
}

__global__ void recursion_local_frames(int* out, const int* seeds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int top[4] = {1, 2, 3, 4};
    out[i] = nested_frames(top, i % 7, seeds[i]);
}

__global__ void recursion_tree(unsigned* out, const unsigned* limits) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = tree_walk(0, limits[i]);
}

__global__ void recursion_deep(unsigned long long* out, unsigned long long depth) {
    out[threadIdx.x] = deep(depth, threadIdx.x);
}

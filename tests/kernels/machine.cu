// Kernels that pin the SIMT machine's behaviour: divergence, barriers, atomics, warp operations, calls.
#include <cstdio>

extern "C" __global__ void activemask_mod3(const int *v, unsigned *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = 0;
    if (v[i] % 3 == 0) m = __activemask();
    out[i] = m;
}

extern "C" __global__ void reduce_sync_in_if(const float *in, float *out) {
    __shared__ float cache[256];
    int t = threadIdx.x;
    cache[t] = in[t];
    __syncthreads();
    int i = blockDim.x / 2;
    while (i != 0) {
        if (t < i) {
            cache[t] += cache[t + i];
            __syncthreads();
        }
        i /= 2;
    }
    if (t == 0) out[0] = cache[0];
}

extern "C" __global__ void warp_spinlock(int *lock, int *counter, int *order) {
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            int ticket = *counter;
            order[ticket] = threadIdx.x;
            *counter = ticket + 1;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}

extern "C" __global__ void atomic_tickets(int *counter, int *tickets) {
    tickets[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(counter, 1);
}

extern "C" __global__ void shfl_reduce(const int *in, int *out) {
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
    if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}

extern "C" __global__ void ballot_vote(const int *in, unsigned *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    unsigned b = __ballot_sync(0xffffffff, v > 0);
    int all = __all_sync(0xffffffff, v > -100);
    int any = __any_sync(0xffffffff, v > 1000);
    out[3 * i] = b; out[3 * i + 1] = all; out[3 * i + 2] = any;
}

__device__ __noinline__ int collatz_len(long long x) {
    int n = 0;
    while (x != 1) { x = (x & 1) ? 3 * x + 1 : x / 2; n++; }
    return n;
}

extern "C" __global__ void call_collatz(int *out, int start) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = collatz_len(i + start);
}

extern "C" __global__ void local_sort(const int *in, int *out, int n) {
    int a[16];
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 16;
    for (int k = 0; k < 16; k++) a[k] = in[base + k];
    for (int p = 0; p < n; p++)
        for (int k = 0; k + 1 < n - p; k++)
            if (a[k] > a[k + 1]) { int t = a[k]; a[k] = a[k + 1]; a[k + 1] = t; }
    for (int k = 0; k < 16; k++) out[base + k] = a[k];
}

extern "C" __global__ void forever(int *flag) {
    while (*(volatile int *)flag == 0) { }
}

extern "C" __global__ void half_barrier(int *out) {
    if (threadIdx.x < 32) {
        asm volatile("bar.sync 1, 64;");
    }
    out[threadIdx.x] = threadIdx.x;
}

extern "C" __global__ void early_exit(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __shared__ int s[128];
    s[threadIdx.x] = i;
    __syncthreads();
    out[i] = s[(threadIdx.x + 1) % (n - blockIdx.x * blockDim.x < blockDim.x ? n - blockIdx.x * blockDim.x : blockDim.x)];
}

extern "C" __global__ void trap_if(const int *v) {
    if (v[threadIdx.x] < 0) __trap();
}

extern "C" __global__ void named_barrier_producer(int *out) {
    __shared__ int buf[64];
    int t = threadIdx.x;
    if (t < 64) {
        buf[t] = t * 7;
        asm volatile("bar.arrive 1, 128;");
    } else {
        asm volatile("bar.sync 1, 128;");
        out[t - 64] = buf[t - 64];
    }
}

extern "C" __global__ void bar_red_popc(const int *v, int *out) {
    int c = __syncthreads_count(v[threadIdx.x] > 0);
    int a = __syncthreads_and(v[threadIdx.x] > -5);
    int o = __syncthreads_or(v[threadIdx.x] > 50);
    out[3 * threadIdx.x] = c; out[3 * threadIdx.x + 1] = a; out[3 * threadIdx.x + 2] = o;
}

// Faulty kernels for gpuemu's checkers (--check race,sync,init,mem), each next to its correct twin.
// nvcc -ptx -arch=sm_90 -lineinfo checks.cu -o checks.ptx
#define N 256

// A neighbour reads s[t + 1] without a __syncthreads() after the stores: read-after-write hazards
// between the last lane of each warp and the first lane of the next (and between lanes of a warp).
extern "C" __global__ void shared_race(const int *in, int *out) {
    __shared__ int s[N];
    int t = threadIdx.x;
    s[t] = in[t];
    out[t] = s[(t + 1) % blockDim.x];
}

extern "C" __global__ void shared_race_fixed(const int *in, int *out) {
    __shared__ int s[N];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    out[t] = s[(t + 1) % blockDim.x];
}

// The reduction of the seed: correct when __syncthreads() is outside the if ...
extern "C" __global__ void reduce_ok(const float *in, float *out) {
    __shared__ float cache[N];
    int t = threadIdx.x;
    cache[t] = in[t];
    __syncthreads();
    for (int i = blockDim.x / 2; i != 0; i /= 2) {
        if (t < i) cache[t] += cache[t + i];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = cache[0];
}

// ... and with __syncthreads() inside the divergent if: only the threads with t < i arrive.
extern "C" __global__ void reduce_divergent_sync(const float *in, float *out) {
    __shared__ float cache[N];
    int t = threadIdx.x;
    cache[t] = in[t];
    __syncthreads();
    for (int i = blockDim.x / 2; i != 0; i /= 2) {
        if (t < i) {
            cache[t] += cache[t + i];
            __syncthreads();
        }
    }
    if (t == 0) out[blockIdx.x] = cache[0];
}

// Warp 0 waits for a flag that nobody sets; the twin's last warp sets it.
extern "C" __global__ void spin_forever(volatile int *flag, int *out) {
    if (threadIdx.x < 32) {
        while (*flag == 0) { }
        out[threadIdx.x] = *flag;
    }
}

extern "C" __global__ void spin_until_set(volatile int *flag, int *out) {
    if (threadIdx.x < 32) {
        while (*flag == 0) { }
        out[threadIdx.x] = *flag;
    } else if (threadIdx.x == blockDim.x - 1) {
        *flag = 7;
    }
}

// Only the first warp writes s[]; the second warp reads words nobody wrote.
extern "C" __global__ void uninit_shared_read(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = t;
    __syncthreads();
    out[t] = s[63 - t];
}

extern "C" __global__ void init_shared_read(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[63 - t];
}

// A private array filled only up to n, read at k: uninitialised local memory when k >= n.
extern "C" __global__ void uninit_local_read(const int *index, int *out, int n) {
    int a[16];
    for (int i = 0; i < n; i++) a[i] = i * i;
    out[threadIdx.x] = a[index[threadIdx.x] & 15];
}

// Writes past the end of out (n elements) when the launch has more threads than n.
extern "C" __global__ void oob_write(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i;
}

extern "C" __global__ void bounded_write(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i;
}

// The seed's misaligned view of dynamic shared memory: floats starting at byte 254.
extern "C" __global__ void misaligned_shared(float *out) {
    extern __shared__ float dyn[];
    short *halves = (short *)dyn;
    float *floats = (float *)&halves[127];
    floats[threadIdx.x] = 2.0f * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = floats[threadIdx.x];
}

extern "C" __global__ void aligned_shared(float *out) {
    extern __shared__ float dyn[];
    short *halves = (short *)dyn;
    float *floats = (float *)&halves[128];
    floats[threadIdx.x] = 2.0f * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = floats[threadIdx.x];
}

// Lanes of one warp exchange through shared memory without __syncwarp(): intra-warp hazards on sm_70+.
extern "C" __global__ void warp_exchange_race(const int *in, int *out) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = in[t];
    out[t] = s[t ^ 1];
}

extern "C" __global__ void warp_exchange_synced(const int *in, int *out) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncwarp();
    out[t] = s[t ^ 1];
}

// Every thread adds into one global word without atomics: hazards between warps of the CTA.
extern "C" __global__ void global_sum_race(const int *in, int *sum) {
    *sum += in[threadIdx.x];
}

extern "C" __global__ void global_sum_atomic(const int *in, int *sum) {
    atomicAdd(sum, in[threadIdx.x]);
}

// A full-warp shuffle called by half a warp, and a __syncwarp mask that leaves out the caller.
extern "C" __global__ void shfl_in_divergent_if(const int *in, int *out) {
    int t = threadIdx.x;
    int v = in[t];
    if ((t & 31) < 16) v = __shfl_sync(0xffffffff, v, 0);
    out[t] = v;
}

extern "C" __global__ void shfl_converged(const int *in, int *out) {
    int t = threadIdx.x;
    int v = __shfl_sync(0xffffffff, in[t], 0);
    out[t] = v;
}

extern "C" __global__ void syncwarp_without_caller(int *out) {
    int t = threadIdx.x;
    __syncwarp(0xfffffffeu);
    out[t] = t;
}

extern "C" __global__ void vote_names_exited_lanes(const int *in, int *out) {
    int t = threadIdx.x;
    if ((t & 31) >= 16) return;
    out[t] = __ballot_sync(0xffffffff, in[t] > 0);
}

// bar.sync with a thread count from the launch: 48 is not a multiple of the warp size (ptxas
// rejects such a constant, so it comes in as a parameter).
extern "C" __global__ void bar_count(int *out, int count) {
    asm volatile("bar.sync 1, %0;" :: "r"(count));
    out[threadIdx.x] = threadIdx.x;
}

// Float atomics in schedule order: the sum's rounding depends on which warp adds first.
extern "C" __global__ void float_atomic_sum(const float *in, float *sum) {
    atomicAdd(sum, in[blockIdx.x * blockDim.x + threadIdx.x]);
}

extern "C" __global__ void int_atomic_sum(const int *in, int *sum) {
    atomicAdd(sum, in[blockIdx.x * blockDim.x + threadIdx.x]);
}

// Warp 0 waits at one __syncthreads(), warp 1 at another: both are barrier 0, so the block passes,
// but the threads did not execute the same barrier instruction.
extern "C" __global__ void barrier_in_both_branches(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    if (t < 32) {
        s[t] = t;
        __syncthreads();
        out[t] = s[t + 32];
    } else {
        s[t] = -t;
        __syncthreads();
        out[t] = s[t - 32];
    }
}

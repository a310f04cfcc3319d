// The wrong reduction from the end of "cuda学习3-共享内存和同步" (shared-memory-and-sync.zh.txt):
// __syncthreads() sits inside the divergent if, so only the threads with cacheIndex < i reach
// it. Pre-Volta GPUs hang here; from sm_70 on a barrier waits per thread and threads that have
// exited count as arrived, so the launch completes with the right sum.

#define threadsPerBlock 256

__global__ void dot(float *a, float *b, float *c, int N)
{
    __shared__ float cache[threadsPerBlock];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIndex = threadIdx.x;

    float temp = 0;
    while (tid < N) {
        temp += a[tid] * b[tid];
        tid += blockDim.x * gridDim.x;
    }

    cache[cacheIndex] = temp;
    __syncthreads();

    int i = blockDim.x / 2;
    while (i != 0) {
        if (cacheIndex < i)
        {
            cache[cacheIndex] += cache[cacheIndex + i];
            __syncthreads();
        }
        i /= 2;
    }

    if (cacheIndex == 0)
        c[blockIdx.x] = cache[0];
}

// Memory fences, volatile flags and atomics. Every kernel's final memory contents are fully
// determined (no result depends on the order in which threads win an atomic or a lock).

#define ITEMS 32

// Warp 0 produces ITEMS values in global memory, fences, then raises a flag; warp 1 spins on
// the volatile flag and reads the values in reverse. Launch with 64 threads.
__global__ void producerConsumerGlobal(int *data, volatile int *flag, int *out)
{
    int lane = threadIdx.x & 31;
    if (threadIdx.x < 32) {
        data[lane] = lane * lane + 7;
        __threadfence();
        __syncwarp();
        if (lane == 0)
            atomicExch((int *)flag, 1);
    } else {
        while (*flag == 0)
            ;
        __threadfence();
        out[lane] = ((volatile int *)data)[ITEMS - 1 - lane];
    }
}

// The same handshake through shared memory with __threadfence_block(). Launch with 64 threads.
__global__ void producerConsumerShared(int *out)
{
    __shared__ int items[ITEMS];
    __shared__ volatile int ready;
    int lane = threadIdx.x & 31;
    if (threadIdx.x == 0)
        ready = 0;
    __syncthreads();
    if (threadIdx.x < 32) {
        ((volatile int *)items)[lane] = 3 * lane + 1;
        __threadfence_block();
        __syncwarp();
        if (lane == 0)
            ready = 1;
    } else {
        while (ready == 0)
            ;
        __threadfence_block();
        out[lane] = ((volatile int *)items)[ITEMS - 1 - lane];
    }
}

// Every lane of one warp takes an atomicCAS spin lock in turn and updates counter without
// atomics inside the critical section. Before sm_70 the lanes of a warp could not leave the
// spinning branch to release the lock and this livelocks; independent thread scheduling lets
// it complete. Launch with 32 threads.
__global__ void spinLockWarp(int *lock, volatile int *counter)
{
    while (atomicCAS(lock, 0, 1) != 0)
        ;
    int seen = *counter;
    *counter = seen + threadIdx.x + 1;
    __threadfence();
    atomicExch(lock, 0);
}

// counters: [0] atomicInc limit 16, [1] atomicDec limit 10, [2] atomicInc limit 5 starting above
// it, [3] atomicDec limit 7 starting at 0; each is applied once by every thread.
__global__ void incDecWrap(unsigned int *counters)
{
    atomicInc(&counters[0], 16);
    atomicDec(&counters[1], 10);
    atomicInc(&counters[2], 5);
    atomicDec(&counters[3], 7);
}

// extremes: [0] signed min, [1] signed max, [2] unsigned min, [3] unsigned max of values.
__global__ void minMax(const int *values, int *extremes)
{
    int v = values[blockIdx.x * blockDim.x + threadIdx.x];
    atomicMin(&extremes[0], v);
    atomicMax(&extremes[1], v);
    atomicMin((unsigned int *)&extremes[2], (unsigned int)v);
    atomicMax((unsigned int *)&extremes[3], (unsigned int)v);
}

// Sums whose value does not depend on the order of the additions: 64-bit integers, and floats
// and doubles that are small multiples of a power of two.
__global__ void wideAndFloatAdd(const float *halves, unsigned long long *sum64, float *sumFloat,
                                double *sumDouble)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(sum64, (1ull << 33) + i);
    atomicAdd(sumFloat, halves[i]);
    atomicAdd(sumDouble, (double)halves[i] * 0.25);
}

// Each thread swaps its own slot, so the returned old values are determined.
__global__ void exchangeSlots(int *slots, int *old)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    old[i] = atomicExch(&slots[i], 3 * i + 1);
}

// An atomic whose result is used next to atomics whose result is dropped. nvcc writes atom
// for both (ptxas picks ATOM or RED in SASS), so the PTX red form is written out once here.
__global__ void atomVsRed(int *perThread, int *returned, unsigned int *tallies)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    returned[i] = atomicAdd(&perThread[i], i + 1);
    atomicAdd(&tallies[i % 4], 1);
    atomicOr(&tallies[4], 1u << (i % 32));
    atomicXor(&tallies[5], (unsigned int)i * 2654435761u);
    atomicAnd(&tallies[6], ~(1u << (i % 29)));
    atomicSub(&tallies[7], (unsigned int)i);
    asm volatile("red.global.add.u32 [%0], %1;" :: "l"(&tallies[8]), "r"(i + 1) : "memory");
}

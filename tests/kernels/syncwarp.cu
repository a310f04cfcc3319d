// __syncwarp reached by the lanes of a warp at different times: lane 0 takes a spin lock and works in a
// loop while the other lanes already wait at __syncwarp (bar.warp.sync -1). From sm_70 they wait for it,
// so every lane reads the whole count after the __syncwarp.
extern "C" __global__ void lock_then_syncwarp(int *lock, int *counter, int *out) {
    int lane = threadIdx.x & 31;
    if (lane == 0) {
        while (atomicCAS(lock, 0, 1) != 0) { }
#pragma unroll 1
        for (int i = 0; i < 200; ++i) {
            atomicAdd(counter, 1);
        }
        atomicExch(lock, 0);
    }
    __syncwarp();
    out[threadIdx.x] = atomicAdd(counter, 0);
}

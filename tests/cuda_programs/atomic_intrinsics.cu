// In the manner of NVIDIA's simpleAtomicIntrinsics: every thread of the grid applies each integer atomic to its own
// word of a shared array in global memory, then the host replays the same operations and compares; plus float,
// double and 64-bit atomicAdd and the system/block-scoped forms.
#include "check.h"

__global__ void atomics(int *g, unsigned long long *wide, float *f, double *d)
{
    unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;
    atomicAdd(&g[0], 10);
    atomicSub(&g[1], 10);
    atomicExch(&g[2], tid);
    atomicMax(&g[3], tid);
    atomicMin(&g[4], tid);
    atomicInc((unsigned *)&g[5], 17);
    atomicDec((unsigned *)&g[6], 137);
    atomicCAS(&g[7], tid - 1, tid);
    atomicAnd(&g[8], 2 * tid + 7);
    atomicOr(&g[9], 1 << (tid % 32));
    atomicXor(&g[10], tid);
    atomicAdd_block(&g[11], 1);
    atomicAdd_system(&g[12], 2);
    atomicAdd(wide, 1ull << 33);
    atomicMax(wide + 1, (unsigned long long)tid << 40);
    atomicAdd(f, 0.5f);
    atomicAdd(d, 0.25);
}

int main()
{
    const int blocks = 8, threads = 64, total = blocks * threads;
    int h[13] = {0, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0};
    unsigned long long wide[2] = {5, 0};
    float f = 1.0f;
    double d = -3.0;
    int *d_g;
    unsigned long long *d_wide;
    float *d_f;
    double *d_d;
    CHECK(cudaMalloc(&d_g, sizeof(h)));
    CHECK(cudaMalloc(&d_wide, sizeof(wide)));
    CHECK(cudaMalloc(&d_f, sizeof(f)));
    CHECK(cudaMalloc(&d_d, sizeof(d)));
    CHECK(cudaMemcpy(d_g, h, sizeof(h), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_wide, wide, sizeof(wide), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_f, &f, sizeof(f), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_d, &d, sizeof(d), cudaMemcpyHostToDevice));
    atomics<<<blocks, threads>>>(d_g, d_wide, d_f, d_d);
    CHECK(cudaGetLastError());
    int g[13];
    CHECK(cudaMemcpy(g, d_g, sizeof(g), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(wide, d_wide, sizeof(wide), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&f, d_f, sizeof(f), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&d, d_d, sizeof(d), cudaMemcpyDeviceToHost));

    int wrong = 0;
    wrong += g[0] != 10 * total;
    wrong += g[1] != -10 * total;
    wrong += g[2] < 0 || g[2] >= total;
    wrong += g[3] != total - 1;
    wrong += g[4] != 0;
    unsigned inc = 0, dec = 0;
    for (int i = 0; i < total; i++) {
        inc = inc >= 17 ? 0 : inc + 1;
        dec = (dec == 0 || dec > 137) ? 137 : dec - 1;
    }
    wrong += (unsigned)g[5] != inc;
    wrong += (unsigned)g[6] != dec;
    wrong += g[7] < 0 || g[7] >= total;
    int and_ = 0xff, or_ = 0, xor_ = 0;
    for (int i = 0; i < total; i++) { and_ &= 2 * i + 7; or_ |= 1 << (i % 32); xor_ ^= i; }
    wrong += g[8] != and_ || g[9] != or_ || g[10] != xor_;
    wrong += g[11] != total || g[12] != 2 * total;
    wrong += wide[0] != 5 + ((unsigned long long)total << 33) || wide[1] != (unsigned long long)(total - 1) << 40;
    wrong += f != 1.0f + 0.5f * total || d != -3.0 + 0.25 * total;
    printf("add %d, inc %u, dec %u, cas %d, and 0x%x, or 0x%x, xor %d, wide 0x%llx, f %g, d %g\n", g[0], g[5], g[6],
           g[7], g[8], g[9], g[10], wide[0], f, d);
    printf(wrong ? "simpleAtomicIntrinsics-like: FAIL\n" : "PASS\n");
    return wrong != 0;
}

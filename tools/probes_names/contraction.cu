// Does the driver's JIT contract like ptxas -O3, and not at all for `.target ..., debug` (nvcc -G)?
// contraction.ptx: nvcc -ptx -arch=sm_90 -O3; contraction_debug.ptx: nvcc -ptx -arch=sm_90 -G.
// The mul and the add/sub are inline PTX, so nvcc passes them to ptxas unfused at any optimisation level.
__global__ void mul_then_add(float* out, const float* a, const float* b, const float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float product, sum, difference;
    asm("mul.f32 %0, %1, %2;" : "=f"(product) : "f"(a[i]), "f"(b[i]));
    asm("add.f32 %0, %1, %2;" : "=f"(sum) : "f"(product), "f"(c[i]));
    asm("sub.f32 %0, %1, %2;" : "=f"(difference) : "f"(c[i]), "f"(product));
    out[2 * i] = sum;
    out[2 * i + 1] = difference;
}

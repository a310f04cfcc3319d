// __managed__ variables (`.global .attribute(.managed)` in PTX) read and written by a kernel.
__managed__ int counter = 5;
__managed__ float scale[4] = {0.5f, 1.5f, -2.0f, 4.0f};

__global__ void use_managed(float* out, const float* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = x[i] * scale[i % 4] + counter;
    if (i == 0) counter += 1;
}

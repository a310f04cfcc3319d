// 1D convolution with a 9-tap filter held in __constant__ memory and set from the host: every
// thread of a warp reads the same coefficient at the same time (a constant-cache broadcast).
// Samples outside [0, n) count as zero.

#define TAPS 9
#define RADIUS (TAPS / 2)

__constant__ float coef[TAPS];

__global__ void convolve(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float sum = 0.0f;
    for (int k = 0; k < TAPS; ++k) {
        int j = i + k - RADIUS;
        if (j >= 0 && j < n)
            sum += coef[k] * in[j];
    }
    out[i] = sum;
}

/* gpuemu arithmetic accelerators: element-wise fused multiply-add with one rounding (C99 fmaf/fma). */
#include <math.h>
#include <stdint.h>

#include "_arith.h"

void ga_fma_f32(const float *a, int64_t stride_a, const float *b, int64_t stride_b, const float *c,
                int64_t stride_c, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = fmaf(a[i * stride_a], b[i * stride_b], c[i * stride_c]);
}

void ga_fma_f64(const double *a, int64_t stride_a, const double *b, int64_t stride_b, const double *c,
                int64_t stride_c, double *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = fma(a[i * stride_a], b[i * stride_b], c[i * stride_c]);
}

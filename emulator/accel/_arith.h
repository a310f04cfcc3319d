/* gpuemu arithmetic accelerators (see _arith.c). */
#ifndef GPUEMU_ARITH_H
#define GPUEMU_ARITH_H

#include <stdint.h>

void ga_fma_f32(const float *a, int64_t stride_a, const float *b, int64_t stride_b, const float *c,
                int64_t stride_c, float *out, int64_t n);
void ga_fma_f64(const double *a, int64_t stride_a, const double *b, int64_t stride_b, const double *c,
                int64_t stride_c, double *out, int64_t n);

#endif

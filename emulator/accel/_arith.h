/* gpuemu's C accelerators: arithmetic (_arith.c), lane scans for the schedulers (_lanes.c) and the random schedule's
   turns (_turns.c). */
#ifndef GPUEMU_ARITH_H
#define GPUEMU_ARITH_H

#include <stdint.h>

void ga_fma_f32(const float *a, int64_t stride_a, const float *b, int64_t stride_b, const float *c,
                int64_t stride_c, float *out, int64_t n);
void ga_fma_f64(const double *a, int64_t stride_a, const double *b, int64_t stride_b, const double *c,
                int64_t stride_c, double *out, int64_t n);

void gl_warp_lowest(const int32_t *pcs, int64_t warps, int32_t *lowest);
int64_t gl_lanes_at(const int32_t *pcs, const int64_t *warps, int64_t n_warps, int32_t pc, int64_t *out);
int64_t gl_warps_in(const int64_t *lanes, int64_t n);
void gl_assign(int32_t *values, const int64_t *lanes, int64_t n, int32_t value);
int64_t gl_warp_starts(const int32_t *pcs, int64_t warps, int32_t *lowest, int64_t *ready, uint8_t *seen,
                       int64_t limit, int64_t *summary, int64_t *behind);
/* a random schedule's state over one batch (random_turn in emulator/accel/__init__.py) */
typedef struct {
    const int32_t *pcs;
    int64_t warps;
    int32_t *lowest;
    int64_t *ready;
    uint8_t *seen;
    int64_t limit;
    int64_t *summary;
    int64_t *behind;
    const double *uniforms;
    int64_t *cursor;
    const double *longer;
    int64_t max_turn;
    const int64_t *until_sensitive;
    const double *chances;
    int64_t *result;
} gl_turns;
int64_t gl_random_turn(gl_turns *turns, int64_t *lanes);

#endif

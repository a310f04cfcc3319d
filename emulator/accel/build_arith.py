"""cffi (API mode) build of the C accelerators (arithmetic and lane scans); `python -m emulator.accel.build_arith` builds in place."""
from __future__ import annotations

import os
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_NAME = "emulator.accel._gpuemu_arith"
DECLARATIONS = """
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
"""


def make_builder(source_dir: str) -> FFI:
    builder = FFI()
    builder.cdef(DECLARATIONS)
    sources = [os.path.join(source_dir, name) for name in ("_arith.c", "_lanes.c")]
    builder.set_source(MODULE_NAME, '#include "_arith.h"', sources=sources,
                       include_dirs=[source_dir], extra_compile_args=["-O2", "-fno-fast-math", "-ffp-contract=off"],
                       libraries=[] if sys.platform == "win32" else ["m"])
    return builder


ffibuilder = make_builder(os.path.join("emulator", "accel"))


if __name__ == "__main__":
    from emulator.base import cbuild  # setup.py runs this file on its own, where the package is not importable
    print(cbuild.build_in_place(make_builder, HERE, "_gpuemu_arith"))

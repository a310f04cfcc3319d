"""cffi (API mode) build of the arithmetic accelerators; `python -m emulator.accel.build_arith` builds in place."""
from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_NAME = "emulator.accel._gpuemu_arith"
DECLARATIONS = """
void ga_fma_f32(const float *a, int64_t stride_a, const float *b, int64_t stride_b, const float *c,
                int64_t stride_c, float *out, int64_t n);
void ga_fma_f64(const double *a, int64_t stride_a, const double *b, int64_t stride_b, const double *c,
                int64_t stride_c, double *out, int64_t n);
"""


def make_builder(source_dir: str) -> FFI:
    builder = FFI()
    builder.cdef(DECLARATIONS)
    builder.set_source(MODULE_NAME, '#include "_arith.h"', sources=[os.path.join(source_dir, "_arith.c")],
                       include_dirs=[source_dir], extra_compile_args=["-O2", "-fno-fast-math", "-ffp-contract=off"],
                       libraries=[] if sys.platform == "win32" else ["m"])
    return builder


ffibuilder = make_builder(os.path.join("emulator", "accel"))


def build_in_place() -> str:
    with tempfile.TemporaryDirectory(prefix="gpuemu-arith-") as scratch:
        previous = os.getcwd()
        os.chdir(scratch)
        try:
            make_builder(HERE).compile(tmpdir=scratch, verbose=False)
        finally:
            os.chdir(previous)
        built = [p for p in glob.glob(os.path.join(scratch, "emulator", "accel", "_gpuemu_arith*"))
                 if not p.endswith((".c", ".o"))]
        target = os.path.join(HERE, os.path.basename(built[0]))
        shutil.copy2(built[0], target + ".new")
        os.replace(target + ".new", target)
        # Python prefers a cpython-3XY module over an abi3 one, so drop other builds that could shadow this.
        for other in glob.glob(os.path.join(HERE, "_gpuemu_arith*.so")):
            if other != target:
                os.unlink(other)
        return target


if __name__ == "__main__":
    print(build_in_place())

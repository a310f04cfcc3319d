"""cffi (API mode) build of the C accelerators (arithmetic, lane scans, random turns); `python -m
emulator.accel.build_arith` builds in place."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_NAME = "emulator.accel._gpuemu_arith"
#: the functions _arith.h declares, as cffi reads them (its preprocessor lines left out)
DECLARATIONS = "\n".join(line for line in Path(HERE, "_arith.h").read_text(encoding="utf-8").splitlines()
                         if not line.startswith("#"))


def make_builder(source_dir: str) -> FFI:
    builder = FFI()
    builder.cdef(DECLARATIONS)
    sources = [os.path.join(source_dir, name) for name in ("_arith.c", "_lanes.c", "_turns.c")]
    builder.set_source(MODULE_NAME, '#include "_arith.h"', sources=sources,
                       include_dirs=[source_dir], extra_compile_args=["-O2", "-fno-fast-math", "-ffp-contract=off"],
                       libraries=[] if sys.platform == "win32" else ["m"])
    return builder


ffibuilder = make_builder(os.path.join("emulator", "accel"))


if __name__ == "__main__":
    from emulator.base import cbuild  # setup.py runs this file on its own, where the package is not importable
    print(cbuild.build_in_place(make_builder, HERE, "_gpuemu_arith"))

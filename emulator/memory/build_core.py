"""cffi (API mode) build of the C memory core; `python -m emulator.memory.build_core` builds it in place."""
from __future__ import annotations

import os
import re
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_NAME = "emulator.memory._gpuemu_core"
COMPILE_ARGS = ["-O2", "-fno-fast-math", "-fno-strict-aliasing"]


def _declarations() -> str:
    """The header as cffi's cdef can read it: comments and include guards dropped."""
    with open(os.path.join(HERE, "_core.h"), encoding="utf-8") as header:
        text = re.sub(r"/\*.*?\*/", "", header.read(), flags=re.S)
    kept = []
    for line in text.splitlines():
        constant = re.match(r"#define\s+(GM_\w+)\s+(-?\d+)\s*$", line)
        if constant and constant.group(2).startswith("-"):
            kept.append(f"static const int {constant.group(1)};")
        elif constant or not line.startswith("#"):
            kept.append(line)
    return "\n".join(kept)


def make_builder(source_dir: str) -> FFI:
    """An FFI builder whose C sources are named relative to the current directory via source_dir."""
    builder = FFI()
    builder.cdef(_declarations())
    builder.set_source(MODULE_NAME, '#include "_core.h"', sources=[os.path.join(source_dir, "_core.c")],
                       include_dirs=[source_dir], extra_compile_args=COMPILE_ARGS,
                       libraries=[] if sys.platform == "win32" else ["m"])
    return builder


# setup.py runs from the project root, where setuptools wants relative source paths.
ffibuilder = make_builder(os.path.join("emulator", "memory"))


if __name__ == "__main__":
    from emulator.base import cbuild  # setup.py runs this file on its own, where the package is not importable
    print(cbuild.build_in_place(make_builder, HERE, "_gpuemu_core"))

"""`python -m emulator.numba script.py [args]` (or `-m module [args]`): run a numba.cuda program on gpuemu."""
from __future__ import annotations

import os
import runpy
import sys

from emulator.base.errors import GpuemuError

USAGE = "usage: python -m emulator.numba script.py [args...] | -m module [args...]"


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        target, as_module = argv[1], True
        sys.argv = [argv[1]] + argv[2:]
    else:
        target, as_module = argv[0], False
        if not os.path.isfile(target):
            print(f"gpuemu: error: {target}: no such file", file=sys.stderr)
            return 2
        sys.argv = list(argv)
    from emulator.numba import install
    try:
        install()
    except GpuemuError as error:
        print(f"gpuemu: error: {error}", file=sys.stderr)
        return error.exit_status
    if as_module:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Building a cffi C extension in place (next to its package's sources), for `python -m ...build_*` and tests."""
from __future__ import annotations

import glob
import os
import shutil
import tempfile
from typing import Callable


def build_in_place(make_builder: Callable[[str], object], here: str, stem: str) -> str:
    """Compile make_builder(here) in a scratch directory and put the module beside its sources; returns its path.

    The builder names its module emulator.<package>.<stem>; any other build of it (a cpython-3XY module shadows
    an abi3 one) is removed, and the new one is renamed into place so that a loaded copy stays intact."""
    with tempfile.TemporaryDirectory(prefix=f"gpuemu-{stem}-") as scratch:
        previous = os.getcwd()
        os.chdir(scratch)
        try:
            make_builder(here).compile(tmpdir=scratch, verbose=False)
        finally:
            os.chdir(previous)
        built = [path for path in glob.glob(os.path.join(scratch, "emulator", os.path.basename(here), stem + "*"))
                 if not path.endswith((".c", ".o"))]
        if len(built) != 1:
            raise RuntimeError(f"expected one built module, found {built}")
        target = os.path.join(here, os.path.basename(built[0]))
        shutil.copy2(built[0], target + ".new")
        os.replace(target + ".new", target)
        for other in glob.glob(os.path.join(here, stem + "*.so")):
            if other != target:
                os.unlink(other)
        return target

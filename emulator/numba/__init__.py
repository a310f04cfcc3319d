"""numba.cuda on gpuemu, unmodified: `python -m emulator.numba script.py [args]` runs a script, and
`pytest -p emulator.numba` a test suite, with numba-cuda driving gpuemu's libcuda.so.1 (docs/clients.md).

install() arranges it in this process before numba looks for a driver: gpuemu's libcuda.so.1 (from `gpuemu libdir`)
is loaded first, so that numba-cuda's cuda.bindings finds it already loaded and uses it (LD_LIBRARY_PATH names its
directory too, for child processes), and numba-cuda's link step hands gpuemu PTX (emulator.numba.linker).
"""
from __future__ import annotations

import ctypes
import os
import sys

from emulator.base.errors import UsageError

_INSTALLED = []


def library_directory() -> str:
    from emulator.cudart.libdir import library_directory as built
    directory, failed = built()
    if "libcuda.so.1" in failed:
        raise UsageError(f"gpuemu's libcuda.so.1 could not be built: {failed['libcuda.so.1']}")
    return directory


def install() -> None:
    """Make numba-cuda in this process run on gpuemu; call before numba.cuda starts its driver (idempotent)."""
    if _INSTALLED:
        return
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        raise UsageError("NUMBA_ENABLE_CUDASIM is set: numba would run its own simulator, not gpuemu; unset it")
    already = sys.modules.get("numba.cuda.cudadrv.driver")
    driver = getattr(already, "driver", None)
    # numba's Driver looks for libcuda when numba.cuda is imported (pytest --pyargs numba.cuda.tests... imports it
    # before any plugin runs) and, finding none, marks itself done; one that never reached cuInit looks again
    state = vars(driver) if driver is not None else {}
    found_none = state.get("is_initialized") and state.get("pid", 0) is None and "lib" not in state
    if state.get("is_initialized") and not found_none:
        raise UsageError("numba.cuda already started its CUDA driver: install gpuemu before numba.cuda is used "
                         "(python -m emulator.numba script.py, or pytest -p emulator.numba)")
    directory = library_directory()
    paths = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join([directory] + [p for p in paths if p != directory])
    ctypes.CDLL(os.path.join(directory, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)
    try:
        from emulator.numba import linker
    except ImportError as error:
        raise UsageError(f"numba-cuda is not installed ({error}): pip install 'gpuemu[numba]'") from None
    try:
        linker.install()
    except ImportError as error:
        raise UsageError(f"numba-cuda is not installed ({error}): pip install 'gpuemu[numba]'") from None
    if found_none:
        driver.__init__()
    _INSTALLED.append(directory)


def pytest_configure(config) -> None:
    """`pytest -p emulator.numba`: gpuemu under numba.cuda before any test module imports it."""
    import pytest
    try:
        install()
    except UsageError as error:
        raise pytest.UsageError(f"emulator.numba: {error}") from None

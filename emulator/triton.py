"""Run Triton kernels without a GPU: the PTX of triton.compile() launched with Triton's own conventions.

    compiled = triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32))
    emulator.triton.launch(compiled, grid=(programs,), args=[x, y, out, n])

Triton launches a grid of programs with num_warps × 32 threads each, asks for the metadata's
dynamic shared memory (opting in above 48 KB, as Triton's launcher does), and appends two pointers to every kernel's parameter list (a global and a
profile scratch buffer); gpuemu allocates those buffers when the metadata asks for them and frees them
after the launch.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from emulator.runtime.module import Device, Module
from emulator.runtime.arguments import DevicePointer, dim3
from emulator.runtime.launch import LaunchStats

_MODULES = {}


def _scratch(device: Device, size: int, align: int, programs: int):
    if not size:
        return np.uint64(0)
    total = size * programs
    address = device.memory.alloc(total, align=max(align, 16), name="triton scratch")
    device.memory.write(address, np.zeros(total, dtype=np.uint8))
    return DevicePointer(address)


def launch(compiled, grid: Sequence[int], args: Sequence, *, device: Optional[Device] = None,
           **options) -> LaunchStats:
    """Launch a triton.compile() result (anything with .asm["ptx"] and .metadata) on gpuemu."""
    metadata = compiled.metadata
    ptx = compiled.asm["ptx"]
    key = (ptx, id(device))
    module = _MODULES.get(key)
    if module is None:
        module = Module(ptx, f"<triton {metadata.name}>", device)
        _MODULES[key] = module
    grid = dim3(grid, "grid")
    programs = max(grid[0] * grid[1] * grid[2], 1)
    args = list(args)
    kernel = module.kernel(metadata.name)
    trailing = len(kernel.params) - len(args)
    # Triton's launcher opts in to dynamic shared memory beyond 48 KB (cudaFuncSetAttribute) itself
    options.setdefault("max_dynamic_shared", metadata.shared)
    scratch = []
    try:
        for kind in ("global", "profile"):
            scratch.append(_scratch(module.device, getattr(metadata, f"{kind}_scratch_size", 0),
                                    getattr(metadata, f"{kind}_scratch_align", 1), programs))
        return kernel.launch(grid, (metadata.num_warps * 32, 1, 1), args + scratch[:max(trailing, 0)],
                             metadata.shared, **options)
    finally:
        for pointer in scratch:
            if isinstance(pointer, DevicePointer):
                module.device.memory.free(pointer)

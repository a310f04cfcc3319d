"""CuPy's RawModule and RawKernel over gpuemu: CUDA C++ compiled to PTX, kernels called with numpy arrays."""
from __future__ import annotations

from typing import Optional, Sequence

from emulator.base.errors import UsageError
from emulator.runtime.module import load_cuda


class RawModule:
    """CuPy's RawModule over gpuemu: RawModule(code=...) or RawModule(path=...), then get_function(name)."""

    def __init__(self, code: Optional[str] = None, *, path=None, options: Sequence[str] = (), backend=None,
                 name_expressions=None, device=None, **_ignored):
        if (code is None) == (path is None):
            raise UsageError("RawModule takes either code=... or path=...")
        if path is not None:
            self.module = load_cuda(path, device=device, options=options, from_file=True, compiler=backend)
        else:
            self.module = load_cuda(code, device=device, options=options, compiler=backend)
        self.code, self.path, self.options = code, path, tuple(options)

    def get_function(self, name: str) -> "RawKernel":
        return RawKernel._from_kernel(self.module.kernel(name))


class RawKernel:
    """CuPy's RawKernel over gpuemu: RawKernel(code, name)((grid), (block), (args), shared_mem=0) with numpy
    arrays as device buffers (copied in and written back)."""

    def __init__(self, code: str, name: str, options: Sequence[str] = (), backend=None, *, device=None,
                 **_ignored):
        self.code, self.name, self.options = code, name, tuple(options)
        self.kernel = load_cuda(code, device=device, options=options, compiler=backend).kernel(name)

    @classmethod
    def _from_kernel(cls, kernel) -> "RawKernel":
        raw = cls.__new__(cls)
        raw.code, raw.name, raw.options, raw.kernel = None, kernel.name, (), kernel
        return raw

    def __call__(self, grid, block, args, *, shared_mem: int = 0, **options):
        return self.kernel.launch(grid, block, args, shared=shared_mem, **options)

"""Optional C accelerators for semantics numpy lacks (fused multiply-add); None when not built."""
from __future__ import annotations

import numpy as np

try:
    from emulator.accel._gpuemu_arith import ffi as _ffi, lib as _lib
except ImportError:
    _ffi = _lib = None


def _fma(dtype, function, ctype):
    def fused(a, b, c):
        shape = np.broadcast(a, b, c).shape
        a, b, c = (np.ascontiguousarray(x, dtype=dtype).reshape(-1) for x in (a, b, c))
        n = max(a.size, b.size, c.size)
        out = np.empty(n, dtype=dtype)
        strides = [0 if x.size == 1 else 1 for x in (a, b, c)]
        if any(x.size not in (1, n) for x in (a, b, c)):
            raise ValueError("fma operands must be scalars or of one length")
        pointer = lambda x: _ffi.from_buffer(f"{ctype}[]", x)
        function(pointer(a), strides[0], pointer(b), strides[1], pointer(c), strides[2],
                 _ffi.from_buffer(f"{ctype}[]", out), n)
        return out[0] if shape == () else out.reshape(shape)
    return fused


fma_f32 = _fma(np.float32, _lib.ga_fma_f32, "float") if _lib is not None else None
fma_f64 = _fma(np.float64, _lib.ga_fma_f64, "double") if _lib is not None else None


def install() -> None:
    """Give isa's round-to-nearest f32/f64 fma the native fused multiply-add, when the helper was built."""
    from isa import fp
    if fma_f32 is not None:
        fp.use_native_fma("f32", fma_f32)
        fp.use_native_fma("f64", fma_f64)

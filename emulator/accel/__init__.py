"""Optional C accelerators: semantics numpy lacks (fused multiply-add; None when not built), and the schedulers' lane
scans over a batch's per-thread pcs (numpy when not built, with the same results)."""
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


def warp_lowest(pcs: np.ndarray) -> np.ndarray:
    """Per warp of 32 threads, the lowest of their pcs (int32)."""
    if _lib is None:
        return pcs.reshape(-1, 32).min(axis=1)
    lowest = np.empty(len(pcs) // 32, dtype=np.int32)
    _lib.gl_warp_lowest(_ffi.from_buffer("int32_t[]", pcs), len(lowest), _ffi.from_buffer("int32_t[]", lowest))
    return lowest


class WarpScan:
    """Buffers for warp_starts over a batch of `warps` warps whose pcs are below `limit`, kept by the scheduler that
    asks (what warp_starts returns lives in them until its next call)."""

    def __init__(self, warps: int, limit: int):
        self.lowest = np.empty(warps, dtype=np.int32)
        self.ready = np.empty(warps, dtype=np.int64)
        self.behind = np.empty(warps, dtype=np.int64)
        self.summary = np.empty(4, dtype=np.int64)
        self.seen = np.zeros(limit, dtype=np.uint8)
        if _lib is not None:
            self.pointers = (_ffi.from_buffer("int32_t[]", self.lowest), _ffi.from_buffer("int64_t[]", self.ready),
                             _ffi.from_buffer("uint8_t[]", self.seen), limit,
                             _ffi.from_buffer("int64_t[]", self.summary), _ffi.from_buffer("int64_t[]", self.behind))


def warp_starts(pcs: np.ndarray, scan: WarpScan, none: int):
    """What a scheduler asks first of a batch's per-thread pcs (each below the scan's limit, or none for a thread that
    runs no more): (per warp its lowest pc, the warps that still run (ascending), how many distinct lowest pcs those
    have, the lowest two of them (none for a missing second), the warps whose lowest pc is the lowest); None when no
    warp runs."""
    if _lib is None:
        lowest = pcs.reshape(-1, 32).min(axis=1)
        ready = np.flatnonzero(lowest != none)
        if len(ready) == 0:
            return None
        ready_pcs = lowest[ready]
        starts = np.flatnonzero(np.bincount(ready_pcs))
        return (lowest, ready, len(starts), int(starts[0]), int(starts[1]) if len(starts) > 1 else none,
                ready[ready_pcs == starts[0]])
    count = _lib.gl_warp_starts(_ffi.from_buffer("int32_t[]", pcs), len(scan.lowest), *scan.pointers)
    if count < 0:
        raise ValueError(f"a pc outside 0..{len(scan.seen) - 1} and not {none}")
    if count == 0:
        return None
    distinct, first, second, n_behind = scan.summary.tolist()
    return scan.lowest, scan.ready[:count], distinct, first, min(second, none), scan.behind[:n_behind]


def lanes_at(pcs: np.ndarray, warps: np.ndarray, pc: int, none: int) -> tuple:
    """(the threads of warps, ascending int64 indices, whose pc is pc; the lowest pc of their other threads, none when
    there is no other). warps: ascending warp indices."""
    if _lib is None:
        lanes = (warps[:, None] * 32 + np.arange(32, dtype=np.int64)).reshape(-1)
        at_pc = pcs[lanes]
        at = at_pc == pc
        return lanes[at], int(np.min(at_pc, where=~at, initial=none))
    warps = np.ascontiguousarray(warps, dtype=np.int64)
    room = len(warps) * 32
    lanes = np.empty(room + 1, dtype=np.int64)
    count = _lib.gl_lanes_at(_ffi.from_buffer("int32_t[]", pcs), _ffi.from_buffer("int64_t[]", warps), len(warps),
                             pc, _ffi.from_buffer("int64_t[]", lanes))
    return lanes[:count], min(int(lanes[room]), none)


def warps_in(lanes: np.ndarray) -> int:
    """How many warps the ascending int64 thread indices lanes touch."""
    if _lib is None or len(lanes) < 64:
        if len(lanes) == 0:
            return 0
        warps = lanes >> 5
        return int(np.count_nonzero(warps[1:] != warps[:-1])) + 1
    return int(_lib.gl_warps_in(_ffi.from_buffer("int64_t[]", lanes), len(lanes)))


def assign(values: np.ndarray, lanes: np.ndarray, value: int) -> None:
    """values[lanes] = value, for int32 values and int64 lanes (as every lane selection is)."""
    if _lib is None or len(lanes) < 64:
        values[lanes] = value
        return
    _lib.gl_assign(_ffi.from_buffer("int32_t[]", values), _ffi.from_buffer("int64_t[]", lanes), len(lanes), value)


def install() -> None:
    """Give isa's round-to-nearest f32/f64 fma the native fused multiply-add, when the helper was built."""
    from isa import fp
    if fma_f32 is not None:
        fp.use_native_fma("f32", fma_f32)
        fp.use_native_fma("f64", fma_f64)

"""A drop-in for GPUOcelot's `ptx_run`, the entry point tinygrad's mock CUDA device calls.

    ptx_run(src, nargs, args, lx, ly, lz, gx, gy, gz, shared)

runs the single kernel in `src` over host buffers, as GPUOcelot does, so that a project can swap
`gpuocelot_lib.ptx_run` for `emulator.ocelot.ptx_run`. Host buffers enter and leave gpuemu's own,
bounds-checked device memory: each pointer argument is copied in before the launch and back after
it, as Kernel.launch does for numpy arrays (read-only buffers, bytes among them, are not written
back; arguments over the same memory share one device buffer). gpuemu therefore needs each buffer's
size: pass objects that carry it (ctypes arrays, bytearrays, bytes, numpy arrays, memoryviews), or raw
pointers whose size the host allocator announced with `register_buffer(pointer, size)` (a mock
`cuMemAlloc` does that). Scalar parameters take ints, floats, numpy scalars or ctypes scalars.
"""
from __future__ import annotations

import ctypes
from typing import Dict, Optional, Sequence

import numpy as np

from emulator.base.errors import UsageError
from emulator.runtime.module import Device, Module

_SIZES: Dict[int, int] = {}
_MODULES: Dict[bytes, Module] = {}
_DEVICE: Optional[Device] = None


def register_buffer(pointer, size: int) -> None:
    """Announce a host allocation so that raw pointers to it can be passed to ptx_run."""
    _SIZES[_address(pointer)] = int(size)


def unregister_buffer(pointer) -> None:
    _SIZES.pop(_address(pointer), None)


def _address(pointer) -> int:
    if isinstance(pointer, ctypes.c_void_p):
        return int(pointer.value or 0)
    if isinstance(pointer, (int, np.integer)):
        return int(pointer)
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def _host_array(arg) -> Optional[np.ndarray]:
    """The host memory of a buffer argument as a numpy array (read-only where the buffer is), or None
    for a scalar. Bytes and read-only buffers are copied in but never written back."""
    if isinstance(arg, np.ndarray):
        return arg
    if isinstance(arg, memoryview) and not arg.c_contiguous:
        return np.asarray(arg)
    if isinstance(arg, (bytes, bytearray, memoryview, ctypes.Array)):
        return np.frombuffer(arg, dtype=np.uint8)
    address = None
    if isinstance(arg, ctypes.c_void_p) or isinstance(arg, ctypes._Pointer):
        address = _address(arg)
    elif isinstance(arg, (int, np.integer)) and int(arg) in _SIZES:
        address = int(arg)
    if address is None:
        return None
    if address not in _SIZES:
        raise UsageError(f"pointer 0x{address:x} has no registered size: call emulator.ocelot.register_buffer")
    raw = (ctypes.c_uint8 * _SIZES[address]).from_address(address)
    return np.frombuffer(raw, dtype=np.uint8)


def _source_text(src) -> str:
    if isinstance(src, (bytes, bytearray)):
        try:
            return bytes(src).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"ptx_run: the PTX source is not UTF-8 text "
                             f"(byte 0x{error.object[error.start]:02x} at offset {error.start})") from None
    return str(src)


def _scalar(arg):
    if isinstance(arg, ctypes._SimpleCData):
        return arg.value
    return arg


def ptx_run(src, nargs: int, args: Sequence, lx: int, ly: int, lz: int, gx: int, gy: int, gz: int,
            shared: int = 0, *, device: Optional[Device] = None) -> int:
    """Run the kernel in src (bytes or str) on host buffers; returns 0 like GPUOcelot, raises on errors."""
    global _DEVICE
    text = _source_text(src)
    key = text.encode()
    device = device or _DEVICE or Device()
    _DEVICE = device
    module = _MODULES.get(key)
    if module is None or module.device is not device:
        module = Module(text, "<ptx_run>", device)
        _MODULES[key] = module
    kernel = module.kernel(None)
    launch_args = []
    for param, arg in zip(kernel.params, list(args)[:nargs]):
        host = _host_array(arg) if param.size == 8 else None
        launch_args.append(host if host is not None else _scalar(arg))
    kernel.launch((gx, gy, gz), (lx, ly, lz), launch_args, shared)
    return 0

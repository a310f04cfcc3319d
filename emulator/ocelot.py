"""GPUOcelot's `ptx_run` on gpuemu, the entry point tinygrad's mock CUDA and NV devices call:

    ptx_run(src, nargs, args, lx, ly, lz, gx, gy, gz, shared)

runs the kernel in `src` (its first .entry by name, as GPUOcelot picks it) on a grid of gx × gy × gz blocks of
lx × ly × lz threads. Each args[i] is the parameter's value, as GPUOcelot takes it: a pointer parameter gets the
address itself, a narrower parameter the low bytes of the value (None is 0).

Raw host addresses are seen in place, as by GPUOcelot: before the launch, the process's mappings
(/proc/self/maps) that hold the value of a 64-bit argument are attached to the device at their own addresses
(Memory.attach_host), readable ones only, writable where the mapping is; the kernel reads and writes that memory
directly, and after the launch they are detached. An access outside those mappings (a stray address, memory freed
and unmapped, a guard page, a write to a read-only mapping) is a fault report, never a segfault; an access within
them is not checked further (docs/clients.md says what is and is not checked).

From Python, ptx_run also takes objects that carry their size (numpy arrays, ctypes arrays, bytes, bytearrays,
memoryviews): those are copied into gpuemu's device memory and back (read-only ones, bytes among them, are not
written back), as Kernel.launch does with numpy arrays; and pointers whose size an allocator announced with
register_buffer(pointer, size) are copied likewise, exactly that many bytes. libgpuocelot.so, the drop-in
library (`gpuemu ocelot-lib`), calls run_raw: every argument a raw value.
"""
from __future__ import annotations

import bisect
import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from emulator.api import Device, DevicePointer, Module
from emulator.base.errors import UsageError

_SIZES: Dict[int, int] = {}
_MODULES: "OrderedDict[str, Module]" = OrderedDict()
MODULE_CACHE_SIZE = 256
_DEVICE: Optional[Device] = None
#: mappings never attached: reading them can fault even where /proc/self/maps says they are readable
UNSAFE_MAPPINGS = ("[vvar]", "[vvar_vclock]", "[vsyscall]")
POINTER_TYPES = (ctypes.c_void_p, ctypes.c_char_p)


@dataclass(frozen=True)
class Mapping:
    """One line of /proc/self/maps."""
    start: int
    end: int
    readable: bool
    writable: bool
    name: str


def process_mappings(path: str = "/proc/self/maps") -> List[Mapping]:
    """The process's mappings, in address order."""
    mappings = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.split(None, 5)
            if len(fields) < 5:
                continue
            start, _, end = fields[0].partition("-")
            permissions = fields[1]
            mappings.append(Mapping(int(start, 16), int(end, 16), permissions[0] == "r", permissions[1] == "w",
                                    fields[5].strip() if len(fields) > 5 else ""))
    return mappings


def host_spans(addresses: Sequence[int], mappings: Sequence[Mapping]) -> List[Mapping]:
    """The readable spans of memory holding each address: its mapping, joined with the adjacent readable mappings
    of the same write permission (one buffer may cross the boundary of two mappings). Addresses in no readable
    mapping get none."""
    usable = [m for m in mappings if m.readable and m.name not in UNSAFE_MAPPINGS]
    starts = [m.start for m in usable]
    spans: Dict[int, Mapping] = {}
    for address in addresses:
        index = bisect.bisect_right(starts, address) - 1
        if index < 0 or not usable[index].start <= address < usable[index].end:
            continue
        first = last = index
        while first > 0 and usable[first - 1].end == usable[first].start \
                and usable[first - 1].writable == usable[index].writable:
            first -= 1
        while last + 1 < len(usable) and usable[last].end == usable[last + 1].start \
                and usable[last + 1].writable == usable[index].writable:
            last += 1
        names = sorted({m.name for m in usable[first:last + 1] if m.name})
        span = Mapping(usable[first].start, usable[last].end, True, usable[index].writable, ", ".join(names))
        spans[span.start] = span
    return sorted(spans.values(), key=lambda span: span.start)


def register_buffer(pointer, size: int) -> None:
    """Announce a host allocation's size: ptx_run then copies exactly that many bytes in and back."""
    _SIZES[_address(pointer)] = int(size)


def unregister_buffer(pointer) -> None:
    _SIZES.pop(_address(pointer), None)


def _address(pointer) -> int:
    if pointer is None:
        return 0
    if isinstance(pointer, ctypes.c_void_p):
        return int(pointer.value or 0)
    if isinstance(pointer, (int, np.integer)):
        return int(pointer)
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def _sized_buffer(arg) -> Optional[np.ndarray]:
    """The memory of an argument that carries its size (or a registered pointer) as a numpy array, else None."""
    if isinstance(arg, np.ndarray):
        return arg
    if isinstance(arg, memoryview) and not arg.c_contiguous:
        return np.asarray(arg)
    if isinstance(arg, (bytes, bytearray, memoryview, ctypes.Array)):
        return np.frombuffer(arg, dtype=np.uint8)
    if isinstance(arg, (ctypes.c_void_p, ctypes._Pointer, int, np.integer)) and not isinstance(arg, bool):
        address = _address(arg)
        if address in _SIZES:
            return np.frombuffer((ctypes.c_uint8 * _SIZES[address]).from_address(address), dtype=np.uint8)
    return None


def _raw_value(arg) -> Optional[int]:
    """The integer a raw argument stands for (a pointer's address, a scalar's value), or None for a number that
    is not an integer (a float, passed as itself)."""
    if arg is None:
        return 0
    if isinstance(arg, (ctypes.c_void_p, ctypes._Pointer)):
        return _address(arg)
    if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
        return int(arg)
    return None


def source_text(src) -> str:
    if isinstance(src, (bytes, bytearray)):
        try:
            return bytes(src).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"ptx_run: the PTX source is not UTF-8 text "
                             f"(byte 0x{error.object[error.start]:02x} at offset {error.start})") from None
    return str(src)


def default_device() -> Device:
    """The emulated device ptx_run runs on unless given one."""
    global _DEVICE
    if _DEVICE is None:
        _DEVICE = Device()
    return _DEVICE


def _kernel(text: str, on: Device):
    module = _MODULES.get(text)
    if module is None or module.device is not on:
        module = Module(text, "<ptx_run>", on)
        _MODULES[text] = module
        while len(_MODULES) > MODULE_CACHE_SIZE:
            _MODULES.popitem(last=False)
    else:
        _MODULES.move_to_end(text)
    names = sorted(module.kernel_names)
    if not names:
        raise UsageError("ptx_run: the PTX defines no kernel (no .entry with a body)")
    return module.kernel(names[0])


def _fixed_width(value: int, size: int):
    """A raw value as a parameter of `size` bytes: its low bytes, as GPUOcelot stores it."""
    if size not in (1, 2, 4, 8):
        raise UsageError(f"ptx_run: a parameter of {size} bytes cannot take a raw value")
    return np.array([value & ((1 << (8 * size)) - 1)], dtype=f"u{size}")[0]


def ptx_run(src, nargs: int, args: Sequence, lx: int, ly: int, lz: int, gx: int, gy: int, gz: int,
            shared: int = 0, *, device: Optional[Device] = None) -> int:
    """Run the kernel in src (bytes or str) on host memory; returns 0 like GPUOcelot, raises on errors (a
    fault is a DeviceError with gpuemu's report)."""
    on = device or default_device()
    kernel = _kernel(source_text(src), on)
    given = [arg.value if isinstance(arg, ctypes._SimpleCData) and not isinstance(arg, POINTER_TYPES) else arg
             for arg in list(args)[:nargs]]
    if len(given) != len(kernel.params):
        raise UsageError(f"ptx_run: the kernel takes {len(kernel.params)} arguments, {len(given)} given")
    launch_args, raw_addresses = [], []
    for param, arg in zip(kernel.params, given):
        buffer = _sized_buffer(arg) if param.size == 8 else None
        value = _raw_value(arg) if buffer is None else None
        if buffer is not None:
            launch_args.append(buffer)
        elif value is None:
            launch_args.append(arg)
        elif param.size == 8:
            launch_args.append(DevicePointer(value & (2 ** 64 - 1)))
            raw_addresses.append(value & (2 ** 64 - 1))
        else:
            launch_args.append(_fixed_width(value, param.size))
    _launch(kernel, (gx, gy, gz), (lx, ly, lz), launch_args, int(shared or 0), raw_addresses, on)
    return 0


def run_raw(text: str, values: Sequence[int], block, grid, shared: int) -> None:
    """libgpuocelot.so's ptx_run: every argument is a raw 64-bit value."""
    ptx_run(text, len(values), [int(v) for v in values], *block, *grid, shared)


def _launch(kernel, grid, block, args, shared: int, raw_addresses: List[int], on: Device) -> None:
    spans = host_spans(raw_addresses, process_mappings()) if raw_addresses else []
    attached = []
    try:
        for span in spans:
            try:
                on.memory.attach_host(span.start, span.end - span.start, read_only=not span.writable,
                                      name=span.name or "host memory")
            except (ValueError, RuntimeError) as error:
                raise UsageError(f"ptx_run: cannot let the kernel see host memory {span.start:#x}..{span.end:#x}: "
                                 f"{error}") from None
            attached.append(span.start)
        kernel.launch(grid, block, args, shared)
    finally:
        for start in attached:
            on.memory.detach_host(start)

"""Kernel arguments: numpy arrays copied in and written back in place, scalars as their parameter's bytes, and
the parameter buffer a launch puts in device memory."""
from __future__ import annotations

import reprlib
import warnings
from typing import Dict, List, Set, Tuple

import numpy as np

from emulator import ir
from emulator.base.errors import LaunchError, UsageError
from emulator.memory import Memory
from emulator.memory.pages import release_pages
from emulator.runtime.names import plain_name
from isa import fp
from isa.types import TYPES


def is_integer(value) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def describe_value(value) -> str:
    """A short `type value` text for error messages: `str '64'`, `float 4.9`, `None`."""
    if value is None:
        return "None"
    return f"{type(value).__name__} {_SHORT_REPR.repr(value)}"


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 40


def dim3(value, what: str = "dimensions") -> Tuple[int, int, int]:
    """An integer or 1 to 3 integers as (x, y, z); what names the value (grid, block) in the error."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if is_integer(value):
        return (int(value), 1, 1)
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                          f"{what} {describe_value(value)} must be an integer or a tuple of 1 to 3 integers")
    if not 1 <= len(value) <= 3:
        raise LaunchError("CUDA_ERROR_INVALID_VALUE", f"{what} {value} must have 1 to 3 components")
    for item in value:
        if not is_integer(item):
            raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                              f"{what} {value} must be 1 to 3 integers, not {describe_value(item)}")
    return tuple([int(v) for v in value] + [1] * (3 - len(value)))


def native_dtype(dtype: np.dtype) -> np.dtype:
    """dtype in the host's byte order: how the device holds the elements of a big-endian array."""
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def symbol_bytes(name: str, data) -> np.ndarray:
    """The bytes a cudaMemcpyToSymbol of data (an array, a number or a list of numbers) would copy."""
    try:
        array = np.asarray(data)
    except ValueError:
        array = None
    if array is None or array.dtype.hasobject or array.dtype.kind == "U":
        raise UsageError(f"symbol '{name}' takes a numpy array or numbers, not {describe_value(data)}")
    return np.ascontiguousarray(array, dtype=native_dtype(array.dtype)).reshape(-1).view(np.uint8)


class ArgumentTypeWarning(UserWarning):
    """A scalar argument whose kind (integer or floating point) differs from its parameter's: its bits are passed as
    they are."""


class DevicePointer(int):
    """A raw device address passed as a pointer argument (no copy in or out)."""


class HostRegion:
    """Host arrays that share memory, held in one device allocation as CUDA would see one buffer.

    The device holds each array's elements in C order and native byte order (what a cudaMemcpy of
    np.ascontiguousarray(array) would copy); pointers maps argument index → byte offset in the allocation.
    Different views of one memory can share an allocation only if they are C-contiguous and native."""

    def __init__(self, views: List[Tuple[np.ndarray, int]], pointers: Dict[int, int], nbytes: int):
        self.views = views
        self.pointers = pointers
        self.nbytes = nbytes
        self.address = 0
        #: chunk starts of a region of one array whose bytes were all zero when copied in
        self.zero_chunks: Set[int] = set()

    def copy_in(self, memory: Memory, *, move: bool = False) -> None:
        """Allocate the region (zero-filled) and copy each array in, COPY_CHUNK bytes at a time, skipping chunks
        that are all zeros; with move, the pages of a writable array that alone makes up the region are given back
        as they are copied (copy_back refills them)."""
        alone = len(self.views) == 1
        unwritten = None
        if alone and _flat_bytes(self.views[0][0]) is not None and self.views[0][1] == 0:
            flat = _flat_bytes(self.views[0][0])
            self.zero_chunks = {start for start in range(0, flat.size, COPY_CHUNK)
                                if not flat[start:start + COPY_CHUNK].any()}
            unwritten = [(start, min(COPY_CHUNK, flat.size - start)) for start in sorted(self.zero_chunks)]
            if flat.size < self.nbytes:
                unwritten.append((flat.size, self.nbytes - flat.size))
        self.address = memory.alloc(max(self.nbytes, 1), name=f"arg{min(self.pointers)}", unwritten=unwritten)
        for array, offset in self.views:
            flat = _flat_bytes(array)
            if flat is None:
                data = np.ascontiguousarray(array, dtype=native_dtype(array.dtype))
                memory.write(self.address + offset, data.reshape(-1).view(np.uint8))
                continue
            give_back = move and alone and array.flags.writeable
            for start in range(0, flat.size, COPY_CHUNK):
                piece = flat[start:start + COPY_CHUNK]
                if (start in self.zero_chunks) if alone else not piece.any():
                    continue
                memory.write(self.address + offset + start, piece)
                if give_back:
                    release_pages(piece)

    def copy_back(self, memory: Memory) -> None:
        """Write the device bytes back into each writable array, in its own layout and byte order. A region of one
        array goes back COPY_CHUNK bytes at a time, each chunk's device pages given back once copied (the region
        is freed next), so the copy never holds the data twice; a chunk that was zeros and still is stays as it
        is (its host pages untouched). A region under RELEASE_FROM bytes keeps its device pages: the next launch's
        allocations reuse them instead of faulting in fresh ones."""
        alone = len(self.views) == 1
        give_back = alone and self.nbytes >= RELEASE_FROM
        for array, offset in self.views:
            if not (array.nbytes and array.flags.writeable):
                continue
            flat = _flat_bytes(array)
            if flat is None:
                device = memory.read(self.address + offset, array.nbytes).view(native_dtype(array.dtype))
                array[...] = device.reshape(array.shape)
                continue
            for start in range(0, flat.size, COPY_CHUNK):
                end = min(start + COPY_CHUNK, flat.size)
                device = memory.view(self.address + offset + start, end - start)
                if not (start in self.zero_chunks and not device.any()):
                    flat[start:end] = device
                if give_back:
                    memory.release(self.address + offset + start, end - start)


#: bytes copied to or from the device at a time (what a copy holds twice at most)
COPY_CHUNK = 4 << 20
#: regions at least this large give their device pages back as they are copied back
RELEASE_FROM = 32 << 20


def _flat_bytes(array: np.ndarray):
    """The array's bytes as a flat uint8 view when they are C-contiguous in native order (None otherwise)."""
    if not (array.flags.c_contiguous and array.dtype.isnative) or array.dtype.hasobject:
        return None
    return array.reshape(-1).view(np.uint8)


def host_regions(arrays: Dict[int, np.ndarray], argument_name) -> List[HostRegion]:
    """Group the array arguments (index → array) by shared memory, one HostRegion per group;
    argument_name(index) names an argument in the error for overlapping views that cannot share."""
    groups: List[List[int]] = []
    for index, array in arrays.items():
        touching = [group for group in groups if any(_overlap(array, arrays[other]) for other in group)]
        groups = [group for group in groups if group not in touching]
        groups.append(sorted([index] + [other for group in touching for other in group]))
    regions = []
    for group in sorted(groups):
        views: Dict[tuple, Tuple[np.ndarray, List[int]]] = {}
        for index in group:
            array = arrays[index]
            key = (_data_address(array), array.shape, array.strides, array.dtype)
            kept, indices = views.get(key, (array, []))
            views[key] = (kept if kept.flags.writeable else array, indices + [index])
        if len(views) == 1:
            (array, indices), = views.values()
            regions.append(HostRegion([(array, 0)], {index: 0 for index in indices}, array.nbytes))
            continue
        for array, indices in views.values():
            if not (array.flags.c_contiguous and array.dtype.isnative):
                others = [i for i in group if i not in indices]
                raise UsageError(f"{argument_name(indices[0])} overlaps {argument_name(others[0])} in memory "
                                 f"as a different view that is not C-contiguous and native-order, so writes could "
                                 f"not be kept; pass the same array, C-contiguous slices of one array, or a copy "
                                 f"(np.ascontiguousarray)")
        low = min(_data_address(array) for array, _ in views.values())
        high = max(_data_address(array) + array.nbytes for array, _ in views.values())
        regions.append(HostRegion([(array, _data_address(array) - low) for array, _ in views.values()],
                                  {index: _data_address(array) - low
                                   for array, indices in views.values() for index in indices},
                                  high - low))
    return regions


def _data_address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


_TOO_HARD = getattr(np, "exceptions", np).TooHardError


def _overlap(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two arrays share a byte of memory (assumed when numpy cannot tell cheaply)."""
    if not np.may_share_memory(first, second):
        return False
    try:
        return bool(np.shares_memory(first, second, max_work=100_000))
    except _TOO_HARD:
        return True


def _as_parameter_value(raw: np.ndarray, type_name: str) -> str:
    """The value a parameter of type_name holds in these bytes ('1e-44', '(1.0, 2.0)' for a half pair)."""
    bits = int.from_bytes(raw.tobytes(), "little")
    if type_name in ("f16x2", "bf16x2"):
        half = type_name[:-2]
        pieces = [np.array([bits >> 16 & 0xFFFF], np.uint16).view(np.uint8), np.array([bits & 0xFFFF],
                                                                                     np.uint16).view(np.uint8)]
        return f"({_as_parameter_value(pieces[0], half)}, {_as_parameter_value(pieces[1], half)})"
    if type_name == "f16":
        return str(np.array([bits], np.uint16).view(np.float16)[0])
    if type_name == "bf16":
        return str(np.array([bits << 16], np.uint32).view(np.float32)[0])
    if type_name == "tf32":
        return str(np.array([bits], np.uint32).view(np.float32)[0])
    return str(raw.view(TYPES[type_name].dtype)[0])


class Parameters:
    """A kernel's parameter list, and how a list of Python arguments becomes its parameter buffer."""

    def __init__(self, program: ir.Program):
        self.program = program

    def encode(self, args: list) -> Tuple[np.ndarray, List["HostRegion"]]:
        """The parameter bytes with every scalar in place, and the host arrays the pointers will refer to, grouped
        by the memory they share; raises a UsageError for arguments that do not fit the parameters."""
        params = self.program.params
        name = plain_name(self.program.name)
        if len(args) != len(params):
            raise UsageError(f"{name} takes {len(params)} arguments, {len(args)} given")
        buffer = np.zeros(max(self.program.param_bytes, 1), dtype=np.uint8)
        arrays: Dict[int, np.ndarray] = {}
        for index, (param, arg) in enumerate(zip(params, args)):
            if isinstance(arg, np.ndarray):
                self._check_buffer(index, param, arg)
                arrays[index] = arg
            else:
                raw = self._scalar_bytes(index, param, arg)
                buffer[param.offset:param.offset + raw.size] = raw
        return buffer, host_regions(arrays, lambda index: self._argument_name(index, params[index]))

    def pack(self, args: list, memory: Memory) -> Tuple[np.ndarray, List["HostRegion"]]:
        """The parameter bytes, and the host arrays copied into device memory for them (not yet freed)."""
        buffer, regions = self.encode(args)
        return self.place(buffer, regions, memory)

    def place(self, buffer: np.ndarray, regions: List["HostRegion"], memory: Memory, *,
              move: bool = False) -> Tuple[np.ndarray, List["HostRegion"]]:
        """Copy encode's regions into device memory (room for them and the parameter buffer made at once) and put
        their addresses into the parameter bytes."""
        params = self.program.params
        memory.reserve(sum(region.nbytes + 256 for region in regions) + buffer.size + 256)
        for region in regions:
            region.copy_in(memory, move=move)
            for index, offset in region.pointers.items():
                raw = np.array([region.address + offset], dtype=np.uint64).view(np.uint8)
                buffer[params[index].offset:params[index].offset + 8] = raw
        return buffer, regions

    def _argument_name(self, index: int, param: ir.KernelParam) -> str:
        return f"argument {index} ({param.name}, .{param.type}) of {plain_name(self.program.name)}"

    def _check_buffer(self, index: int, param: ir.KernelParam, array: np.ndarray) -> None:
        if param.size != 8:
            raise UsageError(f"argument {index} is a buffer but parameter {param.name} is "
                             f".{param.type} ({param.size} bytes), not a 64-bit pointer")
        if array.dtype.hasobject:
            raise UsageError(f"{self._argument_name(index, param)} is an array of Python objects ({array.dtype}); "
                             f"pass an array of numbers")

    def _scalar_bytes(self, index: int, param: ir.KernelParam, value) -> np.ndarray:
        """The bytes of a scalar argument: a DevicePointer, a numpy scalar (its own bytes) or a Python number."""
        if isinstance(value, DevicePointer):
            if param.size != 8:
                raise UsageError(f"{self._argument_name(index, param)} is not a 64-bit pointer but is given "
                                 f"a DevicePointer")
            return np.array([int(value)], dtype=np.uint64).view(np.uint8)
        if isinstance(value, np.generic):
            if value.dtype.kind in "OSU":
                raise UsageError(f"{self._argument_name(index, param)} expects a number, "
                                 f"not {describe_value(value)}")
            raw = np.array([value]).view(np.uint8)
            if raw.size != param.size:
                raise UsageError(f"argument {index} is {value.dtype.name} ({raw.size} bytes) but parameter "
                                 f"{param.name} is .{param.type} ({param.size} bytes)")
            self._warn_on_kind_mismatch(index, param, value, raw)
            return raw
        return np.array([self._python_scalar(value, param, self._argument_name(index, param))]).view(np.uint8)

    def _warn_on_kind_mismatch(self, index: int, param: ir.KernelParam, value: np.generic, raw: np.ndarray) -> None:
        """A floating-point value for an integer parameter, or an integer for a floating-point one, is passed as its
        bits (as CUDA passes them), which is rarely what was meant: say so."""
        t = TYPES.get(param.type)
        if t is None or value.dtype.kind not in "iuf":
            return
        float_value, float_param = value.dtype.kind == "f", t.kind in ("float", "half")
        integer_param = t.kind in ("signed", "unsigned")
        if not ((float_value and integer_param) or (not float_value and float_param)):
            return
        bits = int.from_bytes(raw.tobytes(), "little")
        seen = _as_parameter_value(raw, param.type)
        number = value.item()
        whole = not float_value or (np.isfinite(number) and float(number).is_integer())
        prefix = {"signed": "i", "unsigned": "u", "float": "f", "half": "f"}[t.kind]
        spec = f"{prefix}{t.bits}" if param.type not in ("bf16", "f16x2", "bf16x2", "tf32") else None
        hint = f" (pass {spec}:{int(number)} for the value)" if whole and spec else ""
        warnings.warn(ArgumentTypeWarning(
            f"{self._argument_name(index, param)} is given {value.dtype.name} {value!s}: its bits "
            f"0x{bits:0{2 * raw.size}x} are passed unchanged and read as {seen}{hint}"), stacklevel=5)

    @staticmethod
    def _python_scalar(value, param: ir.KernelParam, where: str):
        """A Python number as the parameter's type: integers for integer and raw-bit parameters (floats such
        as 8.0 are refused, never truncated), integers or floats for .f32/.f64."""
        t = TYPES.get(param.type)
        if t is None or t.kind == "pred":
            raise UsageError(f"cannot pass a Python scalar for parameter {param.name} (.{param.type})")
        if isinstance(value, (list, tuple)) and t.bits == 64:
            raise UsageError(f"{where} is given {describe_value(value)}: pass buffers as numpy arrays "
                             f"(np.asarray(values, dtype=...))")
        if t.kind == "float" or (t.kind == "half" and param.type in ("f16", "bf16")):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    if t.kind == "half":  # the parameter holds the code of the value rounded once to nearest
                        return fp.cvt(np.array([float(value)]), dst=param.type, src="f64")[0]
                    return t.dtype.type(float(value))
                except OverflowError:
                    pass
            raise UsageError(f"{where} expects a number, not {describe_value(value)}")
        if not isinstance(value, int):
            wanted = "a numpy array (for a pointer) or an integer" if t.bits == 64 else "an integer"
            raise UsageError(f"{where} expects {wanted} (a Python int or numpy integer; floats are refused, "
                             f"not truncated), not {describe_value(value)}")
        mask = (1 << t.bits) - 1
        return np.array(int(value) & mask, dtype=np.dtype(f"u{t.bytes}")).view(t.dtype)[()]

"""C values on the lanes of a warp: a typed place (a register's bits, or bytes of an address space) that C's
[] . -> * & walk, loaded into numbers for arithmetic and shown as cuda-gdb shows them."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from emulator.observers.debugger.expr import DebugError, SourceValue, format_lanes, format_scalar
from emulator.observers.debugger.variables import CType

#: DWARF base-type encodings (DW_ATE_*) as numpy kinds
_FLOAT, _SIGNED, _SIGNED_CHAR, _BOOLEAN = 4, 5, 6, 2
_ELEMENTS_SHOWN = 200


class CValue(SourceValue):
    """A C-typed value for some lanes: in memory (space, one address per lane) or in registers (bits per lane).
    `read(space, address, nbytes, lane_index)` fetches memory for the lane at that index."""

    def __init__(self, ctype: CType, read: Callable, lanes: int, *, space: Optional[str] = None,
                 addresses: Optional[np.ndarray] = None, bits: Optional[np.ndarray] = None,
                 optimized_out: bool = False):
        self.ctype = ctype
        self.read = read
        self.lanes = lanes
        self.space = space
        self.addresses = None if addresses is None else np.broadcast_to(np.asarray(addresses, np.uint64), (lanes,))
        self.bits = None if bits is None else np.broadcast_to(np.asarray(bits, np.uint64), (lanes,))
        self.optimized_out = optimized_out

    # ---- loading ----
    def raw(self, lane: int) -> bytes:
        if self.optimized_out:
            raise DebugError("value has been optimized out")
        size = self.ctype.size
        if self.bits is not None:
            return int(self.bits[lane]).to_bytes(8, "little")[:size]
        return bytes(self.read(self.space, int(self.addresses[lane]), size, lane))

    def rvalue(self) -> np.ndarray:
        ctype = self.ctype
        if ctype.kind == "array" and self.addresses is not None:
            return self.addresses.astype(np.uint64)
        if not ctype.is_scalar():
            raise DebugError(f"Cannot use a value of type `{ctype.spelled()}` in arithmetic.")
        return np.array([scalar(ctype, self.raw(lane)) for lane in range(self.lanes)])

    # ---- C's operators ----
    def at(self, ctype: CType, space: str, addresses) -> "CValue":
        return CValue(ctype, self.read, self.lanes, space=space, addresses=addresses)

    def index(self, index: np.ndarray) -> "CValue":
        ctype = self.ctype
        index = np.broadcast_to(np.asarray(index), (self.lanes,))
        if index.dtype.kind not in "iub":
            raise DebugError("Array subscripts must be integers.")
        if ctype.kind == "array":
            if self.addresses is None:
                raise DebugError("The array is not in memory.")
            element = ctype.element()
            if np.any((index < 0) | (index >= ctype.dims[0])) and ctype.dims[0]:
                raise DebugError(f"Index {int(index[0])} is outside `{ctype.spelled()}` (0 to {ctype.dims[0] - 1}).")
            return self.at(element, self.space, self.addresses + index.astype(np.int64).astype(np.uint64) *
                           np.uint64(element.size))
        if ctype.kind == "pointer":
            target = ctype.target
            pointers = self.rvalue().astype(np.uint64)
            step = np.uint64(max(target.size, 1))
            return self.at(target, ctype.space, pointers + index.astype(np.int64).astype(np.uint64) * step)
        raise DebugError("Cannot subscript requested type.")

    def member(self, name: str) -> "CValue":
        ctype = self.ctype
        if ctype.kind not in ("struct", "union"):
            raise DebugError("Attempt to extract a component of a value that is not a structure.")
        for member, offset, member_type in ctype.members:
            if member == name:
                if self.addresses is None:
                    bits = (self.bits >> np.uint64(8 * offset)) if self.bits is not None else None
                    return CValue(member_type, self.read, self.lanes, bits=bits)
                return self.at(member_type, self.space, self.addresses + np.uint64(offset))
        raise DebugError(f"There is no member named {name}.")

    def dereference(self) -> "CValue":
        ctype = self.ctype
        if ctype.kind == "array":
            return self.index(np.zeros(self.lanes, np.int64))
        if ctype.kind != "pointer":
            raise DebugError("Attempt to take contents of a non-pointer value.")
        if ctype.target is None or ctype.target.kind == "void":
            raise DebugError("Attempt to take contents of a non-pointer value.")
        return self.at(ctype.target, ctype.space, self.rvalue().astype(np.uint64))

    def address(self) -> "CValue":
        if self.addresses is None:
            raise DebugError("Attempt to take address of value not located in memory.")
        pointer = CType("pointer", size=8, target=self.ctype, space=self.space or "generic")
        return CValue(pointer, self.read, self.lanes, bits=self.addresses)

    # ---- showing ----
    def show(self, fmt: Optional[str] = None, lane: int = 0) -> str:
        if self.optimized_out:
            return "<optimized out>"
        return show(self.ctype, self, fmt, lane, top=True)

    def type_prefix(self) -> str:
        """cuda-gdb's `(@space type *)` before a pointer's value."""
        return f"(@{self.ctype.space} {self.ctype.spelled()})"


def scalar(ctype: CType, data: bytes):
    """A base type's (or pointer's) bytes as a numpy scalar."""
    if ctype.kind == "pointer":
        return np.frombuffer(data.ljust(8, b"\0")[:8], np.uint64)[0]
    size = max(ctype.size, 1)
    if ctype.encoding == _FLOAT and size in (2, 4, 8):
        return np.frombuffer(data[:size], {2: np.float16, 4: np.float32, 8: np.float64}[size])[0]
    if ctype.encoding == _BOOLEAN:
        return np.bool_(any(data[:size]))
    signed = ctype.encoding in (_SIGNED, _SIGNED_CHAR) or ctype.kind == "enum"
    width = size if size in (1, 2, 4, 8) else 8
    return np.frombuffer(data[:width].ljust(width, b"\0"), np.dtype(f"{'i' if signed else 'u'}{width}"))[0]


def show(ctype: CType, value: CValue, fmt: Optional[str], lane: int, top: bool = False) -> str:
    if ctype.kind == "array":
        count = ctype.dims[0] if ctype.dims else 0
        parts = [show(ctype.element(), value.index(np.full(value.lanes, i, np.int64)), fmt, lane)
                 for i in range(min(count, _ELEMENTS_SHOWN))]
        text = format_lanes(parts)
        return text[:-1] + "...}" if count > _ELEMENTS_SHOWN else text
    if ctype.kind in ("struct", "union"):
        return "{" + ", ".join(f"{name} = {show(member_type, value.member(name), fmt, lane)}"
                               for name, _, member_type in ctype.members) + "}"
    number = scalar(ctype, value.raw(lane))
    if ctype.kind == "pointer":
        text = format_scalar(number, "x" if fmt is None else fmt)
        return f"({'@' + ctype.space + ' ' if ctype.space else ''}{ctype.spelled()}) {text}" if top and fmt is None \
            else text
    if fmt is None and ctype.encoding in (_SIGNED_CHAR, 8) and ctype.size == 1:
        return format_scalar(number, "c")
    return format_scalar(number, fmt)

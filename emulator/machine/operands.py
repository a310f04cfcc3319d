"""Operands bound to a batch: readers and writers of registers (raw bits viewed as each instruction's type),
immediates, special registers and symbols; guards. Executors build on these, once per instruction."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from emulator import ir
from emulator.base.errors import DeviceError
from emulator.machine.lanes import ALL, count_of, lanes_of, subselect, threads_of
from emulator.memory import DeviceFault
from isa import memory as memory_semantics
from isa.types import TYPES


#: addresses wrap around 64 bits (a symbol plus an offset, as a register plus an offset does)
ADDRESS_MASK = (1 << 64) - 1


def immediate(ref: ir.ImmRef, type_name: str):
    """An immediate as a numpy scalar of the instruction type (raw bits for raw-bit float types)."""
    t = TYPES[type_name]
    if t.kind == "pred":
        return np.bool_(bool(ref.value))
    if ref.kind == "int":
        if t.kind == "float":
            return t.dtype.type(ref.value)
        mask = (1 << t.bits) - 1
        return np.array(ref.value & mask, dtype=np.dtype(f"u{t.bytes}")).view(t.dtype)[()]
    if ref.kind == "f32":
        value = np.array(ref.value, dtype=np.uint32).view(np.float32)[()]
        if t.name == "f64":
            return np.float64(value)
        if t.bits == 32:
            return np.array(ref.value, dtype=np.uint32).view(t.dtype)[()]
        return t.dtype.type(value) if t.kind == "float" else t.dtype.type(ref.value & ((1 << t.bits) - 1))
    if ref.kind == "f64":
        value = np.array(ref.value, dtype=np.uint64).view(np.float64)[()]
        if t.bits == 64:
            return np.array(ref.value, dtype=np.uint64).view(t.dtype)[()]
        if t.name == "f32":
            return np.float32(value)
        return t.dtype.type(int(value)) if t.is_int else t.dtype.type(value)
    value = float(ref.value)
    if t.kind == "float":
        return t.dtype.type(value)
    return t.dtype.type(int(value))


def convert(values, type_name: str):
    """Reinterpret or resize raw values to the numpy dtype of a PTX type (truncating or extending)."""
    t = TYPES[type_name]
    values = np.asarray(values)
    if values.dtype == t.dtype:
        return values
    if values.dtype.itemsize == t.dtype.itemsize and values.dtype.kind in "uifb" and t.kind != "pred":
        return values.view(t.dtype)
    if t.kind == "pred":
        return values.astype(bool)
    if values.dtype.kind == "f" or t.dtype.kind == "f":
        unsigned = np.dtype(f"u{values.dtype.itemsize}")
        values = values.view(unsigned)
        bits = values.astype(np.dtype(f"u{t.dtype.itemsize}"))
        return bits.view(t.dtype)
    return values.astype(t.dtype)


# ---- operand readers and writers -----------------------------------------------------------------

def reader(batch, ref, type_name: str) -> Callable:
    """A function sel → the operand's values as the instruction type's dtype (array or scalar)."""
    t = TYPES[type_name]
    if isinstance(ref, ir.RegRef) and ref.reg.index in batch.uniform:
        values, index = batch.uniform_values, ref.reg.index
        if ref.reg.storage == t.dtype:
            return lambda sel: values[index]
        return lambda sel: convert(values[index], type_name)[()]
    if isinstance(ref, ir.RegRef):
        storage = batch.regs[ref.reg.index]
        if storage.dtype.itemsize == t.dtype.itemsize and (storage.dtype == t.dtype or t.kind != "pred"):
            view = storage if storage.dtype == t.dtype else storage.view(t.dtype)
            return lambda sel: view[sel]
        if t.kind == "pred":
            return lambda sel: storage[sel] != 0
        if storage.dtype.itemsize > t.dtype.itemsize:
            narrow = np.dtype(f"u{t.dtype.itemsize}")
            return lambda sel: storage[sel].astype(narrow).view(t.dtype)
        signed_src = np.dtype(f"i{storage.dtype.itemsize}") if t.kind == "signed" else storage.dtype
        wide = np.dtype(f"i{t.dtype.itemsize}") if t.kind == "signed" else np.dtype(f"u{t.dtype.itemsize}")
        return lambda sel: storage[sel].view(signed_src).astype(wide).view(t.dtype)
    if isinstance(ref, ir.ImmRef):
        value = immediate(ref, type_name)
        return lambda sel: value
    if isinstance(ref, ir.SpecialRef):
        special = batch.special(ref.name)
        if callable(special):
            return lambda sel: convert(special(sel), type_name)
        value = convert(special, type_name)
        if value.ndim == 0:
            value = value[()]
            return lambda sel: value
        return lambda sel: value[sel]
    if isinstance(ref, ir.SymRef):
        address = (batch.addressing.symbol_address(ref.symbol) + ref.offset) & ADDRESS_MASK
        value = convert(np.uint64(address), type_name)[()]
        return lambda sel: value
    if isinstance(ref, ir.NotRef):
        inner = reader(batch, ref.reg, "pred")
        return lambda sel: ~inner(sel)
    raise DeviceError("CUDA_ERROR_INVALID_PTX", "", f"operand {ref} cannot be read as .{type_name}")


def writer(batch, ref, type_name: str, track_uniform: bool = True) -> Callable:
    """A function (sel, values) storing values of the instruction type into the operand (and, for a launch-uniform
    register, remembering its value as a scalar for the readers)."""
    if ref is None or isinstance(ref, ir.SinkRef):
        return lambda sel, values: None
    if not isinstance(ref, ir.RegRef):
        raise DeviceError("CUDA_ERROR_INVALID_PTX", "", f"operand {ref} cannot be written")
    t = TYPES[type_name]
    storage = batch.regs[ref.reg.index]
    if track_uniform and ref.reg.index in batch.uniform:
        store_array = writer(batch, ir.RegRef(ref.reg), type_name, track_uniform=False)
        uniform_values, index = batch.uniform_values, ref.reg.index

        def store_uniform(sel, values):
            store_array(sel, values)
            uniform_values[index] = storage[lanes_of(sel, batch.n)[0]] if sel is not ALL else storage[0]
        return store_uniform
    if storage.dtype == t.dtype:
        def store(sel, values):
            storage[sel] = values
        return store
    if storage.dtype.itemsize == t.dtype.itemsize and t.kind != "pred" and storage.dtype != np.bool_:
        view = storage.view(t.dtype)

        def store_view(sel, values):
            view[sel] = values
        return store_view
    if storage.dtype == np.bool_:
        def store_pred(sel, values):
            storage[sel] = np.asarray(values) != 0
        return store_pred

    def store_resized(sel, values):
        values = np.asarray(values, dtype=t.dtype)
        if t.kind in ("float", "half") and values.dtype.kind == "f":
            values = values.view(np.dtype(f"u{values.dtype.itemsize}"))
        storage[sel] = values.astype(storage.dtype)
    return store_resized


def guarded(batch, instr: ir.Instr, execute: Callable) -> Callable:
    """Run execute only on the lanes whose guard predicate holds."""
    if instr.guard is None:
        return execute
    reg, negated = instr.guard
    pred = batch.regs[reg.index]

    def run(sel):
        values = pred[sel]
        if negated:
            values = ~values
        if values.all():
            execute(sel)
        elif values.any():
            execute(subselect(sel, values))
    return run


# ---- memory operands ----------------------------------------------------------------------------------

class AddressPlan:
    """How one memory instruction turns its address operand into (space, addresses) for the memory core."""

    def __init__(self, batch, instr: ir.Instr, ref: ir.AddrRef, space: str):
        self.batch = batch
        self.instr = instr
        self.space = space
        self.static: Optional[int] = None
        self.register = None
        self.scalar = None
        self.translate = None
        offset = ref.offset
        effective = memory_semantics.effective_address
        if ref.symbol is not None:
            if ref.symbol.space == "func" and space not in ("generic", "global"):
                raise batch.lowering_error(instr, f"'{ref.symbol.name}' is a function: it has no .{space} address")
            self.static, self.space = batch.addressing.symbol_access(ref.symbol, space, ref.offset)
        elif ref.base is None:
            self.static, self.space = batch.addressing.absolute_access(ref.offset, space)
        if self.static is not None:
            self.static &= ADDRESS_MASK
        else:
            storage = batch.regs[ref.base.reg.index]
            self.space, self.translate = batch.addressing.register_access(space)
            if ref.base.reg.index in batch.uniform:
                values, index = batch.uniform_values, ref.base.reg.index
                self.scalar = lambda: effective(values[index], offset)[()]
                self.register = lambda sel: np.full(count_of(sel, batch.n), self.scalar(), dtype=np.uint64)
            else:
                self.register = lambda sel: effective(storage[sel], offset)
        self.per_thread = self.space in ("shared", "local")
        self.uniform = self.static is not None and not self.per_thread
        self.uniform_register = self.scalar is not None and self.space not in ("shared", "local", "generic", "param")

    def addresses(self, sel):
        """(space, uint64 addresses, threads) for the lanes of sel."""
        n = count_of(sel, self.batch.n)
        if self.static is not None:
            return self.space, np.full(n, self.static, dtype=np.uint64), threads_of(sel)
        addresses = self.register(sel)
        if self.translate is not None:
            return self.translate(addresses, sel)
        return self.space, addresses, threads_of(sel)


def access(batch, instr: ir.Instr, op: str, space: str, addresses, threads, width: int, *, data=None,
           atomic=None, tell: bool = True):
    """One instruction's memory access, the one way every executor makes it: the observer hears of it, the
    memory core does it (op load, store, or atomic with atomic=(operation, type, a, b)), and a fault becomes
    the instruction's memory-fault stop, blaming threads[lane] (the lane itself when threads is None)."""
    if tell and batch.observer is not None:
        batch.observer.memory(batch, instr, op, space, addresses, threads, width)
    try:
        if op == "load":
            return batch.memory.load(space, addresses, threads, width)
        if op == "store":
            return batch.memory.store(space, addresses, threads, width, data)
        operation, type_name, a, b = atomic
        return batch.memory.atomic(space, operation, type_name, addresses, threads, a, b)
    except DeviceFault as fault:
        lane = fault.lane
        thread = None if lane is None else int(lane if threads is None else threads[lane])
        raise batch.memory_fault(instr, fault, thread) from None

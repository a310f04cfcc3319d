"""Record and replay: an undo record per scheduler step, swapped in place to step the batch back and forth.

A record holds what its instruction overwrites, for the lanes it ran on: destination registers (and the
carry flag), the memory bytes under stores and atomics, and for barriers, exits, calls and returns the
scheduler's per-thread state and the local windows of the calling threads. Undoing a record swaps the
saved values with the current ones, so the same record redoes the step afterwards.
"""
from __future__ import annotations

import sys
from collections import deque
from typing import Deque, Dict, List, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.machine.lanes import ALL

DEFAULT_HISTORY = 100_000
#: the scheduler state a control instruction may change (rpc is derived from the records instead)
CONTROL_FIELDS = ("status", "resume_pc", "bar_wait", "bar_arrived", "bar_expected", "bar_votes", "live",
                  "warp_sync_arrived", "warp_sync_mask", "depth", "stack_pc", "stack_site")
_ARRAY_HEADER = sys.getsizeof(np.empty(0, dtype=np.uint8))


def _flatten(ref) -> List[ir.RegInfo]:
    if isinstance(ref, ir.RegRef):
        return [ref.reg]
    if isinstance(ref, ir.VecRef):
        return [reg for item in ref.items for reg in _flatten(item)]
    if isinstance(ref, ir.PredPairRef):
        return _flatten(ref.first) + (_flatten(ref.second) if ref.second is not None else [])
    return []


def destinations(instr: ir.Instr) -> Tuple[Tuple[ir.RegInfo, ...], bool, bool]:
    """(registers the instruction writes, whether it writes the carry flag, whether for released threads)."""
    decoded = instr.decoded
    if decoded is None or not instr.operands:
        return (), False, False
    if instr.control == ir.BARRIER:
        if decoded.get("barmode") == "red":
            return tuple(_flatten(instr.operands[0])), False, True
        return (), False, False
    if instr.control != ir.STRAIGHT:
        return (), False, False
    if decoded.family.op_class == "sass":
        plan = instr.info.get("sass")
        written = [reg for dest in (plan.dests if plan is not None else ())
                   for reg in (getattr(dest, "regs", None) or (getattr(dest, "reg", None),)) if reg is not None]
        return tuple(written), False, False
    try:
        has_dest = decoded.signature.dest is not None
    except (ValueError, KeyError, IndexError):
        has_dest = decoded.family.op_class not in ("st", "red", "nop", "bar")
    registers = tuple(_flatten(instr.operands[0])) if has_dest else ()
    return registers, bool(decoded.family.carry_out), False


class StepRecord:
    """One scheduler step: where it ran, for whom, and the values it overwrote (or, once undone, wrote)."""

    __slots__ = ("pc", "sel", "warps", "registers", "carry", "stores", "control", "local", "nbytes")

    def __init__(self, pc: int, sel, warps: int):
        self.pc = pc
        self.sel = sel
        self.warps = warps
        self.registers: List[list] = []
        self.carry: Optional[np.ndarray] = None
        self.stores: Optional[List[list]] = None
        self.control: Optional[Dict[str, object]] = None
        self.local: Optional[List[list]] = None
        self.nbytes = 0

    def contains(self, first: int, stop: int) -> bool:
        """Whether any thread in [first, stop) ran this step."""
        if self.sel is ALL:
            return True
        sel = self.sel
        return int(np.searchsorted(sel, first)) < int(np.searchsorted(sel, stop))

    def threads_in(self, first: int, stop: int) -> np.ndarray:
        if self.sel is ALL:
            return np.arange(first, stop, dtype=np.int64)
        sel = self.sel
        return sel[np.searchsorted(sel, first):np.searchsorted(sel, stop)]


def capture(batch, instr: ir.Instr, sel, warps: int, plan) -> StepRecord:
    """The undo record of instr about to run for sel; plan is destinations(instr)."""
    record = StepRecord(instr.pc, sel, warps)
    registers, carry, released = plan
    for reg in registers:
        storage = batch.regs[reg.index]
        index = ALL if released else sel
        record.registers.append([storage, index, storage.copy() if index is ALL else storage[index]])
    if carry:
        record.carry = batch.cc.copy() if sel is ALL else batch.cc[sel]
    if instr.control in (ir.BARRIER, ir.EXIT, ir.CALL, ir.RETURN):
        record.control = {name: _copy(getattr(batch, name, None)) for name in CONTROL_FIELDS}
    if instr.control in (ir.CALL, ir.RETURN) and batch.program.local_bytes:
        threads = np.arange(batch.n, dtype=np.int64) if sel is ALL else sel
        record.local = [[int(t), batch.memory.local_bytes(int(t)).copy()] for t in threads]
    return record


def _copy(value):
    return None if value is None else value.copy()


def add_store(record: StepRecord, space: str, addresses, threads, width: int, before: np.ndarray) -> None:
    if record.stores is None:
        record.stores = []
    record.stores.append([space, addresses, threads, width, before])


def swap(record: StepRecord, batch, backward: bool) -> None:
    """Undo (backward) or redo the step: saved and current values trade places."""
    memory = batch.memory
    stores = record.stores or ()
    for entry in (reversed(stores) if backward else stores):
        space, addresses, threads, width, data = entry
        current = memory.load(space, addresses, threads, width)
        memory.store(space, addresses, threads, width, data)
        entry[4] = current
    for entry in record.registers:
        storage, index, values = entry
        current = storage.copy() if index is ALL else storage[index]
        storage[index] = values
        entry[2] = current
    if record.carry is not None:
        index = record.sel
        current = batch.cc.copy() if index is ALL else batch.cc[index]
        batch.cc[index] = record.carry
        record.carry = current
    if record.control is not None:
        for name, saved in record.control.items():
            current = getattr(batch, name, None)
            if saved is None or current is None or saved.shape != current.shape:
                setattr(batch, name, saved)
                record.control[name] = current
            else:
                kept = current.copy()
                current[...] = saved
                record.control[name] = kept
    if record.local is not None:
        for entry in record.local:
            window = memory.local_bytes(entry[0])
            kept = window.copy()
            window[...] = entry[1]
            entry[1] = kept


def measure(record: StepRecord, shared_selection: bool) -> int:
    """Bytes the record keeps alive (its selection counted only where no earlier record shares it)."""
    total = sys.getsizeof(record) + sys.getsizeof(record.registers)
    for entry in record.registers:
        total += sys.getsizeof(entry) + _ARRAY_HEADER + entry[2].nbytes
    if record.carry is not None:
        total += _ARRAY_HEADER + record.carry.nbytes
    for entry in record.stores or ():
        total += sys.getsizeof(entry) + 2 * _ARRAY_HEADER + entry[1].nbytes + entry[4].nbytes
    for value in (record.control or {}).values():
        total += 0 if value is None else _ARRAY_HEADER + value.nbytes
    for entry in record.local or ():
        total += sys.getsizeof(entry) + _ARRAY_HEADER + entry[1].nbytes
    if record.sel is not ALL and not shared_selection:
        total += _ARRAY_HEADER + record.sel.nbytes
    return total


class History:
    """The last `limit` warp instructions as undo records, and a cursor: len(records) is the present."""

    def __init__(self, limit: int = DEFAULT_HISTORY):
        self.limit = limit
        self.records: Deque[StepRecord] = deque()
        self.cursor = 0
        self.warps = 0
        self.nbytes = 0
        self.dropped = 0
        self._last_sel = None

    def clear(self) -> None:
        self.records.clear()
        self.cursor = self.warps = self.nbytes = self.dropped = 0
        self._last_sel = None

    @property
    def at_present(self) -> bool:
        return self.cursor == len(self.records)

    def push(self, record: StepRecord) -> None:
        if self.limit <= 0:
            return
        record.nbytes = measure(record, record.sel is self._last_sel)
        self._last_sel = record.sel
        self.records.append(record)
        self.warps += record.warps
        self.nbytes += record.nbytes
        while self.records and self.warps - self.records[0].warps >= self.limit:
            oldest = self.records.popleft()
            self.warps -= oldest.warps
            self.nbytes -= oldest.nbytes
            self.dropped += 1
        self.cursor = len(self.records)

    def undo(self, batch) -> StepRecord:
        self.cursor -= 1
        record = self.records[self.cursor]
        swap(record, batch, backward=True)
        return record

    def redo(self, batch) -> StepRecord:
        record = self.records[self.cursor]
        swap(record, batch, backward=False)
        self.cursor += 1
        return record

"""What the paused machine looks like: memory of every space, thread pcs and states, registers by PTX name,
and the code addresses the debugger shows."""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Dict, List, Optional, Tuple

import numpy as np

from isa.types import TYPES

from emulator import ir
from emulator.machine.lanes import ALL
from emulator.runtime.names import plain_name
from emulator.frontend.ptx.lower import SPECIAL_REGISTERS
from emulator.machine.states import AT_BARRIER, EXITED, INF, RUNNING
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from emulator.frontend.sass.program import SassProgram
from emulator.ir.sass import Address, ConstWord, Pred, SignBit, Value
from emulator.observers.debugger.expr import DebugError

SPACES = ("global", "shared", "local", "const", "param", "generic")
#: bytes of code per instruction in the addresses the debugger shows (as compute-sanitizer's `kernel+0x…`)
INSTRUCTION_BYTES = 16


#: SASS register names (R5, UR4, P0, UP1), which `$R5` names as cuda-gdb spells it
SASS_REGISTER = re.compile(r"U?[RP]\d+")


class CodeAddresses:
    """Instruction addresses as the debugger shows and accepts them. PTX: pc * 16 (as compute-sanitizer's
    `kernel+0x…`). SASS: the listing's own /*addr*/; the instructions lowering adds (lock loops, return
    checks, branch conditions) share the address of the listing instruction they come from, and that
    instruction's first pc is where it starts: the only pc that breakpoints and steps stop at."""

    def __init__(self, program: ir.Program):
        instrs = program.instrs
        self.listing = isinstance(program, SassProgram)
        if self.listing:
            self.spacing = program.arch.instruction_bytes
            listed = [instr.info.get("address") for instr in instrs]
            past_end = max((address for address in listed if address is not None), default=-self.spacing) \
                + self.spacing
            self.addresses = [past_end if address is None else address for address in listed]
        else:
            self.spacing = INSTRUCTION_BYTES
            self.addresses = [pc * INSTRUCTION_BYTES for pc in range(len(instrs))]
        self.first_pc: Dict[int, int] = {}
        for pc, address in enumerate(self.addresses):
            self.first_pc.setdefault(address, pc)
        self.ordered = sorted(self.first_pc)

    def of(self, pc: int) -> int:
        """The address of the instruction at pc."""
        return self.addresses[pc]

    def pc_at(self, address: int) -> Optional[int]:
        """The pc where the instruction at exactly this address starts (None: no instruction there)."""
        return self.first_pc.get(address)

    def start_of(self, pc: int) -> int:
        """The pc where the instruction holding pc starts (pc itself for PTX)."""
        return self.first_pc[self.addresses[pc]]

    def starts_instruction(self, pc: int) -> bool:
        return self.start_of(pc) == pc

    def last(self) -> int:
        return self.ordered[-1] if self.ordered else 0

    def from_address(self, address: int, count: int) -> List[int]:
        """Start pcs of `count` instructions from the one holding address."""
        if not self.ordered or address >= self.ordered[-1] + self.spacing:
            return []
        index = max(bisect_right(self.ordered, address) - 1, 0)
        return [self.first_pc[where] for where in self.ordered[index:index + count]]


def resolve_generic(address: int) -> Tuple[str, int]:
    """(space, address within it) of a generic address."""
    if SHARED_WINDOW <= address < SHARED_WINDOW + WINDOW_SIZE:
        return "shared", address - SHARED_WINDOW
    if LOCAL_WINDOW <= address < LOCAL_WINDOW + WINDOW_SIZE:
        return "local", address - LOCAL_WINDOW
    return "global", address


def read_space(batch, space: str, address: int, nbytes: int, cta: int, thread: int) -> np.ndarray:
    """nbytes of a space as uint8 (shared: of batch CTA `cta`; local: of batch thread `thread`)."""
    if space == "generic":
        space, address = resolve_generic(address)
    memory = batch.memory
    config = batch.config
    if space in ("global", "const", "param"):
        base = {"global": 0, "const": config.const_base, "param": config.param_base}[space]
        try:
            return memory.read(base + address, nbytes)
        except ValueError:
            where = f"{address:#x}" if space == "global" else f"@{space} {address:#x}"
            raise DebugError(f"Cannot access memory at address {where}") from None
    try:
        window = memory.shared_bytes(cta) if space == "shared" else memory.local_bytes(thread)
    except IndexError:
        raise DebugError(f"The {space} memory of that {'block' if space == 'shared' else 'thread'} is not "
                         f"resident (it runs in another batch).") from None
    if address < 0 or address + nbytes > window.size:
        raise DebugError(f"Cannot access memory at address @{space} {address:#x} "
                         f"(the {space} window holds {window.size} bytes)")
    return window[address:address + nbytes].copy()


def symbol_at(batch, space: str, address: int) -> Optional[str]:
    """`name+offset` of the variable, parameter or allocation holding an address, as gdb labels memory."""
    if space == "generic":
        space, address = resolve_generic(address)
    program = batch.program
    if space == "param":
        candidates = [(param.name, param.offset, param.size) for param in program.params]
    else:
        candidates = [(symbol.name, symbol.address, symbol.size) for symbol in program.symbols.values()
                      if symbol.space == space]
        if space == "global":
            candidates += [(allocation.name or "allocation", allocation.address, allocation.size)
                           for allocation in batch.memory.allocations()
                           if not allocation.freed and allocation.kind == "global"]
    for name, start, size in candidates:
        if start <= address < start + max(size, 1):
            return name if address == start else f"{name}+{address - start}"
    return None


class ThreadStates:
    """Per-thread pc and state at the history cursor: records after the cursor say where a thread runs next."""

    def __init__(self, engine):
        self.engine = engine

    def of(self, threads: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(pc or -1, state: RUNNING / AT_BARRIER / EXITED) of each thread."""
        engine = self.engine
        batch = engine.batch
        threads = np.asarray(threads, dtype=np.int64)
        status = batch.status[threads].copy()
        pcs = np.full(len(threads), -1, dtype=np.int64)
        waiting = status == AT_BARRIER
        pcs[waiting] = batch.resume_pc[threads[waiting]] - 1
        running = status == RUNNING
        unknown = running.copy()
        history = engine.history
        for index in range(history.cursor, len(history.records)):
            if not unknown.any():
                break
            record = history.records[index]
            if record.sel is ALL:
                hit = unknown
            else:
                hit = unknown & np.isin(threads, record.sel)
            pcs[hit] = record.pc
            unknown &= ~hit
        if unknown.any():
            present = np.zeros(len(threads), dtype=bool)
            paused_sel = engine.paused_sel
            if paused_sel is ALL:
                present[:] = True
            elif paused_sel is not None:
                present = np.isin(threads, paused_sel)
            here = unknown & present
            pcs[here] = engine.paused_pc
            rest = unknown & ~present
            rpc = batch.rpc[threads[rest]].astype(np.int64)
            rpc[rpc == INF] = -1
            pcs[rest] = rpc
        return pcs, status


def warp_masks(pcs: np.ndarray, status: np.ndarray, valid: np.ndarray):
    """(active pc, active mask, divergent mask, state word) of one warp's 32 lanes."""
    live = valid & (status != EXITED)
    running = live & (status == RUNNING) & (pcs >= 0)
    if running.any():
        pc = int(pcs[running].min())
        active = running & (pcs == pc)
        state = "running"
    elif (live & (status == AT_BARRIER)).any():
        waiting = live & (status == AT_BARRIER)
        pc = int(pcs[waiting].min())
        active = waiting & (pcs == pc)
        state = "at barrier"
    else:
        return None, 0, 0, "exited"
    divergent = live & ~active
    return pc, _mask(active), _mask(divergent), state


def _mask(flags: np.ndarray) -> int:
    return int(sum(1 << int(lane) for lane in np.flatnonzero(flags)))


class Registers:
    """Registers by name in each function: PTX ones (nvcc reuses names in nested blocks: the nearest use wins)
    or a SASS listing's R, UR, P and UP (the %-named predicates lowering adds stay out of listings)."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.listing = isinstance(program, SassProgram)
        self.uses: Dict[str, Dict[str, List[Tuple[ir.RegInfo, List[int]]]]] = {}
        for instr in program.instrs:
            table = self.uses.setdefault(instr.function, {})
            refs = list(_registers_in(instr.operands))
            plan = instr.info.get("sass")
            if plan is not None:
                refs.extend(_registers_in(plan.dests + plan.sources))
                if plan.guard is not None:
                    refs.append(plan.guard[0])
            if instr.guard is not None:
                refs.append(instr.guard[0])
            for reg in refs:
                entries = table.setdefault(reg.name, [])
                for known, pcs in entries:
                    if known.index == reg.index:
                        pcs.append(instr.pc)
                        break
                else:
                    entries.append((reg, [instr.pc]))
        self.by_name: Dict[str, ir.RegInfo] = {}
        for reg in program.registers:
            self.by_name.setdefault(reg.name, reg)

    def lookup(self, name: str, function: str, pc: int) -> ir.RegInfo:
        if name not in self.by_name and name.startswith("%") and name[1:] in self.by_name:
            name = name[1:]  # SASS registers (R5, UR4, P0) are named without the % of PTX ones
        entries = self.uses.get(function, {}).get(name)
        if entries:
            if len(entries) == 1:
                return entries[0][0]
            return min(entries, key=lambda entry: min(abs(p - pc) for p in entry[1]))[0]
        if name in self.by_name:
            return self.by_name[name]
        raise DebugError(f"No register {name} in {plain_name(function)}.")

    def of_function(self, function: str) -> List[ir.RegInfo]:
        seen = {}
        for entries in self.uses.get(function, {}).values():
            for reg, _ in entries:
                if self.shown(reg):
                    seen[reg.index] = reg
        return [seen[index] for index in sorted(seen)]

    def names(self) -> List[str]:
        return sorted({reg.name for reg in self.program.registers if self.shown(reg)})

    def shown(self, reg: ir.RegInfo) -> bool:
        """Whether the register is the program's own (not one that SASS lowering made up)."""
        return not (self.listing and reg.name.startswith("%"))


def _registers_in(operands):
    """The registers PTX and SASS operands name (RZ, PT and sinks name none)."""
    for ref in operands:
        if isinstance(ref, ir.RegRef):
            yield ref.reg
        elif isinstance(ref, ir.VecRef):
            yield from _registers_in(ref.items)
        elif isinstance(ref, ir.PredPairRef):
            yield from _registers_in((ref.first, ref.second))
        elif isinstance(ref, ir.NotRef):
            yield from _registers_in((ref.reg,))
        elif isinstance(ref, ir.AddrRef):
            yield from _registers_in((ref.base,))
        elif isinstance(ref, Value):
            yield from (reg for reg in ref.regs if reg is not None)
        elif isinstance(ref, Pred):
            if ref.reg is not None:
                yield ref.reg
        elif isinstance(ref, SignBit):
            yield from _registers_in((ref.value,))
        elif isinstance(ref, Address):
            yield from _registers_in((ref.base, ref.uniform))
        elif isinstance(ref, ConstWord):
            yield from _registers_in((ref.index,))


def typed_values(storage: np.ndarray, type_name: str, lanes) -> np.ndarray:
    """Register values as their declared type shows them (.b as signed, half types as floats)."""
    raw = storage[lanes]
    t = TYPES.get(type_name)
    if t is None or t.kind == "pred":
        return raw
    if type_name in ("f32", "f64"):
        return raw.view(t.dtype)
    if type_name == "f16":
        return raw.view(np.float16)
    if type_name == "bf16":
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if t.kind in ("signed", "bits"):
        return raw.view(np.dtype(f"i{raw.dtype.itemsize}"))
    return raw


def special_names() -> List[str]:
    names = []
    for name in sorted(SPECIAL_REGISTERS):
        names.append(name)
        if name[1:] in ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid",
                        "cluster_nctaid"):
            names.extend(f"{name}.{axis}" for axis in "xyz")
    return names


VECTOR_SPECIALS = ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid")


def special_values(batch, name: str, lanes: np.ndarray) -> np.ndarray:
    """A special register (`tid.x`, `laneid`, …) on some lanes."""
    if f"%{name.split('.')[0]}" not in SPECIAL_REGISTERS:
        raise DebugError(f"No special register %{name}.")
    value = batch.special(name)
    if callable(value):
        value = value(lanes)
    array = np.asarray(value)
    if array.ndim == 0:
        return np.broadcast_to(array, (len(lanes),))
    return array[lanes]

"""What names mean to the debugger: registers, kernel parameters, PTX symbols and C variables on some lanes
(LaneContext), code locations people type (PTX lines, CUDA lines, labels, functions, addresses) and the
frames of a thread, inlined calls included."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.frontend.ptx.lower import SPECIAL_REGISTERS
from emulator.machine.states import EXITED
from emulator.observers.debugger.cvalues import CValue
from emulator.observers.debugger.expr import Context, DebugError, SourceValue
from emulator.observers.debugger.state import SASS_REGISTER, VECTOR_SPECIALS, read_space, special_values, typed_values
from emulator.runtime.faults import chain_text
from emulator.runtime.names import plain_name

#: cuda-gdb's address space of a PTX symbol's space
_SPACE_OF_SYMBOL = {"shared": "shared", "global": "global", "const": "const", "local": "local", "param": "param"}


class LaneContext(Context):
    """Registers, special registers, convenience variables and symbols, on some lanes of the batch."""

    def __init__(self, session, lanes: np.ndarray, function: str, pc: int, inline_depth: Optional[int] = None):
        self.session = session
        self.lanes = lanes
        self.function = function
        self.pc = pc
        self.inline_depth = inline_depth     # a caller's frame of an inlined call: no variables deeper than this

    def _batch(self):
        batch = self.session.batch
        if batch is None:
            raise DebugError("The program has no registers now.")
        return batch

    def register(self, name: str):
        base = name[1:].split(".")[0]
        if f"%{base}" in SPECIAL_REGISTERS:
            if base in VECTOR_SPECIALS and "." not in name:
                raise DebugError(f"{name} is a vector: name a component ({name}.x, {name}.y, {name}.z).")
            return special_values(self._batch(), name[1:], self.lanes)
        batch = self._batch()
        reg = self.session.registers.lookup(name, self.function, self.pc)
        return typed_values(batch.regs[reg.index], reg.type, self.lanes)

    def convenience(self, name: str):
        session = self.session
        if name == "$pc":
            self._batch()
            pcs, _ = session.states.of(self.lanes)
            if np.all(pcs < 0):
                raise DebugError("$pc has no value: " + ("the lane has exited." if len(pcs) == 1 else
                                                         "every lane has exited."))
            return np.array([session.addresses.of(int(pc)) if pc >= 0 else 0 for pc in pcs], dtype=np.uint64)
        if session.registers.listing and SASS_REGISTER.fullmatch(name[1:]):
            return self.register(name[1:])
        history = re.fullmatch(r"\$(\$?)(\d*)", name)
        if history:
            return self._history(bool(history.group(1)), history.group(2))
        special = name[1:]
        if f"%{special.split('.')[0]}" in SPECIAL_REGISTERS:
            return self.register("%" + special)
        raise DebugError(f"Convenience variable {name} has no value.")

    def _history(self, back: bool, digits: str):
        values = self.session.values
        if not values:
            raise DebugError("History is empty.")
        if back:
            index = len(values) - 2 - (int(digits) - 1 if digits else 0)
        else:
            index = int(digits) - 1 if digits else len(values) - 1
        if not 0 <= index < len(values):
            raise DebugError(f"History has not yet reached ${index + 1}.")
        value = values[index]
        if isinstance(value, SourceValue):
            return value
        if value.shape[0] == 1:
            return value[0]
        if value.shape[0] != len(self.lanes):
            raise DebugError(f"${index + 1} holds one value per lane of a warp; use it with @all.")
        return value

    def symbol(self, name: str):
        session = self.session
        self._batch()
        program = session.program
        variables = session.variables
        if variables:
            variable = variables.find(name, self.function, self.pc, self.inline_depth)
            if variable is not None:
                return self.variable(variable)
        for param in program.params:
            short = re.search(r"param_\d+$", param.name)
            if name == param.name or short is not None and name == short.group():
                return session.param_value(param)
        symbol = session.ptx_symbols.get(name)
        if symbol is not None:
            return np.uint64(symbol.address)
        raise DebugError(f'No symbol "{name}" in current context.')

    # ---- C variables ----
    def variable(self, variable) -> CValue:
        session = self.session
        lanes = len(self.lanes)
        location = session.variables.location_at(variable, self.pc)
        if location is None:
            return CValue(variable.type, self.read, lanes, optimized_out=True)
        if location[0] == "register":
            try:
                reg = session.registers.lookup(location[1], self.function, self.pc)
            except DebugError:
                return CValue(variable.type, self.read, lanes, optimized_out=True)
            bits = self._batch().regs[reg.index][self.lanes]
            width = bits.dtype.itemsize
            bits = bits.view(np.dtype(f"u{width}")).astype(np.uint64)
            return CValue(variable.type, self.read, lanes, bits=bits)
        if location[0] == "symbol":
            _, name, offset = location
            for param in session.program.params:
                if param.name == name:
                    return CValue(variable.type, self.read, lanes, space="param",
                                  addresses=np.uint64(param.offset + offset))
            symbol = session.ptx_symbols.get(name)
            if symbol is None:
                return CValue(variable.type, self.read, lanes, optimized_out=True)
            space = _SPACE_OF_SYMBOL.get(symbol.space, "generic")
            return CValue(variable.type, self.read, lanes, space=space, addresses=np.uint64(symbol.address + offset))
        if location[0] == "address":
            return CValue(variable.type, self.read, lanes, space="generic", addresses=np.uint64(location[1]))
        raise DebugError(f"{variable.name} lives where gpuemu cannot read it (DWARF operation {location[1]:#x}).")

    def read(self, space: str, address: int, nbytes: int, lane: int) -> np.ndarray:
        batch = self._batch()
        thread = int(self.lanes[lane])
        return read_space(batch, space, address, nbytes, thread // batch.tpc_pad, thread)

    def access(self, op: str, value, operand=None):
        if not isinstance(value, CValue):
            return super().access(op, value, operand)
        if op == "[]":
            return value.index(operand)
        if op == ".":
            return value.member(operand)
        if op == "->":
            return value.dereference().member(operand)
        if op == "*":
            return value.dereference()
        return value.address()


@dataclass
class Frame:
    """One frame of a thread: pc, the PTX function, the name shown, its CUDA (file, line), and whether it is an
    inlined call (inlined) or a caller's frame (caller: its pc is the call instruction)."""
    pc: int
    function: str
    name: str
    source: Optional[Tuple[str, int]]
    inlined: bool
    caller: bool
    first: bool = True     # the innermost frame of its pc's group (a .func frame and the calls inlined into it)
    inline_depth: int = 0  # how many inlined calls deep in its PTX function (0: the function's own frame)


def thread_frames(session, batch, thread: int, pc: int) -> List[Frame]:
    """The frames of a thread at pc, innermost first: each inlined call gets its own frame (from .loc's
    inlined_at, or from -G's DWARF inlined subroutines), then the .func calls on the thread's stack."""
    depth = 0 if batch.depth is None else int(batch.depth[thread])
    real = [(pc, False)] + [(int(batch.stack_pc[level, thread]) - 1, True) for level in range(depth - 1, -1, -1)]
    frames: List[Frame] = []
    for frame_pc, caller in real:
        instr = session.program.instrs[frame_pc]
        outer = session.frame_name(instr.function)
        chain = inline_chain(session, instr)
        for position, (function, source) in enumerate(chain):
            inlined = position < len(chain) - 1
            frames.append(Frame(frame_pc, instr.function, plain_name(function) if inlined else outer, source,
                                inlined, caller, position == 0, len(chain) - 1 - position))
    return frames


def inline_chain(session, instr: ir.Instr):
    """(function or None, (file, line)) innermost first, from .loc's inlined_at or the DWARF's inlined calls."""
    if instr.inlined or session.variables is None or not session.variables.inlined:
        return list(instr.source_frames())
    calls = session.variables.inlined_at(instr.pc)
    chain, where = [], instr.source
    for call in calls:
        chain.append((call.function, where))
        where = (session.program.files.get(call.call[0], f"file{call.call[0]}"), call.call[1])
    chain.append((None, where))
    return chain


def inline_calls(session, instr: ir.Instr) -> Tuple[Tuple[Optional[str], Optional[Tuple[str, int]]], ...]:
    """The inlined calls around an instruction, outermost first, each as (function, (file, line) of its call):
    two pcs of one inlined call share the start of this tuple up to that call's depth."""
    chain = inline_chain(session, instr)
    return tuple((chain[position][0], chain[position + 1][1]) for position in range(len(chain) - 2, -1, -1))


def chain_source_text(session, instr: ir.Instr, name=lambda path: path) -> Optional[str]:
    """`file:LINE` of an instruction's CUDA source, the user's line first and then the inlined calls
    (`k.cu:24, inlined: scale at k.cu:7`), from the chain that stops and `bt` show (DWARF's included)."""
    if instr.source is None:
        return None
    return chain_text(inline_chain(session, instr), name)


def thread_state(session, thread: int) -> Tuple[int, int]:
    pcs, states = session.states.of(np.array([thread]))
    return int(pcs[0]), int(states[0])


def exited(state: int, pc: int) -> bool:
    return state == EXITED or pc < 0


def source_label(source: Optional[Tuple[str, int]]) -> str:
    return f"{os.path.basename(source[0])}:{source[1]}" if source else ""

"""What the DAP server shows of a paused thread: scopes (locals, registers, shared memory, special registers),
their variables with arrays and structs to expand, and the CUDA threads as DAP threads."""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional

import numpy as np

from emulator.observers.debugger.cvalues import CValue
from emulator.observers.debugger.expr import DebugError, format_scalar
from emulator.observers.debugger.state import typed_values
from emulator.runtime.names import plain_name

#: the most threads listed one by one; past it, one DAP thread per warp (its first lane)
THREADS_LISTED = 1024
_SPECIALS = ("tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y", "ntid.z",
             "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid")
_ELEMENTS = 1000
#: stackTrace frame ids are thread * FRAMES_PER_THREAD + frame number + 1 (deeper frames are not listed)
FRAMES_PER_THREAD = 256


class References:
    """DAP's variablesReference numbers, valid until the program moves on."""

    def __init__(self):
        self.table: Dict[int, Callable[[], List[dict]]] = {}

    def clear(self) -> None:
        self.table = {}

    def add(self, children: Callable[[], List[dict]]) -> int:
        number = len(self.table) + 1
        self.table[number] = children
        return number

    def children(self, number: int) -> List[dict]:
        if number not in self.table:
            raise DebugError(f"variablesReference {number} is not valid now (the program moved on).")
        return self.table[number]()


def variable(references: References, name: str, value, evaluate_name: Optional[str] = None) -> dict:
    """A DAP Variable for a CValue (aggregates expand) or a number."""
    entry = {"name": name, "value": "", "variablesReference": 0}
    if evaluate_name:
        entry["evaluateName"] = evaluate_name
    if isinstance(value, CValue):
        entry["type"] = value.ctype.spelled()
        try:
            entry["value"] = value.show()
        except DebugError as error:
            entry["value"] = f"<error: {error}>"
        if not value.optimized_out and value.ctype.kind in ("array", "struct", "union"):
            entry["variablesReference"] = references.add(lambda: members(references, value, evaluate_name))
            entry["indexedVariables" if value.ctype.kind == "array" else "namedVariables"] = \
                value.ctype.dims[0] if value.ctype.kind == "array" else len(value.ctype.members)
        elif value.ctype.kind == "pointer" and value.ctype.target is not None and \
                value.ctype.target.kind in ("struct", "union", "base"):
            entry["variablesReference"] = references.add(
                lambda: [variable(references, f"*{name}", value.dereference(),
                                  f"*{evaluate_name}" if evaluate_name else None)])
        return entry
    array = np.asarray(value)
    entry["value"] = format_scalar(array.reshape(-1)[0] if array.size else array)
    entry["type"] = array.dtype.name
    return entry


def members(references: References, value: CValue, evaluate_name: Optional[str]) -> List[dict]:
    ctype = value.ctype
    if ctype.kind == "array":
        count = min(ctype.dims[0], _ELEMENTS)
        return [variable(references, f"[{index}]", value.index(np.full(value.lanes, index, np.int64)),
                         f"{evaluate_name}[{index}]" if evaluate_name else None) for index in range(count)]
    return [variable(references, name, value.member(name), f"({evaluate_name}).{name}" if evaluate_name else None)
            for name, _, _ in ctype.members]


def scopes(session, references: References, context) -> List[dict]:
    """Locals (C arguments and locals, or the kernel's parameters), registers, shared memory, special registers,
    of the frame a LaneContext stands for (its function, its pc, the inlined calls it is inside)."""
    function, pc, lanes = context.function, context.pc, context.lanes

    def local_variables():
        if session.variables:
            seen, entries = set(), []
            for item in session.variables.visible(function, pc, context.inline_depth):
                if item.name in seen or item.space == "shared":
                    continue
                seen.add(item.name)
                entries.append(variable(references, item.name, context.variable(item), item.name))
            return entries
        return [variable(references, param.name, session.param_value(param), param.name)
                for param in session.program.params]

    def registers():
        batch = session.batch
        entries = []
        for reg in session.registers.of_function(function):
            value = typed_values(batch.regs[reg.index], reg.type, lanes)[0]
            entries.append({"name": reg.name, "value": format_scalar(value), "type": reg.type,
                            "variablesReference": 0, "evaluateName": reg.name})
        return entries

    def shared():
        entries, seen = [], set()
        if session.variables:
            for item in session.variables.visible(function, pc, context.inline_depth):
                if item.space == "shared" and item.name not in seen:
                    seen.add(item.name)
                    entries.append(variable(references, item.name, context.variable(item), item.name))
                    seen.add(item.linkage_name)
        for name, symbol in sorted(session.ptx_symbols.items()):
            if symbol.space == "shared" and name not in seen:
                entries.append({"name": name, "value": f"@shared {symbol.address:#x} ({symbol.size} bytes)",
                                "variablesReference": 0, "evaluateName": name})
        return entries

    def specials():
        entries = []
        for name in _SPECIALS:
            try:
                value = context.register("%" + name)
            except DebugError:
                continue
            entries.append({"name": "%" + name, "value": format_scalar(np.asarray(value).reshape(-1)[0]),
                            "variablesReference": 0, "evaluateName": "%" + name})
        return entries

    return [{"name": "Locals", "presentationHint": "locals", "variablesReference": references.add(local_variables),
             "expensive": False},
            {"name": "Registers", "presentationHint": "registers", "variablesReference": references.add(registers),
             "expensive": False},
            {"name": "Shared", "variablesReference": references.add(shared), "expensive": False},
            {"name": "Special registers", "variablesReference": references.add(specials), "expensive": False}]


def threads(session) -> List[dict]:
    """The resident CUDA threads as DAP threads (id: batch thread + 1), named and ordered by block, warp, lane."""
    batch = session.batch
    if batch is None:
        return [{"id": 1, "name": f"{session.kernel_name} (not running)"}]
    valid = [t for t in range(batch.n) if t % batch.tpc_pad < batch.tpc]
    if len(valid) > THREADS_LISTED:
        valid = [t for t in valid if t % 32 == 0 or t == session.focus_thread]
    result = []
    for thread in valid:
        block, xyz = batch.thread_coordinates(thread)
        local = thread % batch.tpc_pad
        result.append({"id": thread + 1, "name": f"block ({block[0]},{block[1]},{block[2]}) warp {local // 32} "
                                                 f"lane {local % 32} thread ({xyz[0]},{xyz[1]},{xyz[2]})"})
    return result


def stack_frames(session, thread: int) -> List[dict]:
    """A live thread's frames as DAP StackFrames, innermost first, inlined calls shown subtle."""
    result = []
    for number, frame in enumerate(session.frames(thread)[:FRAMES_PER_THREAD]):
        instr = session.program.instrs[frame.pc]
        where = source_of(session, frame.source[0] if frame.source else None,
                          frame.source[1] if frame.source else None, instr.line)
        result.append({"id": thread * FRAMES_PER_THREAD + number + 1, "name": frame.name, "column": 1,
                       "instructionPointerReference": f"{session.addresses.of(frame.pc):#x}", **where,
                       **({"presentationHint": "subtle"} if frame.inlined else {})})
    return result


def source_of(session, path: Optional[str], line: Optional[int], ptx_line: int) -> dict:
    """A stack frame's source and line: the CUDA file when it can be found, else the PTX (by reference when the
    PTX exists only in memory, as a .cu file's does)."""
    if path is not None and line:
        folder = os.path.dirname(os.path.abspath(session.options.file))
        candidates = [path if os.path.isabs(path) else os.path.join(folder, path),
                      os.path.join(folder, os.path.basename(path))]
        for candidate in candidates:
            if candidate and os.path.isfile(candidate):
                return {"source": {"name": os.path.basename(candidate), "path": os.path.abspath(candidate)},
                        "line": line}
    ptx = session.program.source_name
    if os.path.isfile(ptx):
        return {"source": {"name": os.path.basename(ptx), "path": os.path.abspath(ptx)}, "line": ptx_line}
    return {"source": {"name": session.ptx_name, "sourceReference": 1}, "line": ptx_line}


def frame_name(frame) -> str:
    return plain_name(frame.name) if not frame.name.endswith(">>>") else frame.name

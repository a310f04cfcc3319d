"""ptxas's constant folding of approximate f32 instructions as a pass over the lowered program.

An rcp/sqrt/rsqrt/ex2/lg2/sin/cos `.approx` f32 instruction whose operand is known when ptxas compiles (an
immediate, or a register whose one definition in its function is an unguarded move of an immediate or of
such a register), and a div.approx/div.full f32 whose divisor is, computes what ptxas folds it to
(isa.fold: the expansion around the special-function unit with the unit correctly rounded; sin and cos the
correctly rounded function) instead of what the unit would give at run time. The instruction stays where it
is with new semantics (and info["folded"] = True), so that traces and the debugger still see it, and a
division whose product ptxas then fuses into an add uses the folded reciprocal there too (emulator.ir.contract).
tanh.approx is never folded. PTX with `.target ..., debug` (nvcc -G) is compiled at -O0 and is left alone.
"""
from __future__ import annotations

import dataclasses
from functools import partial
from typing import Dict, List, Optional, Sequence

from isa import fold

from emulator import ir

UNARY = frozenset({"rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos"})
DIVISION_MODES = frozenset({"approx", "full"})


def fold_constants(program: ir.Program, target: Sequence[str] = ()) -> ir.Program:
    """The program with ptxas's folds of approximate instructions made (a new Program, or the same one when
    nothing folds)."""
    if "debug" in target:
        return program
    instrs = list(program.instrs)
    changed = False
    for pcs in _functions(program):
        constants = _constant_registers(program.instrs, pcs)
        for pc in pcs:
            folded = _folded(program.instrs[pc], constants)
            if folded is not None:
                instrs[pc] = folded
                changed = True
    return dataclasses.replace(program, instrs=instrs) if changed else program


def is_folded(instr: ir.Instr) -> bool:
    return bool(instr.info.get("folded"))


def _functions(program: ir.Program):
    starts = sorted(info.entry_pc for info in program.functions.values() if info.entry_pc >= 0)
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(program.instrs)
        if start < end:
            yield range(start, end)


def _destination_register(instr: ir.Instr) -> Optional[int]:
    decoded = instr.decoded
    if decoded is None or decoded.signature.dest is None or not instr.operands:
        return None
    dest = instr.operands[0]
    return dest.reg.index if isinstance(dest, ir.RegRef) else None


def _constant_registers(instrs: Sequence[ir.Instr], pcs: range) -> Dict[int, bool]:
    """Registers of the function that hold a compile-time constant: written exactly once, by an unguarded mov
    of an immediate or of another such register."""
    definitions: Dict[int, List[ir.Instr]] = {}
    for pc in pcs:
        instr = instrs[pc]
        for reg in _written_registers(instr):
            definitions.setdefault(reg, []).append(instr)
    constant: Dict[int, bool] = {}

    def is_constant(reg: int, seen=()) -> bool:
        if reg in constant:
            return constant[reg]
        found = definitions.get(reg, [])
        result = False
        if len(found) == 1 and reg not in seen:
            instr = found[0]
            source = instr.operands[1] if len(instr.operands) == 2 else None
            if instr.guard is None and instr.decoded is not None and instr.decoded.family.mnemonic == "mov":
                if isinstance(source, ir.ImmRef):
                    result = True
                elif isinstance(source, ir.RegRef):
                    result = is_constant(source.reg.index, seen + (reg,))
        constant[reg] = result
        return result

    for reg in definitions:
        is_constant(reg)
    return constant


def _written_registers(instr: ir.Instr) -> List[int]:
    if instr.decoded is None or instr.decoded.signature.dest is None or not instr.operands:
        return []
    dest = instr.operands[0]
    if isinstance(dest, ir.RegRef):
        return [dest.reg.index]
    if isinstance(dest, ir.VecRef):
        return [item.reg.index for item in dest.items if isinstance(item, ir.RegRef)]
    if isinstance(dest, ir.PredPairRef):
        return [ref.reg.index for ref in (dest.first, dest.second) if ref is not None]
    return []


def _known(ref, constants: Dict[int, bool]) -> bool:
    if isinstance(ref, ir.ImmRef):
        return True
    return isinstance(ref, ir.RegRef) and constants.get(ref.reg.index, False)


def _folded(instr: ir.Instr, constants: Dict[int, bool]) -> Optional[ir.Instr]:
    decoded = instr.decoded
    if decoded is None or instr.guard is not None or decoded.family.op_class != "alu" or not decoded.types \
            or decoded.type != "f32" or _destination_register(instr) is None:
        return None
    mnemonic = decoded.family.mnemonic
    if mnemonic in UNARY and decoded.has("approx") and len(instr.operands) == 2 \
            and _known(instr.operands[1], constants):
        if mnemonic in ("sin", "cos"):
            build = _fixed(getattr(fold, "f" + mnemonic))
        else:
            build = _with_folding_units(decoded.family.semantics)
    elif mnemonic == "div" and decoded.get("approx") in DIVISION_MODES and len(instr.operands) == 3 \
            and _known(instr.operands[2], constants):
        build = _with_folding_units(decoded.family.semantics)
    else:
        return None
    family = dataclasses.replace(decoded.family, semantics=build)
    info = dict(instr.info)
    info["folded"] = True
    return dataclasses.replace(instr, decoded=dataclasses.replace(decoded, family=family), info=info)


def _with_folding_units(base):
    return lambda decoded: partial(base(decoded), units=fold.UNITS)


def _fixed(function):
    return lambda decoded: partial(function, ty=decoded.type, ftz=decoded.has("ftz"))

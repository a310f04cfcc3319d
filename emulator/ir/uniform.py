"""Which registers hold one value for a whole launch, so that instructions can read them as scalars.

A register qualifies when every write to it sits in the kernel's prologue — the straight-line code
from the entry up to the first label or control instruction, which every thread runs exactly once
before anything else — is unguarded, and computes only from launch-uniform inputs: immediates,
symbol addresses, kernel parameters, constant-bank words at fixed addresses, %ntid/%nctaid-like
special registers and other such registers. Their arrays are still written in full (the debugger,
traces and checkers read them); readers inside the interpreter take the scalar instead.
"""
from __future__ import annotations

from typing import List, Set

from emulator import ir

LAUNCH_UNIFORM_SPECIALS = ("ntid", "nctaid", "nsmid", "nwarpid", "gridid", "dynamic_smem_size", "total_smem_size",
                           "aggr_smem_size", "nclusterid", "cluster_nctaid", "cluster_nctarank")
UNIFORM_CLASSES = ("alu", "mov", "cvta", "ld")


def _labels_and_targets(program: ir.Program) -> Set[int]:
    targets = set(program.labels.values())
    targets.update(instr.target for instr in program.instrs if instr.target is not None)
    return targets


def _prologue(program: ir.Program):
    entry = program.functions[program.name].entry_pc
    targets = _labels_and_targets(program)
    for pc in range(entry, len(program.instrs)):
        instr = program.instrs[pc]
        if instr.control != ir.STRAIGHT or (pc != entry and pc in targets) or instr.function != program.name:
            return
        yield instr


def _uniform_source(ref, uniform: Set[int]) -> bool:
    if isinstance(ref, (ir.ImmRef, ir.SymRef)):
        return True
    if isinstance(ref, ir.SpecialRef):
        return ref.name.split(".")[0] in LAUNCH_UNIFORM_SPECIALS
    if isinstance(ref, ir.RegRef):
        return ref.reg.index in uniform
    if isinstance(ref, ir.AddrRef):
        if ref.symbol is not None:
            return ref.symbol.space in ("param", "const", "global")
        return ref.base is None or ref.base.reg.index in uniform
    if isinstance(ref, ir.VecRef):
        return all(_uniform_source(item, uniform) for item in ref.items)
    return False


def _written(instr: ir.Instr) -> List[int]:
    """Every register an instruction may write (its first operand, for the instructions that have a destination)."""
    if instr.decoded is None or instr.decoded.signature.dest is None or not instr.operands:
        return []
    dest = instr.operands[0]
    items = dest.items if isinstance(dest, ir.VecRef) else (dest,)
    written = []
    for item in items:
        if isinstance(item, ir.RegRef):
            written.append(item.reg.index)
        elif isinstance(item, ir.PredPairRef):
            written += [item.first.reg.index] + ([item.second.reg.index] if item.second else [])
    return written


def _uniform_load(instr: ir.Instr, uniform: Set[int]) -> bool:
    space = instr.decoded.get("space", "generic")
    address = instr.operands[1] if len(instr.operands) > 1 else None
    if not isinstance(address, ir.AddrRef) or space not in ("param", "const"):
        return False
    if address.symbol is not None:
        return address.symbol.space in ("param", "const")
    return address.base is not None and address.base.reg.index in uniform


def uniform_registers(program: ir.Program) -> Set[int]:
    """Indices of the registers whose every write is a launch-uniform value computed in the prologue."""
    uniform: Set[int] = set()
    if any(instr.op_class == "sass" for instr in program.instrs):
        return uniform
    written_elsewhere: Set[int] = set()
    prologue = list(_prologue(program))
    prologue_pcs = {instr.pc for instr in prologue}
    for instr in program.instrs:
        if instr.pc not in prologue_pcs:
            written_elsewhere.update(_written(instr))
    for instr in prologue:
        destinations = _written(instr)
        if not destinations:
            continue
        op_class = instr.decoded.family.op_class
        simple = isinstance(instr.operands[0], (ir.RegRef, ir.VecRef)) and \
            not any(isinstance(item, ir.PredPairRef) for item in getattr(instr.operands[0], "items", ()))
        eligible = simple and instr.guard is None and op_class in UNIFORM_CLASSES and \
            not (op_class == "alu" and (instr.decoded.family.carry_in or instr.decoded.has("cc")))
        if not eligible:
            ok = False
        elif op_class == "ld":
            ok = _uniform_load(instr, uniform)
        else:
            ok = all(_uniform_source(ref, uniform) for ref in instr.operands[1:])
        if ok and not written_elsewhere.intersection(destinations):
            uniform.update(destinations)
        else:
            for index in destinations:
                uniform.discard(index)
                written_elsewhere.add(index)
    return uniform

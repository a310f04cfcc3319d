"""Which registers hold one value for a whole launch, so that instructions can read them as scalars.

A register qualifies when its one write sits in the kernel's prologue — the straight-line code
from the entry up to the first label or control instruction, which every thread runs exactly once
before anything else — is unguarded, is not preceded by a read of it, and computes only from
launch-uniform inputs: immediates,
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


def _registers_in(ref, found: Set[int]) -> None:
    if isinstance(ref, ir.RegRef):
        found.add(ref.reg.index)
    elif isinstance(ref, ir.NotRef):
        found.add(ref.reg.reg.index)
    elif isinstance(ref, ir.AddrRef) and ref.base is not None:
        found.add(ref.base.reg.index)
    elif isinstance(ref, ir.VecRef):
        for item in ref.items:
            _registers_in(item, found)


def _read(instr: ir.Instr) -> Set[int]:
    """Every register an instruction may read: its sources, an address's base, its guard."""
    found: Set[int] = set()
    has_dest = instr.decoded is not None and instr.decoded.signature.dest is not None
    for position, ref in enumerate(instr.operands):
        if position == 0 and has_dest:
            if isinstance(ref, ir.AddrRef):
                _registers_in(ref, found)
            continue
        _registers_in(ref, found)
    if instr.guard is not None:
        found.add(instr.guard[0].index)
    return found


def _not_single_definitions(prologue) -> Set[int]:
    """Registers the prologue writes more than once, or reads before it writes them: under a schedule that runs some
    warps further than others, threads would see different values of them at one time."""
    written: Set[int] = set()
    excluded: Set[int] = set()
    for instr in prologue:
        excluded.update(_read(instr) - written)
        for index in _written(instr):
            if index in written:
                excluded.add(index)
            written.add(index)
    return excluded


def uniform_registers(program: ir.Program) -> Set[int]:
    """Indices of the registers whose one write is a launch-uniform value computed in the prologue."""
    uniform: Set[int] = set()
    if any(instr.op_class == "sass" for instr in program.instrs):
        return uniform
    prologue = list(_prologue(program))
    written_elsewhere: Set[int] = _not_single_definitions(prologue)
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

"""ptxas's FMA contraction as a pass over the lowered program: a mul fused into the add/sub that uses it.

PTX lets the code generator fuse a `mul` with an `add`/`sub` that carry no rounding modifier, and ptxas
does (sm_90, the driver's default -O3). The rule below is what tools/contraction_study.py found in the
SASS ptxas 13.0 emits (docs/fidelity.md states it with the evidence); a fused add becomes one
`fma.rn` that reads the mul's operands, with one rounding. A product that is fused is fused into all its
readers; the mul still writes it (debuggers and traces see it) unless it overwrites one of its own operands,
which the fused readers need: then it does nothing.

A mul `d = a * b` is a *product* when it has no rounding modifier and no .sat, no guard, and neither
operand is the immediate ±1.0 (ptxas folds those away first). An add/sub *can take* it when it has the
product's type, no rounding modifier and the mul's .ftz (its own .sat and guard are kept), reads the
product in exactly one operand — directly or through mov and neg (not neg.bf16x2; neg.ftz only for f32
after a mul.ftz) — and sits in the mul's region: a basic block that also ends at calls, guarded
exit/ret/trap and membar/fence (branches to the next instruction and labels nothing branches to do not
end it). A product is fused only if every live reader of it is an add that can take it (instructions
whose results are never used do not count) and it is not live after its region. Adds are visited in
program order: first each takes a product that has no other reader (its first operand's before its
second's), then each still unfused add takes a product all of whose readers are unfused adds, and that
product is fused into all of them. PTX with `.target ..., debug` (nvcc -G) compiles at -O0 and is left
alone. A div.approx or div.full f32 counts as a product too: ptxas ends it with an FMUL of the divisor's
reciprocal (MUFU.RCP) and the dividend, and fuses that FMUL by the same rule (isa.fp.fdiv_add). Unlike ptxas, a product whose mul operands are overwritten before a reader is not fused (the fused
add could not read the old values).
"""
from __future__ import annotations

import dataclasses
import struct
from functools import partial
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from isa import fold, fp
from isa.table import Decoded, decode

from emulator import ir
from emulator.ir.fold import is_folded

FLOAT_TYPES = frozenset({"f32", "f64", "f16", "f16x2", "bf16", "bf16x2"})
#: op classes whose instructions only compute their destination (ptxas deletes them when it is never read)
PURE_CLASSES = frozenset({"alu", "mov", "cvta"})
#: negation that ptxas folds into the FMA's operand; it keeps neg.bf16x2 as its own instruction
FOLDED_NEG_TYPES = FLOAT_TYPES - {"bf16x2"}
#: neg.ftz is folded too, but only for f32 and between a mul.ftz and an add.ftz
FLUSHED_NEG_TYPES = frozenset({"f32"})
BLOCK_ENDING_OPCODES = frozenset({"membar", "fence"})


@dataclasses.dataclass(frozen=True)
class Fusion:
    """An add/sub at add_pc computing ±(a*b) ± c in one rounding, with a and b the operands of the mul at mul_pc."""
    add_pc: int
    mul_pc: int
    product_position: int     # 1 or 2: which source of the add the product is
    negate_product: bool
    negate_addend: bool


def contract(program: ir.Program, target: Sequence[str] = ()) -> ir.Program:
    """The program with ptxas's contractions made (a new Program; the given one is not changed).
    target: the module's .target list; `debug` in it means nvcc -G code, which ptxas does not contract."""
    if "debug" in target:
        return program
    fusions = find_fusions(program)
    if not fusions:
        return program
    instrs = list(program.instrs)
    readers: Dict[int, List[int]] = {}
    for fusion in fusions:
        instrs[fusion.add_pc] = fused_instruction(program.instrs[fusion.mul_pc], program.instrs[fusion.add_pc],
                                                  fusion)
        readers.setdefault(fusion.mul_pc, []).append(fusion.add_pc)
    for mul_pc, add_pcs in readers.items():
        mul = program.instrs[mul_pc]
        if _written(mul)[0] in _read(mul):
            instrs[mul_pc] = absorbed_instruction(mul, add_pcs)
    return dataclasses.replace(program, instrs=instrs)


def fused_instruction(mul: ir.Instr, add: ir.Instr, fusion: Fusion) -> ir.Instr:
    """The add rewritten as fma.rn (with the add's .ftz, .sat and guard) of the mul's operands and the addend."""
    add_decoded = add.decoded
    type_name = add_decoded.type
    modifiers = ("rn",) + (("ftz",) if add_decoded.has("ftz") else ()) + \
        (("sat",) if add_decoded.has("sat") else ()) + (type_name,)
    decoded = decode("fma", modifiers)
    if _is_quotient(mul):
        build = partial(_quotient_fma_builder, mode=mul.decoded.get("approx"), negate_product=fusion.negate_product,
                        negate_addend=fusion.negate_addend, folded=is_folded(mul))
        decoded = dataclasses.replace(decoded, family=dataclasses.replace(decoded.family, semantics=build))
    elif fusion.negate_product or fusion.negate_addend:
        build = partial(_signed_fma_builder, negate_product=fusion.negate_product,
                        negate_addend=fusion.negate_addend)
        decoded = dataclasses.replace(decoded, family=dataclasses.replace(decoded.family, semantics=build))
    addend = add.operands[3 - fusion.product_position]
    operands = (add.operands[0], mul.operands[1], mul.operands[2], addend)
    info = dict(add.info)
    info["contracted"] = {"mul_pc": mul.pc, "mul_line": mul.line, "negate_product": fusion.negate_product,
                          "negate_addend": fusion.negate_addend}
    return dataclasses.replace(add, opcode="fma." + ".".join(modifiers), decoded=decoded, operands=operands,
                               info=info)


def absorbed_instruction(mul: ir.Instr, add_pcs: List[int]) -> ir.Instr:
    """A mul that overwrites one of its own operands, once every reader of its product is fused: it does nothing
    (SASS has no FMUL for it either), so the operand keeps the value the fused readers need."""
    family = dataclasses.replace(mul.decoded.family, op_class="nop")
    info = dict(mul.info)
    info["absorbed_into"] = list(add_pcs)
    return dataclasses.replace(mul, decoded=dataclasses.replace(mul.decoded, family=family), info=info)


def _quotient_fma_builder(decoded: Decoded, *, mode: str, negate_product: bool, negate_addend: bool, folded: bool):
    """A div.approx/div.full.f32 fused into the add reading it: ptxas's FFMA of the reciprocal and the dividend."""
    units = {"units": fold.UNITS} if folded else {}
    return partial(fp.fdiv_add, mode=mode, ftz=decoded.has("ftz"), sat=decoded.has("sat"),
                   negate_quotient=negate_product, negate_addend=negate_addend, **units)


def _signed_fma_builder(decoded: Decoded, *, negate_product: bool, negate_addend: bool):
    kw = {"ty": decoded.type, "ftz": decoded.has("ftz"), "sat": decoded.has("sat")}
    negate = partial(fp.fneg, ty=decoded.type)

    def signed_fma(a, b, c):
        return fp.ffma(negate(a) if negate_product else a, b, negate(c) if negate_addend else c, rnd="rn", **kw)
    return signed_fma


# ---- the analysis ---------------------------------------------------------------------------------

def find_fusions(program: ir.Program) -> List[Fusion]:
    """Every add/sub ptxas fuses with a mul, by the rule in this module's docstring."""
    fusions: List[Fusion] = []
    if not any(_is_product(instr) for instr in program.instrs):
        return fusions
    for pcs in _functions(program):
        fusions.extend(_FunctionAnalysis(program.instrs, pcs).fusions())
    return fusions


def mul_readers(program: ir.Program) -> Dict[int, List[int]]:
    """pc of every live float mul → pcs of the live instructions that read its product (through mov/neg copies)
    in its region, with -1 for a product read after its region or overwritten under a guard."""
    readers: Dict[int, List[int]] = {}
    for pcs in _functions(program):
        uses, escaping = _FunctionAnalysis(program.instrs, pcs).readers()
        for mul_pc, found in uses.items():
            readers[mul_pc] = [use.pc for use in found] + ([-1] if mul_pc in escaping else [])
    return readers


def _functions(program: ir.Program) -> Iterable[range]:
    starts = sorted(info.entry_pc for info in program.functions.values() if info.entry_pc >= 0)
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(program.instrs)
        if start < end:
            yield range(start, end)


def _registers(ref) -> List[int]:
    if isinstance(ref, ir.RegRef):
        return [ref.reg.index]
    if isinstance(ref, ir.NotRef):
        return [ref.reg.reg.index]
    if isinstance(ref, ir.AddrRef):
        return [ref.base.reg.index] if ref.base is not None else []
    if isinstance(ref, ir.VecRef):
        return [index for item in ref.items for index in _registers(item)]
    if isinstance(ref, ir.PredPairRef):
        return _registers(ref.first) + (_registers(ref.second) if ref.second is not None else [])
    return []


def _has_destination(instr: ir.Instr) -> bool:
    return instr.decoded is not None and instr.decoded.signature.dest is not None and bool(instr.operands)


def _written(instr: ir.Instr) -> List[int]:
    return _registers(instr.operands[0]) if _has_destination(instr) else []


def _read(instr: ir.Instr) -> List[int]:
    sources = instr.operands[1:] if _has_destination(instr) else instr.operands
    regs = [index for ref in sources for index in _registers(ref)]
    if instr.guard is not None:
        regs.append(instr.guard[0].index)
    return regs


def _float_type(instr: ir.Instr) -> Optional[str]:
    decoded = instr.decoded
    if decoded is None or decoded.family.op_class != "alu" or not decoded.types:
        return None
    return decoded.type if decoded.type in FLOAT_TYPES else None


def _immediate_value(ref: ir.ImmRef) -> Optional[float]:
    if ref.kind == "f32":
        return struct.unpack("<f", struct.pack("<I", ref.value & 0xFFFFFFFF))[0]
    if ref.kind == "f64":
        return struct.unpack("<d", struct.pack("<Q", ref.value & 0xFFFFFFFFFFFFFFFF))[0]
    if ref.kind in ("float", "int"):
        return float(ref.value)
    return None


def _is_float_mul(instr: ir.Instr) -> bool:
    decoded = instr.decoded
    return decoded is not None and decoded.family.mnemonic == "mul" and _float_type(instr) is not None \
        and len(instr.operands) == 3 and isinstance(instr.operands[0], ir.RegRef) \
        and all(isinstance(ref, (ir.RegRef, ir.ImmRef)) for ref in instr.operands[1:])


def _is_quotient(instr: ir.Instr) -> bool:
    """A div.approx or div.full f32: ptxas ends it with an FMUL of the reciprocal and the dividend, which it
    fuses like a mul's product."""
    decoded = instr.decoded
    return decoded is not None and decoded.family.mnemonic == "div" and _float_type(instr) == "f32" \
        and decoded.get("approx") in ("approx", "full") and len(instr.operands) == 3 \
        and isinstance(instr.operands[0], ir.RegRef) \
        and all(isinstance(ref, (ir.RegRef, ir.ImmRef)) for ref in instr.operands[1:])


def multiplies_by_one(instr: ir.Instr) -> bool:
    """A float mul with the immediate ±1.0 as an operand (ptxas turns it into a move or a negation)."""
    return _is_float_mul(instr) and any(isinstance(ref, ir.ImmRef) and _immediate_value(ref) in (1.0, -1.0)
                                        for ref in instr.operands[1:])


def _is_product(instr: ir.Instr) -> bool:
    """A mul ptxas may fuse: float, no rounding modifier, no .sat, unguarded, no ±1.0 operand."""
    decoded = instr.decoded
    if _is_quotient(instr):
        return instr.guard is None
    return _is_float_mul(instr) and not decoded.has("rnd") and not decoded.has("sat") and instr.guard is None \
        and not multiplies_by_one(instr)


def _is_sum(instr: ir.Instr) -> bool:
    decoded = instr.decoded
    return decoded is not None and decoded.family.mnemonic in ("add", "sub") and _float_type(instr) is not None \
        and not decoded.has("rnd") and len(instr.operands) == 3 and isinstance(instr.operands[0], ir.RegRef)


def _copy_sign(instr: ir.Instr) -> Optional[Tuple[bool, bool]]:
    """For an unguarded register copy (mov) or negation (neg) of a float value: (negates, flushes); else None."""
    decoded = instr.decoded
    if decoded is None or instr.guard is not None or len(instr.operands) != 2:
        return None
    if not all(isinstance(ref, ir.RegRef) for ref in instr.operands):
        return None
    if decoded.family.mnemonic == "mov":
        return False, False
    if decoded.family.mnemonic == "neg" and decoded.type in FOLDED_NEG_TYPES:
        return True, decoded.has("ftz")
    return None


@dataclasses.dataclass
class _Use:
    pc: int
    position: int       # the source operand (1-based) that reads the product; 0 for anything else
    negated: bool


class _FunctionAnalysis:
    """Blocks, liveness (with dead pure instructions removed, as ptxas does first) and the products' readers."""

    def __init__(self, instrs: Sequence[ir.Instr], pcs: range):
        self.instrs = instrs
        self.pcs = pcs
        self.writes = {pc: _written(instrs[pc]) for pc in pcs}
        self.reads = {pc: _read(instrs[pc]) for pc in pcs}
        self.pure = {pc: self._is_pure(instrs[pc]) for pc in pcs}
        self.blocks = self._blocks()
        self.successors = self._successors()
        self.live, self.live_out = self._liveness()

    # ---- regions ----
    def _ends_block(self, instr: ir.Instr) -> bool:
        if instr.control == ir.BRANCH:
            return instr.target != instr.pc + 1
        if instr.control in (ir.EXIT, ir.RETURN, ir.TRAP, ir.CALL):
            return True
        return instr.opcode.split(".")[0] in BLOCK_ENDING_OPCODES

    def _blocks(self) -> List[range]:
        leaders = {self.pcs.start}
        for pc in self.pcs:
            instr = self.instrs[pc]
            if instr.control == ir.BRANCH and instr.target is not None and instr.target != pc + 1:
                leaders.add(instr.target)
            if self._ends_block(instr) and pc + 1 < self.pcs.stop:
                leaders.add(pc + 1)
        starts = sorted(pc for pc in leaders if pc in self.pcs)
        return [range(start, starts[i + 1] if i + 1 < len(starts) else self.pcs.stop)
                for i, start in enumerate(starts)]

    def _successors(self) -> List[List[int]]:
        block_of = {block.start: index for index, block in enumerate(self.blocks)}
        successors = []
        for index, block in enumerate(self.blocks):
            last = self.instrs[block.stop - 1]
            following = [index + 1] if index + 1 < len(self.blocks) else []
            if last.control == ir.BRANCH and last.target != last.pc + 1:
                targets = [block_of[last.target]] if last.target in block_of else []
                successors.append(targets + (following if last.guard is not None else []))
            elif last.control in (ir.EXIT, ir.RETURN, ir.TRAP) and last.guard is None:
                successors.append([])
            else:
                successors.append(following)
        return successors

    # ---- liveness with dead-code removal ----
    def _is_pure(self, instr: ir.Instr) -> bool:
        return instr.control == ir.STRAIGHT and instr.op_class in PURE_CLASSES and _has_destination(instr)

    def _transfer(self, pc: int, regs: Set[int]) -> bool:
        """Step regs (live after pc) back over pc; False, changing nothing, for a pure instruction whose
        result is never read (strong liveness: such an instruction's own reads do not count)."""
        written = self.writes[pc]
        if self.pure[pc] and not any(reg in regs for reg in written):
            return False
        if self.instrs[pc].guard is None:
            regs.difference_update(written)
        regs.update(self.reads[pc])
        return True

    def _liveness(self) -> Tuple[Set[int], List[Set[int]]]:
        live_in: List[Set[int]] = [set() for _ in self.blocks]
        live_out: List[Set[int]] = [set() for _ in self.blocks]
        changed = True
        while changed:
            changed = False
            for index in reversed(range(len(self.blocks))):
                out = set().union(*(live_in[s] for s in self.successors[index]))
                regs = set(out)
                for pc in reversed(self.blocks[index]):
                    self._transfer(pc, regs)
                if out != live_out[index] or regs != live_in[index]:
                    live_out[index], live_in[index] = out, regs
                    changed = True
        live_instrs = set()
        for index, block in enumerate(self.blocks):
            regs = set(live_out[index])
            for pc in reversed(block):
                if self._transfer(pc, regs):
                    live_instrs.add(pc)
        return live_instrs, live_out

    # ---- products and their readers ----
    def readers(self) -> Tuple[Dict[int, List[_Use]], Set[int]]:
        """mul pc → the live instructions that read its product (through copies); products that escape their
        region (live after it, or overwritten under a guard) or whose operands change before a reader."""
        uses: Dict[int, List[_Use]] = {}
        escaping: Set[int] = set()
        for index, block in enumerate(self.blocks):
            carriers: Dict[int, Tuple[int, bool]] = {}
            operands_changed: Dict[int, int] = {}
            for pc in block:
                instr = self.instrs[pc]
                live = pc in self.live
                copy = _copy_sign(instr) if live else None
                if copy is not None and copy[1]:
                    source = carriers.get(instr.operands[1].reg.index)
                    mul = self.instrs[source[0]] if source is not None else None
                    if mul is None or mul.decoded.type not in FLUSHED_NEG_TYPES or not mul.decoded.has("ftz"):
                        copy = None
                if live and copy is None:
                    sources = instr.operands[1:] if _has_destination(instr) else instr.operands
                    for position, ref in enumerate(sources, 1):
                        for reg in _registers(ref):
                            if reg in carriers:
                                mul_pc, negated = carriers[reg]
                                uses[mul_pc].append(_Use(pc, position if isinstance(ref, ir.RegRef) else 0, negated))
                                if mul_pc in operands_changed:
                                    escaping.add(mul_pc)
                    if instr.guard is not None and instr.guard[0].index in carriers:
                        uses[carriers[instr.guard[0].index][0]].append(_Use(pc, 0, False))
                copied = None
                if copy is not None and instr.operands[1].reg.index in carriers:
                    mul_pc, negated = carriers[instr.operands[1].reg.index]
                    copied = (mul_pc, negated ^ copy[0])
                for reg in self.writes[pc]:
                    if reg in carriers:
                        if instr.guard is not None:
                            escaping.add(carriers[reg][0])
                        del carriers[reg]
                    for mul_pc, mul in self._open_products(carriers):
                        if reg in self.reads[mul_pc]:
                            operands_changed.setdefault(mul_pc, pc)
                if copied is not None:
                    carriers[instr.operands[0].reg.index] = copied
                if live and (_is_float_mul(instr) or _is_quotient(instr)):
                    uses.setdefault(pc, [])
                    operands_changed.pop(pc, None)
                    carriers[instr.operands[0].reg.index] = (pc, False)
            for reg, (mul_pc, _) in carriers.items():
                if reg in self.live_out[index]:
                    escaping.add(mul_pc)
        return uses, escaping

    def _open_products(self, carriers: Dict[int, Tuple[int, bool]]):
        seen = set()
        for mul_pc, _ in carriers.values():
            if mul_pc not in seen:
                seen.add(mul_pc)
                yield mul_pc, self.instrs[mul_pc]

    def _can_take(self, use: _Use, mul: ir.Instr) -> bool:
        add = self.instrs[use.pc]
        if use.position not in (1, 2) or not _is_sum(add):
            return False
        return add.decoded.type == mul.decoded.type and add.decoded.has("ftz") == mul.decoded.has("ftz")

    def fusions(self) -> List[Fusion]:
        uses, escaping = self.readers()
        fusable: Dict[int, List[_Use]] = {}
        for mul_pc, readers in uses.items():
            mul = self.instrs[mul_pc]
            twice = {use.pc for use in readers if sum(other.pc == use.pc for other in readers) > 1}
            if readers and _is_product(mul) and mul_pc not in escaping and not twice and \
                    all(self._can_take(use, mul) for use in readers):
                fusable[mul_pc] = readers
        offered: Dict[int, List[Tuple[int, _Use]]] = {}
        for mul_pc, readers in fusable.items():
            for use in readers:
                offered.setdefault(use.pc, []).append((mul_pc, use))
        taken: Dict[int, Tuple[int, _Use]] = {}
        adds = sorted(offered)
        for add_pc in adds:
            for mul_pc, use in sorted(offered[add_pc], key=lambda item: item[1].position):
                if len(fusable[mul_pc]) == 1:
                    taken[add_pc] = (mul_pc, use)
                    break
        for add_pc in adds:
            if add_pc in taken:
                continue
            for mul_pc, use in sorted(offered[add_pc], key=lambda item: item[1].position):
                readers = fusable[mul_pc]
                if all(reader.pc not in taken for reader in readers):
                    for reader in readers:
                        taken[reader.pc] = (mul_pc, reader)
                    break
        return [self._fusion(add_pc, mul_pc, use) for add_pc, (mul_pc, use) in sorted(taken.items())]

    def _fusion(self, add_pc: int, mul_pc: int, use: _Use) -> Fusion:
        subtract = self.instrs[add_pc].decoded.family.mnemonic == "sub"
        negate_product = use.negated ^ (subtract and use.position == 2)
        negate_addend = subtract and use.position == 1
        return Fusion(add_pc, mul_pc, use.position, negate_product, negate_addend)

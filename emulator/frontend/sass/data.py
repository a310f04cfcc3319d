"""SASS data instructions to IR: special and constant reads, memory, LDSLK locks, atomics, warp-wide ops, ALU."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Tuple

from emulator import ir
from emulator.frontend.sass import syntax as S
from emulator.frontend.sass.program import Plan, SassDecoded
from emulator.frontend.sass.vocabulary import _FLOAT_WORDS, _PRED, _REG, ATOMIC_OPS, MEMORY, WIDTHS
from emulator.ir.sass import ConstWord, Immediate, Pred, Special, Value
from isa.sass import SassOp, lookup
from isa.table import decode


class DataLowering:
    """SASS data instructions to IR: special and constant reads, memory, LDSLK locks, atomics, warp-wide ops, ALU."""

    def _is_pred(self, operand) -> bool:
        while isinstance(operand, S.Modified) and operand.modifier == "!":
            operand = operand.inner
        if not isinstance(operand, S.Name):
            return False
        parts = operand.text.split(".")
        return bool(_PRED.match(parts[0])) or (bool(_REG.match(parts[0])) and "SIGN" in parts[1:])

    def lower_special(self, sass, address, base, mods) -> None:
        if len(sass.operands) != 2:
            raise self.error(sass, f"{base} takes a destination and a special register")
        width = 64 if base == "CS2R" and "32" not in mods else 32
        dest = self.value(sass, sass.operands[0], width)
        source = self.value(sass, sass.operands[1], width)
        if not isinstance(source, Special):
            raise self.error(sass, f"{base} reads a special register such as SR_TID.X")
        plan = Plan("alu", op=lookup("MOV"), mods=mods, dests=(dest,), sources=(source, None),
                    kinds=("int", "int"), widths=(width,), neg=(False, False))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [dest, source], info={"sass": plan})

    def lower_const_load(self, sass, address, base, mods) -> None:
        width = 64 if "64" in mods else 32
        if len(sass.operands) != 2:
            raise self.error(sass, f"{base} takes a destination and c[bank][offset]")
        dest = self.value(sass, sass.operands[0], width)
        source = self.value(sass, sass.operands[1], width)
        if isinstance(source, ConstWord) and source.index is not None and source.bank == 0:
            self.const_reads.append((source.offset, width // 8))
        plan = Plan("alu", op=lookup("MOV"), mods=mods, dests=(dest,), sources=(source, None),
                    kinds=("int", "int"), widths=(width,), neg=(False, False))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods, "const"), [dest, source],
                  info={"sass": plan})

    def lower_memory(self, sass, address, base, mods) -> None:
        operation, space = MEMORY[base]
        width = next((WIDTHS[m] for m in mods if m in WIDTHS and m not in ("F32", "S32", "U32")), 4)
        if operation in ("atomic", "reduce"):
            width = 8 if any(m in ("64", "F64", "U64", "S64") for m in mods) else 4
        count = max(width // 4, 1)
        register_width = 32 * count if width >= 4 else 32
        decoded = SassDecoded(base, mods, space)
        operands = list(sass.operands)
        if operation == "load":
            dest, memory = self._operands(sass, operands, 2, "a destination register and a memory operand")
            dests = self._register_run(sass, dest, count)
            plan = Plan("load", mods=mods, dests=dests, sources=(self.address(sass, memory, mods, space),),
                        space=space, width=width)
            self.emit(sass, address, ir.STRAIGHT, decoded, [*dests, plan.sources[0]], info={"sass": plan})
        elif operation == "store":
            memory, source = self._operands(sass, operands, 2, "a memory operand and a source register")
            sources = self._register_run(sass, source, count)
            plan = Plan("store", mods=mods, sources=(self.address(sass, memory, mods, space), *sources),
                        space=space, width=width)
            self.emit(sass, address, ir.STRAIGHT, decoded, plan.sources, info={"sass": plan})
        elif operation == "lock_load":
            self.lower_lock_load(sass, address, base, mods, operands, width, decoded)
        elif operation == "unlock_store":
            memory, source = self._operands(sass, operands, 2, "a memory operand and a source register")
            sources = self._register_run(sass, source, count)
            plan = Plan("unlock_store", mods=mods, sources=(self.address(sass, memory, mods, space), *sources),
                        space=space, width=width)
            self.emit(sass, address, ir.STRAIGHT, decoded, plan.sources, info={"sass": plan, "lock": "release"})
        else:
            self.lower_atomic(sass, address, base, mods, operation, space, operands, register_width, decoded)

    def _operands(self, sass, operands, count: int, what: str) -> list:
        if len(operands) != count:
            raise self.error(sass, f"'{sass.opcode}' takes {what}")
        return operands

    def _register_run(self, sass, operand, count) -> Tuple[Value, ...]:
        """A 32*count-bit register operand as the registers it spans (R4 for .128 is R4..R7)."""
        value = self.value(sass, operand, 32)
        if not isinstance(value, Value):
            if count == 1:
                return (value,)
            raise self.error(sass, "a wide memory access needs a register")
        if value.regs[0] is None:
            return (value,) * count
        first = int(value.regs[0].name[len("UR" if value.uniform else "R"):])
        prefix = "UR" if value.uniform else "R"
        return tuple(Value((self.register(f"{prefix}{first + i}", "b32"),), value.uniform) for i in range(count))

    def lower_lock_load(self, sass, address, base, mods, operands, width, decoded) -> None:
        pred_operand, dest, memory = self._operands(sass, operands, 3,
                                                    "a predicate, a register and a memory operand")
        target_pred = self.pred(sass, pred_operand)
        where = self.address(sass, memory, mods, "shared")
        dests = self._register_run(sass, dest, max(width // 4, 1))
        stall = self.hidden_pred(f"lock_stall_{address:x}")
        arbitrate = Plan("lock_arbitrate", sources=(where,), dests=(Pred(stall),), space="shared",
                         guard=self.guard(sass), width=width)
        first = self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods, "shared"), [where], guard=None,
                          info={"sass": arbitrate, "synthetic": "lock_arbitrate"})
        park = self.emit(sass, address, ir.BRANCH, None, guard=(stall, False),
                         info={"synthetic": "lock_stall"})
        rejoin = self._innermost("SSY", address)
        self.stubs.append((park, first.pc, sass, rejoin if rejoin != address else None))
        plan = Plan("lock_load", mods=mods, dests=(target_pred, *dests), sources=(where,), space="shared",
                    width=width)
        self.emit(sass, address, ir.STRAIGHT, decoded, [target_pred, *dests, where],
                  info={"sass": plan, "lock": "acquire"})

    def lower_atomic(self, sass, address, base, mods, operation, space, operands, register_width, decoded) -> None:
        op = next((ATOMIC_OPS[m] for m in mods if m in ATOMIC_OPS), None)
        if "POPC" in mods and "INC" in mods:
            op = "add"
        if op is None:
            raise self.error(sass, f"'{sass.opcode}': unknown atomic operation")
        signed = "S32" in mods or "S64" in mods
        if "F16x2" in mods or "BF16x2" in mods:
            ty = "bf16x2" if "BF16x2" in mods else "f16x2"
        elif "F32" in mods:
            ty = "f32"
        elif "F64" in mods:
            ty = "f64"
        elif register_width == 64:
            ty = "s64" if signed else "u64"
        else:
            ty = "s32" if signed else "u32"
        if not any(isinstance(operand, S.Bracketed) for operand in operands):
            raise self.error(sass, f"'{sass.opcode}' needs a memory operand such as [R2]")
        if operation == "atomic":
            pred_dest = self.pred(sass, operands.pop(0)) if self._is_pred(operands[0]) else None
            dest = None if isinstance(operands[0], S.Bracketed) else operands.pop(0)
            memory, *rest = operands
            dests = (self.value(sass, dest, register_width) if dest is not None else None, pred_dest)
        else:
            memory, *rest = operands
            dests = ()
        where = self.address(sass, memory, mods, space)
        sources = tuple(self.value(sass, o, register_width) for o in rest)
        if "POPC" in mods and "INC" in mods:
            sources = (Immediate(1, register_width),)
        expected = 2 if op == "cas" else 1
        if len(sources) != expected:
            raise self.error(sass, f"'{sass.opcode}' takes {expected} source operand(s)")
        plan = Plan(operation, mods=mods, dests=dests, sources=(where, *sources), space=space,
                    width=register_width // 8, atomic=(op, ty))
        self.emit(sass, address, ir.STRAIGHT, decoded, [d for d in dests if d is not None] + [where, *sources],
                  info={"sass": plan})

    def lower_vote(self, sass, address, base, mods) -> None:
        values = [o for o in sass.operands if not self._is_pred(o)]
        preds = [o for o in sass.operands if self._is_pred(o)]
        mode = next((m for m in ("ALL", "ANY", "EQ") if m in mods), "ANY")
        dest = self.value(sass, values[0]) if values else None
        if not preds:
            raise self.error(sass, "VOTE votes on a predicate: VOTE.{ALL,ANY,EQ} [Rd,] [Pd,] Ps")
        if len(preds) == 2:
            pred_dest, source = self.pred(sass, preds[0]), self.pred(sass, preds[1])
        else:
            pred_dest, source = None, self.pred(sass, preds[-1])
        plan = Plan("vote", mods=(mode,), dests=(dest, pred_dest), sources=(source,))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [d for d in (dest, pred_dest, source) if d],
                  info={"sass": plan})

    def lower_shfl(self, sass, address, mods) -> None:
        mode = next((m.lower() for m in ("UP", "DOWN", "BFLY", "IDX") if m in mods), None)
        if mode is None or len(sass.operands) < 5:
            raise self.error(sass, "SHFL.{UP,DOWN,BFLY,IDX} Pd, Rd, Ra, b, c expected")
        pred_dest, dest, *sources = sass.operands
        pred = self.pred(sass, pred_dest)
        first = self.ptx_value(sass, dest)
        second = ir.RegRef(pred.reg) if pred.reg is not None else ir.SinkRef()
        operands = (ir.PredPairRef(first, second), *(self.ptx_value(sass, s) for s in sources[:3]))
        self.emit(sass, address, ir.STRAIGHT, decode("shfl", ("sync", mode, "b32")), operands)

    def lower_match(self, sass, address, mods) -> None:
        """MATCH.ANY Rd, Ra / MATCH.ALL Pd, Rd, Ra (.U64: Ra a pair)."""
        pred_dest = self.pred(sass, sass.operands[0]) if self._is_pred(sass.operands[0]) else None
        dest, source = [o for o in sass.operands if not self._is_pred(o)][:2]
        plan = Plan("match", mods=mods, dests=(self.value(sass, dest), pred_dest),
                    sources=(self.value(sass, source, 64 if "U64" in mods else 32),))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded("MATCH", mods), [*plan.dests, *plan.sources],
                  info={"sass": plan})

    def lower_redux(self, sass, address, mods) -> None:
        op = next((m.lower() for m in ("SUM", "MIN", "MAX", "AND", "OR", "XOR") if m in mods), "and")
        op = "add" if op == "sum" else op
        ty = "s32" if "S32" in mods else "u32" if op in ("add", "min", "max") else "b32"
        dest, source = (self.ptx_value(sass, o) for o in sass.operands[:2])
        self.emit(sass, address, ir.STRAIGHT, decode("redux", ("sync", op, ty)), (dest, source))

    def lower_alu(self, sass, address, base, op: SassOp, mods) -> None:
        legacy = self.arch.instruction_bytes == 8
        shape = op.shape_for(mods, legacy).split()
        operands = self._merge_halves(sass.operands) if ":h" in " ".join(shape) else list(sass.operands)
        classes = "".join("P" if self._is_pred(o) else "V" for o in operands)
        pattern = "".join(f"({'P' if slot[0] in 'qp' else 'V'}){'?' if slot.endswith('?') else ''}" for slot in shape)
        match = re.fullmatch(pattern, classes)
        if match is None:
            raise self.error(sass, f"'{sass.opcode}' does not take these operands (expected {' '.join(shape)})")
        dests, sources, kinds, widths, neg = [], [], [], [], []
        position = 0
        for index, slot in enumerate(shape):
            present = match.group(index + 1) is not None
            operand = operands[position] if present else None
            position += 1 if present else 0
            role, _, tag = slot.rstrip("?").partition(":")
            kind = {"": "int", "64": "int", "f": "f", "F": "F", "h": "hb" if "BF16_V2" in mods else "h"}[tag]
            width = 64 if tag in ("64", "F") else 32
            if role == "q":
                dests.append(self.pred(sass, operand) if present else None)
                widths.append(1)
            elif role == "d":
                dests.append(self.value(sass, operand, width) if present else None)
                widths.append(width)
            elif role == "p":
                sources.append(self.pred(sass, operand) if present else None)
                kinds.append("pred")
                neg.append(False)
            else:
                value = self.value(sass, operand, width, kind) if present else None
                sources.append(value)
                kinds.append(kind)
                neg.append(bool(kind == "int" and getattr(value, "negate", False)))
        if legacy:
            self._condition_code(operands, shape, mods, dests, sources)
        if "XORSIGN" in mods:
            sources = [replace(s, absolute=False) if isinstance(s, Value) else s for s in sources]
        plan = Plan("alu", op=op, mods=mods, dests=tuple(dests), sources=tuple(sources), kinds=tuple(kinds),
                    widths=tuple(widths), neg=tuple(neg))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [*dests, *sources], info={"sass": plan})

    def _condition_code(self, operands, shape, mods, dests, sources) -> None:
        """Fermi-Maxwell carries: `Rd.CC` writes the carry flag (the first left-out predicate destination),
        `.X` reads it (the first left-out predicate source)."""
        first = operands[0] if operands else None
        writes_flag = isinstance(first, S.Name) and "CC" in first.text.split(".")[1:]
        roles = [slot[0] for slot in shape]
        dest_slots = [index for index, role in enumerate(r for r in roles if r in "dq")]
        pred_dests = [index for index, role in zip(dest_slots, [r for r in roles if r in "dq"]) if role == "q"]
        pred_sources = [index for index, role in enumerate(r for r in roles if r in "sp") if role == "p"]
        flag = Pred(self.hidden_pred("cc"))
        if writes_flag and pred_dests and dests[pred_dests[0]] is None:
            dests[pred_dests[0]] = flag
        if "X" in mods and pred_sources and sources[pred_sources[0]] is None:
            sources[pred_sources[0]] = flag

    @staticmethod
    def _merge_halves(operands):
        """`HFMA2 R0, -RZ, RZ, 1.875, 0`: two printed half immediates are one packed operand (first = high)."""
        def numeric(operand):
            while isinstance(operand, S.Modified) and operand.modifier == "-":
                operand = operand.inner
            return isinstance(operand, S.Number) or isinstance(operand, S.Name) and operand.text in _FLOAT_WORDS
        merged = []
        index = 0
        while index < len(operands):
            if numeric(operands[index]) and index + 1 < len(operands) and numeric(operands[index + 1]):
                merged.append(("halves", operands[index], operands[index + 1]))
                index += 2
            else:
                merged.append(operands[index])
                index += 1
        return merged

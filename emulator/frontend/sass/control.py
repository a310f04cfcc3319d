"""SASS control flow to IR: branches and their reconvergence, returns, barriers, predicate registers."""
from __future__ import annotations

from emulator import ir
from emulator.frontend.sass import syntax as S
from emulator.frontend.sass.program import Plan, SassDecoded, _int, _is_integer
from emulator.frontend.sass.vocabulary import P2R, R2P
from emulator.ir.sass import Immediate, Pred, Value
from isa.sass import lookup
from isa.table import decode


class ControlLowering:
    """SASS control flow to IR: branches and their reconvergence, returns, barriers, predicate registers."""

    def lower_branch(self, sass, address, base, mods) -> None:
        if not sass.operands:
            raise self.error(sass, f"{base} needs a target address")
        if base == "CALL" and "ABS" in mods and len(sass.operands) == 1 and isinstance(sass.operands[0], S.Name) \
                and not self._is_pred(sass.operands[0]):
            self.lower_external_call(sass, address, base, mods)
            return
        if base == "BRX" or isinstance(sass.operands[0], S.Name) and not self._is_pred(sass.operands[0]):
            raise self.error(sass, f"indirect branch '{sass.opcode}' is not supported")
        operand = sass.operands[-1]
        if base in ("CALL", "JCAL") and "ABS" in mods:
            raise self.error(sass, "calls to external functions (CALL.ABS, e.g. vprintf) are not supported in SASS")
        target = self._target_address(sass, operand)
        conditions = [self.pred(sass, o) for o in sass.operands[:-1] if self._is_pred(o)]
        guard = "inherit"
        if conditions:
            taken = self.hidden_pred(f"branch_{address:x}")
            current = self.guard(sass)
            guard_pred = Pred(current[0], current[1]) if current else Pred(None)
            plan = Plan("alu", op=lookup("PLOP3"), mods=("LUT",), dests=(Pred(taken), None),
                        sources=(guard_pred, conditions[0], Pred(None), Immediate(0x80), Immediate(0)),
                        kinds=("pred", "pred", "pred", "int", "int"), widths=(1, 1), neg=(False,) * 5)
            self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [Pred(taken)], guard=None,
                      info={"sass": plan, "synthetic": "branch_condition"})
            guard = (taken, False)
        self.branches.append((self.emit(sass, address, ir.BRANCH, None, guard=guard), target, sass))

    def lower_external_call(self, sass, address, base, mods) -> None:
        """CALL.ABS Rn to a function the driver provides (vprintf, __assertfail), its address in Rn:Rn+1 from
        constant bank 4: the ABI's arguments in R4:R5, R6:R7, R8 and R10:R11, the result in R4. The callee returns
        to the next instruction (the code set R20 to it with LEPC)."""
        registers = [("R4", 64), ("R6", 64), ("R8", 32), ("R10", 64)]
        plan = Plan("external_call", dests=(self.value(sass, S.Name("R4"), 32),),
                    sources=(self.value(sass, sass.operands[0], 64),
                             *(self.value(sass, S.Name(name), width) for name, width in registers)))
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [], info={"sass": plan})

    def lower_return(self, sass, address) -> None:
        operands = [o for o in sass.operands if isinstance(o, S.Name)]
        if not operands or not self.return_addresses:
            self.emit(sass, address, ir.EXIT, None)
            return
        register = self.value(sass, operands[0])
        numbers = [o.text for o in sass.operands if isinstance(o, S.Number)]
        if not all(_is_integer(text) for text in numbers):
            raise self.error(sass, "a return's offset is a whole number")
        base_offset = sum(_int(text) for text in numbers)
        guard = self.guard(sass)
        for target in self.return_addresses:
            hit = self.hidden_pred(f"return_{address:x}_{target:x}")
            plan = Plan("return_check", sources=(register,), dests=(Pred(hit),), value=target - base_offset,
                        guard=guard)
            self.emit(sass, address, ir.STRAIGHT, SassDecoded("RET", ()), guard=None,
                      info={"sass": plan, "synthetic": "return"})
            branch = self.emit(sass, address, ir.BRANCH, None, guard=(hit, False), info={"synthetic": "return"})
            self.branches.append((branch, target, sass))
        self.emit(sass, address, ir.TRAP, None, info={"synthetic": "return"})

    def lower_barrier(self, sass, address, mods) -> None:
        values = [o for o in sass.operands if not self._is_pred(o)]
        preds = [o for o in sass.operands if self._is_pred(o)]
        if "SYNC" in mods or "ARV" in mods or not mods or "SYNCALL" in mods:
            mode = "arrive" if "ARV" in mods else "sync"
            operands = [self.ptx_value(sass, v) for v in values[:2]] or [ir.ImmRef("int", 0)]
            self.emit(sass, address, ir.BARRIER, decode("bar", (mode,)), operands)
            return
        if "RED" in mods:
            reduction = next((m.lower() for m in mods if m in ("POPC", "AND", "OR")), "popc")
            if self.arch.instruction_bytes == 8 and len(values) >= 2:
                dest_value = self.value(sass, values[0])
                if not isinstance(dest_value, Value):
                    raise self.error(sass, "BAR.RED writes its count to a register")
                dest = ir.RegRef(dest_value.regs[0]) if dest_value.regs[0] is not None else ir.SinkRef()
                values = values[1:]
            else:
                dest = ir.RegRef(self.register("%barrier_result", "b32"))
            ids = [self.ptx_value(sass, v) for v in values[:2]] or [ir.ImmRef("int", 0)]
            pred = self.pred(sass, preds[0]) if preds else Pred(None)
            if pred.reg is None:
                pred_ref = ir.ImmRef("int", 0 if pred.negated else 1)
            else:
                pred_ref = ir.NotRef(ir.RegRef(pred.reg)) if pred.negated else ir.RegRef(pred.reg)
            self.emit(sass, address, ir.BARRIER, decode("bar", ("red", reduction, "u32")), [dest, *ids, pred_ref])
            return
        raise self.error(sass, f"unsupported barrier '{sass.opcode}'")

    def lower_barrier_result(self, sass, address, mods) -> None:
        """B2R.RESULT Rd[, Pd]: what the last BAR.RED computed (the count, or for .AND/.OR the vote)."""
        values = [o for o in sass.operands if not self._is_pred(o)]
        preds = [o for o in sass.operands if self._is_pred(o)]
        result = Value((self.register("%barrier_result", "b32"),))
        dest = self.value(sass, values[0]) if values else None
        pred_dest = self.pred(sass, preds[0]) if preds else None
        plan = Plan("alu", op=lookup("ISETP"), mods=("NE", "U32", "AND"), dests=(pred_dest, None),
                    sources=(result, Immediate(0), Pred(None), None), kinds=("int", "int", "pred", "pred"),
                    widths=(1, 1), neg=(False,) * 4)
        if dest is not None:
            move = Plan("alu", op=lookup("MOV"), mods=mods, dests=(dest,), sources=(result, None),
                        kinds=("int", "int"), widths=(32,), neg=(False, False))
            self.emit(sass, address, ir.STRAIGHT, SassDecoded("B2R", mods), [dest, result], info={"sass": move})
        if pred_dest is not None:
            self.emit(sass, address, ir.STRAIGHT, SassDecoded("B2R", mods), [pred_dest, result], info={"sass": plan})

    def lower_predicate_register(self, sass, address, base, mods) -> None:
        """P2R Rd, PR, Ra, mask and R2P PR, Ra, mask: the predicate file P0..P6 as bits of a register."""
        predicates = tuple(Pred(self.register(f"P{index}", "pred")) for index in range(7))
        operands = [o for o in sass.operands if not (isinstance(o, S.Name) and o.text == "PR")]
        if base == "P2R":
            dest, source, mask = (self.value(sass, o) for o in operands)
            plan = Plan("alu", op=P2R, mods=mods, dests=(dest,), sources=(source, mask, *predicates),
                        kinds=("int", "int") + ("pred",) * 7, widths=(32,), neg=(False,) * 9)
        else:
            source, mask = (self.value(sass, o) for o in operands)
            plan = Plan("alu", op=R2P, mods=mods, dests=predicates, sources=(source, mask, *predicates),
                        kinds=("int", "int") + ("pred",) * 7, widths=(1,) * 7, neg=(False,) * 9)
        self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), [*plan.dests, *plan.sources],
                  info={"sass": plan})

    def ptx_value(self, sass, operand):
        """A plain register or immediate as the PTX operand kinds the machine's own builders read."""
        value = self.value(sass, operand)
        if isinstance(value, Immediate):
            return ir.ImmRef("int", value.bits)
        if isinstance(value, Value) and not (value.negate or value.absolute or value.invert):
            return ir.RegRef(value.regs[0]) if value.regs[0] is not None else ir.ImmRef("int", 0)
        raise self.error(sass, "expected a register or an immediate")

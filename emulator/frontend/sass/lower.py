"""SASS syntax → IR (the same ir.Instr/ir.Program the PTX path builds): registers R/P/UR/UP, operand
shapes from the SASS table, /*addr*/ branch targets → pcs, Fermi SSY/.S and Maxwell SYNC/BRK/CONT
reconvergence, the LDSLK lock arbitration, and return tables for RET.

Expansions (marked instr.info["synthetic"]): an LDSLK becomes lock arbitration, a branch that parks
lanes whose lock another warp holds or wins (they resume from a stub at the reconvergence point of the
SSY around the LDSLK, or at the end of the program without one, once the lanes and warps below them
have moved on), and the LDSLK itself; `X.S` and SYNC/BRK/CONT become branches to
the innermost SSY/PBK/PCNT target; RET becomes one compare-and-branch per return address.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from emulator import ir
from emulator.frontend.sass import syntax as S
from emulator.frontend.sass.arch import arch_for
from emulator.frontend.sass.control import ControlLowering
from emulator.frontend.sass.data import DataLowering
from emulator.frontend.sass.mangle import parameter_types
from emulator.frontend.sass.operands import OperandLowering
from emulator.frontend.sass.program import Plan, SassDecoded, SassProgram
from emulator.frontend.sass.vocabulary import _PRED, MEMORY, NO_OPS
from emulator.ir.sass import Immediate, Value
from isa.sass import lookup

#: the most bytes of kernel parameters CUDA passes (12.1 and later); constant words past them name no parameter
PARAMETER_BYTES = 32764
#: a parameter's type from its size alone, as a cubin gives it (other sizes: bytes)
SCALAR_PARAM_TYPES = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


class _Lowering(OperandLowering, ControlLowering, DataLowering):
    """One function of a listing lowered: the instructions in order, expansions, then the program."""

    def __init__(self, listing: S.Listing, function: S.Function, source: str,
                 parameters: Optional[Sequence[Tuple[int, int]]] = None):
        self.listing = listing
        self.parameters = parameters
        self.function = function
        self.source = source
        self.arch = arch_for(function.arch, function.compile_size)
        self.registers: List[ir.RegInfo] = []
        self.by_name: Dict[str, ir.RegInfo] = {}
        self.instrs: List[ir.Instr] = []
        self.address_pc: Dict[int, int] = {}
        self.branches: List[Tuple[ir.Instr, int, S.Instruction]] = []
        self.stubs: List[Tuple[ir.Instr, int, S.Instruction, Optional[int]]] = []
        self.const_reads: List[Tuple[int, int]] = []
        self.uses_shared = False
        self.user_banks = set()
        self.local_ops = False
        self.frame_bytes = 0
        self.items = self._addressed(function.body)
        self.regions = self._regions()
        self.return_addresses = [address + self.arch.instruction_bytes for address, instr in self.items
                                 if isinstance(instr, S.Instruction) and instr.opcode.split(".")[0] == "CALL"]

    # ---- instructions ----
    def emit(self, sass: S.Instruction, address: int, control: int, decoded, operands=(), *, guard="inherit",
             info=None, target=None) -> ir.Instr:
        if guard == "inherit":
            guard = self.guard(sass)
        line = self.listing.lines[sass.pos.line - 1] if 0 < sass.pos.line <= len(self.listing.lines) else ""
        text = " ".join(re.sub(r"/\*.*?\*/", " ", line).split())
        instr = ir.Instr(len(self.instrs), self.function.name, sass.pos.line, sass.pos.col, text, None,
                         sass.opcode, decoded, control, guard, tuple(operands), target,
                         {"address": address, **(info or {})})
        self.instrs.append(instr)
        return instr

    def guard(self, sass: S.Instruction):
        if sass.guard is None:
            return None
        name, negated = sass.guard
        match = _PRED.match(name)
        if not match:
            raise self.error(sass, f"'{name}' is not a predicate")
        prefix, number = match.groups()
        if number == "T":
            return (self.hidden_pred("never"), False) if negated else None
        return (self.register(f"{prefix}{number}", "pred"), negated)

    def lower(self) -> SassProgram:
        for address, item in self.items:
            if isinstance(item, S.Label):
                continue
            self.emit_lock_stubs(address)
            self.address_pc.setdefault(address, len(self.instrs))
            self.lower_instruction(item, address)
        self.emit_lock_stubs(None)
        for instr, address, sass in self.branches:
            if address not in self.address_pc:
                raise self.error(sass, f"branch target {address:#x} is not the address of an instruction")
            instr.target = self.address_pc[address]
        if not self.instrs or self.instrs[-1].control not in (ir.EXIT, ir.BRANCH, ir.RETURN) or \
                self.instrs[-1].guard is not None:
            self.instrs.append(ir.Instr(len(self.instrs), self.function.name, len(self.listing.lines), 1,
                                        "EXIT (end of listing)", None, "EXIT", None, ir.EXIT, None, (),
                                        None, {"synthetic": "end"}))
        return self.program()

    def emit_lock_stubs(self, address: Optional[int]) -> None:
        """The stubs from which parked LDSLK lanes go back to their arbitration: those that rejoin at this
        address just before its instructions (branches to the address skip them), all that are left when
        address is None. A stub branches only for lanes its LDSLK parked: the lanes that left the lock loop
        and reach it with them fall through. At the reconvergence point, below every instruction after it,
        parked lanes keep the lanes of their warp that left the loop from passing it (a barrier after it,
        which pre-Volta counts a warp once whatever lanes reach it, in particular) until they have taken
        their locks, as a Fermi warp waits at its SSY target for all its lanes."""
        remaining = []
        for park, arbitrate_pc, sass, rejoin in self.stubs:
            if address is None or rejoin == address:
                stub = self.emit(sass, park.info["address"], ir.BRANCH, None, guard=park.guard,
                                 info={"synthetic": "lock_stub"})
                stub.target = arbitrate_pc
                park.target = stub.pc
            else:
                remaining.append((park, arbitrate_pc, sass, rejoin))
        self.stubs = remaining

    def lower_instruction(self, sass: S.Instruction, address: int) -> None:
        parts = sass.opcode.split(".")
        base, mods = parts[0], tuple(parts[1:])
        fermi_sync = "S" in mods and self.arch.instruction_bytes == 8
        if fermi_sync:
            mods = tuple(m for m in mods if m != "S")
        if base == "BRA" and "DIV" in mods:
            self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), info={"sass": Plan("nop")})
        elif base in ("BRA", "JMP", "CALL", "JCAL", "BRX"):
            self.lower_branch(sass, address, base, mods)
        elif base in ("EXIT", "KILL"):
            self.emit(sass, address, ir.EXIT, None)
        elif base in ("RET", "JMX"):
            self.lower_return(sass, address)
        elif base in ("SYNC", "BRK", "CONT"):
            region = {"SYNC": "SSY", "BRK": "PBK", "CONT": "PCNT"}[base]
            target = self._innermost(region, address)
            if target is None:
                self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), info={"sass": Plan("nop")})
            else:
                self.branches.append((self.emit(sass, address, ir.BRANCH, None), target, sass))
        elif base in ("BAR", "BARRIER"):
            self.lower_barrier(sass, address, mods)
        elif base in ("BPT", "TRAP"):
            self.emit(sass, address, ir.TRAP, None)
        elif base in NO_OPS:
            self.emit(sass, address, ir.STRAIGHT, SassDecoded(base, mods), info={"sass": Plan("nop")})
        elif base in ("S2R", "S2UR", "CS2R"):
            self.lower_special(sass, address, base, mods)
        elif base in ("LDC", "ULDC"):
            self.lower_const_load(sass, address, base, mods)
        elif base in MEMORY:
            self.lower_memory(sass, address, base, mods)
        elif base == "B2R":
            self.lower_barrier_result(sass, address, mods)
        elif base in ("P2R", "R2P"):
            self.lower_predicate_register(sass, address, base, mods)
        elif base in ("VOTE", "VOTEU"):
            self.lower_vote(sass, address, base, mods)
        elif base == "MATCH":
            self.lower_match(sass, address, mods)
        elif base == "SHFL":
            self.lower_shfl(sass, address, mods)
        elif base == "REDUX":
            self.lower_redux(sass, address, mods)
        else:
            op = lookup(base)
            if op is None:
                raise self.error(sass, f"unknown SASS opcode '{sass.opcode}'")
            problem = op.check(mods) if op.check is not None else None
            if problem:
                raise self.error(sass, f"'{sass.opcode}': {problem}")
            self.lower_alu(sass, address, base, op, mods)
        if fermi_sync:
            target = self._innermost("SSY", address)
            if target is not None and target != address + self.arch.instruction_bytes:
                branch = self.emit(sass, address, ir.BRANCH, None, guard=None, info={"synthetic": "sync"})
                self.branches.append((branch, target, sass))

    # ---- the program ----
    def program(self) -> SassProgram:
        params, param_bytes, bank_params = self._params()
        local_bytes = self._local_bytes()
        return SassProgram(
            name=self.function.name, source_name=self.source, instrs=self.instrs, registers=self.registers,
            params=params, param_bytes=param_bytes, static_shared=0, has_dynamic_shared=self.uses_shared,
            local_bytes=local_bytes, functions={self.function.name: ir.FunctionInfo(self.function.name, 0, (), ())},
            labels={}, symbols={}, files={}, directives={},
            lines=self.listing.lines, arch=self.arch, bank_params=tuple(bank_params),
            uses_shared=self.uses_shared, user_banks=tuple(sorted(self.user_banks)))

    def _local_bytes(self) -> int:
        frame = 0
        for instr in self.instrs:
            plan = instr.info.get("sass")
            if plan is None or plan.kind != "alu" or not plan.dests:
                continue
            dest = plan.dests[0]
            if isinstance(dest, Value) and dest.regs and dest.regs[0] is not None and dest.regs[0].name == "R1":
                for source in plan.sources:
                    if isinstance(source, Immediate) and source.width == 32:
                        signed = source.bits - (1 << 32) if source.bits >= 1 << 31 else source.bits
                        negated = any(isinstance(s, Value) and s.negate for s in plan.sources)
                        if signed < 0 and not negated:
                            frame += -signed
        if frame == 0 and self.local_ops:
            frame = 1024
        return (frame + 15) // 16 * 16

    def _params(self):
        if self.parameters is not None:
            return self._known_params()
        arch = self.arch
        types = parameter_types(self.function.name)
        if types is None:
            types = self._inferred_param_types()
        params, bank_params = [], []
        buffer_offset = 0
        bank_offset = arch.param_offset
        for index, (ty, size) in enumerate(types):
            pointer = ty == "ptr"
            buffer_size = 8 if pointer else size
            bank_size = arch.pointer_bytes if pointer else size
            buffer_offset = (buffer_offset + buffer_size - 1) // buffer_size * buffer_size
            bank_offset = (bank_offset + bank_size - 1) // bank_size * bank_size
            params.append(ir.KernelParam(f"param{index}", "u64" if pointer else ty, buffer_offset, buffer_size,
                                         buffer_size))
            bank_params.append((buffer_offset, buffer_size, bank_offset, bank_size))
            buffer_offset += buffer_size
            bank_offset += bank_size
        return params, buffer_offset, bank_params

    def _known_params(self):
        """The parameters as the cubin lays them out: bank 0 from the architecture's parameter offset."""
        params, bank_params, end = [], [], 0
        for index, (offset, size) in enumerate(self.parameters):
            ty = SCALAR_PARAM_TYPES.get(size, "b8")
            align = size if size in SCALAR_PARAM_TYPES else 1
            params.append(ir.KernelParam(f"param{index}", ty, offset, size, align))
            bank_params.append((offset, size, self.arch.param_offset + offset, size))
            end = max(end, offset + size)
        return params, end, bank_params

    def _inferred_param_types(self):
        """Parameters of an unmangled kernel: the constant-bank words past the parameter offset it reads, and
        the gaps between them (8-byte aligned gaps as pointers, a lone 4-byte gap before an 8-byte word as that
        word's alignment padding, as in (const char*, int, unsigned*)); unread trailing parameters stay unknown."""
        seen = {}
        for offset, size in self.const_reads:
            if self.arch.param_offset <= offset < self.arch.param_offset + PARAMETER_BYTES:
                seen[offset] = max(seen.get(offset, 0), size)
        types = []
        end = self.arch.param_offset
        for offset in sorted(seen):
            if offset < end:
                continue
            size = seen[offset]
            if size == 8 and offset - end == 4 and end % 8 == 4:
                end = offset
            while end < offset:
                gap = 8 if offset - end >= 8 and end % 8 == 0 else 4
                types.append(("ptr", 0) if gap == 8 else ("u32", 4))
                end += gap
            types.append(("ptr", 0) if size == 8 else ("u32", 4))
            end = offset + size
        return types


def lower_function(listing: S.Listing, function: S.Function, source: str,
                   parameters: Optional[Sequence[Tuple[int, int]]] = None) -> SassProgram:
    """Lower one `Function :` of a listing to a runnable program; parameters: each parameter's (offset, size) in
    order, where the code's cubin says (otherwise they come from the mangled name or the code's reads)."""
    return _Lowering(listing, function, source, parameters).lower()

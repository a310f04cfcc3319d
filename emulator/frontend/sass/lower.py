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
import struct
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from isa.table import decode

from emulator import ir
from emulator.base.errors import PTXSemanticError
from emulator.frontend.sass import syntax as S
from emulator.frontend.sass.arch import Arch, arch_for
from emulator.frontend.sass.mangle import parameter_types
from emulator.ir.sass import SASS_OP_CLASS, Address, ConstWord, Immediate, Pred, SignBit, Special, Value
from isa.sass import SassOp, lookup, p2r, r2p

#: load/store/atomic mnemonics: (operation, state space)
MEMORY = {
    "LD": ("load", "generic"), "ST": ("store", "generic"), "LDU": ("load", "generic"),
    "LDG": ("load", "global"), "STG": ("store", "global"),
    "LDS": ("load", "shared"), "STS": ("store", "shared"),
    "LDL": ("load", "local"), "STL": ("store", "local"),
    "LDSLK": ("lock_load", "shared"), "STSUL": ("unlock_store", "shared"),
    "ATOM": ("atomic", "generic"), "ATOMG": ("atomic", "global"), "ATOMS": ("atomic", "shared"),
    "RED": ("reduce", "generic"), "REDG": ("reduce", "global"),
    "GLD": ("load", "global"), "GST": ("store", "global"), "LLD": ("load", "local"), "LST": ("store", "local"),
    "G2R": ("load", "shared"), "R2G": ("store", "shared"), "GATOM": ("atomic", "global"),
    "GRED": ("reduce", "global"),
}
#: data widths in bytes named by a memory instruction's type word (4 when none)
WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16, "F32": 4, "F64": 8, "S32": 4,
          "U32": 4, "S64": 8, "U64": 8, "F16x2": 4}
ATOMIC_OPS = {"ADD": "add", "MIN": "min", "MAX": "max", "INC": "inc", "DEC": "dec", "AND": "and", "OR": "or",
              "XOR": "xor", "EXCH": "exch", "CAS": "cas", "CAST": "cas"}
#: instructions that only schedule, order memory or mark reconvergence: nothing to compute here
NO_OPS = frozenset("NOP YIELD DEPBAR MEMBAR FENCE ERRBAR CGAERRBAR CCTL CCTLL NANOSLEEP SSY PBK PCNT BSSY BSYNC "
                   "BREAK WARPSYNC BMOV PREEXIT TEXDEPBAR JOIN PRET PLONGJMP LEPC".split())
#: S2R names (SR_ and separators stripped, upper case) → the machine's special registers
SPECIALS = {
    "TID.X": "tid.x", "TID.Y": "tid.y", "TID.Z": "tid.z", "CTAID.X": "ctaid.x", "CTAID.Y": "ctaid.y",
    "CTAID.Z": "ctaid.z", "NTID.X": "ntid.x", "NTID.Y": "ntid.y", "NTID.Z": "ntid.z", "NCTAID.X": "nctaid.x",
    "NCTAID.Y": "nctaid.y", "NCTAID.Z": "nctaid.z", "LANEID": "laneid", "WARPID": "warpid", "SMID": "smid",
    "VIRTUALSMID": "smid", "NWARPID": "nwarpid", "EQMASK": "lanemask_eq", "LTMASK": "lanemask_lt",
    "LEMASK": "lanemask_le", "GTMASK": "lanemask_gt", "GEMASK": "lanemask_ge", "CLOCKLO": "clock",
    "CLOCKHI": "clock_hi", "CLOCK": "clock", "GLOBALTIMERLO": "globaltimer_lo",
    "GLOBALTIMERHI": "globaltimer_hi", "GLOBALTIMER": "globaltimer_lo", "GRIDID": "gridid",
}
#: special registers that read as constants on one CTA per cluster
SPECIAL_CONSTANTS = {"CGACTAID": 0, "CLUSTERCTARANK": 0, "SRZ": 0, "SWINLO": 0, "VIRTID": 0, "ESR_PC": 0}

_REG = re.compile(r"^(U?R)(\d+|Z)$")
_PRED = re.compile(r"^(U?P)(\d+|T)$")
_SUFFIXES_IGNORED = {"reuse", "REUSE"}
_HALF_SELECTS = {"H0_H0", "H1_H1", "H0_H1", "H1_H0", "F32", "H0", "H1", "B0", "B1", "B2", "B3"}


class SassDecoded:
    """Stands in for isa.table.Decoded on SASS instructions: op_class 'sass' routes them to the SASS
    executors, and get('space') tells observers which state space a memory instruction names."""

    class Family:
        def __init__(self, mnemonic: str):
            self.mnemonic = mnemonic
            self.op_class = SASS_OP_CLASS

    def __init__(self, mnemonic: str, modifiers: Tuple[str, ...], space: Optional[str] = None):
        self.family = SassDecoded.Family(mnemonic)
        self.modifiers = modifiers
        self.mods = (("space", space),) if space else ()
        self.types: Tuple[str, ...] = ()
        self.hints: Tuple[str, ...] = ()

    def get(self, category: str, default=None):
        for name, value in self.mods:
            if name == category:
                return value
        return default

    def has(self, category: str) -> bool:
        return any(name == category for name, _ in self.mods)

    def __repr__(self) -> str:
        return ".".join((self.family.mnemonic,) + self.modifiers)


@dataclass
class Plan:
    """How the SASS executors run one instruction (instr.info['sass'])."""
    kind: str                                   # alu special load store atomic reduce lock_load unlock_store
    #                                             const vote redux nop lock_arbitrate return_check
    op: Optional[SassOp] = None
    mods: Tuple[str, ...] = ()
    dests: Tuple[Any, ...] = ()                 # Value / Pred / None (slot left out)
    sources: Tuple[Any, ...] = ()
    kinds: Tuple[str, ...] = ()                 # per source: int f F h pred
    widths: Tuple[int, ...] = ()                # per destination: bits
    neg: Tuple[bool, ...] = ()
    space: Optional[str] = None
    width: int = 4                              # bytes per lane of a memory access
    atomic: Optional[Tuple[str, str]] = None    # (op, type) for the memory core
    guard: Optional[Tuple[ir.RegInfo, bool]] = None
    value: Optional[int] = None


@dataclass
class SassProgram(ir.Program):
    """An ir.Program from a SASS listing, with what the launch must put in the constant banks."""
    arch: Optional[Arch] = None
    bank_params: Tuple[Tuple[int, int, int, int], ...] = ()   # (buffer offset, size, bank offset, bank size)
    uses_shared: bool = False
    user_banks: Tuple[int, ...] = ()


def _int(text: str) -> int:
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def _is_integer(text: str) -> bool:
    """A hex or decimal integer (the parser has checked that it fits in 64 bits)."""
    return bool(re.match(r"^(?:0[xX][0-9a-fA-F]+|\d+)$", text))


def _float_bits(value: float, width: int) -> int:
    if width == 64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return int(np.array(value, dtype=np.float32).view(np.uint32))


P2R = SassOp("P2R", "", p2r)
R2P = SassOp("R2P", "", r2p)
_FLOAT_WORDS = {"INF": float("inf"), "QNAN": float("nan"), "NAN": float("nan"), "SNAN": float("nan")}


class _Lowering:
    def __init__(self, listing: S.Listing, function: S.Function, source: str):
        self.listing = listing
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

    # ---- errors, registers ----
    def error(self, instr, message: str) -> PTXSemanticError:
        return PTXSemanticError(self.source, instr.pos.line, instr.pos.col, message)

    def register(self, name: str, kind: str) -> ir.RegInfo:
        info = self.by_name.get(name)
        if info is None:
            dtype = np.dtype(np.bool_) if kind == "pred" else np.dtype(np.uint32)
            info = ir.RegInfo(len(self.registers), name, kind, dtype)
            self.registers.append(info)
            self.by_name[name] = info
        return info

    def hidden_pred(self, name: str) -> ir.RegInfo:
        return self.register(f"%{name}", "pred")

    # ---- addresses and regions ----
    def _addressed(self, body):
        items = []
        next_address = 0
        for item in body:
            if isinstance(item, S.Instruction):
                address = item.address if item.address is not None else next_address
                next_address = address + self.arch.instruction_bytes
                items.append((address, item))
            else:
                items.append((next_address, item))
        return items

    def _regions(self):
        """(kind, start, target) of every SSY/PBK/PCNT: the reconvergence, break and continue points."""
        regions = []
        for address, item in self.items:
            if isinstance(item, S.Instruction):
                base = item.opcode.split(".")[0]
                if base in ("SSY", "PBK", "PCNT") and item.operands:
                    target = self._target_address(item, item.operands[-1])
                    regions.append((base, address, target))
        return regions

    def _innermost(self, kind: str, address: int) -> Optional[int]:
        best = None
        for region, start, target in self.regions:
            if region == kind and start < address <= target and (best is None or start > best[0]):
                best = (start, target)
        return None if best is None else best[1]

    def _target_address(self, instr, operand) -> int:
        if isinstance(operand, S.Number):
            if not _is_integer(operand.text):
                raise self.error(instr, f"branch target '{operand.text}' is not an address such as 0x80")
            return _int(operand.text)
        if isinstance(operand, S.LabelRef):
            for address, item in self.items:
                if isinstance(item, S.Label) and item.name == operand.name:
                    return address
            raise self.error(instr, f"unknown label '{operand.name}'")
        raise self.error(instr, "a branch target must be an address such as 0x80")

    # ---- operands ----
    def value(self, instr, operand, width: int = 32, kind: str = "int") -> Any:
        """A value source or destination: register (pair), immediate, constant word or special register."""
        if isinstance(operand, tuple) and operand[0] == "halves":
            high, low = (self.value(instr, part, 32, kind if kind in ("h", "hb") else "h") for part in operand[1:])
            return Immediate((high.bits << 16) | low.bits, 32)
        negate = absolute = invert = False
        while isinstance(operand, S.Modified):
            if operand.modifier == "-":
                negate = not negate
            elif operand.modifier == "|":
                absolute = True
            elif operand.modifier == "~":
                invert = True
            else:
                raise self.error(instr, f"'{operand.modifier}' cannot apply to a value operand")
            operand = operand.inner
        if isinstance(operand, S.Number):
            return self._immediate(instr, operand.text, width, kind, negate, absolute)
        if isinstance(operand, S.Name):
            text = operand.text
            parts = text.split(".")
            base, suffixes = parts[0], [p for p in parts[1:] if p not in _SUFFIXES_IGNORED]
            if base.upper() in _FLOAT_WORDS and kind in ("f", "F", "h", "hb"):
                return self._immediate(instr, base.upper(), width, kind, negate, absolute)
            match = _REG.match(base)
            if match:
                half = next((s for s in suffixes if s in _HALF_SELECTS), None)
                return self._register_value(match, width, negate, absolute, invert, half)
            if base.startswith("SR") or base == "SRZ":
                return self._special(instr, text)
            raise self.error(instr, f"'{text}' is not a register or value here")
        if isinstance(operand, S.Bracketed) and operand.prefix in ("c", "cx"):
            return self._const(instr, operand, width, negate, absolute, invert)
        raise self.error(instr, "expected a register, immediate or constant operand")

    def _register_value(self, match, width, negate, absolute, invert, half) -> Value:
        prefix, number = match.groups()
        uniform = prefix == "UR"
        count = width // 32
        if number == "Z":
            regs = (None,) * count
        else:
            first = int(number)
            regs = tuple(self.register(f"{prefix}{first + i}", "b32") for i in range(count))
        return Value(regs, uniform, negate, absolute, invert, half)

    def _immediate(self, instr, text: str, width: int, kind: str, negate: bool, absolute: bool) -> Immediate:
        mask = (1 << width) - 1
        if kind in ("f", "F", "h", "hb") and (text in _FLOAT_WORDS or not text.lower().startswith("0x")):
            value = _FLOAT_WORDS[text] if text in _FLOAT_WORDS else float(text)
            if absolute:
                value = abs(value)
            if negate:
                value = -value
            if kind == "h":
                return Immediate(int(np.array(value, dtype=np.float16).view(np.uint16)), 16)
            if kind == "hb":
                return Immediate(int(np.array(value, dtype=np.float32).view(np.uint32)) >> 16, 16)
            return Immediate(_float_bits(value, 64 if kind == "F" else 32), width)
        try:
            value = _int(text)
        except ValueError:
            raise self.error(instr, f"'{text}' is not an integer") from None
        if kind in ("f", "F") and negate:
            return Immediate(value ^ (1 << (width - 1)), width)
        if kind in ("h", "hb"):
            return Immediate(value & 0xFFFF, 16)
        return Immediate((-value if negate else value) & mask, width)

    def _special(self, instr, text: str) -> Special:
        key = text.upper()
        key = key[3:] if key.startswith("SR_") else key
        key = key.replace("_X", ".X").replace("_Y", ".Y").replace("_Z", ".Z") if "." not in key else key
        key = key.replace("_", "")
        if key in SPECIALS:
            return Special(SPECIALS[key])
        if key in SPECIAL_CONSTANTS:
            return Special(key.lower(), SPECIAL_CONSTANTS[key])
        if key in ("SWINHI", "SMEMSZ"):
            return Special(key.lower())
        raise self.error(instr, f"unsupported special register '{text}'")

    def _const(self, instr, operand: S.Bracketed, width: int, negate=False, absolute=False, invert=False) -> ConstWord:
        if len(operand.groups) != 2:
            raise self.error(instr, "a constant operand is c[bank][offset]")
        bank_terms, offset_terms = operand.groups
        if len(bank_terms) != 1 or bank_terms[0].kind != "number":
            raise self.error(instr, "constant banks are numbered: c[0x0][...]")
        bank = _int(bank_terms[0].text)
        offset = 0
        index = None
        for term in offset_terms:
            if term.kind == "number":
                offset += -_int(term.text) if term.negative else _int(term.text)
            else:
                match = _REG.match(term.text.split(".")[0])
                if not match:
                    raise self.error(instr, f"'{term.text}' cannot index a constant bank")
                index = self._register_value(match, 32, False, False, False, None)
        if bank == 0 and index is None:
            self.const_reads.append((offset, width // 8))
        if bank != 0 and not (bank == 1 and self.arch.stack[0] == 1):
            self.user_banks.add(bank)
        return ConstWord(bank, offset, index, width, negate, absolute, invert)

    def pred(self, instr, operand) -> Pred:
        negated = False
        while isinstance(operand, S.Modified):
            if operand.modifier != "!":
                raise self.error(instr, "expected a predicate")
            negated = not negated
            operand = operand.inner
        if not isinstance(operand, S.Name):
            raise self.error(instr, "expected a predicate such as P0 or PT")
        register = _REG.match(operand.text.split(".")[0])
        if register and "SIGN" in operand.text.split(".")[1:]:
            return SignBit(self._register_value(register, 32, False, False, False, None), negated)
        match = _PRED.match(operand.text.split(".")[0])
        if not match:
            raise self.error(instr, f"'{operand.text}' is not a predicate")
        prefix, number = match.groups()
        if number == "T":
            return Pred(None, negated, prefix == "UP")
        return Pred(self.register(f"{prefix}{number}", "pred"), negated, prefix == "UP")

    def address(self, instr, operand, mods: Tuple[str, ...], space: str) -> Address:
        if not isinstance(operand, S.Bracketed) or operand.prefix in ("c", "cx"):
            raise self.error(instr, "expected a memory operand such as [R2+0x4]")
        terms = operand.groups[-1]
        wide = space in ("global", "generic") and ("E" in mods or self.arch.pointer_bytes == 8 and
                                                  self.arch.instruction_bytes == 16)
        base = uniform = None
        offset = 0
        scale = 1
        for term in terms:
            if term.kind == "number":
                offset += -_int(term.text) if term.negative else _int(term.text)
                continue
            parts = term.text.split(".")
            match = _REG.match(parts[0])
            if not match:
                raise self.error(instr, f"'{term.text}' cannot form an address")
            suffixes = set(parts[1:])
            scale_word = next((s for s in suffixes if re.match(r"X\d+$", s)), None)
            if scale_word:
                scale = int(scale_word[1:])
            if match.group(1) == "UR":
                uniform = self._register_value(match, 64 if wide and "U32" not in suffixes else 32,
                                               False, False, False, None)
            else:
                width = 64 if ("64" in suffixes or wide) and "U32" not in suffixes else 32
                base = self._register_value(match, width, False, False, False, None)
        offset = (offset + (1 << 63)) % (1 << 64) - (1 << 63)  # addresses wrap around 64 bits
        if space in ("shared", "generic"):
            self.uses_shared = True
        if space == "local":
            self.local_ops = True
        return Address(base, uniform, offset, scale, 64 if wide else 32)

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

    # ---- control ----
    def lower_branch(self, sass, address, base, mods) -> None:
        if not sass.operands:
            raise self.error(sass, f"{base} needs a target address")
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

    # ---- data ----
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
        pred_operand, dest, memory = self._operands(sass, operands, 3, "a predicate, a register and a memory operand")
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

    def _inferred_param_types(self):
        """Parameters of an unmangled kernel: the constant-bank words past the parameter offset it reads, and
        the gaps between them (8-byte aligned gaps as pointers); unread trailing parameters stay unknown."""
        seen = {}
        for offset, size in self.const_reads:
            if offset >= self.arch.param_offset:
                seen[offset] = max(seen.get(offset, 0), size)
        types = []
        end = self.arch.param_offset
        for offset in sorted(seen):
            if offset < end:
                continue
            while end < offset:
                gap = 8 if offset - end >= 8 and end % 8 == 0 else 4
                types.append(("ptr", 0) if gap == 8 else ("u32", 4))
                end += gap
            size = seen[offset]
            types.append(("ptr", 0) if size == 8 else ("u32", 4))
            end = offset + size
        return types


def lower_function(listing: S.Listing, function: S.Function, source: str) -> SassProgram:
    """Lower one `Function :` of a listing to a runnable program."""
    return _Lowering(listing, function, source).lower()

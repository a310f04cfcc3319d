"""Resolved SASS operands as lowering leaves them in ir.Instr.operands: registers (and pairs), predicates,
immediates, constant-bank words, special registers and addresses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from emulator.ir import RegInfo

#: the op class of every instruction lowered from SASS: one builder (emulator.machine.sass) runs them all
SASS_OP_CLASS = "sass"
#: how the SASS executors run an instruction (its plan's kind): emulator.machine.sass has one builder for each
PLAN_KINDS = ("alu", "load", "store", "atomic", "reduce", "lock_arbitrate", "lock_load", "unlock_store", "vote",
              "match", "return_check", "nop", "external_call")
#: the addresses a cubin's relocations give the functions the driver provides (CALL.ABS reaches them through a
#: register): gpuemu's own, in a range no allocation uses
EXTERNAL_FUNCTIONS = {"vprintf": 0xFFFF_FF00_0000_0100, "__assertfail": 0xFFFF_FF00_0000_0200}


@dataclass(frozen=True)
class Value:
    """A register operand of 32 * len(regs) bits (R, UR; a pair for 64-bit slots); None parts read as zero
    (RZ/URZ) and discard writes. Modifiers: `-` negate, `|x|` absolute, `~` invert."""
    regs: Tuple[Optional[RegInfo], ...]
    uniform: bool = False
    negate: bool = False
    absolute: bool = False
    invert: bool = False
    half: Optional[str] = None            # H0_H0 / H1_H1 half selection of packed-half operands


@dataclass(frozen=True)
class Pred:
    """A predicate operand; reg None is PT (true), or with negated the constant false."""
    reg: Optional[RegInfo]
    negated: bool = False
    uniform: bool = False


@dataclass(frozen=True)
class SignBit:
    """`R2.SIGN` as a predicate source: the register's bit 31."""
    value: Value
    negated: bool = False


@dataclass(frozen=True)
class Immediate:
    """Raw bits of an immediate at the slot's width (floats already encoded)."""
    bits: int
    width: int = 32
    negate: bool = False


@dataclass(frozen=True)
class ConstWord:
    """`c[bank][offset]` or `c[bank][Rn+offset]`: width bits from a constant bank."""
    bank: int
    offset: int
    index: Optional[Value] = None
    width: int = 32
    negate: bool = False
    absolute: bool = False
    invert: bool = False


@dataclass(frozen=True)
class Special:
    """A special register (S2R SR_TID.X ...) by its PTX name (tid.x, laneid, ...), or a constant value."""
    name: str
    value: Optional[int] = None


@dataclass(frozen=True)
class Address:
    """[base + uniform + offset]: base a 32- or 64-bit register (scaled by .X4 etc.), uniform a UR term."""
    base: Optional[Value]
    uniform: Optional[Value]
    offset: int
    scale: int = 1
    width: int = 64                       # address bits the instruction forms (32 on 32-bit Fermi code)

"""Frozen syntax tree of a SASS listing, as the SASS parser leaves it: positions kept, nothing resolved."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from emulator.frontend.ptx.syntax import Pos

# ---- operands ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Name:
    """A register, special register, predicate or keyword, with its dotted suffixes (`R2.64`, `SR_TID.X`)."""
    text: str


@dataclass(frozen=True)
class Number:
    """A numeric literal exactly as printed: hex integers, decimal floats (`1.875`, `1e-08`)."""
    text: str


@dataclass(frozen=True)
class Modified:
    """An operand with a prefix: `-` negate, `+`, `!` logical not, `~` bitwise invert, `|x|` absolute value."""
    modifier: str
    inner: object


@dataclass(frozen=True)
class AddrTerm:
    kind: str          # name | number
    text: str
    negative: bool = False


@dataclass(frozen=True)
class Bracketed:
    """`[R2+0x4]`, `desc[UR4][R2.64]`, `c[0x0][0x28]`, `g [0x4]`: a prefix word and the bracket groups."""
    prefix: Optional[str]
    groups: Tuple[Tuple[AddrTerm, ...], ...]


@dataclass(frozen=True)
class LabelRef:
    name: str


# ---- listing -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instruction:
    address: Optional[int]
    guard: Optional[Tuple[str, bool]]      # (predicate name, negated)
    opcode: str                            # the whole dotted token, e.g. IMAD.WIDE.U32
    operands: Tuple[object, ...]
    pos: Pos


@dataclass(frozen=True)
class Label:
    name: str
    pos: Pos


@dataclass(frozen=True)
class Function:
    name: str
    pos: Pos
    arch: Optional[str]                    # sm_90 ... from the nearest `code for` / `.target` / `arch =`
    compile_size: Optional[int]            # 32 or 64 from a fatbin banner, when printed
    body: Tuple[object, ...]               # Instruction and Label items in order


@dataclass(frozen=True)
class Listing:
    functions: Tuple[Function, ...]
    lines: Tuple[str, ...]

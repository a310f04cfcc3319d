"""Frozen syntax tree of a PTX module, as the parser leaves it: positions kept, nothing resolved."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple, Union


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class SourceLoc:
    """A `.loc file line col` directive: where the following instructions come from in CUDA source; code inlined
    into its caller also names the inlined function (a .debug_str label, or a name) and the call's location."""
    file: int
    line: int
    col: int
    function: Optional[str] = None
    inlined_at: Optional[Tuple[int, int, int]] = None


# ---- operands ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reg:
    name: str


@dataclass(frozen=True)
class NotReg:
    name: str


@dataclass(frozen=True)
class PredPair:
    first: str
    second: str


@dataclass(frozen=True)
class Sym:
    name: str
    offset: int = 0


@dataclass(frozen=True)
class SymIndex:
    """`name[index]`: the address of element `index` of an array variable (ld/st: the element itself)."""
    name: str
    index: int


@dataclass(frozen=True)
class Sink:
    pass


@dataclass(frozen=True)
class Imm:
    """An immediate. kind is 'int', 'f32' / 'f64' (raw IEEE bits in value) or 'float' (decimal)."""
    kind: str
    value: Union[int, float]


@dataclass(frozen=True)
class Vec:
    items: Tuple["Operand", ...]


@dataclass(frozen=True)
class Addr:
    """`[base+offset]`; base is a register, a symbol or None for an absolute address."""
    base: Union[Reg, Sym, None]
    offset: int


@dataclass(frozen=True)
class CallList:
    items: Tuple["Operand", ...]


Operand = Union[Reg, NotReg, PredPair, Sym, SymIndex, Sink, Imm, Vec, Addr, CallList]


# ---- statements -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instruction:
    opcode: str
    modifiers: Tuple[str, ...]
    guard: Optional[str]
    guard_negated: bool
    operands: Tuple[Operand, ...]
    pos: Pos


@dataclass(frozen=True)
class Label:
    name: str
    pos: Pos


@dataclass(frozen=True)
class RegDecl:
    type: str
    vector: int
    names: Tuple[Tuple[str, Optional[int]], ...]
    pos: Pos


@dataclass(frozen=True)
class VarDecl:
    space: str
    name: str
    type: str
    vector: int
    align: Optional[int]
    dims: Tuple[Optional[int], ...]
    init: Optional[object]
    linkage: Tuple[str, ...]
    pos: Pos
    #: .attribute(...) names: "managed" for a __managed__ variable, "unified"
    attributes: Tuple[str, ...] = ()

    @property
    def element_count(self) -> Optional[int]:
        count = 1
        for dim in self.dims:
            if dim is None:
                return None
            count *= dim
        return count * self.vector


@dataclass(frozen=True)
class Block:
    statements: Tuple["Statement", ...]
    pos: Pos


Statement = Union[Instruction, Label, RegDecl, VarDecl, Block, SourceLoc]


@dataclass(frozen=True)
class ParamDecl:
    space: str
    name: str
    type: str
    vector: int
    align: Optional[int]
    dims: Tuple[Optional[int], ...]
    pos: Pos

    @property
    def element_count(self) -> int:
        count = self.vector
        for dim in self.dims:
            count *= dim or 1
        return count


@dataclass(frozen=True)
class Function:
    name: str
    kind: str
    linkage: Tuple[str, ...]
    params: Tuple[ParamDecl, ...]
    returns: Tuple[ParamDecl, ...]
    directives: Tuple[Tuple[str, Tuple[int, ...]], ...]
    body: Optional[Block]
    pos: Pos


@dataclass(frozen=True)
class Module:
    source_name: str
    version: Optional[str]
    target: Tuple[str, ...]
    address_size: int
    variables: Tuple[VarDecl, ...]
    functions: Tuple[Function, ...]
    files: Tuple[Tuple[int, str], ...] = field(default=())
    lines: Tuple[str, ...] = field(default=(), repr=False)
    strings: Tuple[Tuple[str, str], ...] = field(default=(), repr=False)  # .debug_str: (label, text)

    def function(self, name: str) -> Function:
        for fn in self.functions:
            if fn.name == name:
                return fn
        raise KeyError(name)

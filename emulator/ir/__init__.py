"""The lowered program: registers resolved, labels turned into pcs, symbols into addresses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from isa.table import Decoded

#: per-thread call parameters live in the thread's local window; their .param-space addresses are
#: offset by this much so that `ld.param [%rd]` can tell them from kernel parameters.
FUNC_PARAM_BASE = 1 << 24

#: sm_90 keeps the first kilobyte of a CTA's shared memory for the driver (%reserved_smem_offset_cap): ptxas
#: places the kernel's variables from this address on, and the shared window includes it
SHARED_RESERVED_BYTES = 0x400

#: where `mov.u64 %rd, function` and function names in initialisers point: 16 bytes a function, in module order,
#: far from any memory a kernel can reach (an indirect call maps the address back to its function)
FUNCTION_ADDRESS_BASE = 0xFFFF_F000_0000_0000
#: the hidden per-thread register that holds the local address of the running frame of a recursive function
FRAME_REGISTER = "<frame>"

# control classes: how the scheduler treats an instruction
STRAIGHT, BRANCH, EXIT, BARRIER, CALL, RETURN, TRAP = range(7)


@dataclass(frozen=True)
class RegInfo:
    index: int
    name: str
    type: str
    storage: np.dtype


@dataclass(frozen=True)
class RegRef:
    reg: RegInfo


@dataclass(frozen=True)
class ImmRef:
    kind: str      # int, f32 (bits), f64 (bits), float
    value: Any


@dataclass(frozen=True)
class SpecialRef:
    name: str      # tid.x, ntid.y, laneid, clock64, ...


@dataclass(frozen=True)
class SymbolInfo:
    name: str
    space: str     # global, const, shared, local, param (kernel), fparam (per-thread call params)
    address: int   # address within its space (global: absolute; const: const-bank offset; ...)
    size: int
    align: int


@dataclass(frozen=True)
class SymRef:
    symbol: SymbolInfo
    offset: int = 0


@dataclass(frozen=True)
class AddrRef:
    base: Optional[RegRef]
    symbol: Optional[SymbolInfo]
    offset: int


@dataclass(frozen=True)
class VecRef:
    items: Tuple[Any, ...]


@dataclass(frozen=True)
class PredPairRef:
    first: RegRef
    second: Optional[RegRef]


@dataclass(frozen=True)
class NotRef:
    reg: RegRef


@dataclass(frozen=True)
class SinkRef:
    pass


@dataclass(frozen=True)
class LabelRef:
    name: str
    pc: int


@dataclass(frozen=True)
class InlineFrame:
    """One inlined call around an instruction: `function` (mangled) was inlined at `call` = (CUDA file, line)."""
    function: str
    call: Tuple[str, int]


@dataclass
class Instr:
    pc: int
    function: str
    line: int
    col: int
    text: str
    source: Optional[Tuple[str, int]]      # (CUDA file, line) from .loc
    opcode: str                            # e.g. "ld.global.f32"
    decoded: Optional[Decoded]
    control: int
    guard: Optional[Tuple[RegInfo, bool]]
    operands: Tuple[Any, ...]
    target: Optional[int] = None
    info: Dict[str, Any] = field(default_factory=dict)
    inlined: Tuple[InlineFrame, ...] = ()  # from .loc's inlined_at, innermost call first

    @property
    def op_class(self) -> str:
        return self.decoded.family.op_class if self.decoded else "builtin"

    @property
    def user_source(self) -> Optional[Tuple[str, int]]:
        """The (file, line) to name first: the outermost inlined call's line, else the .loc line."""
        return self.inlined[-1].call if self.inlined else self.source

    def source_frames(self) -> Tuple[Tuple[Optional[str], Optional[Tuple[str, int]]], ...]:
        """(inlined function or None for the PTX function itself, (file, line)), innermost first."""
        frames = []
        where = self.source
        for frame in self.inlined:
            frames.append((frame.function, where))
            where = frame.call
        frames.append((None, where))
        return tuple(frames)


@dataclass
class CallSite:
    callee: str                       # "" for an indirect call
    arguments: Tuple[SymbolInfo, ...]
    returns: Tuple[SymbolInfo, ...]
    target: Optional[RegRef] = None   # an indirect call's function address


@dataclass
class FunctionInfo:
    name: str
    entry_pc: int
    params: Tuple[SymbolInfo, ...]
    returns: Tuple[SymbolInfo, ...]
    #: a function that can be active more than once (recursion): its .local and .param variables live in a frame
    #: of this many bytes per call, their addresses relative to the FRAME_REGISTER; None: fixed addresses
    frame_bytes: Optional[int] = None
    #: what one call of a recursive function takes from the per-thread stack limit: its .local bytes and 16
    stack_cost: int = 0
    #: a recursive function's registers (indices): a call of it keeps the running activation's values and its
    #: return gives them back
    registers: Tuple[int, ...] = ()


@dataclass
class KernelParam:
    name: str
    type: str
    offset: int
    size: int
    align: int


@dataclass
class Program:
    """One kernel and every .func it reaches, ready to bind to a batch of threads."""
    name: str
    source_name: str
    instrs: List[Instr]
    registers: List[RegInfo]
    params: List[KernelParam]
    param_bytes: int
    static_shared: int
    has_dynamic_shared: bool
    local_bytes: int
    functions: Dict[str, FunctionInfo]
    labels: Dict[str, int]
    symbols: Dict[str, SymbolInfo]
    files: Dict[int, str]
    directives: Dict[str, Tuple[int, ...]]
    lines: Tuple[str, ...] = ()

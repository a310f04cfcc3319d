"""What SASS lowering produces: SassProgram (an ir.Program with what the launch must put in the constant banks),
the Plan each instruction's executor follows, and SassDecoded, the stand-in for isa's Decoded."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.frontend.sass.arch import Arch
from emulator.ir.sass import PLAN_KINDS, SASS_OP_CLASS
from isa.sass import SassOp
from isa.table import ModifierLookup


class SassDecoded(ModifierLookup):
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

    def __repr__(self) -> str:
        return ".".join((self.family.mnemonic,) + self.modifiers)


@dataclass
class Plan:
    """How the SASS executors run one instruction (instr.info['sass'])."""
    kind: str                                   # one of emulator.ir.sass.PLAN_KINDS
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

    def __post_init__(self):
        if self.kind not in PLAN_KINDS:
            raise ValueError(f"SASS plan kind '{self.kind}' is not one of {', '.join(PLAN_KINDS)}")


@dataclass
class SassProgram(ir.Program):
    """An ir.Program from a SASS listing, with what the launch must put in the constant banks."""
    arch: Optional[Arch] = None
    bank_params: Tuple[Tuple[int, int, int, int], ...] = ()   # (buffer offset, size, bank offset, bank size)
    uses_shared: bool = False
    user_banks: Tuple[int, ...] = ()
    #: static_shared is the kernel's own (from its cubin), not unknown
    shared_size_known: bool = False


def _int(text: str) -> int:
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def _is_integer(text: str) -> bool:
    """A hex or decimal integer (the parser has checked that it fits in 64 bits)."""
    return bool(re.match(r"^(?:0[xX][0-9a-fA-F]+|\d+)$", text))


def _float_bits(value: float, width: int) -> int:
    if width == 64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return int(np.array(value, dtype=np.float32).view(np.uint32))



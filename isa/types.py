"""PTX data types: width, class and the numpy dtype an instruction of that type computes in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PtxType:
    name: str
    bits: int
    kind: str          # "bits", "unsigned", "signed", "float", "half" (raw-bit floats), "pred"
    dtype: np.dtype    # what semantics functions receive and return

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind in ("float", "half")

    @property
    def is_int(self) -> bool:
        return self.kind in ("bits", "unsigned", "signed")

    @property
    def storage(self) -> np.dtype:
        """Register storage: raw bits of the type's width (bool for predicates)."""
        return storage_dtype(self.bits)


def storage_dtype(bits: int) -> np.dtype:
    if bits == 1:
        return np.dtype(np.bool_)
    return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits])


def _types():
    table = {"pred": PtxType("pred", 1, "pred", np.dtype(np.bool_))}
    for bits, unsigned, signed in ((8, np.uint8, np.int8), (16, np.uint16, np.int16),
                                   (32, np.uint32, np.int32), (64, np.uint64, np.int64)):
        table[f"b{bits}"] = PtxType(f"b{bits}", bits, "bits", np.dtype(unsigned))
        table[f"u{bits}"] = PtxType(f"u{bits}", bits, "unsigned", np.dtype(unsigned))
        table[f"s{bits}"] = PtxType(f"s{bits}", bits, "signed", np.dtype(signed))
    table["f32"] = PtxType("f32", 32, "float", np.dtype(np.float32))
    table["f64"] = PtxType("f64", 64, "float", np.dtype(np.float64))
    table["tf32"] = PtxType("tf32", 32, "half", np.dtype(np.uint32))
    for name in ("f16", "bf16", "e4m3x2", "e5m2x2"):
        table[name] = PtxType(name, 16, "half", np.dtype(np.uint16))
    for name in ("f16x2", "bf16x2"):
        table[name] = PtxType(name, 32, "half", np.dtype(np.uint32))
    for name in ("e4m3", "e5m2"):
        table[name] = PtxType(name, 8, "half", np.dtype(np.uint8))
    for name in ("u16x2", "s16x2"):
        table[name] = PtxType(name, 32, "packed", np.dtype(np.uint32))
    for name in ("u4", "s4", "u2", "s2"):
        table[name] = PtxType(name, 8, "packed", np.dtype(np.uint8))
    return table


TYPES = _types()

INT_TYPES = tuple(f"{k}{b}" for k in "bus" for b in (8, 16, 32, 64))
SIGNED = ("s8", "s16", "s32", "s64")
UNSIGNED = ("u8", "u16", "u32", "u64")
BITS = ("b8", "b16", "b32", "b64")
FLOATS = ("f32", "f64")
HALVES = ("f16", "f16x2", "bf16", "bf16x2")


def ptx_type(name: str) -> PtxType:
    return TYPES[name]


def widened(name: str) -> str:
    """The type twice as wide with the same class (mul.wide, mad.wide)."""
    t = TYPES[name]
    return f"{name[0]}{t.bits * 2}"


def same_width(name: str, kind: str) -> str:
    """The type of the same width in another integer class: same_width('s32', 'unsigned') → 'u32'."""
    prefix = {"bits": "b", "unsigned": "u", "signed": "s"}[kind]
    return f"{prefix}{TYPES[name].bits}"

"""The SASS ALU table: per mnemonic, the operand shape it is printed with and the pure function it computes.

A shape lists operand slots in printed order: `d` a value destination, `q` a predicate destination,
`s` a value source, `p` a predicate source; `?` marks a slot that may be left out. A tag after a
colon gives a value slot's width and how its immediates read: `:64` a 64-bit register pair, `:f` f32
(decimal immediates are floats), `:F` f64 pair, `:h` two f16 halves. Semantics functions take the
sources in slot order (None for an absent optional one) as raw bits — np.uint32, np.uint64 for pairs,
bool for predicates — plus the instruction's modifiers (`mods`, its dotted words in printed order) and
which integer sources carry a `-` (`neg`), and return the destinations in slot order.
Float `-x` and `|x|` and every `~x` are applied to the bits before a function sees them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np

from isa import fp, intops, sfu

U32, U64 = np.uint32, np.uint64
MASK32 = U64(0xFFFFFFFF)


@dataclass(frozen=True)
class SassOp:
    mnemonic: str
    shape: Union[str, Callable[[Tuple[str, ...]], str]]
    semantics: Callable
    doc: str = ""
    #: what is wrong with these modifiers (None when the semantics define them)
    check: Optional[Callable[[Tuple[str, ...]], Optional[str]]] = None

    def shape_for(self, mods: Tuple[str, ...], legacy: bool = False) -> str:
        """The operand shape for these modifiers; legacy: Fermi-Maxwell encodings (8-byte instructions)."""
        return self.shape(mods, legacy) if callable(self.shape) else self.shape


# ---- bit helpers ---------------------------------------------------------------------------------

def _u64(x) -> np.ndarray:
    return np.asarray(x).astype(U64)


def _u32(x) -> np.ndarray:
    return (np.asarray(x).astype(U64) & MASK32).astype(U32)


def _s32(x) -> np.ndarray:
    return np.asarray(x).astype(U32).view(np.int32)


def _bit(p) -> np.ndarray:
    return U64(0) if p is None else np.asarray(p, dtype=bool).astype(U64)


def _term(x, negated: bool) -> np.ndarray:
    """A 32-bit adder input widened to 64 bits: `-x` enters as ~x + 1, as the hardware adds it."""
    if x is None:
        return U64(0)
    value = _u64(x) & MASK32
    return ((~value) & MASK32) + U64(1) if negated else value


def _negated32(x, negated: bool) -> np.ndarray:
    return _u32(_term(x, negated))


def _signed_wide(x) -> np.ndarray:
    """A 32-bit value sign-extended to 64 bits, as raw uint64."""
    return _s32(x).astype(np.int64).view(U64)


def _carry(total, bit: int) -> np.ndarray:
    return ((np.asarray(total) >> U64(bit)) & U64(1)) != 0


def _f32(x):
    return np.asarray(x, dtype=U32).view(np.float32)


def _f64(x):
    return np.asarray(x, dtype=U64).view(np.float64)


def _bits32(x):
    return np.asarray(x, dtype=np.float32).view(U32)


def _bits64(x):
    return np.asarray(x, dtype=np.float64).view(U64)


def _rounding(mods) -> str:
    for name, mode in (("RZ", "rz"), ("RM", "rm"), ("RP", "rp")):
        if name in mods:
            return mode
    return "rn"


# ---- integer arithmetic ---------------------------------------------------------------------------

def iadd3(a, b, c, carry1, carry2, *, mods, neg):
    """a + b + c (+ carry-ins for .X); carry-outs are bits 32 and 33 of the sum."""
    total = _term(a, neg[0]) + _term(b, neg[1]) + _term(c, neg[2]) + _bit(carry1) + _bit(carry2)
    return _u32(total), _carry(total, 32), _carry(total, 33)


def iadd(a, b, carry, *, mods, neg):
    """Fermi-Maxwell IADD: a + b (+ the carry flag for .X); the carry out feeds a later .X."""
    total = _term(a, neg[0]) + _term(b, neg[1]) + _bit(carry)
    return _u32(total), _carry(total, 32)


def _imad_shape(mods, legacy):
    if "WIDE" in mods:
        return "d:64 q? s s s:64 p?"
    if "HI" in mods and not legacy:
        return "d q? s s s:64 p?"
    return "d q? s s s p?"


def imad(a, b, c, carry, *, mods, neg):
    """IMAD: a*b + c (low word), .WIDE (64-bit product plus the pair c), .HI (bits 32..63 of a*b + the pair c;
    Fermi-Maxwell: the high word of a*b plus a 32-bit c); .X adds the carry predicate or flag."""
    unsigned = "U32" in mods
    a = _negated32(a, neg[0])
    b = _negated32(b, neg[1])
    if "HI" in mods and np.asarray(c).dtype != U64:
        wide_a, wide_b = (_u64(a), _u64(b)) if unsigned else (_signed_wide(a), _signed_wide(b))
        total = ((wide_a * wide_b) >> U64(32)) + _term(c, neg[2]) + _bit(carry)
        return _u32(total), _carry(total, 32)
    if "WIDE" in mods or "HI" in mods:
        wide_a, wide_b = (_u64(a), _u64(b)) if unsigned else (_signed_wide(a), _signed_wide(b))
        addend = _u64(c)
        if neg[2]:
            addend = ~addend + U64(1)
        product = wide_a * wide_b
        total = product + addend + _bit(carry)
        carry_out = total < product
        if "WIDE" in mods:
            return total, carry_out
        return _u32(total >> U64(32)), carry_out
    total = (_u64(a) * _u64(b)) & MASK32
    total = total + _term(c, neg[2]) + _bit(carry)
    return _u32(total), _carry(total, 32)


def imul(a, b, *, mods, neg):
    """Fermi-Kepler IMUL: low word, or .HI the high word (signed unless .U32)."""
    if "HI" in mods:
        unsigned = "U32" in mods
        wide_a, wide_b = (_u64(a), _u64(b)) if unsigned else (_signed_wide(a), _signed_wide(b))
        return (_u32((wide_a * wide_b) >> U64(32)),)
    return (_u32(_u64(a) * _u64(b)),)


def iscadd(a, b, shift, *, mods, neg):
    """(a << shift) + b, and its carry (Fermi-Maxwell `Rd.CC`)."""
    amount = _u64(shift) & U64(31)
    total = ((_term(a, neg[0]) << amount) & MASK32) + _term(b, neg[1])
    return _u32(total), _carry(total, 32)


def _lea_shape(mods, legacy):
    if "HI" in mods and "SX32" not in mods:
        return "d q? s s s s p?"
    return "d q? s s s p?"


def lea(a, b, *rest, mods, neg):
    """LEA: (a << n) + b; .HI: b + the high word of ({c, a} << n) ({sign, a} for .SX32); .X adds the carry."""
    if "HI" in mods and "SX32" not in mods:
        high, shift, carry = rest
    else:
        shift, carry = rest
        high = None
    amount = _u64(shift) & U64(31)
    low = _u64(_negated32(a, neg[0]))
    if "HI" in mods:
        if "SX32" in mods:
            upper = _u64(np.where(_s32(low) < 0, U32(0xFFFFFFFF), U32(0)))
        else:
            upper = _u64(high if high is not None else U32(0))
        pair = (upper << U64(32)) | low
        shifted = (pair >> (U64(32) - amount)) & MASK32
    else:
        shifted = (low << amount) & MASK32
    total = shifted + _term(b, neg[1]) + _bit(carry)
    return _u32(total), _carry(total, 32)


def shf(low, amount, high, *, mods, neg):
    """SHF.{L,R}.{U32,S32,U64,S64}[.HI][.W]: funnel shift of {high, low}; the low or (.HI) high word."""
    wide = "U64" in mods or "S64" in mods
    signed = "S32" in mods or "S64" in mods
    n = _u64(amount)
    if "W" in mods:
        n = n & U64(63 if wide else 31)
    else:
        n = np.minimum(n, U64(64 if wide else 32))
    pair = (_u64(high) << U64(32)) | (_u64(low) & MASK32)
    if "L" in mods:
        shifted = np.where(n >= U64(64), U64(0), pair << np.minimum(n, U64(63)))
    elif signed:
        shifted = (pair.view(np.int64) >> np.minimum(n, U64(63)).astype(np.int64)).view(U64)
    else:
        shifted = np.where(n >= U64(64), U64(0), pair >> np.minimum(n, U64(63)))
    return (_u32(shifted >> U64(32)) if "HI" in mods else _u32(shifted),)


def shl(a, amount, *, mods, neg):
    """Fermi-Maxwell SHL: a << n; n >= 32 gives 0 unless .W wraps it."""
    n = _u64(amount)
    if "W" in mods:
        n = n & U64(31)
    return (_u32(np.where(n >= U64(32), U64(0), _u64(a) << np.minimum(n, U64(31)))),)


def shr(a, amount, *, mods, neg):
    """Fermi-Maxwell SHR: arithmetic unless .U32; amounts clamp to 32 (all sign or zero bits)."""
    n = np.minimum(_u64(amount) & U64(0xFFFFFFFF), U64(32))
    if "U32" in mods:
        return (_u32(np.where(n >= U64(32), U64(0), _u64(a) >> np.minimum(n, U64(31)))),)
    signed = _signed_wide(a).view(np.int64)
    return (_u32((signed >> np.minimum(n, U64(63)).astype(np.int64)).view(U64)),)


def iabs(a, *, mods, neg):
    return (_u32(np.abs(_signed_wide(a).view(np.int64))),)


def _halves16(x, signed):
    x = _u32(x)
    low, high = (x & U32(0xFFFF)).astype(np.int64), (x >> U32(16)).astype(np.int64)
    if signed:
        low, high = np.where(low >= 0x8000, low - 0x10000, low), np.where(high >= 0x8000, high - 0x10000, high)
    return low, high


def _pack16(low, high):
    high, low = np.asarray(high).astype(np.int64) & 0xFFFF, np.asarray(low).astype(np.int64) & 0xFFFF
    return (high << 16 | low).astype(U32)


def viadd(a, b, *, mods, neg):
    """VIADD (and VIADD.16x2, two 16-bit lanes)."""
    if "16x2" in mods:
        (al, ah), (bl, bh) = _halves16(a, False), _halves16(b, False)
        return (_pack16(al + bl, ah + bh),)
    return (_u32(_term(a, neg[0]) + _term(b, neg[1])),)


def viaddmnmx(a, b, c, choose_min, *, mods, neg):
    """VIADDMNMX: min (predicate true) or max of a + b and c; signed unless .U32."""
    total = _u32(_term(a, neg[0]) + _term(b, neg[1]))
    return imnmx(total, _negated32(c, neg[2]), choose_min, mods=mods, neg=(False, False))


def imnmx(a, b, choose_min, *, mods, neg):
    """IMNMX/VIMNMX: the minimum when the predicate holds (PT), else the maximum; .U32 unsigned."""
    take_min = True if choose_min is None else np.asarray(choose_min, dtype=bool)
    if "U16x2" in mods or "S16x2" in mods:
        signed = "S16x2" in mods
        (al, ah), (bl, bh) = _halves16(a, signed), _halves16(b, signed)
        low, high = np.where(take_min, np.minimum(al, bl), np.maximum(al, bl)), \
            np.where(take_min, np.minimum(ah, bh), np.maximum(ah, bh))
        if "RELU" in mods:
            low, high = np.maximum(low, 0), np.maximum(high, 0)
        return (_pack16(low, high),)
    if "U32" in mods:
        x, y = _u64(a).astype(np.int64), _u64(b).astype(np.int64)
    else:
        x, y = _signed_wide(a).view(np.int64), _signed_wide(b).view(np.int64)
    result = np.where(take_min, np.minimum(x, y), np.maximum(x, y))
    if "RELU" in mods:
        result = np.maximum(result, 0)
    return (_u32(result.astype(np.int64).view(U64)),)


def vabsdiff(a, b, c, *, mods, neg):
    """VABSDIFF: |a - b| + c (signed unless .U32)."""
    if "U32" in mods:
        x, y = _u64(a).astype(np.int64), _u64(b).astype(np.int64)
    else:
        x, y = _signed_wide(a).view(np.int64), _signed_wide(b).view(np.int64)
    return (_u32(np.abs(x - y).view(U64) + _term(c, False)),)


# ---- bit operations ---------------------------------------------------------------------------------

def lop3(a, b, c, lut, carry, *, mods, neg):
    """LOP3.LUT[.PAND|.PXOR]: the truth table `lut` of a, b, c; the optional predicate says the result is
    non-zero, combined (or, and, xor) with the predicate source."""
    table = int(np.asarray(lut).reshape(-1)[0]) & 0xFF
    result = intops.lop3(_u32(a), _u32(b), _u32(c), lut=table)
    if carry is None:
        return result != 0, result
    combine = np.logical_and if "PAND" in mods else np.logical_xor if "PXOR" in mods else np.logical_or
    return combine(result != 0, np.asarray(carry, dtype=bool)), result


_LOP_TABLES = {"AND": 0xC0, "OR": 0xFC, "XOR": 0x3C, "PASS_B": 0xCC}


def lop(a, b, carry, *, mods, neg):
    """Fermi-Maxwell LOP.{AND,OR,XOR,PASS_B} (operands arrive already inverted for `~`)."""
    operation = next((name for name in _LOP_TABLES if name in mods), "AND")
    result = intops.lop3(_u32(a), _u32(b), U32(0), lut=_LOP_TABLES[operation])
    return result != 0, result


def plop3(a, b, c, lut, lut2, *, mods, neg):
    """PLOP3.LUT: two truth tables over three predicates."""
    bits = [np.asarray(x, dtype=bool) for x in (a, b, c)]

    def apply(table):
        table = int(np.asarray(table).reshape(-1)[0]) & 0xFF
        result = np.zeros(np.broadcast(*bits).shape, dtype=bool)
        for minterm in range(8):
            if (table >> minterm) & 1:
                result |= ((bits[0] if minterm & 4 else ~bits[0]) & (bits[1] if minterm & 2 else ~bits[1]) &
                           (bits[2] if minterm & 1 else ~bits[2]))
        return result
    return apply(lut), apply(lut2)


def popc(a, *, mods, neg):
    return (intops.popc(_u32(a)).astype(U32),)


def brev(a, *, mods, neg):
    return (intops.brev(_u32(a)).astype(U32),)


def flo(a, *, mods, neg):
    """FLO: bit position of the most significant one (sign bit skipped for signed), 0xffffffff if none;
    .SH gives 31 minus it."""
    ty = "u32" if "U32" in mods else "s32"
    value = _u32(a) if ty == "u32" else _u32(a).view(np.int32)
    return (np.asarray(intops.bfind(value, ty=ty, shiftamt="SH" in mods)).astype(U32),)


def prmt(a, selector, b, *, mods, neg):
    mode = next((m.lower() for m in ("F4E", "B4E", "RC8", "ECL", "ECR", "RC16") if m in mods), None)
    return (np.asarray(intops.prmt(_u32(a), _u32(b), _u32(selector), mode=mode)).astype(U32),)


def bfe(a, control, *, mods, neg):
    """Fermi-Maxwell BFE: position in bits 0-7, length in bits 8-15 of the control word."""
    control = _u32(control)
    position, length = control & U32(0xFF), (control >> U32(8)) & U32(0xFF)
    ty = "u32" if "U32" in mods else "s32"
    value = _u32(a) if ty == "u32" else _u32(a).view(np.int32)
    return (np.asarray(intops.bfe(value, position, length, ty=ty)).view(U32) if ty == "s32" else
            np.asarray(intops.bfe(value, position, length, ty=ty)).astype(U32),)


def bfi(insert, control, base, *, mods, neg):
    control = _u32(control)
    position, length = control & U32(0xFF), (control >> U32(8)) & U32(0xFF)
    return (np.asarray(intops.bfi(_u32(insert), _u32(base), position, length, ty="b32")).astype(U32),)


# ---- moves and selects --------------------------------------------------------------------------------

def mov(a, *lane_mask, mods, neg):
    return (a,)


def sel(a, b, predicate, *, mods, neg):
    return (np.where(np.asarray(predicate, dtype=bool), a, b),)


# ---- comparisons --------------------------------------------------------------------------------------

_INT_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
                "GT": np.greater, "GE": np.greater_equal}
_BOOLEAN = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


def _combine(t, other, mods):
    op = next((name for name in _BOOLEAN if name in mods), "AND")
    other = True if other is None else np.asarray(other, dtype=bool)
    return _BOOLEAN[op](t, other), _BOOLEAN[op](~t, other)


def isetp(a, b, other, low, *, mods, neg):
    """ISETP.cmp[.U32].bop[.EX]: compare, combine with a predicate; .EX finishes a 64-bit compare
    whose low-word result is the last predicate."""
    cmp = next((name for name in _INT_COMPARE if name in mods), "EQ")
    unsigned = "U32" in mods
    a, b = _negated32(a, neg[0]), _negated32(b, neg[1])
    x, y = (_u64(a), _u64(b)) if unsigned else (_signed_wide(a).view(np.int64), _signed_wide(b).view(np.int64))
    if "EX" in mods:
        previous = np.asarray(True if low is None else low, dtype=bool)
        same = x == y
        if cmp == "EQ":
            t = same & previous
        elif cmp == "NE":
            t = ~same | previous
        elif cmp in ("GT", "GE"):
            t = (x > y) | (same & previous)
        else:
            t = (x < y) | (same & previous)
    else:
        t = np.asarray(_INT_COMPARE[cmp](x, y))
    return _combine(t, other, mods)


_FLOAT_COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN")


def _float_cmp(mods) -> str:
    return next((name for name in reversed(_FLOAT_COMPARE) if name in mods), "EQ").lower()


def fsetp(a, b, other, *, mods, neg):
    t = fp.fcompare(_f32(a), _f32(b), ty="f32", cmp=_float_cmp(mods), ftz="FTZ" in mods)
    return _combine(np.asarray(t), other, mods)


def dsetp(a, b, other, *, mods, neg):
    """DSETP.cmp; DSETP.MIN/.MAX: the first predicate picks a over b for fmin/fmax (numbers over NaNs,
    -0 below +0), the second says both are NaN (the pick is then b, to be quieted)."""
    x, y = _f64(a), _f64(b)
    if "MIN" in mods or "MAX" in mods:
        nan_x, nan_y = np.isnan(x), np.isnan(y)
        with np.errstate(invalid="ignore"):
            if "MIN" in mods:
                better = (x < y) | ((x == y) & np.signbit(x))
            else:
                better = (x > y) | ((x == y) & ~np.signbit(x))
        return ~nan_x & (nan_y | better), nan_x & nan_y
    t = fp.fcompare(x, y, ty="f64", cmp=_float_cmp(mods), ftz=False)
    return _combine(np.asarray(t), other, mods)


# ---- floating point ------------------------------------------------------------------------------------

def _float_flags(mods):
    return dict(rnd=_rounding(mods), ftz="FTZ" in mods, sat="SAT" in mods)


def fadd(a, b, *, mods, neg):
    return (_bits32(fp.fadd(_f32(a), _f32(b), ty="f32", **_float_flags(mods))),)


def fmul(a, b, *, mods, neg):
    return (_bits32(fp.fmul(_f32(a), _f32(b), ty="f32", **_float_flags(mods))),)


def ffma(a, b, c, *, mods, neg):
    return (_bits32(fp.ffma(_f32(a), _f32(b), _f32(c), ty="f32", **_float_flags(mods))),)


def fmnmx(a, b, choose_min, *, mods, neg):
    """FMNMX: fmin when the predicate holds, else fmax (NaN operands lose to numbers)."""
    flags = dict(ftz="FTZ" in mods, nan="NAN" in mods, xorsign="XORSIGN" in mods, absolute="XORSIGN" in mods)
    low = fp.fmin(_f32(a), _f32(b), ty="f32", **flags)
    high = fp.fmax(_f32(a), _f32(b), ty="f32", **flags)
    return (_bits32(np.where(np.asarray(choose_min, dtype=bool), low, high)),)


def dadd(a, b, *, mods, neg):
    return (_bits64(fp.fadd(_f64(a), _f64(b), ty="f64", rnd=_rounding(mods))),)


def dmul(a, b, *, mods, neg):
    return (_bits64(fp.fmul(_f64(a), _f64(b), ty="f64", rnd=_rounding(mods))),)


def dfma(a, b, c, *, mods, neg):
    return (_bits64(fp.ffma(_f64(a), _f64(b), _f64(c), ty="f64", rnd=_rounding(mods))),)


def dmnmx(a, b, choose_min, *, mods, neg):
    low = fp.fmin(_f64(a), _f64(b), ty="f64")
    high = fp.fmax(_f64(a), _f64(b), ty="f64")
    return (_bits64(np.where(np.asarray(choose_min, dtype=bool), low, high)),)


#: MUFU.<function> on f32 codes: the H100's unit itself (isa.sfu), as the PTX .approx instructions use it
_MUFU = {"RCP": sfu.rcp, "RSQ": sfu.rsq, "SQRT": sfu.sqrt, "EX2": sfu.ex2, "LG2": sfu.lg2, "TANH": sfu.tanh,
         "SIN": sfu.sin, "COS": sfu.cos}


def mufu(a, *, mods, neg):
    """MUFU.{RCP,RSQ,SQRT,EX2,LG2,SIN,COS,TANH} on f32 (flush-to-zero; SIN/COS of turns: the compiler's FMUL.RZ
    by 1/2pi comes before), .EX2/.TANH on a half (.F16/.BF16), and .RCP64H/.RSQ64H (the high word of a double's
    approximate reciprocal / reciprocal square root): bit for bit the H100's unit (isa.sfu, docs/sfu.md)."""
    if "RCP64H" in mods or "RSQ64H" in mods:
        return ((sfu.rcp64h if "RCP64H" in mods else sfu.rsq64h)(_u32(a)).astype(U32),)
    half = "bf16" if "BF16" in mods else "f16" if "F16" in mods else None
    if half is not None:
        codes = (_u32(a) & U32(0xFFFF)).astype(np.uint16)
        return (np.asarray(sfu.half(f"{'tanh' if 'TANH' in mods else 'ex2'}_{half}", codes)).astype(U32),)
    function = next((_MUFU[name] for name in _MUFU if name in mods), None)
    if function is None:
        raise ValueError(f"unknown MUFU function {sorted(mods)}")
    return (function(_u32(a)).astype(U32),)


def fchk(a, b, *, mods, neg):
    """FCHK: whether a / b must take the slow path. The fast path (reciprocal, two FMA refinements) is exact
    only away from zero, subnormal, huge and special operands (its FFMA with an RZ addend turns a -0
    quotient into +0); this stays on the safe side of the hardware's test, since the slow path computes
    the same correctly rounded quotient."""
    x, y = _f32(a).astype(np.float64), _f32(b).astype(np.float64)
    with np.errstate(all="ignore"):
        magnitude_x, magnitude_y = np.abs(x), np.abs(y)
        exponent_gap = np.frexp(x)[1] - np.frexp(y)[1]
        tame_y = np.isfinite(y) & (magnitude_y >= 2.0 ** -100) & (magnitude_y <= 2.0 ** 100)
        tame_x = np.isfinite(x) & (magnitude_x >= 2.0 ** -100) & (np.abs(exponent_gap) <= 100)
        return (~(tame_x & tame_y),)


def frnd(a, *, mods, neg):
    """FRND[.FLOOR|.CEIL|.TRUNC]: round to an integral value in the same format (nearest even by default)."""
    rounding = next((_INT_ROUNDING[m] for m in _INT_ROUNDING if m in mods), "rni")
    if "F64" in mods:
        return (_bits64(fp.cvt(_f64(a), dst="f64", src="f64", rnd=rounding)),)
    return (_bits32(fp.cvt(_f32(a), dst="f32", src="f32", rnd=rounding, ftz="FTZ" in mods)),)


def f2fp(a, b, *, mods, neg):
    """F2FP.{F16,BF16}.F32.PACK_AB: a into the high half, b into the low half."""
    dst = "bf16x2" if "BF16" in mods else "f16x2"
    return (np.asarray(fp.cvt_pack(_f32(a), _f32(b), dst=dst, rnd=_rounding(mods), relu="RELU" in mods)).astype(U32),)


def _half_type(mods) -> str:
    return "bf16x2" if "BF16_V2" in mods else "f16x2"


def _half_op(function):
    """HADD2/HMUL2/HFMA2 on two packed halves (.BF16_V2: bfloat16; .F32: one f32 result from the low halves)."""
    def run(*sources, mods, neg):
        values = [np.asarray(x, dtype=U32) for x in sources if x is not None]
        flags = _float_flags(mods)
        if "F32" in mods:
            floats = [fp.cvt((v & U32(0xFFFF)).astype(np.uint16), dst="f32", src="f16") for v in values]
            return (_bits32(function(*floats, ty="f32", **flags)),)
        if "RELU" in mods:
            flags["relu"] = True
        return (np.asarray(function(*values, ty=_half_type(mods), **flags)).astype(U32),)
    run.__name__ = function.__name__
    return run


def hmnmx2(a, b, choose_min, *, mods, neg):
    """HMNMX2[.FTZ][.NAN][.XORSIGN][.BF16_V2]: per half, the minimum (predicate true) or maximum."""
    flags = dict(ftz="FTZ" in mods, nan="NAN" in mods, xorsign="XORSIGN" in mods, absolute="XORSIGN" in mods)
    x, y = np.asarray(a, dtype=U32), np.asarray(b, dtype=U32)
    low = np.asarray(fp.fmin(x, y, ty=_half_type(mods), **flags)).astype(U32)
    high = np.asarray(fp.fmax(x, y, ty=_half_type(mods), **flags)).astype(U32)
    return (np.where(np.asarray(choose_min, dtype=bool), low, high),)


def hsetp2(a, b, other, *, mods, neg):
    """HSETP2.cmp.bop Pd, Pe, a, b, Pc: the low halves decide Pd, the high halves Pe."""
    ty = "bf16" if "BF16_V2" in mods else "f16"
    x, y = np.asarray(a, dtype=U32), np.asarray(b, dtype=U32)
    results = []
    for shift in (U32(0), U32(16)):
        halves = [((v >> shift) & U32(0xFFFF)).astype(np.uint16) for v in (x, y)]
        results.append(np.asarray(fp.fcompare(*halves, ty=ty, cmp=_float_cmp(mods), ftz="FTZ" in mods)))
    op = next((name for name in _BOOLEAN if name in mods), "AND")
    other = True if other is None else np.asarray(other, dtype=bool)
    return _BOOLEAN[op](results[0], other), _BOOLEAN[op](results[1], other)


def idp(a, b, c, *, mods, neg):
    """IDP.4A / IDP.2A.{LO,HI}: dot products of packed bytes (and halves) plus c; types name a then b."""
    words = [m for m in mods if m in ("U8", "S8", "U16", "S16")]
    atype = "s32" if words and words[0].startswith("S") else "u32"
    btype = "s32" if len(words) > 1 and words[1].startswith("S") else "u32"
    if "4A" in mods:
        result = intops.dp4a(_u32(a), _u32(b), _u32(c), atype=atype, btype=btype)
    else:
        result = intops.dp2a(_u32(a), _u32(b), _u32(c), atype=atype, btype=btype, hi="HI" in mods)
    return (np.asarray(result).astype(np.int64).astype(U64).astype(U32),)


def sgxt(a, bits, *, mods, neg):
    """SGXT[.U32][.W]: sign- (zero-, for .U32) extend the low `bits` bits."""
    result = intops.szext(_u32(a), _u32(bits), mode="wrap" if "W" in mods else "clamp", signed="U32" not in mods)
    return (np.asarray(result).view(U32) if np.asarray(result).dtype.kind == "i" else np.asarray(result).astype(U32),)


def bmsk(position, width, *, mods, neg):
    """BMSK[.W]: `width` one bits starting at bit `position`."""
    return (np.asarray(intops.bmsk(_u32(position), _u32(width), mode="wrap" if "W" in mods else "clamp")).astype(U32),)


def _byte_shift(mods) -> U32:
    return U32(8 * next((int(m[1]) for m in mods if m in ("B1", "B2", "B3")), 0))


def p2r(a, mask, *predicates, mods, neg):
    """P2R Rd, PR, Ra, mask: the predicate bits P0..P6 under the mask, the rest of Ra kept (.B1-.B3 shift)."""
    shift = _byte_shift(mods)
    bits = U32(0)
    for index, p in enumerate(predicates):
        bits = bits | (np.asarray(p, dtype=bool).astype(U32) << U32(index))
    field = _u32(mask) << shift
    return ((_u32(a) & ~field) | ((bits << shift) & field),)


def r2p(a, mask, *predicates, mods, neg):
    """R2P PR, Ra, mask: P0..P6 from the bits of Ra under the mask (.B1-.B3 select a byte); others kept."""
    value = _u32(a) >> _byte_shift(mods)
    mask = _u32(mask)
    return tuple(np.where((mask >> U32(index)) & U32(1) != 0, (value >> U32(index)) & U32(1) != 0,
                          np.asarray(p, dtype=bool))
                 for index, p in enumerate(predicates))


# ---- conversions -------------------------------------------------------------------------------------

_INT_NUMPY = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32,
              "s32": np.int32, "u64": np.uint64, "s64": np.int64}
_BYTES = {"u8": 1, "s8": 1, "u16": 2, "s16": 2, "u32": 4, "s32": 4, "u64": 8, "s64": 8, "f16": 2, "bf16": 2,
          "f32": 4, "f64": 8}
_DEFAULT_TYPES = {"I2F": ("f32", "s32"), "I2FP": ("f32", "s32"), "F2I": ("s32", "f32"), "F2F": ("f32", "f32"),
                  "I2I": ("s32", "s32")}
_INT_ROUNDING = {"TRUNC": "rzi", "FLOOR": "rmi", "CEIL": "rpi", "ROUND": "rni"}


def conversion_types(mnemonic: str, mods) -> Tuple[str, str]:
    """(dst, src) of I2F/I2FP/F2I/F2F/I2I: type words print destination first; a lone word is the
    side whose kind (integer or float) it matches."""
    dst_default, src_default = _DEFAULT_TYPES[mnemonic]
    words = [m.lower() for m in mods if m.lower() in _BYTES]
    if len(words) >= 2:
        return words[0], words[1]
    if len(words) == 1:
        word = words[0]
        if (word in _INT_NUMPY) == (dst_default in _INT_NUMPY) and \
                ((word in _INT_NUMPY) != (src_default in _INT_NUMPY) or mnemonic == "F2F"):
            return word, src_default
        return dst_default, word
    return dst_default, src_default


def _as_type(bits, ty):
    """Raw register bits (u32 or u64) as the numpy value of a conversion's source type."""
    raw = np.asarray(bits)
    if ty in _INT_NUMPY:
        unsigned = np.dtype(f"u{_BYTES[ty]}")
        return raw.astype(U64).astype(unsigned).view(_INT_NUMPY[ty])
    if ty in ("f16", "bf16"):
        return raw.astype(U32).astype(np.uint16)
    if ty == "f32":
        return raw.astype(U32).view(np.float32)
    return raw.astype(U64).view(np.float64)


def _to_bits(value, ty):
    """A conversion result as register bits: u64 for 64-bit types, else u32 (sign-extended for signed)."""
    value = np.asarray(value)
    if _BYTES[ty] == 8:
        return value.view(U64) if value.dtype.itemsize == 8 else value.astype(U64)
    if ty == "f32":
        return value.view(U32)
    if ty in ("s8", "s16", "s32"):
        return value.astype(np.int32).view(U32)
    return value.astype(U32)


def _convert(mnemonic):
    def run(a, *, mods, neg):
        dst, src = conversion_types(mnemonic, mods)
        value = _as_type(a, src)
        if src in _INT_NUMPY and dst in _INT_NUMPY:
            result = fp.cvt(value, dst=dst, src=src, sat="SAT" in mods)
        elif dst in _INT_NUMPY:
            rounding = next((_INT_ROUNDING[m] for m in _INT_ROUNDING if m in mods), "rni")
            result = fp.cvt(value, dst=dst, src=src, rnd=rounding, ftz="FTZ" in mods)
        elif src in _INT_NUMPY:
            result = fp.cvt(value, dst=dst, src=src, rnd=_rounding(mods))
        else:
            rounding = next((_INT_ROUNDING[m] for m in _INT_ROUNDING if m in mods), None) or \
                (_rounding(mods) if _BYTES[dst] < _BYTES[src] else None)
            result = fp.cvt(value, dst=dst, src=src, rnd=rounding, ftz="FTZ" in mods, sat="SAT" in mods)
        return (_to_bits(result, dst),)
    run.__name__ = mnemonic.lower()
    return run


def _conversion_shape(mnemonic):
    def shape(mods, legacy):
        dst, src = conversion_types(mnemonic, mods)
        return f"d{':64' if _BYTES[dst] == 8 else ''} s{':64' if _BYTES[src] == 8 else ''}"
    return shape


# ---- the table ------------------------------------------------------------------------------------------

def _mufu_check(mods: Tuple[str, ...]) -> Optional[str]:
    known = ("RCP64H", "RSQ64H", "SIN", "COS") + tuple(_MUFU)
    if not any(name in mods for name in known):
        return f"MUFU needs a function: one of {' '.join('.' + name for name in known)}"
    return None


OPS: Dict[str, SassOp] = {op.mnemonic: op for op in (
    SassOp("IADD3", "d q? q? s s s p? p?", iadd3, "three-input add with carries"),
    SassOp("IADD", "d q? s s p?", iadd, "Fermi-Maxwell add"),
    SassOp("IADD32I", "d q? s s p?", iadd, "IADD with a 32-bit immediate (Fermi-Maxwell)"),
    SassOp("VIADD", "d s s", viadd, "add of two 32-bit values (.16x2: two 16-bit lanes)"),
    SassOp("IMAD", _imad_shape, imad, "multiply-add: low word, .WIDE, .HI"),
    SassOp("IMUL", "d s s", imul, "integer multiply: low word, .HI the high word"),
    SassOp("IMUL32I", "d s s", imul, "IMUL with a 32-bit immediate"),
    SassOp("ISCADD", "d q? s s s", iscadd, "scaled add: (a << shift) + b"),
    SassOp("ISCADD32I", "d q? s s s", iscadd, "ISCADD with a 32-bit immediate"),
    SassOp("LEA", _lea_shape, lea, "load effective address: (a << shift) + b, .HI the high word of a 64-bit shift"),
    SassOp("SHF", "d s s s", shf, "funnel shift of a 64-bit pair, left or right, clamped or wrapped"),
    SassOp("SHL", "d s s", shl, "shift left (Fermi-Maxwell)"),
    SassOp("SHR", "d s s", shr, "shift right, arithmetic for signed values (Fermi-Maxwell)"),
    SassOp("IABS", "d s", iabs, "integer absolute value"),
    SassOp("VABSDIFF", "d s s s", vabsdiff, "absolute difference |a - b|, plus c"),
    SassOp("IMNMX", "d s s p?", imnmx, "integer minimum or maximum, chosen by a predicate"),
    SassOp("VIMNMX", "d s s p?", imnmx, "integer minimum or maximum (the sm_90 form of IMNMX)"),
    SassOp("VIADDMNMX", "d s s s p?", viaddmnmx, "add, then the minimum or maximum with a third value"),
    SassOp("LOP3", "q? d s s s s p?", lop3, "any three-input bitwise function, given by its 8-bit truth table"),
    SassOp("LOP", "q? d s s p?", lop, "AND, OR, XOR or PASS_B of two values (Fermi-Maxwell)"),
    SassOp("LOP32I", "q? d s s p?", lop, "LOP with a 32-bit immediate"),
    SassOp("PLOP3", "q q p p p s s", plop3, "any three-input function of predicates, given by its truth table"),
    SassOp("POPC", "d s", popc, "population count: the number of one bits"),
    SassOp("BREV", "d s", brev, "bit reverse"),
    SassOp("FLO", "d s", flo, "position of the most significant one bit (.SH: 31 minus it)"),
    SassOp("PRMT", "d s s s", prmt, "byte permute of a register pair by a selector"),
    SassOp("BFE", "d s s", bfe, "bit-field extract (Fermi-Maxwell)"),
    SassOp("BFI", "d s s s", bfi, "bit-field insert (Fermi-Maxwell)"),
    SassOp("MOV", "d s s?", mov, "copy a register, an immediate or a constant-bank word"),
    SassOp("MOV32I", "d s s?", mov, "copy a 32-bit immediate"),
    SassOp("R2UR", "d s", mov, "copy a register into a uniform register"),
    SassOp("SEL", "d s s p", sel, "one of two values, chosen by a predicate"),
    SassOp("FSEL", "d s:f s:f p", sel, "one of two f32 values, chosen by a predicate"),
    SassOp("ISETP", "q q s s p p?", isetp, "integer comparison, combined with a predicate into two predicates"),
    SassOp("FSETP", "q q s:f s:f p", fsetp, "f32 comparison, combined with a predicate into two predicates"),
    SassOp("DSETP", "q q s:F s:F p", dsetp, "f64 comparison, combined with a predicate into two predicates"),
    SassOp("FADD", "d s:f s:f", fadd, "f32 add"),
    SassOp("FADD32I", "d s:f s:f", fadd, "f32 add of a 32-bit immediate"),
    SassOp("FMUL", "d s:f s:f", fmul, "f32 multiply"),
    SassOp("FMUL32I", "d s:f s:f", fmul, "f32 multiply by a 32-bit immediate"),
    SassOp("FFMA", "d s:f s:f s:f", ffma, "f32 fused multiply-add"),
    SassOp("FFMA32I", "d s:f s:f s:f", ffma, "f32 fused multiply-add with a 32-bit immediate"),
    SassOp("FMNMX", "d s:f s:f p", fmnmx, "f32 minimum or maximum, chosen by a predicate"),
    SassOp("FCHK", "q s:f s:f", fchk, "whether an f32 division needs the slow path (its operands' range check)"),
    SassOp("FRND", lambda mods, legacy: "d:64 s:F" if "F64" in mods else "d s:f", frnd,
           "round a float to an integral value (f32, or f64 with .F64)"),
    SassOp("F2FP", "d s:f s:f", f2fp, "two floats converted and packed into a pair of halves"),
    SassOp("SGXT", "d s s", sgxt, "sign-extend (.U32: zero-extend) the low bits of a value"),
    SassOp("BMSK", "d s s", bmsk, "a run of one bits of a width at a position"),
    SassOp("MUFU", "d s:f", mufu,
           "the special function unit: RCP, RSQ, SQRT, EX2, LG2, SIN, COS, TANH", check=_mufu_check),
    SassOp("DADD", "d:64 s:F s:F", dadd, "f64 add"),
    SassOp("DMUL", "d:64 s:F s:F", dmul, "f64 multiply"),
    SassOp("DFMA", "d:64 s:F s:F s:F", dfma, "f64 fused multiply-add"),
    SassOp("DMNMX", "d:64 s:F s:F p", dmnmx, "f64 minimum or maximum, chosen by a predicate"),
    SassOp("HADD2", "d s:h s:h", _half_op(fp.fadd), "add of packed half pairs"),
    SassOp("HMUL2", "d s:h s:h", _half_op(fp.fmul), "multiply of packed half pairs"),
    SassOp("HFMA2", "d s:h s:h s:h", _half_op(fp.ffma), "fused multiply-add of packed half pairs"),
    SassOp("HMNMX2", "d s:h s:h p", hmnmx2, "minimum or maximum of packed half pairs"),
    SassOp("HSETP2", "q q s:h s:h p", hsetp2, "comparison of packed half pairs into predicates"),
    SassOp("IDP", "d s s s", idp, "dot product of packed bytes (.4A) or halves and bytes (.2A), plus c"),
    SassOp("I2F", _conversion_shape("I2F"), _convert("I2F"), "integer to float conversion"),
    SassOp("I2FP", _conversion_shape("I2FP"), _convert("I2FP"), "integer to f32 conversion (the sm_90 form)"),
    SassOp("F2I", _conversion_shape("F2I"), _convert("F2I"), "float to integer conversion"),
    SassOp("F2F", _conversion_shape("F2F"), _convert("F2F"), "float to float conversion"),
    SassOp("I2I", _conversion_shape("I2I"), _convert("I2I"), "integer to integer conversion, saturating"),
)}



class SassTableError(Exception):
    """The SASS table is malformed: an entry without semantics or without its one-line doc."""


def _check_ops() -> None:
    for mnemonic, op in OPS.items():
        if op.mnemonic != mnemonic or not callable(op.semantics):
            raise SassTableError(f"SASS op {mnemonic}: semantics {op.semantics!r} is not a function")
        if not op.doc.strip() or "\n" in op.doc:
            raise SassTableError(f"SASS op {mnemonic}: needs a one-line doc")


_check_ops()

def lookup(mnemonic: str) -> Optional[SassOp]:
    """The ALU entry of a mnemonic; uniform-datapath forms (UIADD3, ULEA, ...) share their vector entry."""
    op = OPS.get(mnemonic)
    if op is None and mnemonic.startswith("U") and mnemonic[1:] in OPS:
        op = OPS[mnemonic[1:]]
    return op

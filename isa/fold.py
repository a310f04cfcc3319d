"""ptxas's constant folding of the approximate f32 instructions (sm_90, ptxas 13.0).

When an operand of rcp/sqrt/rsqrt/ex2/lg2/div .approx (or div.full) is known at compile time, ptxas
evaluates the same sequence it emits around the special-function unit (the operand scaling of isa.fp), with
the unit itself replaced by the correctly rounded function: the float64 value rounded to f32, a subnormal
operand or result of the unit flushed to zero as the unit does. For a division only the divisor's
reciprocal is folded (x / c becomes x times the folded reciprocal). sin and cos fold to the float64 sine or
cosine of the operand (a subnormal one flushed to zero) rounded to f32; tanh.approx is never folded. Where
the folded value would be NaN, or for lg2 of zero, ptxas leaves the instruction to the unit, and the unit
gives the same special value. Evidence (commit 385d96c; no study tool was checked in): the corpus's H100
outputs in examples/corpus/expected - attention_online's rsqrtf(32.0f), the fast-math layernorm_welford - match
only with these folds; tests/test_fold.py pins them, docs/fidelity.md states the rule."""
from __future__ import annotations

import math

import numpy as np

_MIN_NORMAL = np.uint32(0x00800000)
_SIGN = np.uint32(0x80000000)
_NAN = np.uint32(0x7FFFFFFF)


def _flushed_values(codes) -> np.ndarray:
    """The f32 codes as float64 values, subnormals as zeros of their sign."""
    codes = np.asarray(codes).astype(np.uint32).reshape(-1)
    tiny = (codes & ~_SIGN) < _MIN_NORMAL
    return np.where(tiny, codes & _SIGN, codes).view(np.float32).astype(np.float64)


def _rounded(values: np.ndarray, flush: bool = True) -> np.ndarray:
    """float64 values to f32 codes, round to nearest even; NaN as the canonical NaN, subnormal results
    flushed to zeros of their sign when flush."""
    with np.errstate(all="ignore"):
        codes = values.astype(np.float32).view(np.uint32)
    if flush:
        codes = np.where((codes & ~_SIGN) < _MIN_NORMAL, codes & _SIGN, codes)
    return np.where(np.isnan(values), _NAN, codes).astype(np.uint32)


def _unit(function):
    def unit(codes):
        values = _flushed_values(codes)
        with np.errstate(all="ignore"):
            return _rounded(np.array([function(float(v)) for v in values], dtype=np.float64))
    return unit


def _reciprocal(x: float) -> float:
    return math.copysign(math.inf, x) if x == 0 else 1.0 / x


def _reciprocal_root(x: float) -> float:
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 or math.isnan(x):
        return math.nan
    return 0.0 if math.isinf(x) else 1.0 / math.sqrt(x)


def _root(x: float) -> float:
    if x < 0:
        return math.nan
    return x if x == 0 or math.isinf(x) else math.sqrt(x)


def _power_of_two(x: float) -> float:
    if math.isnan(x):
        return x
    try:
        return 2.0 ** x
    except OverflowError:
        return math.inf


def _logarithm(x: float) -> float:
    if x == 0:
        return -math.inf
    if x < 0 or math.isnan(x):
        return math.nan
    return math.inf if math.isinf(x) else math.log2(x)


class CorrectlyRounded:
    """The special-function units as ptxas evaluates them when it folds a constant: rcp, rsq, sqrt, ex2,
    lg2 on f32 codes, correctly rounded (through float64), subnormal operands and results flushed."""
    rcp = staticmethod(_unit(_reciprocal))
    rsq = staticmethod(_unit(_reciprocal_root))
    sqrt = staticmethod(_unit(_root))
    ex2 = staticmethod(_unit(_power_of_two))
    lg2 = staticmethod(_unit(_logarithm))


UNITS = CorrectlyRounded()


def _trigonometric(function):
    def folded(a, *, ty, ftz=False):
        codes = np.asarray(a, dtype=np.float32).view(np.uint32).reshape(-1)
        values = _flushed_values(codes)
        with np.errstate(all="ignore"):
            result = np.array([function(v) if math.isfinite(v) else math.nan for v in values], dtype=np.float64)
        return _rounded(result, flush=False).reshape(np.shape(a)).view(np.float32)
    return folded


#: sin.approx and cos.approx of an operand ptxas knows: the float64 function of the flushed operand, rounded
fsin = _trigonometric(math.sin)
fcos = _trigonometric(math.cos)

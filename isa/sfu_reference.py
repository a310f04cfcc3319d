"""Smooth float64 references for the special-function unit, built from IEEE basic operations only.

numpy's own exp2/log2/sin/tanh may differ in their last bit between versions and CPUs; these use only
+, -, *, /, sqrt, floor, rint, frexp and ldexp, each exactly specified by IEEE 754, so every machine
computes the same bits. They predict the unit's outputs (within about 1e-15 relative); the tables under
isa/ store the unit's difference from them.
"""
from __future__ import annotations

import math

import numpy as np

_LN2 = 0.6931471805599453
_INV_LN2 = 1.4426950408889634
_TWO_PI = 6.283185307179586
_SQRT_HALF = 0.7071067811865476
_EXP_TERMS = [1.0 / math.factorial(k) for k in range(19)]
_SIN_TERMS = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(12)]
_COS_TERMS = [(-1.0) ** k / math.factorial(2 * k) for k in range(12)]
_ATANH_TERMS = [1.0 / (2 * k + 1) for k in range(22)]


def _horner(terms, t):
    result = np.full(np.shape(t), terms[-1], dtype=np.float64)
    for coefficient in reversed(terms[:-1]):
        result = result * t + coefficient
    return result


def _expm1_small(a):
    """e**a - 1 for |a| <= 0.35 by its Taylor series."""
    return a * _horner(_EXP_TERMS[1:], a)


def log2(x):
    """log2 of positive finite float64 values."""
    x = np.asarray(x, dtype=np.float64)
    mantissa, exponent = np.frexp(x)
    high = mantissa < _SQRT_HALF
    mantissa = np.where(high, mantissa * 2.0, mantissa)
    exponent = np.where(high, exponent - 1, exponent).astype(np.float64)
    z = (mantissa - 1.0) / (mantissa + 1.0)
    natural = 2.0 * z * _horner(_ATANH_TERMS, z * z)
    return exponent + natural * _INV_LN2


def exp2(x):
    """2**x of float64 values with |x| < 1000 (no overflow handling)."""
    x = np.asarray(x, dtype=np.float64)
    whole = np.rint(x)
    fraction = x - whole
    return np.ldexp(1.0 + _expm1_small(fraction * _LN2), whole.astype(np.int64))


def sin_cos_turns(turns):
    """(sin, cos) of 2*pi*turns for float64 turns of magnitude below 2**40."""
    turns = np.asarray(turns, dtype=np.float64)
    quarters = np.rint(4.0 * (turns - np.floor(turns)))
    angle = ((turns - np.floor(turns)) - quarters / 4.0) * _TWO_PI
    square = angle * angle
    sine = angle * _horner(_SIN_TERMS, square)
    cosine = _horner(_COS_TERMS, square)
    quadrant = quarters.astype(np.int64) % 4
    sin_value = np.choose(quadrant, [sine, cosine, -sine, -cosine])
    cos_value = np.choose(quadrant, [cosine, -sine, -cosine, sine])
    return sin_value, cos_value


def tanh(x):
    """tanh of float64 values."""
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.minimum(np.abs(x), 40.0)
    doubled = 2.0 * magnitude * _INV_LN2
    whole = np.rint(doubled)
    small = whole == 0
    growth = np.where(small, _expm1_small(2.0 * magnitude),
                      np.ldexp(1.0 + _expm1_small((doubled - whole) * _LN2), whole.astype(np.int64)) - 1.0)
    value = growth / (growth + 2.0)
    return np.where(np.signbit(x), -value, value)


def f32_bits(value):
    """float64 values rounded to nearest float32, as raw bits (int64)."""
    return np.asarray(value, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.int64)

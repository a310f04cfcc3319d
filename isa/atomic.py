"""Atomic operations as pure functions: what one lane's atom/red does to the word it hits, bit for bit as
the H100 does it (add.f32 flushes subnormals on global memory and keeps them on shared memory, f64 NaNs
resolve differently in the two, f16/bf16 and their pairs never flush). Words and operands are raw bits.

The memory core applies these in lane order to lanes that hit the same word; its C twin (emulator/memory/
_core.c) is tested against them."""
from __future__ import annotations

from typing import Optional

import numpy as np

from isa import fp

#: atom/red operations each data type supports (PTX ISA, sm_90); integer types support every operation
INTEGER_TYPES = ("b32", "u32", "s32", "b64", "u64", "s64")
OPS = ("add", "exch", "cas", "min", "max", "inc", "dec", "and", "or", "xor")
OPS_BY_TYPE = {
    **{ty: OPS for ty in INTEGER_TYPES},
    "f32": ("add", "exch", "cas"),
    "f64": ("add", "exch", "cas"),
    "f16x2": ("add", "min", "max", "exch", "cas"),
    "bf16x2": ("add", "min", "max", "exch", "cas"),
    "f16": ("add", "min", "max"),
    "bf16": ("add", "min", "max"),
    "b16": ("cas",),
}
#: operations whose repeated application is one associative fold (a scan serialises contended lanes)
ASSOCIATIVE_INTEGER_OPS = ("add", "and", "or", "xor", "min", "max")
FLOAT_TYPES = ("f32", "f64", "f16x2", "bf16x2", "f16", "bf16")

CANONICAL_NAN_F32 = np.uint32(0x7FFFFFFF)
DEFAULT_NAN_F64 = np.uint64(0xFFF8000000000000)
F64_QUIET = np.uint64(0x0008000000000000)
CANONICAL_NAN_HALF = np.uint32(0x7FFF)


def small_to_double(bits: np.ndarray, mant_bits: int, exp_bits: int) -> np.ndarray:
    bits = bits.astype(np.int64)
    exp_mask = (1 << exp_bits) - 1
    bias = (1 << (exp_bits - 1)) - 1
    exponent = (bits >> mant_bits) & exp_mask
    mantissa = bits & ((1 << mant_bits) - 1)
    significand = np.where(exponent == 0, mantissa, mantissa | (1 << mant_bits)).astype(np.float64)
    scale = np.where(exponent == 0, 1, exponent) - bias - mant_bits
    value = np.ldexp(significand, scale.astype(np.int32))
    value[exponent == exp_mask] = np.inf
    negative = ((bits >> (mant_bits + exp_bits)) & 1) == 1
    return np.where(negative, -value, value)


def small_is_nan(bits: np.ndarray, mant_bits: int, exp_bits: int) -> np.ndarray:
    bits = bits.astype(np.uint32)
    exp_mask = (1 << exp_bits) - 1
    return (((bits >> mant_bits) & exp_mask) == exp_mask) & ((bits & ((1 << mant_bits) - 1)) != 0)


def narrow_double(x: np.ndarray, mant_bits: int, exp_bits: int) -> np.ndarray:
    """Round-to-nearest-even of non-NaN doubles into a binary format with the given field widths."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    sign = (bits >> np.uint64(63)).astype(np.int64) << (mant_bits + exp_bits)
    biased = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    significand = (bits & np.uint64((1 << 52) - 1)) | np.uint64(1 << 52)
    bias = (1 << (exp_bits - 1)) - 1
    infinity = ((1 << exp_bits) - 1) << mant_bits
    exponent = biased - 1023
    min_exponent = 1 - bias
    shift = 52 - mant_bits + np.maximum(min_exponent - exponent, 0)
    vanishes = shift >= 64
    shift_u = np.minimum(shift, 63).astype(np.uint64)
    rounded = significand >> shift_u
    rest = significand & ((np.uint64(1) << shift_u) - np.uint64(1))
    half = np.uint64(1) << (shift_u - np.uint64(1))
    round_up = (rest > half) | ((rest == half) & ((rounded & np.uint64(1)) == 1))
    rounded = (rounded + round_up.astype(np.uint64)).astype(np.int64)
    rounded[vanishes] = 0
    subnormal = exponent < min_exponent
    carry = ~subnormal & ((rounded >> (mant_bits + 1)) != 0)
    rounded = np.where(carry, rounded >> 1, rounded)
    exponent = np.where(carry, exponent + 1, exponent)
    normal = ((exponent + bias) << mant_bits) | (rounded & ((1 << mant_bits) - 1))
    magnitude = np.where(subnormal, rounded, normal)
    magnitude = np.where(~subnormal & (exponent > bias), infinity, magnitude)
    magnitude = np.where(biased == 0x7FF, infinity, magnitude)
    magnitude = np.where(biased == 0, 0, magnitude)
    return (sign | magnitude).astype(np.uint32)


def f32_flush(bits: np.ndarray) -> np.ndarray:
    bits = bits.astype(np.uint32)
    return np.where((bits & np.uint32(0x7F800000)) == 0, bits & np.uint32(0x80000000), bits).astype(np.uint32)


def f32_add(x: np.ndarray, y: np.ndarray, ftz: bool) -> np.ndarray:
    """atom.add.f32 on raw bits: add.rn.f32 (isa.fp.fadd; ftz flushes subnormal operands and results), every NaN
    the canonical one."""
    total = np.asarray(fp.fadd(np.asarray(x).astype(np.uint32).view(np.float32),
                               np.asarray(y).astype(np.uint32).view(np.float32), ty="f32", ftz=ftz), dtype=np.float32)
    return np.where(np.isnan(total), CANONICAL_NAN_F32, total.view(np.uint32)).astype(np.uint32)


def f64_is_nan(bits: np.ndarray) -> np.ndarray:
    return ((bits & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000)) & \
        ((bits & np.uint64((1 << 52) - 1)) != 0)


def f64_add(x: np.ndarray, y: np.ndarray, shared: bool = False) -> np.ndarray:
    """old x + operand y, with the H100's NaN rules (as in _core.c).

    Global: a NaN operand comes back unchanged, before a NaN stored value (also unchanged).
    Shared: the stored NaN comes first, then the operand's, each with its quiet bit set.
    Either way an invalid sum such as inf + -inf gives 0xFFF8000000000000.
    """
    x, y = x.astype(np.uint64), y.astype(np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        total = (x.view(np.float64) + y.view(np.float64)).view(np.uint64)
    total = np.where(np.isnan(total.view(np.float64)), DEFAULT_NAN_F64, total)
    if shared:
        total = np.where(f64_is_nan(y), y | F64_QUIET, total)
        return np.where(f64_is_nan(x), x | F64_QUIET, total).astype(np.uint64)
    total = np.where(f64_is_nan(x), x, total)
    return np.where(f64_is_nan(y), y, total).astype(np.uint64)


def _half_order_key(h: np.ndarray) -> np.ndarray:
    h = h.astype(np.int64)
    return np.where(h & 0x8000, -(h & 0x7FFF) - 1, h)


def half_apply(op: str, x: np.ndarray, y: np.ndarray, bf16: bool) -> np.ndarray:
    """add/min/max of 16-bit f16 or bf16 codes (no flushing: PTX's .noftz)."""
    mant_bits, exp_bits = (7, 8) if bf16 else (10, 5)
    x, y = x.astype(np.uint32), y.astype(np.uint32)
    x_nan, y_nan = small_is_nan(x, mant_bits, exp_bits), small_is_nan(y, mant_bits, exp_bits)
    if op == "add":
        with np.errstate(invalid="ignore"):
            total = small_to_double(x, mant_bits, exp_bits) + small_to_double(y, mant_bits, exp_bits)
        invalid = np.isnan(total)
        r = narrow_double(np.where(invalid, 0.0, total), mant_bits, exp_bits)
        return np.where(x_nan | y_nan | invalid, CANONICAL_NAN_HALF, r).astype(np.uint32)
    if op == "max":
        y_wins = _half_order_key(y) > _half_order_key(x)
    else:
        y_wins = _half_order_key(y) < _half_order_key(x)
    r = np.where(y_wins, y, x)
    r = np.where(x_nan, y, r)
    r = np.where(y_nan, x, r)
    return np.where(x_nan & y_nan, CANONICAL_NAN_HALF, r).astype(np.uint32)


def packed_apply(op: str, old: np.ndarray, value: np.ndarray, bf16: bool) -> np.ndarray:
    result = np.zeros(old.shape, dtype=np.uint32)
    for half in (0, 1):
        x = (old.astype(np.uint32) >> np.uint32(16 * half)) & np.uint32(0xFFFF)
        y = (value.astype(np.uint32) >> np.uint32(16 * half)) & np.uint32(0xFFFF)
        result |= half_apply(op, x, y, bf16) << np.uint32(16 * half)
    return result


def integer_combine(op: str, ty: str):
    """The binary function of an associative integer atomic, over raw unsigned words."""
    signed = ty in ("s32", "s64")
    as_signed = np.int64 if ty in ("b64", "u64", "s64") else np.int32

    def pick(chooser):
        def combine(x, y):
            if signed:
                return chooser(x.view(as_signed), y.view(as_signed)).view(x.dtype)
            return chooser(x, y)
        return combine

    return {"add": np.add, "and": np.bitwise_and, "or": np.bitwise_or,
            "xor": np.bitwise_xor, "min": pick(np.minimum), "max": pick(np.maximum)}[op]


def combine(op: str, ty: str, old: np.ndarray, a: np.ndarray, b: Optional[np.ndarray] = None, *,
            space: str = "global") -> np.ndarray:
    """New word values for one lane per word: the element-wise semantics of every atomic.

    `space` is the space the lanes resolved to ("global", "shared" or "local"): on an H100, add.f32 on
    global memory flushes subnormal operands and results and keeps them on shared memory, and
    add.f64 resolves NaNs differently in the two (see f64_add).
    """
    if op == "cas":
        return np.where(old == a, b, old).astype(old.dtype)
    if op == "exch":
        return a.copy()
    if ty == "f32":
        return f32_add(old, a, space == "global")
    if ty == "f64":
        return f64_add(old, a, space != "global")
    if ty in ("f16x2", "bf16x2"):
        return packed_apply(op, old, a, ty == "bf16x2")
    if ty in ("f16", "bf16"):
        return half_apply(op, old, a, ty == "bf16").astype(old.dtype)
    if op == "inc":
        return np.where(old >= a, 0, old + 1).astype(old.dtype)
    if op == "dec":
        return np.where((old == 0) | (old > a), a, old - 1).astype(old.dtype)
    return integer_combine(op, ty)(old, a).astype(old.dtype)


def add_chain(ty: str, initial, values, space: str):
    """atom.add.f32/.f64 applied by values one after another to one word holding initial: the old value
    each add saw, and the word's final value (the same as folding combine, in one pass)."""
    if ty == "f32":
        return _f32_chain(np.uint32(initial), values.astype(np.uint32), space == "global")
    return _f64_chain(np.uint64(initial), values.astype(np.uint64), space != "global")


def _f32_chain(initial, values, ftz):
    m = values.size
    states = np.empty(m + 1, dtype=np.uint32)
    states[0] = initial
    operands = f32_flush(values) if ftz else values
    start = 0
    current = np.uint32(f32_flush(np.array([initial]))[0] if ftz else initial)
    while start < m:
        sequence = np.empty(m - start + 1, dtype=np.uint32)
        sequence[0] = current
        sequence[1:] = operands[start:]
        with np.errstate(invalid="ignore", over="ignore"):
            sums = np.add.accumulate(sequence.view(np.float32)).view(np.uint32)
        if not ftz:
            states[start + 1:] = sums[1:]
            break
        subnormal = np.flatnonzero(((sums[1:] & np.uint32(0x7F800000)) == 0) & ((sums[1:] & np.uint32(0x7FFFFF)) != 0))
        if subnormal.size == 0:
            states[start + 1:] = sums[1:]
            break
        stop = int(subnormal[0]) + 1
        states[start + 1:start + stop] = sums[1:stop]
        current = sums[stop] & np.uint32(0x80000000)
        states[start + stop] = current
        start += stop
    nan_states = np.isnan(states[1:].view(np.float32))
    states[1:][nan_states] = CANONICAL_NAN_F32
    return states[:-1].copy(), states[-1]


def _f64_chain(initial, values, shared):
    m = values.size
    sequence = np.empty(m + 1, dtype=np.uint64)
    sequence[0] = initial
    sequence[1:] = values
    with np.errstate(invalid="ignore", over="ignore"):
        states = np.add.accumulate(sequence.view(np.float64)).view(np.uint64).copy()
    states[0] = initial
    is_nan_state = np.isnan(states.view(np.float64))
    if is_nan_state.any():
        first = int(np.flatnonzero(is_nan_state)[0])
        operand_nan = np.zeros(m + 1, dtype=bool)
        operand_nan[1:] = f64_is_nan(values)
        if shared:
            # The stored NaN wins from then on: the first NaN state, quieted, stays.
            if first == 0:
                nan = initial | F64_QUIET
                first = 1
            else:
                nan = sequence[first] | F64_QUIET if operand_nan[first] else DEFAULT_NAN_F64
            states[first:] = nan
            return states[:-1].copy(), states[-1]
        source = np.where(operand_nan, sequence, DEFAULT_NAN_F64)
        if first == 0:
            source[0] = initial
        marks = operand_nan.copy()
        marks[first] = True
        marks[:first] = False
        latest = np.maximum.accumulate(np.where(marks, np.arange(m + 1), 0))
        states[first:] = source[latest[first:]]
    return states[:-1].copy(), states[-1]

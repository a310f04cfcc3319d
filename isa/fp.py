"""PTX floating-point semantics: pure, vectorised, bit-exact functions over numpy arrays (one element a thread).

Value conventions: f32 arrives and leaves as np.float32, f64 as np.float64; f16 and bf16 as np.uint16
raw bits; f16x2 and bf16x2 as np.uint32 (low half = first element); e4m3x2 and e5m2x2 as np.uint16.
Integers use the numpy dtype of their PTX type; predicates are bool arrays.

Exactness strategy. Narrow results (f32, f16, bf16, fp8) are computed exactly as a float64 pair
(value + error, from TwoSum/TwoProduct), collapsed to one float64 by rounding to odd, and then rounded
once to the destination (53 bits leave the two guard bits that make this double rounding innocuous).
f64 results take numpy's correctly rounded-to-nearest value r and the exact sign of (exact - r), from
error-free transformations and an exact expansion sum; the directed modes step r by one ulp toward the
exact value. The few elements whose intermediates would underflow or overflow take an exact
`fractions.Fraction` slow path.
"""
from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from isa import halfbits, sfu
from isa.halfbits import BF16, E4M3, E5M2, F16, F32, F64, TF32, BinaryFormat

__all__ = [
    "nan_result", "fadd", "fsub", "fmul", "ffma", "fdiv", "fsqrt", "frcp", "frsqrt", "fsin", "fcos",
    "fex2", "flg2", "ftanh", "fmin", "fmax", "fabs", "fneg", "fcompare", "testp", "copysign", "cvt",
    "cvt_pack", "f16_to_f32", "f32_to_f16", "bf16_to_f32", "f32_to_bf16",
]

_DIRECTED = ("rn", "rz", "rm", "rp")
_SCALAR_FORMATS = {"f64": F64, "f32": F32, "f16": F16, "bf16": BF16}
_PACKED_FORMATS = {"f16x2": F16, "bf16x2": BF16}
_FP8_FORMATS = {"e4m3x2": E4M3, "e5m2x2": E5M2}
_INT_DTYPES = {
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
}
_INT_ROUNDINGS = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's constant for float64
_TWO_POW_M960 = 2.0 ** -960
_TWO_POW_995 = 2.0 ** 995
_TWO_POW_1000 = 2.0 ** 1000


def _quiet(function):
    """Run a semantics function with every numpy floating-point warning silenced (sNaN casts included)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)
    return wrapper


# ---- NaN policy ---------------------------------------------------------------------------------

_F64_QUIET = np.uint64(0x0008000000000000)
_F64_NAN_PRIORITY = {1: (0,), 2: (1, 0), 3: (1, 2, 0)}


def nan_result(ty: str, *operands, divide: bool = False):
    """Bits an instruction of type `ty` writes when its result is NaN (the single NaN policy).

    Measured on an H100 over every combination of quiet/signalling, positive/negative NaN operands:
    f32, f16, bf16 (and fp8) arithmetic writes the canonical NaN (0x7FFFFFFF, 0x7FFF, 0x7F)
    whatever the operands. f64 arithmetic returns a NaN operand with its quiet bit set and its sign
    kept: b before a for add, sub, mul, min, max; b, then c, then a for fma; a before b for div
    (`divide`). Invalid operations on non-NaN f64 operands give 0xFFF8000000000000.
    `operands` are the instruction's source operands in PTX order.
    """
    fmt = _format_of(ty)
    if fmt is not F64 or not operands:
        return fmt.storage(fmt.canonical_nan)
    codes = [_bits_of(F64, op) for op in operands]
    result = np.full(np.broadcast(*codes).shape, F64.canonical_nan, dtype=np.uint64)
    priority = (0, 1) if divide else _F64_NAN_PRIORITY[len(codes)]
    for index in reversed(priority):
        code = codes[index]
        result = np.where(halfbits.is_nan_bits(code, F64), code | _F64_QUIET, result)
    return result


def _convert_nan(source: BinaryFormat, target: BinaryFormat, codes, *, rnd=None, ftz=False,
                 satfinite=False):
    """NaN bits that cvt writes for NaN source codes (every NaN row of every cvt probe on an H100).

    - .ftz with an f32 or bf16 source runs the f32 datapath: the NaN first becomes the canonical
      f32 NaN 0x7FFFFFFF (cvt.ftz.f32.bf16 -> 0x7FFFFFFF, cvt.ftz.f64.f32 -> 0x7FFFFFFFE0000000).
    - bf16 -> f32 without .ftz is a plain 16-bit shift (payload kept, not even quieted).
    - Conversions to or from f64 keep the sign and the payload's leading bits and set the quiet
      bit (f64 -> f32 0x7FF0000000000001 -> 0x7FC00000; cvt.rni.f64.f64 quiets in place).
    - tf32 with .rna truncates the f32 code (sign and leading payload kept, unquieted; a payload
      held only in the dropped bits leaves an infinity); .rna.satfinite then takes one unit off a
      code whose exponent is all ones (0x7FC00000 -> 0x7FBFE000, 0x7F800001 -> 0x7F7FE000). tf32
      with .rn/.rz writes the canonical 0x7FFFE000.
    - Every other pair writes the canonical NaN of the destination (0x7FFFFFFF, 0x7FFF).
    (.sat and .relu are applied afterwards: NaN -> +0.0 and NaN -> canonical NaN.)
    """
    codes = np.asarray(codes).astype(np.uint64)
    if ftz and source in (F32, BF16):
        source, codes = F32, np.full(codes.shape, F32.canonical_nan, dtype=np.uint64)
    if source is BF16 and target is F32:
        return codes << np.uint64(16)
    if target is TF32:
        if source is not F32 or rnd != "rna":
            return np.full(codes.shape, TF32.canonical_nan, dtype=np.uint32)
        truncated = codes >> np.uint64(13)
        if satfinite:
            all_ones = (truncated & np.uint64(TF32.exponent_mask)) == np.uint64(TF32.exponent_mask)
            truncated = truncated - all_ones.astype(np.uint64)
        return truncated.astype(np.uint32)
    if source is F64 or target is F64:
        sign = (codes >> np.uint64(source.width - 1)) & np.uint64(1)
        payload = codes & np.uint64((1 << source.mantissa_bits) - 1)
        shift = target.mantissa_bits - source.mantissa_bits
        payload = payload << np.uint64(shift) if shift >= 0 else payload >> np.uint64(-shift)
        quiet = np.uint64(1 << (target.mantissa_bits - 1))
        result = (sign << np.uint64(target.width - 1)) | np.uint64(target.exponent_mask) | payload | quiet
        return result.astype(target.storage)
    return np.full(codes.shape, target.canonical_nan, dtype=target.storage)


def _format_of(ty: str) -> BinaryFormat:
    if ty in _SCALAR_FORMATS:
        return _SCALAR_FORMATS[ty]
    if ty in _PACKED_FORMATS:
        return _PACKED_FORMATS[ty]
    if ty in _FP8_FORMATS:
        return _FP8_FORMATS[ty]
    return halfbits.FORMATS[ty]


# ---- array plumbing ------------------------------------------------------------------------------

def _bits_of(fmt: BinaryFormat, x) -> np.ndarray:
    """Raw codes of an operand given in the value convention of `fmt`."""
    arr = np.asarray(x)
    if fmt is F32:
        if arr.dtype == np.uint32 or arr.dtype == np.int32:
            return arr.astype(np.uint32)
        return arr.astype(np.float32).view(np.uint32)
    if fmt is F64:
        if arr.dtype == np.uint64 or arr.dtype == np.int64:
            return arr.astype(np.uint64)
        return arr.astype(np.float64).view(np.uint64)
    if arr.dtype == np.float16 and fmt is F16:
        return arr.view(np.uint16)
    return arr.astype(fmt.storage)


def _from_bits(fmt: BinaryFormat, bits) -> np.ndarray:
    """Operand value convention of `fmt` from raw codes."""
    bits = np.asarray(bits).astype(fmt.storage)
    if fmt is F32:
        return bits.view(np.float32)
    if fmt is F64:
        return bits.view(np.float64)
    return bits


def _values(fmt: BinaryFormat, x) -> np.ndarray:
    """Exact float64 values of an operand."""
    if fmt is F64:
        return np.asarray(_bits_of(F64, x)).view(np.float64).copy()
    return halfbits.decode(_bits_of(fmt, x), fmt)


def _flat(*operands):
    """Broadcast operands and flatten them to 1-d copies; also return the common shape."""
    arrays = np.broadcast_arrays(*[np.asarray(op) for op in operands])
    shape = arrays[0].shape
    return [np.array(a, copy=True).reshape(-1) for a in arrays], shape


def _lanewise(ty: str, lane, *operands):
    """Apply `lane(fmt, *codes)` per 16-bit half for packed types, or once for scalar ones."""
    if ty in _PACKED_FORMATS:
        fmt = _PACKED_FORMATS[ty]
        words = [np.asarray(op).astype(np.uint32) for op in operands]
        low = lane(fmt, *[(w & np.uint32(0xFFFF)).astype(np.uint16) for w in words])
        high = lane(fmt, *[(w >> np.uint32(16)).astype(np.uint16) for w in words])
        return (np.asarray(high).astype(np.uint32) << np.uint32(16)) | np.asarray(low).astype(np.uint32)
    if ty not in _SCALAR_FORMATS:
        raise ValueError(f"unsupported floating-point type {ty!r}")
    return lane(_SCALAR_FORMATS[ty], *operands)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


# ---- error-free transformations ------------------------------------------------------------------

def _two_sum(a, b):
    """s = fl(a + b) and the exact error a + b - s (Knuth; exact barring overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def _two_prod(a, b):
    """p = fl(a * b) and the exact error (Dekker; exact while |a|,|b| < 2**995 and nothing underflows)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _exact_sum_sign(terms):
    """Sign (-1, 0, 1) of the exact sum of float64 arrays (Shewchuk's grow-expansion)."""
    expansion = []
    for term in terms:
        carry = term
        grown = []
        for component in expansion:
            carry, low = _two_sum(carry, component)
            grown.append(low)
        grown.append(carry)
        expansion = grown
    sign = np.zeros(np.shape(terms[0]))
    for component in reversed(expansion):
        sign = np.where(sign == 0, np.sign(component), sign)
    return sign


def _round_to_odd(high, low):
    """The float64 nearest high + low whose last bit is odd when inexact (|low| <= ulp(high)/2)."""
    inexact = (low != 0) & np.isfinite(high)
    even = (np.asarray(high, dtype=np.float64).view(np.uint64) & np.uint64(1)) == 0
    toward = np.nextafter(high, np.where(low > 0, np.inf, -np.inf))
    return np.where(inexact & even, toward, high)


def _directed(r, residual, rnd: str):
    """Given r = RN(x) and the sign of x - r, the float64 that mode `rnd` gives for x."""
    if rnd == "rn":
        return r
    if rnd == "rz":
        step, target = residual * np.sign(r) < 0, 0.0
    elif rnd == "rm":
        step, target = residual < 0, -np.inf
    elif rnd == "rp":
        step, target = residual > 0, np.inf
    else:
        raise ValueError(f"unknown rounding mode {rnd!r}")
    return np.where(step, np.nextafter(r, target), r)


def _sum_zero_negative(x, y, rnd: str):
    """Sign of an exactly zero sum x + y (IEEE 754: -0 only from -0 + -0, or from any cancellation in rm)."""
    if rnd == "rm":
        return np.signbit(x) | np.signbit(y)
    return np.signbit(x) & np.signbit(y)


def _overflow_toward_zero(rnd: str, negative):
    if rnd == "rz":
        return np.ones(np.shape(negative), dtype=bool)
    if rnd == "rm":
        return ~negative
    if rnd == "rp":
        return negative
    return np.zeros(np.shape(negative), dtype=bool)


def _scale_directed(q, residual, exponent, negative, rnd: str):
    """Signed result of a positive significand q (with exact residual sign) scaled by 2**exponent.

    Returns the float64 result and a mask of elements whose result is subnormal, where scaling
    is inexact and the caller must fall back to the exact path.
    """
    signed = np.where(negative, -q, q)
    signed_residual = np.where(negative, -residual, residual)
    rounded = _directed(signed, signed_residual, rnd)
    result = np.ldexp(rounded, exponent)
    binade = np.frexp(rounded)[1] + exponent
    tiny = binade <= -1022
    overflow = np.isinf(result)
    largest = np.where(negative, -np.finfo(np.float64).max, np.finfo(np.float64).max)
    result = np.where(overflow & _overflow_toward_zero(rnd, negative), largest, result)
    return result, tiny


# ---- exact slow path -----------------------------------------------------------------------------

def _exact_f64(value: Fraction, rnd: str, negative_zero: bool) -> float:
    code = halfbits.round_fraction(value, F64, rnd, negative_zero=negative_zero)
    return float(np.array(code, dtype=np.uint64).view(np.float64))


def _fraction(x) -> Fraction:
    return Fraction(float(x))


# ---- finishing narrow results --------------------------------------------------------------------

def _flush_values(fmt: BinaryFormat, x):
    """Subnormal float64 values of format `fmt` become zeros of the same sign."""
    return np.where((np.abs(x) < fmt.min_normal) & (x != 0), np.copysign(0.0, x), x)


def _flush_codes(fmt: BinaryFormat, codes):
    codes = np.asarray(codes)
    sign_only = codes & fmt.storage(fmt.sign_mask)
    return np.where(halfbits.is_subnormal_bits(codes, fmt), sign_only, codes).astype(fmt.storage)


def _saturate_codes(fmt: BinaryFormat, codes):
    """Clamp to [+0.0, 1.0]; NaN and every negative value (-0.0 too) give +0.0."""
    codes = np.asarray(codes).astype(fmt.storage)
    negative = (codes & fmt.storage(fmt.sign_mask)) != 0
    above_one = (codes & fmt.storage(fmt.magnitude_mask)) > fmt.storage(fmt.one_bits)
    nan = halfbits.is_nan_bits(codes, fmt)
    clamped = np.where(above_one, fmt.storage(fmt.one_bits), codes)
    return np.where(nan | negative, fmt.storage(0), clamped).astype(fmt.storage)


def _relu_codes(fmt: BinaryFormat, codes):
    """PTX .relu: negative results become +0.0, NaN becomes the canonical NaN."""
    codes = np.asarray(codes).astype(fmt.storage)
    negative = (codes & fmt.storage(fmt.sign_mask)) != 0
    nan = halfbits.is_nan_bits(codes, fmt)
    result = np.where(negative, fmt.storage(0), codes)
    return np.where(nan, nan_result(fmt.name), result).astype(fmt.storage)


def _unbounded(fmt: BinaryFormat) -> BinaryFormat:
    return BinaryFormat(fmt.name + "-wide", fmt.exponent_bits + 1, fmt.mantissa_bits, np.uint64, 0)


_UNBOUNDED = {fmt: _unbounded(fmt) for fmt in (F32, F16, BF16)}
_NATIVE_TYPES = {F32: np.float32, F16: np.float16}


def _encode_result(value, fmt, rnd, *, ftz=False, satfinite=False):
    """Codes of `fmt` for float64 values (exact, or round-to-odd images) rounded in mode `rnd`.

    With `ftz`, a result is flushed to a zero of its sign when it is tiny in IEEE 754's sense of
    tininess after rounding: rounded with an unbounded exponent, it lies below the smallest normal.
    (An H100 flushes mul.rn.ftz.f32 0x3F7FFFFF * 0x00800000, whose subnormal-grid rounding would
    be the smallest normal, and keeps 0x3F7FFFFE * 0x00800001, tiny only before rounding.)
    """
    if rnd == "rn" and not satfinite and fmt in _NATIVE_TYPES:
        # numpy's float64 -> float32/float16 casts round once to nearest even (subnormals included).
        codes = np.asarray(value, dtype=np.float64).astype(_NATIVE_TYPES[fmt]).view(fmt.storage)
    else:
        codes = halfbits.encode(value, fmt, rnd, satfinite=satfinite)
    if not ftz:
        return codes
    magnitude = np.abs(value)
    near_tiny = np.flatnonzero((magnitude <= fmt.min_normal) & (value != 0))
    if near_tiny.size == 0:
        return codes
    candidates = np.asarray(value, dtype=np.float64).reshape(-1)[near_tiny]
    wide = halfbits.decode(halfbits.encode(candidates, _UNBOUNDED[fmt], rnd), _UNBOUNDED[fmt])
    tiny = np.abs(wide) < fmt.min_normal
    codes = np.array(codes, dtype=fmt.storage, copy=True).reshape(-1)
    sign_only = np.where(np.signbit(candidates), fmt.sign_mask, 0).astype(fmt.storage)
    codes[near_tiny[tiny]] = sign_only[tiny]
    return codes.reshape(np.shape(value))


def _finish_codes(fmt, codes, nan, *, ftz=False, sat=False, relu=False):
    codes = np.where(nan, nan_result(fmt.name), codes).astype(fmt.storage)
    if ftz:
        codes = _flush_codes(fmt, codes)
    if sat:
        codes = _saturate_codes(fmt, codes)
    if relu:
        codes = _relu_codes(fmt, codes)
    return codes


def _round_pair(fmt, high, low, rnd, zero_negative=None, ftz=False):
    """Codes of `fmt` for the exact value high + low rounded once in mode `rnd`."""
    low = np.where(np.isfinite(high), low, 0.0)
    value = _round_to_odd(high, low)
    if zero_negative is not None:
        value = np.where(high == 0, np.where(zero_negative, -0.0, 0.0), value)
    return _encode_result(value, fmt, rnd, ftz=ftz)


# ---- add, sub, mul, fma --------------------------------------------------------------------------

def _check_modifiers(ty: str, rnd: str, ftz: bool, sat: bool) -> None:
    _check(rnd in _DIRECTED, f"rounding mode {rnd!r} is not one of rn rz rm rp")
    if ty == "f64":
        _check(not ftz and not sat, ".ftz and .sat do not apply to f64")


def _f64_sum(x, y, rnd):
    with np.errstate(all="ignore"):
        s = x + y
        if rnd == "rn":
            return s
        finite = np.isfinite(x) & np.isfinite(y)
        error = np.where(finite & np.isfinite(s), _two_sum(x, y)[1], 0.0)
        residual = np.where(finite & np.isinf(s), -np.sign(s), np.sign(error))
        result = _directed(s, residual, rnd)
        exact_zero = finite & (s == 0)
        zero = np.where(_sum_zero_negative(x, y, rnd), -0.0, 0.0)
        return np.where(exact_zero, zero, result)


def _native_f32(a, b, operation, sat):
    """f32 add, sub or mul rounded to nearest by numpy's IEEE float32 arithmetic (exact but for NaN)."""
    result = np.asarray(operation(_from_bits(F32, _bits_of(F32, a)), _from_bits(F32, _bits_of(F32, b))))
    codes = np.where(np.isnan(result), np.uint32(F32.canonical_nan), result.view(np.uint32))
    if sat:
        codes = _saturate_codes(F32, codes)
    return codes.astype(np.uint32).view(np.float32)


def _add(a, b, ty, rnd, ftz, sat, subtract):
    _check_modifiers(ty, rnd, ftz, sat)
    if ty == "f32" and rnd == "rn" and not ftz:
        return _native_f32(a, b, np.subtract if subtract else np.add, sat)
    if ty == "f64":
        x, y = _values(F64, a), _values(F64, b)
        result = _f64_sum(x, -y if subtract else y, rnd)
        return _f64_out(result, a, b)

    def lane(fmt, p, q):
        x, y = _values(fmt, p), _values(fmt, q)
        if subtract:
            y = -y
        if ftz:
            x, y = _flush_values(fmt, x), _flush_values(fmt, y)
        with np.errstate(all="ignore"):
            high, low = _two_sum(x, y)
        codes = _round_pair(fmt, high, low, rnd, _sum_zero_negative(x, y, rnd), ftz)
        return _finish_codes(fmt, codes, np.isnan(high), ftz=ftz, sat=sat)

    return _narrow_result(ty, _lanewise(ty, lane, a, b))


def _narrow_result(ty, codes):
    return _from_bits(F32, codes) if ty == "f32" else codes


def _f64_out(result, *operands, divide=False):
    """An f64 result with NaN elements replaced per the NaN policy."""
    result = np.asarray(result, dtype=np.float64)
    nan = np.isnan(result)
    if not nan.any():
        return result
    bits = np.where(nan, nan_result("f64", *operands, divide=divide), result.view(np.uint64))
    return bits.astype(np.uint64).view(np.float64)


@_quiet
def fadd(a, b, *, ty, rnd="rn", ftz=False, sat=False):
    """add{.rnd}{.ftz}{.sat}.ty: a + b rounded once. ty: f32 f64 f16 bf16 f16x2 bf16x2."""
    return _add(a, b, ty, rnd, ftz, sat, subtract=False)


@_quiet
def fsub(a, b, *, ty, rnd="rn", ftz=False, sat=False):
    """sub{.rnd}{.ftz}{.sat}.ty: a - b rounded once."""
    return _add(a, b, ty, rnd, ftz, sat, subtract=True)


def _f64_mul(x, y, rnd):
    """x * y in mode rnd (float64 arrays of one shape)."""
    with np.errstate(all="ignore"):
        product = x * y
        if rnd == "rn":
            return product
        regular = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
        mx, ex = np.frexp(np.where(regular, np.abs(x), 1.0))
        my, ey = np.frexp(np.where(regular, np.abs(y), 1.0))
        q, error = _two_prod(mx, my)
        result, tiny = _scale_directed(q, np.sign(error), ex + ey, np.signbit(x) ^ np.signbit(y), rnd)
        result = np.where(regular, result, product)
    slow = np.flatnonzero(regular & tiny)
    if slow.size:
        result = np.array(result, copy=True)
        for i in slow:
            result[i] = _exact_f64(_fraction(x[i]) * _fraction(y[i]), rnd, False)
    return result


@_quiet
def fmul(a, b, *, ty, rnd="rn", ftz=False, sat=False):
    """mul{.rnd}{.ftz}{.sat}.ty: a * b rounded once."""
    _check_modifiers(ty, rnd, ftz, sat)
    if ty == "f32" and rnd == "rn" and not ftz:
        return _native_f32(a, b, np.multiply, sat)
    if ty == "f64":
        (x, y), shape = _flat(_values(F64, a), _values(F64, b))
        return _f64_out(_f64_mul(x, y, rnd).reshape(shape), a, b)

    def lane(fmt, p, q):
        x, y = _values(fmt, p), _values(fmt, q)
        if ftz:
            x, y = _flush_values(fmt, x), _flush_values(fmt, y)
        with np.errstate(all="ignore"):
            product = x * y
        codes = _round_pair(fmt, product, np.zeros_like(product), rnd, ftz=ftz)
        return _finish_codes(fmt, codes, np.isnan(product), ftz=ftz, sat=sat)

    return _narrow_result(ty, _lanewise(ty, lane, a, b))


def _f64_fma(x, y, z, rnd):
    """x * y + z with one rounding in mode rnd (float64 arrays of one shape)."""
    with np.errstate(all="ignore"):
        product = x * y
        result = product + z
        finite_factors = np.isfinite(x) & np.isfinite(y)
        result = np.where(finite_factors & np.isinf(z), z, result)
        finite = finite_factors & np.isfinite(z)
        zero_product = finite & ((x == 0) | (y == 0))
        zero_sum = np.where(_sum_zero_negative(product, z, rnd), -0.0, 0.0)
        result = np.where(zero_product, np.where(z == 0, zero_sum, z), result)
        zero_addend = finite & ~zero_product & (z == 0)
        general = finite & ~zero_product & ~zero_addend

        uh, ul = _two_prod(x, y)
        th, tl = _two_sum(z, uh)
        m, n = _two_sum(tl, ul)
        r = th + _round_to_odd(m, n)
        if rnd != "rn":
            r = _directed(r, _exact_sum_sign([uh, ul, z, -r]), rnd)
        _, ex = np.frexp(x)
        _, ey = np.frexp(y)
        safe = ((np.abs(x) >= 2.0 ** -1022) & (np.abs(y) >= 2.0 ** -1022)
                & (np.abs(x) < _TWO_POW_995) & (np.abs(y) < _TWO_POW_995) & (ex + ey >= -960)
                & (np.abs(uh) < _TWO_POW_1000) & (np.abs(z) < _TWO_POW_1000)
                & (np.abs(r) >= _TWO_POW_M960) & np.isfinite(r))
        result = np.where(general & safe, r, result)
    if zero_addend.any():
        result = np.array(result, copy=True)
        result[zero_addend] = _f64_mul(x[zero_addend], y[zero_addend], rnd)
    slow = np.flatnonzero(general & ~safe)
    if slow.size:
        result = np.array(result, copy=True)
        for i in slow:
            exact = _fraction(x[i]) * _fraction(y[i]) + _fraction(z[i])
            zero_negative = bool(_sum_zero_negative(product[i], z[i], rnd))
            result[i] = _exact_f64(exact, rnd, zero_negative)
    return result


_NATIVE_FMA = {}


def use_native_fma(ty: str, function) -> None:
    """Let the round-to-nearest fma of ty ("f32" or "f64") use a native, correctly rounded fma(a, b, c) (C's fmaf/fma);
    lanes whose result is NaN still follow the ISA's NaN rule below."""
    _NATIVE_FMA[ty] = function


def _native_fma(ty, a, b, c):
    result = np.array(_NATIVE_FMA[ty](a, b, c), copy=True)
    nan = np.isnan(result)
    if np.any(nan):
        if result.ndim == 0:
            return ffma(a, b, c, ty=ty, _exact=True)
        shape = result.shape
        pick = lambda v: np.broadcast_to(np.asarray(v), shape)[nan]
        result[nan] = ffma(pick(a), pick(b), pick(c), ty=ty, _exact=True)
    return result[()] if result.ndim == 0 else result


_F32_MIDPOINT_MASK = np.uint64((1 << 29) - 1)
_F32_MIDPOINT_BITS = np.uint64(1 << 28)


def _fma_f32_nearest(a, b, c):
    """fma.rn.f32 in float64: the product is exact and the sum rounds once, so converting to f32 is the single
    rounding except when the f64 sum lands exactly on an f32 midpoint with a nonzero error; those lanes, and
    subnormal, non-finite or NaN results, take the exact path."""
    x, y, z = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        product = x * y
        total = product + z
        virtual = total - product
        error = (product - (total - virtual)) + (z - virtual)
        result = np.asarray(total.astype(np.float32))
        magnitude = np.abs(result)
        midpoint = (total.view(np.uint64) & _F32_MIDPOINT_MASK) == _F32_MIDPOINT_BITS
        hard = (midpoint & (error != 0)) | ~(magnitude < np.float32(np.inf)) | (magnitude < np.float32(2.0 ** -126))
    if np.any(hard):
        result = np.array(result, copy=True)
        shape = np.broadcast(x, y, z).shape
        pick = lambda v: np.broadcast_to(np.asarray(v, dtype=np.float32), shape)[hard]
        result[hard] = ffma(pick(a), pick(b), pick(c), ty="f32", rnd="rn", relu=False, sat=False,
                            ftz=False, _exact=True)
    return result


@_quiet
def ffma(a, b, c, *, ty, rnd="rn", ftz=False, sat=False, relu=False, _exact=False):
    """fma{.rnd}{.ftz}{.sat}.ty (and mad.rnd): a * b + c with a single rounding.

    ty: f32 f64 f16 bf16 f16x2 bf16x2; `relu` is fma.rn.relu.{f16,bf16}{x2}.
    """
    _check_modifiers(ty, rnd, ftz, sat)
    if ty in _NATIVE_FMA and rnd == "rn" and not (ftz or sat or relu or _exact):
        return _native_fma(ty, a, b, c)
    if ty == "f64":
        (x, y, z), shape = _flat(_values(F64, a), _values(F64, b), _values(F64, c))
        return _f64_out(_f64_fma(x, y, z, rnd).reshape(shape), a, b, c)
    if ty == "f32" and rnd == "rn" and not (ftz or sat or relu or _exact):
        return _fma_f32_nearest(a, b, c)

    def lane(fmt, p, q, s):
        x, y, z = _values(fmt, p), _values(fmt, q), _values(fmt, s)
        if ftz:
            x, y, z = _flush_values(fmt, x), _flush_values(fmt, y), _flush_values(fmt, z)
        with np.errstate(all="ignore"):
            product = x * y  # exact: narrow significands fit float64
            high, low = _two_sum(product, z)
        codes = _round_pair(fmt, high, low, rnd, _sum_zero_negative(product, z, rnd), ftz)
        return _finish_codes(fmt, codes, np.isnan(high), ftz=ftz, sat=sat, relu=relu)

    return _narrow_result(ty, _lanewise(ty, lane, a, b, c))


# ---- division, square root, reciprocal -----------------------------------------------------------

def _quotient(x, y):
    """|x| / |y| for finite nonzero arrays: RN significand q in (0.5, 2), sign of (exact - q), exponent."""
    mx, ex = np.frexp(np.abs(x))
    my, ey = np.frexp(np.abs(y))
    q = mx / my
    p, error = _two_prod(q, my)
    return q, _exact_sum_sign([mx, -p, -error]), ex - ey


def _f64_div(x, y, rnd):
    with np.errstate(all="ignore"):
        quotient = x / y
        if rnd == "rn":
            return quotient
        regular = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
        q, residual, exponent = _quotient(np.where(regular, x, 1.0), np.where(regular, y, 1.0))
        result, tiny = _scale_directed(q, residual, exponent, np.signbit(x) ^ np.signbit(y), rnd)
        result = np.where(regular, result, quotient)
    slow = np.flatnonzero(regular & tiny)
    if slow.size:
        result = np.array(result, copy=True)
        for i in slow:
            result[i] = _exact_f64(_fraction(x[i]) / _fraction(y[i]), rnd, False)
    return result


def _f32_quotient_odd(x, y):
    """float64 round-to-odd image of x / y for float32-valued x, y (special operands via IEEE float64)."""
    with np.errstate(all="ignore"):
        quotient = x / y
        regular = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
        q, residual, exponent = _quotient(np.where(regular, x, 1.0), np.where(regular, y, 1.0))
        magnitude = np.ldexp(_round_to_odd(q, residual), exponent)
        signed = np.where(np.signbit(x) ^ np.signbit(y), -magnitude, magnitude)
        return np.where(regular, signed, quotient)


def _div_rounded(a, b, ty, rnd, ftz):
    if ty == "f64":
        _check(not ftz, ".ftz does not apply to f64")
        (x, y), shape = _flat(_values(F64, a), _values(F64, b))
        return _f64_out(_f64_div(x, y, rnd).reshape(shape), a, b, divide=True)
    _check(ty == "f32", f"div/rcp of type {ty} is not defined")
    x, y = _values(F32, a), _values(F32, b)
    if ftz:
        x, y = _flush_values(F32, x), _flush_values(F32, y)
    value = _f32_quotient_odd(x, y)
    codes = _encode_result(value, F32, rnd, ftz=ftz)
    return _from_bits(F32, _finish_codes(F32, codes, np.isnan(value), ftz=ftz))


_F32_TWO_POW_24 = np.uint32(0x4B800000)
_F32_TWO_POW_M12 = np.uint32(0x39800000)
_F32_TWO_POW_12 = np.uint32(0x45800000)
_F32_QUARTER = np.uint32(0x3E800000)
_F32_HALF = np.uint32(0x3F000000)
_F32_MIN_NORMAL = np.uint32(0x00800000)
_F32_TWO_POW_126 = np.uint32(0x7E800000)
_F32_INFINITY = np.uint32(0x7F800000)
_INVERSE_TWO_PI_F32 = np.uint32(0x3E22F983)  # the FMUL.RZ constant ptxas puts before MUFU.SIN/COS
_FTZ_PRODUCT_LIMIT = 2.0 ** -126 - 2.0 ** -151  # products below this in magnitude are tiny after rounding


def _sfu_codes(a):
    """f32 operand codes as a 1-d uint32 array (the SFU models work on raw bits)."""
    return np.asarray(_bits_of(F32, a)).astype(np.uint32).reshape(-1)


def _sfu_result(codes, a):
    """f32 values of result codes, in the shape of operand `a`."""
    return np.asarray(codes).astype(np.uint32).reshape(np.shape(a)).view(np.float32)


def _patched(codes, where, function):
    """`codes` with the elements at indices `where` replaced by function(codes[where])."""
    if where.size:
        codes = np.array(codes, copy=True)
        codes[where] = function(codes[where])
    return codes


def _sfu_value(codes, ftz=False):
    values = np.asarray(codes).astype(np.uint32).view(np.float32).astype(np.float64)
    return _flush_values(F32, values) if ftz else values


def _sfu_multiply(a, b, *, ftz=False, rz=False):
    """FMUL{.FTZ}{.RZ} on f32 codes: the exact product rounded once; .FTZ flushes subnormal operands and
    results tiny after rounding (to zeros of their sign), and any NaN becomes the canonical NaN."""
    product = _sfu_value(a, ftz) * _sfu_value(b, ftz)
    nearest = product.astype(np.float32)
    codes = nearest.view(np.uint32)
    if rz:
        codes = np.where(np.abs(nearest.astype(np.float64)) > np.abs(product), codes - np.uint32(1), codes)
    if ftz:
        tiny = np.abs(product) < _FTZ_PRODUCT_LIMIT
        codes = np.where(tiny, codes & np.uint32(0x80000000), codes)
    return np.where(np.isnan(product), F32.canonical_nan, codes).astype(np.uint32)


def _magnitude(codes):
    return codes & np.uint32(0x7FFFFFFF)


def _finite_above_two_pow_126(codes):
    magnitude = _magnitude(codes)
    return (magnitude > _F32_TWO_POW_126) & (magnitude <= _F32_INFINITY)


def _quotient_operands(a, b, mode, ftz, units):
    """The two factors of the FMUL that ends div.approx/div.full.f32 as ptxas builds them on sm_90: b (and a
    with it) scaled by 2**24 when b is subnormal (not with .ftz) and, for div.full, by 1/4 when |b| > 2**126;
    then (MUFU.RCP of b, a)."""
    a, b = np.broadcast_arrays(_sfu_codes(a), _sfu_codes(b))
    if mode == "full":
        huge = np.flatnonzero(_finite_above_two_pow_126(b))
        quarter = lambda codes: _sfu_multiply(codes, np.full(codes.shape, _F32_QUARTER), ftz=ftz)
        a, b = _patched(a, huge, quarter), _patched(b, huge, quarter)
    if not ftz:
        subnormal = np.flatnonzero(_magnitude(b) < _F32_MIN_NORMAL)
        scale = lambda codes: _sfu_multiply(codes, np.full(codes.shape, _F32_TWO_POW_24))
        a, b = _patched(a, subnormal, scale), _patched(b, subnormal, scale)
    return units.rcp(b), a


def _approx_quotient(a, b, mode, ftz, units=sfu):
    """div.approx/div.full.f32: the product of _quotient_operands, rounded once (FMUL)."""
    return _sfu_multiply(*_quotient_operands(a, b, mode, ftz, units), ftz=ftz)


@_quiet
def fdiv_add(a, b, c, *, mode, ftz=False, sat=False, negate_quotient=False, negate_addend=False, units=sfu):
    """div.{approx,full}.f32 d = a / b whose FMUL ptxas fuses into the add/sub reading d: FFMA(±r, a', ±c) with
    (r, a') = MUFU.RCP of the scaled b and the scaled a, as in fdiv; one rounding."""
    reciprocal, numerator = _quotient_operands(a, b, mode, ftz, units)
    first = reciprocal.view(np.float32)
    if negate_quotient:
        first = fneg(first, ty="f32")
    addend = fneg(c, ty="f32") if negate_addend else c
    shape = np.broadcast(np.asarray(a), np.asarray(b), np.asarray(c)).shape
    result = ffma(first, numerator.view(np.float32), np.broadcast_to(np.asarray(addend), shape).reshape(-1),
                  ty="f32", rnd="rn", ftz=ftz, sat=sat)
    return np.asarray(result).reshape(shape)


@_quiet
def fdiv(a, b, *, ty, mode, ftz=False, units=sfu):
    """div.mode{.ftz}.ty: a / b.

    mode rn rz rm rp: IEEE 754 correctly rounded quotient (f32, f64).
    mode approx and full (f32): the H100's own sequence, a times MUFU.RCP of b (isa.sfu, bit-exact over
    all divisors), with ptxas's scaling: b and a by 2**24 when b is subnormal (without .ftz), and for
    div.full by 1/4 when |b| > 2**126 (div.approx leaves such b, so its reciprocal flushes to zero and
    the quotient is a signed zero, NaN for infinite a, as the ISA states).
    units: the special-function unit the approximations use (isa.sfu, or the correctly rounded stand-in of
    isa.fold for an operand ptxas knows at compile time); rcp, sqrt, rsqrt, ex2 and lg2 take it too.
    """
    if mode in _DIRECTED:
        return _div_rounded(a, b, ty, mode, ftz)
    _check(ty == "f32", f"div.{mode} is only defined for f32")
    _check(mode in ("approx", "full"), f"unknown div mode {mode!r}")
    shape = np.broadcast(np.asarray(a), np.asarray(b)).shape
    return _approx_quotient(a, b, mode, ftz, units).reshape(shape).view(np.float32)


def _sqrt_parts(x):
    """For positive finite x = x' * 4**k with x' in [0.5, 2): RN sqrt(x'), sign of (exact - it), k."""
    _, e = np.frexp(x)
    k = e // 2
    reduced = np.ldexp(x, -2 * k)
    s = np.sqrt(reduced)
    p, error = _two_prod(s, s)
    return s, _exact_sum_sign([reduced, -p, -error]), k


def _sqrt_odd_or_directed(x, rnd=None):
    """sqrt of float64 values: round-to-odd image (rnd None) or the f64 result in mode rnd."""
    with np.errstate(all="ignore"):
        plain = np.sqrt(x)
        regular = np.isfinite(x) & (x > 0)
        s, residual, k = _sqrt_parts(np.where(regular, x, 1.0))
        reduced = _round_to_odd(s, residual) if rnd is None else _directed(s, residual, rnd)
        return np.where(regular, np.ldexp(reduced, k), plain)


@_quiet
def fsqrt(a, *, ty, mode, ftz=False, units=sfu):
    """sqrt.mode{.ftz}.ty: square root; mode rn rz rm rp (IEEE, f32 and f64) or approx (f32).

    sqrt.approx.f32 is MUFU.SQRT (isa.sfu); without .ftz a subnormal x is first scaled by 2**24 and the
    root by 2**-12, as ptxas does. sqrt(-0) = -0, sqrt(negative) = NaN, sqrt(+inf) = +inf.
    """
    if ty == "f64":
        _check(mode in _DIRECTED and not ftz, f"sqrt.{mode}{'.ftz' if ftz else ''}.f64 is not defined")
        return _f64_out(_sqrt_odd_or_directed(_values(F64, a), mode), a)
    _check(ty == "f32", f"sqrt of type {ty} is not defined")
    _check(mode in _DIRECTED or mode == "approx", f"unknown sqrt mode {mode!r}")
    if mode == "approx":
        return _sfu_result(_scaled_unit(a, units.sqrt, ftz, _F32_TWO_POW_M12), a)
    x = _values(F32, a)
    if ftz:
        x = _flush_values(F32, x)
    value = _sqrt_odd_or_directed(x)
    codes = _encode_result(value, F32, mode, ftz=ftz)
    return _from_bits(F32, _finish_codes(F32, codes, np.isnan(value), ftz=ftz))


def _scaled_unit(a, unit, ftz, result_scale):
    """A MUFU unit as ptxas wraps it for a non-.ftz instruction: a subnormal operand is scaled by 2**24
    first (FSETP.GEU |a|, 2**-126) and the unit's result by `result_scale` (FMUL) after."""
    codes = _sfu_codes(a)
    result = unit(codes)
    if ftz:
        return result
    subnormal = np.flatnonzero(_magnitude(codes) < _F32_MIN_NORMAL)
    if subnormal.size:
        scaled = _sfu_multiply(codes[subnormal], np.full(subnormal.size, _F32_TWO_POW_24))
        result[subnormal] = _sfu_multiply(unit(scaled), np.full(subnormal.size, result_scale))
    return result


def _high_word_unit(a, unit):
    """A MUFU.RCP64H/RSQ64H instruction on a double: the unit on its upper word, low word zero."""
    high = (_bits_of(F64, a) >> np.uint64(32)).astype(np.uint32)
    return (unit(high).astype(np.uint64) << np.uint64(32)).view(np.float64)


def _rcp_approx_f32(a, ftz, units=sfu):
    """rcp.approx.f32 on sm_90: MUFU.RCP, and without .ftz the operand and result both scaled by 2**24
    when the operand is subnormal or by 1/4 when it exceeds 2**126."""
    codes = _sfu_codes(a)
    result = units.rcp(codes)
    if ftz:
        return result
    magnitude = _magnitude(codes)
    scaled = np.flatnonzero(_finite_above_two_pow_126(codes) | (magnitude < _F32_MIN_NORMAL))
    if scaled.size:
        scale = np.where(magnitude[scaled] < _F32_MIN_NORMAL, _F32_TWO_POW_24, _F32_QUARTER)
        result[scaled] = _sfu_multiply(scale, units.rcp(_sfu_multiply(codes[scaled], scale)))
    return result


@_quiet
def frcp(a, *, ty, mode, ftz=False, units=sfu):
    """rcp.mode{.ftz}.ty: 1 / a.

    mode rn rz rm rp: correctly rounded (f32, f64).
    rcp.approx.f32: MUFU.RCP (isa.sfu, bit-exact with the H100), with ptxas's operand scaling without
    .ftz (by 2**24 for subnormal a, by 1/4 above 2**126, the result scaled back); 1/±0 = ±inf,
    1/±inf = ±0.
    rcp.approx.ftz.f64: MUFU.RCP64H on a[63:32], low word zero (a's low word is ignored).
    """
    if mode in _DIRECTED:
        one = np.float64(1.0) if ty == "f64" else np.float32(1.0)
        return _div_rounded(one, a, ty, mode, ftz)
    _check(mode == "approx", f"unknown rcp mode {mode!r}")
    if ty == "f64":
        _check(ftz, "rcp.approx.f64 requires .ftz")
        return _high_word_unit(a, sfu.rcp64h)
    _check(ty == "f32", f"div/rcp of type {ty} is not defined")
    return _sfu_result(_rcp_approx_f32(a, ftz, units), a)


_RSQRT_F64_SCALE_IN = 2.0 ** 54
_RSQRT_F64_SCALE_OUT = 2.0 ** 27


def _rsqrt_f64_newton(x):
    """ptxas's rsqrt.approx.f64 core for positive normal x: y = MUFU.RSQ64H(x) (low word 0), then one fused
    step y + (0.375 e + 0.5) (y e) with e = 1 - x y*y, each DMUL/DFMA rounded to nearest. The first DFMA
    runs on x * 2**-k and y*y * 2**k (k about half x's exponent): the same exact product, kept in the
    range where _f64_fma needs no slow path."""
    y = _high_word_unit(x, sfu.rsq64h)
    with np.errstate(all="ignore"):
        square = y * y
        half_exponent = np.frexp(x)[1] // 2
        error = _f64_fma(np.ldexp(x, -half_exponent), -np.ldexp(square, half_exponent), np.ones_like(x), "rn")
        correction = _f64_fma(error, np.full_like(x, 0.375), np.full_like(x, 0.5), "rn")
        return _f64_fma(correction, y * error, y, "rn")


def _rsqrt_approx_f64(a):
    """rsqrt.approx.f64 on sm_90: the Newton core for positive normal x; ptxas's slow path for the rest
    (±0 -> ±inf, NaN -> x + x, negative -> the default NaN, +inf -> +0, subnormal x scaled by 2**54 and
    the result by 2**27)."""
    bits = np.asarray(_bits_of(F64, a)).astype(np.uint64).reshape(-1)
    x = bits.view(np.float64)
    negative = (bits >> np.uint64(63)) == 1
    magnitude = bits & np.uint64(0x7FFFFFFFFFFFFFFF)
    out = np.where(negative, np.uint64(F64.canonical_nan), np.uint64(0))
    out = np.where(magnitude > np.uint64(0x7FF0000000000000), bits | _F64_QUIET, out)
    out = np.where(magnitude == 0, (bits & np.uint64(1 << 63)) | np.uint64(0x7FF0000000000000), out)
    normal = np.flatnonzero((bits >= np.uint64(0x0010000000000000)) & (bits < np.uint64(0x7FF0000000000000)))
    if normal.size:
        out[normal] = _rsqrt_f64_newton(x[normal]).view(np.uint64)
    subnormal = np.flatnonzero((bits != 0) & (bits < np.uint64(0x0010000000000000)))
    if subnormal.size:
        scaled = _rsqrt_f64_newton(x[subnormal] * _RSQRT_F64_SCALE_IN) * _RSQRT_F64_SCALE_OUT
        out[subnormal] = scaled.view(np.uint64)
    return out.reshape(np.shape(a)).view(np.float64)


@_quiet
def frsqrt(a, *, ty, ftz=False, units=sfu):
    """rsqrt.approx{.ftz}.ty: 1 / sqrt(a).

    f32: MUFU.RSQ (isa.sfu); without .ftz a subnormal a is scaled by 2**24 first and the result by 2**12.
    rsqrt(-0) = -inf, rsqrt(+0) = +inf, rsqrt(negative) = NaN, rsqrt(+inf) = +0.
    f64 with ftz (rsqrt.approx.ftz.f64): MUFU.RSQ64H on a[63:32], low word zero.
    f64 (rsqrt.approx.f64): ptxas's sequence, MUFU.RSQ64H refined by one DFMA Newton step.
    """
    if ty == "f64":
        if ftz:
            return _high_word_unit(a, sfu.rsq64h)
        return _rsqrt_approx_f64(a)
    _check(ty == "f32", f"rsqrt of type {ty} is not defined")
    return _sfu_result(_scaled_unit(a, units.rsq, ftz, _F32_TWO_POW_12), a)


# ---- approximate transcendental functions --------------------------------------------------------

_HALF_UNITS = {(name.split("_")[0], fmt): name for name in sfu.HALF_TABLES
               for fmt in (F16, BF16) if name.endswith("_" + fmt.name)}


def _half_unit(a, ty, function):
    """MUFU.EX2/TANH .F16/.BF16 on each 16-bit lane (the x2 forms run the unit once per half)."""
    _check(ty in ("f16", "bf16", "f16x2", "bf16x2"), f"{function}.approx is not defined for {ty}")
    return _lanewise(ty, lambda fmt, codes: sfu.half(_HALF_UNITS[(function, fmt)], codes), a)


def _turns(a):
    """FMUL.RZ by f32(1/2pi), which ptxas puts before MUFU.SIN/COS (with or without .ftz)."""
    codes = _sfu_codes(a)
    return _sfu_multiply(codes, np.full(codes.shape, _INVERSE_TWO_PI_F32), rz=True)


@_quiet
def fsin(a, *, ty, ftz=False):
    """sin.approx{.ftz}.f32: MUFU.SIN (isa.sfu) of a * f32(1/2pi) rounded toward zero; .ftz changes nothing
    (ptxas emits the same code). sin(±0) = ±0, sin(±inf) = NaN."""
    _check(ty == "f32", f"sin.approx is not defined for {ty}")
    return _sfu_result(sfu.sin(_turns(a)), a)


@_quiet
def fcos(a, *, ty, ftz=False):
    """cos.approx{.ftz}.f32: MUFU.COS of the turns, as fsin. cos(±0) = 1, cos(±inf) = NaN."""
    _check(ty == "f32", f"cos.approx is not defined for {ty}")
    return _sfu_result(sfu.cos(_turns(a)), a)


@_quiet
def fex2(a, *, ty, ftz=False, units=sfu):
    """ex2.approx{.ftz}.ty: 2**a. ty: f32 f16 bf16 f16x2 bf16x2.

    f32: MUFU.EX2 (isa.sfu); without .ftz, a < -126 is halved first and the unit's result squared (FMUL),
    which gives the subnormal results. ex2(-inf) = +0, ex2(±0) = 1, ex2(+inf) = +inf.
    f16, bf16 and their x2 forms: MUFU.EX2.F16/.BF16, read off the H100 for every code.
    """
    if ty != "f32":
        return _half_unit(a, ty, "ex2")
    codes = _sfu_codes(a)
    result = units.ex2(codes)
    if not ftz:
        low = np.flatnonzero((codes >= np.uint32(0xC2FC0001)) & (codes <= _F32_INFINITY | np.uint32(0x80000000)))
        if low.size:
            root = units.ex2(_sfu_multiply(codes[low], np.full(low.size, _F32_HALF)))
            result[low] = _sfu_multiply(root, root)
    return _sfu_result(result, a)


@_quiet
def flg2(a, *, ty, ftz=False, units=sfu):
    """lg2.approx{.ftz}.f32: MUFU.LG2 (isa.sfu); without .ftz a subnormal a is scaled by 2**24 first and
    24 subtracted after (FADD). lg2(±0) = -inf, lg2(negative) = NaN, lg2(+inf) = +inf."""
    _check(ty == "f32", f"lg2.approx is not defined for {ty}")
    codes = _sfu_codes(a)
    result = units.lg2(codes)
    if not ftz:
        subnormal = np.flatnonzero(_magnitude(codes) < _F32_MIN_NORMAL)
        if subnormal.size:
            logarithm = units.lg2(_sfu_multiply(codes[subnormal], np.full(subnormal.size, _F32_TWO_POW_24)))
            shifted = (logarithm.view(np.float32).astype(np.float64) - 24.0).astype(np.float32).view(np.uint32)
            result[subnormal] = np.where(np.isnan(shifted.view(np.float32)), F32.canonical_nan, shifted)
    return _sfu_result(result, a)


@_quiet
def ftanh(a, *, ty, ftz=False):
    """tanh.approx.ty: tanh(a). ty: f32 f16 bf16 f16x2 bf16x2.

    f32: MUFU.TANH (isa.sfu): tanh(±0) = ±0, subnormals and |a| < 2**-8 pass through, tanh(±inf) = ±1.
    f16, bf16 and their x2 forms: MUFU.TANH.F16/.BF16, read off the H100 for every code.
    """
    if ty != "f32":
        return _half_unit(a, ty, "tanh")
    return _sfu_result(sfu.tanh(_sfu_codes(a)), a)


# ---- min, max, abs, neg, copysign ----------------------------------------------------------------

def _codes_and_values(fmt, operand, ftz):
    codes = _bits_of(fmt, operand)
    if ftz:
        codes = _flush_codes(fmt, codes)
    return codes, halfbits.decode(codes, fmt)


def _minmax(a, b, ty, ftz, nan, absolute, xorsign, take_larger):
    _check(not xorsign or absolute, ".xorsign requires .abs")

    def lane(fmt, p, q):
        x_codes, x = _codes_and_values(fmt, p, ftz)
        y_codes, y = _codes_and_values(fmt, q, ftz)
        sign = fmt.storage(fmt.sign_mask)
        result_sign = (x_codes ^ y_codes) & sign
        if absolute:
            x_codes, y_codes = x_codes & ~sign, y_codes & ~sign
            x, y = np.abs(x), np.abs(y)
        x_nan, y_nan = np.isnan(x), np.isnan(y)
        x_first = (x > y) if take_larger else (x < y)
        negative_zero_pair = (x == y) & (np.signbit(x) != np.signbit(y))
        x_first = x_first | (negative_zero_pair & (np.signbit(y) if take_larger else np.signbit(x)))
        codes = np.where(x_first | y_nan, x_codes, y_codes)
        codes = np.where(x_nan & ~y_nan, y_codes, codes)
        if xorsign:
            codes = (codes & ~sign) | result_sign
        either_nan = (x_nan | y_nan) if nan else (x_nan & y_nan)
        return np.where(either_nan, nan_result(fmt.name, p, q), codes).astype(fmt.storage)

    if ty in _SCALAR_FORMATS and ty in ("f32", "f64"):
        fmt = _SCALAR_FORMATS[ty]
        return _from_bits(fmt, lane(fmt, a, b))
    return _lanewise(ty, lane, a, b)


@_quiet
def fmin(a, b, *, ty, ftz=False, nan=False, absolute=False, xorsign=False):
    """min{.ftz}{.NaN}{.xorsign.abs}.ty per the ISA: one NaN operand yields the other operand, two give
    the canonical NaN (.NaN: any NaN operand gives it); -0.0 < +0.0. `absolute` is .abs and `xorsign`
    .xorsign (the result's sign is the XOR of the operands' signs unless it is NaN)."""
    return _minmax(a, b, ty, ftz, nan, absolute, xorsign, take_larger=False)


@_quiet
def fmax(a, b, *, ty, ftz=False, nan=False, absolute=False, xorsign=False):
    """max{.ftz}{.NaN}{.xorsign.abs}.ty; the mirror image of fmin (+0.0 > -0.0)."""
    return _minmax(a, b, ty, ftz, nan, absolute, xorsign, take_larger=True)


def _sign_operation(a, ty, ftz, operation):
    def lane(fmt, p):
        codes = _bits_of(fmt, p)
        if ftz:
            codes = _flush_codes(fmt, codes)
        result = operation(codes, fmt.storage(fmt.sign_mask)).astype(fmt.storage)
        nan = halfbits.is_nan_bits(codes, fmt)
        if fmt is F64:
            return np.where(nan, codes | _F64_QUIET, result).astype(np.uint64)
        return np.where(nan, nan_result(fmt.name), result).astype(fmt.storage)

    if ty in ("f32", "f64"):
        fmt = _SCALAR_FORMATS[ty]
        return _from_bits(fmt, lane(fmt, a))
    return _lanewise(ty, lane, a)


@_quiet
def fabs(a, *, ty, ftz=False):
    """abs{.ftz}.ty: clear the sign bit; .ftz flushes a subnormal first.

    NaN (measured on sm_90): f32, f16, bf16 give the canonical NaN; f64 returns the operand with its
    quiet bit set and its sign unchanged.
    """
    return _sign_operation(a, ty, ftz, lambda codes, sign: codes & ~sign)


@_quiet
def fneg(a, *, ty, ftz=False):
    """neg{.ftz}.ty: flip the sign bit; .ftz flushes a subnormal first. NaN as for fabs."""
    return _sign_operation(a, ty, ftz, lambda codes, sign: codes ^ sign)


@_quiet
def copysign(a, b, *, ty):
    """copysign.ty d, a, b: the magnitude of b with the sign of a (note the PTX operand order)."""
    _check(ty in ("f32", "f64"), f"copysign of type {ty} is not defined")
    fmt = _SCALAR_FORMATS[ty]
    sign = fmt.storage(fmt.sign_mask)
    return _from_bits(fmt, (_bits_of(fmt, a) & sign) | (_bits_of(fmt, b) & ~sign))


# ---- comparisons and classification --------------------------------------------------------------

_ORDERED = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}


@_quiet
def fcompare(a, b, *, ty, cmp, ftz=False):
    """setp/set comparison: ordered eq ne lt le gt ge (false when either operand is NaN), unordered
    equ neu ltu leu gtu geu (true when either is NaN), num (neither NaN), nan (either NaN).
    -0.0 == +0.0. ty: f32 f64 f16 bf16."""
    _check(ty in _SCALAR_FORMATS, f"comparison of type {ty} is not defined here")
    fmt = _SCALAR_FORMATS[ty]
    x, y = _values(fmt, a), _values(fmt, b)
    if ftz:
        x, y = _flush_values(fmt, x), _flush_values(fmt, y)
    unordered = np.isnan(x) | np.isnan(y)
    if cmp == "num":
        return ~unordered
    if cmp == "nan":
        return unordered
    if cmp in _ORDERED:
        return _ORDERED[cmp](x, y) & ~unordered
    _check(cmp.endswith("u") and cmp[:-1] in _ORDERED, f"unknown comparison {cmp!r}")
    return _ORDERED[cmp[:-1]](x, y) | unordered


@_quiet
def testp(a, *, ty, prop):
    """testp.prop.ty: finite infinite number notanumber normal subnormal (±0 counts as normal)."""
    _check(ty in _SCALAR_FORMATS, f"testp of type {ty} is not defined")
    fmt = _SCALAR_FORMATS[ty]
    x = _values(fmt, a)
    magnitude = np.abs(x)
    tests = {
        "finite": lambda: np.isfinite(x),
        "infinite": lambda: np.isinf(x),
        "number": lambda: ~np.isnan(x),
        "notanumber": lambda: np.isnan(x),
        "normal": lambda: np.isfinite(x) & ((magnitude >= fmt.min_normal) | (x == 0)),
        "subnormal": lambda: (magnitude < fmt.min_normal) & (x != 0),
    }
    _check(prop in tests, f"unknown testp property {prop!r}")
    return np.asarray(tests[prop]())


# ---- conversions ---------------------------------------------------------------------------------

def _int_limits(ty: str):
    info = np.iinfo(_INT_DTYPES[ty])
    return int(info.min), int(info.max)


def _cvt_int_to_int(a, dst, src, sat):
    value = np.asarray(a).astype(_INT_DTYPES[src])
    if not sat:
        return value.astype(_INT_DTYPES[dst])
    low, high = _int_limits(dst)
    if src.startswith("s"):
        wide = value.astype(np.int64)
        clipped = np.clip(wide, max(low, -2 ** 63), min(high, 2 ** 63 - 1))
    else:
        wide = value.astype(np.uint64)
        clipped = np.minimum(wide, np.uint64(min(high, 2 ** 64 - 1)))
    return clipped.astype(_INT_DTYPES[dst])


def _int_exact_pair(a, src):
    """Exact value of an integer array as a float64 pair (high + low, |low| <= ulp(high)/2)."""
    value = np.asarray(a).astype(_INT_DTYPES[src])
    if src in ("s64", "u64"):
        high = (value >> 32).astype(np.float64) * 4294967296.0
        low = (value & _INT_DTYPES[src](0xFFFFFFFF)).astype(np.float64)
        return _two_sum(high, low)
    as_float = value.astype(np.float64)
    return as_float, np.zeros_like(as_float)


def _finish_float(dst, codes, nan, *, ftz, sat, relu):
    fmt = halfbits.FORMATS[dst]
    codes = _finish_codes(fmt, codes, nan, ftz=ftz and dst == "f32", sat=sat, relu=relu)
    if dst == "tf32":
        return codes.astype(np.uint32) << np.uint32(13)
    return _from_bits(fmt, codes)


def _cvt_int_to_float(a, dst, src, rnd, sat, relu):
    rnd = rnd or "rn"
    _check(rnd in _DIRECTED, f"int-to-float rounding {rnd!r} is not one of rn rz rm rp")
    high, low = _int_exact_pair(a, src)
    if dst == "f64":
        result = _directed(high, np.sign(low), rnd)
        codes = result.view(np.uint64)
    else:
        codes = _round_pair(halfbits.FORMATS[dst], high, low, rnd)
    return _finish_float(dst, codes, np.zeros(np.shape(high), dtype=bool), ftz=False, sat=sat, relu=relu)


def _float_to_int_nan(src: str, dst: str):
    if src == "f64" or dst in ("s64", "u64"):
        return _INT_DTYPES[dst](1 << (np.iinfo(_INT_DTYPES[dst]).bits - 1)) if dst.startswith("u") \
            else _INT_DTYPES[dst](np.iinfo(_INT_DTYPES[dst]).min)
    return _INT_DTYPES[dst](0)


def _cvt_float_to_int(a, dst, src, rnd, ftz):
    _check(rnd in _INT_ROUNDINGS, f"float-to-int conversion needs rni rzi rmi rpi, not {rnd!r}")
    fmt = halfbits.FORMATS[src]
    x = _values(fmt, a)
    if ftz and src == "f32":
        x = _flush_values(F32, x)
    with np.errstate(all="ignore"):
        rounded = _INT_ROUNDINGS[rnd](x)
    low, high = _int_limits(dst)
    below = rounded < float(low)
    above = rounded >= float(high) + 1.0
    nan = np.isnan(rounded)
    inside = np.where(below | above | nan, 0.0, rounded)
    wide_dtype = np.uint64 if dst.startswith("u") else np.int64
    result = inside.astype(wide_dtype)
    result = np.where(below, wide_dtype(low), np.where(above, wide_dtype(high), result))
    result = result.astype(_INT_DTYPES[dst])
    return np.where(nan, _float_to_int_nan(src, dst), result).astype(_INT_DTYPES[dst])


def _cvt_float_to_float(a, dst, src, rnd, ftz, sat, relu, satfinite):
    source = halfbits.FORMATS[src]
    target = halfbits.FORMATS[dst]
    if src == dst and src in ("f32", "f64") and rnd is None and not (ftz or sat or relu or satfinite):
        # cvt.f32.f32 and cvt.f64.f64 with no modifier are moves: an H100 returns every NaN,
        # signalling ones included, unchanged (probes cvt_f32_f32, cvt_f64_f64).
        return _from_bits(source, np.array(_bits_of(source, a), copy=True))
    x = _values(source, a)
    if ftz and src == "f32":
        x = _flush_values(F32, x)
    if rnd in _INT_ROUNDINGS:
        _check(src == dst, f"integer rounding {rnd} needs equal source and destination types")
        with np.errstate(all="ignore"):
            x = _INT_ROUNDINGS[rnd](x)
        rnd = "rn"
    rnd = rnd or "rn"
    _check(rnd in halfbits.ROUNDINGS, f"unknown rounding {rnd!r}")
    codes = _encode_result(x, target, rnd, ftz=ftz and dst == "f32", satfinite=satfinite)
    nan = np.isnan(x)
    nan_codes = _convert_nan(source, target, _bits_of(source, a), rnd=rnd, ftz=ftz, satfinite=satfinite)
    codes = np.where(nan, nan_codes, codes).astype(target.storage)
    return _finish_float(dst, codes, np.zeros(np.shape(nan), dtype=bool), ftz=ftz, sat=sat, relu=relu)


def _cvt_fp8_pair(a, dst, src, rnd, relu, satfinite):
    """e4m3x2/e5m2x2 <-> f16x2 (and from bf16x2): the upper half converts to the upper half."""
    if src in _FP8_FORMATS:
        _check(dst == "f16x2", f"cvt.{dst}.{src} is not defined")
        fp8 = _FP8_FORMATS[src]
        word = np.asarray(a).astype(np.uint16)
        halves = []
        for shift in (8, 0):
            value = halfbits.decode((word >> np.uint16(shift)) & np.uint16(0xFF), fp8)
            halves.append(_finish_codes(F16, halfbits.encode(value, F16, "rn"), np.isnan(value), relu=relu))
        return (halves[0].astype(np.uint32) << np.uint32(16)) | halves[1].astype(np.uint32)
    _check(dst in _FP8_FORMATS and src in _PACKED_FORMATS, f"cvt.{dst}.{src} is not defined")
    fp8 = _FP8_FORMATS[dst]
    word = np.asarray(a).astype(np.uint32)
    halves = []
    for shift in (16, 0):
        value = halfbits.decode((word >> np.uint32(shift)) & np.uint32(0xFFFF), _PACKED_FORMATS[src])
        codes = halfbits.encode(value, fp8, rnd or "rn", satfinite=satfinite)
        halves.append(_finish_codes(fp8, codes, np.isnan(value), relu=relu))
    return (halves[0].astype(np.uint16) << np.uint16(8)) | halves[1].astype(np.uint16)


@_quiet
def cvt(a, *, dst, src, rnd=None, ftz=False, sat=False, relu=False, satfinite=False):
    """cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dst.src for s8..s64 u8..u64 f16 bf16 f32 f64 (tf32 as a
    destination), plus the single-operand packed forms e4m3x2/e5m2x2 <-> f16x2 (and from bf16x2).

    int -> int: wraps (truncates or extends); .sat clamps to the destination range.
    int -> float: rounded per rnd (rn rz rm rp; rn when None).
    float -> float: narrowing rounds per rnd (rn when None; rn rz or rna for tf32), widening is
    exact, and rni rzi rmi rpi round to an integral value in the same format. .sat clamps to
    [0, 1] with NaN -> +0; .relu turns negative results into +0 and NaN into the canonical NaN;
    .satfinite clamps infinities and overflow to the largest finite value. cvt.f32.f32 and
    cvt.f64.f64 without any modifier are moves (NaNs kept bit for bit); NaNs otherwise follow
    _convert_nan (measured on an H100).
    float -> int: rni rzi rmi rpi, then clamped to the destination range (always); NaN gives 0,
    except from f64 or into s64/u64 where it gives 1 << (width - 1) (the ISA's rule).
    .ftz flushes subnormal f32 inputs and f32 results to signed zero.
    """
    if dst in _FP8_FORMATS or src in _FP8_FORMATS:
        return _cvt_fp8_pair(a, dst, src, rnd, relu, satfinite)
    dst_int, src_int = dst in _INT_DTYPES, src in _INT_DTYPES
    if dst_int and src_int:
        return _cvt_int_to_int(a, dst, src, sat)
    if src_int:
        return _cvt_int_to_float(a, dst, src, rnd, sat, relu)
    if dst_int:
        return _cvt_float_to_int(a, dst, src, rnd, ftz)
    return _cvt_float_to_float(a, dst, src, rnd, ftz, sat, relu, satfinite)


@_quiet
def cvt_pack(a, b, *, dst, rnd="rn", relu=False, sat=False, satfinite=False):
    """cvt.rnd{.relu}{.satfinite}.dst.f32 d, a, b with dst f16x2 bf16x2 e4m3x2 e5m2x2: a is converted
    into the upper half of d and b into the lower half. `sat` is accepted as a synonym of
    `satfinite` (PTX has no .sat on these forms; fp8 destinations always saturate to finite)."""
    satfinite = satfinite or sat or dst in _FP8_FORMATS
    if dst in _FP8_FORMATS:
        fmt, width, storage = _FP8_FORMATS[dst], 8, np.uint16
    else:
        _check(dst in _PACKED_FORMATS, f"cvt.{dst}.f32 with two sources is not defined")
        fmt, width, storage = _PACKED_FORMATS[dst], 16, np.uint32
    halves = []
    for operand in (a, b):
        value = _values(F32, operand)
        codes = halfbits.encode(value, fmt, rnd, satfinite=satfinite)
        halves.append(_finish_codes(fmt, codes, np.isnan(value), relu=relu).astype(storage))
    return (halves[0] << storage(width)) | halves[1]


def f16_to_f32(bits):
    """cvt.f32.f16: exact widening of f16 codes to np.float32."""
    return cvt(bits, dst="f32", src="f16")


def f32_to_f16(x, rnd="rn"):
    """cvt.rnd.f16.f32: f32 values to f16 codes (np.uint16), rounded once."""
    return cvt(x, dst="f16", src="f32", rnd=rnd)


def bf16_to_f32(bits):
    """cvt.f32.bf16: exact widening of bf16 codes to np.float32."""
    return cvt(bits, dst="f32", src="bf16")


def f32_to_bf16(x, rnd="rn"):
    """cvt.rnd.bf16.f32: f32 values to bf16 codes (np.uint16), rounded once."""
    return cvt(x, dst="bf16", src="f32", rnd=rnd)

"""Binary floating-point formats (f64 down to fp8): exact decoding to float64 and correctly rounded encoding."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

ROUNDINGS = ("rn", "rna", "rz", "rm", "rp")


@dataclass(frozen=True)
class BinaryFormat:
    """An IEEE-754-style binary format: sign, biased exponent, trailing significand."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    storage: type
    canonical_nan: int
    has_infinity: bool = True

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def magnitude_mask(self) -> int:
        return self.sign_mask - 1

    @property
    def exponent_mask(self) -> int:
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits

    @property
    def infinity_bits(self) -> int:
        return self.exponent_mask if self.has_infinity else self.canonical_nan

    @property
    def max_finite_bits(self) -> int:
        if self.has_infinity:
            return self.exponent_mask - 1
        # OCP E4M3: the all-ones exponent is an ordinary binade except its top code (NaN).
        return self.magnitude_mask - 1

    @property
    def one_bits(self) -> int:
        return self.bias << self.mantissa_bits

    @property
    def min_normal(self) -> float:
        return 2.0 ** self.emin

    @property
    def max_finite(self) -> float:
        return float(decode(np.array(self.max_finite_bits, dtype=np.uint64), self))


F64 = BinaryFormat("f64", 11, 52, np.uint64, 0xFFF8000000000000)
F32 = BinaryFormat("f32", 8, 23, np.uint32, 0x7FFFFFFF)
F16 = BinaryFormat("f16", 5, 10, np.uint16, 0x7FFF)
BF16 = BinaryFormat("bf16", 8, 7, np.uint16, 0x7FFF)
TF32 = BinaryFormat("tf32", 8, 10, np.uint32, 0x3FFFF)  # 0x7FFFE000 in its f32 container
E4M3 = BinaryFormat("e4m3", 4, 3, np.uint8, 0x7F, has_infinity=False)
E5M2 = BinaryFormat("e5m2", 5, 2, np.uint8, 0x7F)

FORMATS = {fmt.name: fmt for fmt in (F64, F32, F16, BF16, TF32, E4M3, E5M2)}


def is_nan_bits(bits, fmt: BinaryFormat) -> np.ndarray:
    magnitude = np.asarray(bits).astype(np.uint64) & np.uint64(fmt.magnitude_mask)
    if fmt.has_infinity:
        return magnitude > np.uint64(fmt.exponent_mask)
    return magnitude == np.uint64(fmt.magnitude_mask)


def is_subnormal_bits(bits, fmt: BinaryFormat) -> np.ndarray:
    raw = np.asarray(bits).astype(np.uint64)
    return ((raw & np.uint64(fmt.exponent_mask)) == 0) & ((raw & np.uint64(fmt.magnitude_mask)) != 0)


def decode(bits, fmt: BinaryFormat) -> np.ndarray:
    """The exact float64 value of each code of `fmt` (NaN codes give a float64 NaN)."""
    with np.errstate(all="ignore"):
        return _decode(np.asarray(bits), fmt)


def _decode(raw, fmt):
    if fmt is F64:
        return raw.astype(np.uint64).view(np.float64)
    if fmt is F32:
        return raw.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt is F16:
        return raw.astype(np.uint16).view(np.float16).astype(np.float64)
    if fmt is BF16:
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    raw = raw.astype(np.uint64)
    exponent = ((raw & np.uint64(fmt.exponent_mask)) >> np.uint64(fmt.mantissa_bits)).astype(np.int64)
    mantissa = (raw & np.uint64((1 << fmt.mantissa_bits) - 1)).astype(np.float64)
    significand = np.where(exponent > 0, mantissa + 2.0 ** fmt.mantissa_bits, mantissa)
    scale = np.maximum(exponent, 1) - fmt.bias - fmt.mantissa_bits
    magnitude = np.ldexp(significand, scale.astype(np.int32))
    if fmt.has_infinity:
        special = exponent == (1 << fmt.exponent_bits) - 1
        magnitude = np.where(special, np.where(mantissa == 0, np.inf, np.nan), magnitude)
    magnitude = np.where(is_nan_bits(raw, fmt), np.nan, magnitude)
    negative = (raw & np.uint64(fmt.sign_mask)) != 0
    return np.where(negative, -magnitude, magnitude)


def _round_up(rnd: str, fraction, integral, negative):
    if rnd == "rn":
        odd = (integral.astype(np.uint64) & np.uint64(1)) == 1
        return (fraction > 0.5) | ((fraction == 0.5) & odd)
    if rnd == "rna":
        return fraction >= 0.5
    if rnd == "rz":
        return np.zeros(np.shape(fraction), dtype=bool)
    if rnd == "rp":
        return (fraction > 0) & ~negative
    if rnd == "rm":
        return (fraction > 0) & negative
    raise ValueError(f"unknown rounding mode {rnd!r}")


def _overflow_to_max(rnd: str, negative, satfinite: bool):
    toward_zero = {"rn": False, "rna": False, "rz": True}.get(rnd)
    if satfinite:
        return np.ones(np.shape(negative), dtype=bool)
    if toward_zero is not None:
        return np.full(np.shape(negative), toward_zero)
    return ~negative if rnd == "rm" else negative


def encode(values, fmt: BinaryFormat, rnd: str = "rn", *, satfinite: bool = False) -> np.ndarray:
    """Round float64 values to `fmt` codes, once, in mode `rnd` (rn rna rz rm rp).

    The float64 input is taken as exact: to round a value that float64 cannot hold, pass its
    round-to-odd float64 image (53 bits are at least two more than any narrower format needs).
    NaN gives `fmt.canonical_nan`. Overflow gives infinity or the largest finite value as IEEE-754
    prescribes for the mode; `satfinite` (PTX .satfinite) clamps infinities and overflow to the
    largest finite value of the input's sign. A format without infinity overflows to NaN.
    """
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(all="ignore"):
        negative = np.signbit(x)
        magnitude = np.abs(x)
        finite_nonzero = np.isfinite(x) & (x != 0)
        safe = np.where(finite_nonzero, magnitude, 1.0)
        exponent = np.maximum(np.frexp(safe)[1].astype(np.int64) - 1, fmt.emin)
        scaled = np.ldexp(safe, (fmt.mantissa_bits - exponent).astype(np.int32))
        integral = np.floor(scaled)
        significand = integral + _round_up(rnd, scaled - integral, integral, negative)
        code = ((exponent + (fmt.bias - 1)).astype(np.uint64) << np.uint64(fmt.mantissa_bits)) \
            + significand.astype(np.uint64)
    max_bits = np.uint64(fmt.max_finite_bits)
    overflow_code = np.where(_overflow_to_max(rnd, negative, satfinite), max_bits,
                             np.uint64(fmt.infinity_bits))
    code = np.where(finite_nonzero & (code > max_bits), overflow_code, code)
    infinity_code = max_bits if satfinite else np.uint64(fmt.infinity_bits)
    code = np.where(np.isinf(x), infinity_code, code)
    code = np.where(x == 0, np.uint64(0), code)
    code = code | np.where(negative, np.uint64(fmt.sign_mask), np.uint64(0))
    code = np.where(np.isnan(x), np.uint64(fmt.canonical_nan), code)
    return code.astype(fmt.storage)


def round_fraction(value: Fraction, fmt: BinaryFormat, rnd: str, *, negative_zero: bool = False) -> int:
    """The code of `fmt` nearest (in mode `rnd`) to an exact rational; exact zero takes `negative_zero`."""
    negative = value < 0 if value != 0 else negative_zero
    sign = fmt.sign_mask if negative else 0
    if value == 0:
        return sign
    magnitude = -value if value < 0 else value
    num, den = magnitude.numerator, magnitude.denominator
    exponent = num.bit_length() - den.bit_length()
    if (num << max(-exponent, 0)) < (den << max(exponent, 0)):
        exponent -= 1
    exponent = max(exponent, fmt.emin)
    shift = fmt.mantissa_bits - exponent
    if shift >= 0:
        num <<= shift
    else:
        den <<= -shift
    integral, remainder = divmod(num, den)
    up = {
        "rn": 2 * remainder > den or (2 * remainder == den and integral & 1 == 1),
        "rna": 2 * remainder >= den,
        "rz": False,
        "rp": remainder != 0 and not negative,
        "rm": remainder != 0 and negative,
    }[rnd]
    code = ((exponent + fmt.bias - 1) << fmt.mantissa_bits) + integral + int(up)
    if code > fmt.max_finite_bits:
        to_max = bool(_overflow_to_max(rnd, np.bool_(negative), False))
        code = fmt.max_finite_bits if to_max else fmt.infinity_bits
    return sign | code

"""Generate the instruction probes in tests/isa_probes (PTX kernels, launches.json, inputs); --check validates them."""

import argparse
import json
import math
import pathlib
import re
import shutil
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROBE_DIR = ROOT / "tests" / "isa_probes"
INPUT_DIR = PROBE_DIR / "inputs"
BLOCK = 256
PTX_HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"
ARG_DTYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"}


# ----------------------------------------------------------------------------------------------
# Data types: register class, load instruction, storage dtype of inputs and of exact outputs.
# Outputs that must match bit for bit are stored as unsigned integers, so NaN payloads compare
# exactly; outputs of .approx instructions are stored as floats so that a tolerance applies.
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DataType:
    register: str
    load: str
    store: str
    in_dtype: str
    out_dtype: str


def _int_type(bits, load):
    register = {8: "b16", 16: "b16", 32: "b32", 64: "b64"}[bits]
    storage = {8: "u8", 16: "u16", 32: "u32", 64: "u64"}[bits]
    stored = {8: "u16", 16: "u16", 32: "u32", 64: "u64"}[bits]
    store = {8: "b16", 16: "b16", 32: "b32", 64: "b64"}[bits]
    return DataType(register, load, store, storage, stored)


TYPES = {
    "u8": _int_type(8, "u8"), "s8": _int_type(8, "u8"),
    "u16": _int_type(16, "b16"), "s16": _int_type(16, "b16"), "b16": _int_type(16, "b16"),
    "u32": _int_type(32, "b32"), "s32": _int_type(32, "b32"), "b32": _int_type(32, "b32"),
    "u64": _int_type(64, "b64"), "s64": _int_type(64, "b64"), "b64": _int_type(64, "b64"),
    "f16": DataType("b16", "b16", "b16", "f16", "u16"),
    "bf16": DataType("b16", "b16", "b16", "u16", "u16"),
    "f16x2": DataType("b32", "b32", "b32", "u32", "u32"),
    "bf16x2": DataType("b32", "b32", "b32", "u32", "u32"),
    "f32": DataType("f32", "f32", "f32", "f32", "u32"),
    "f64": DataType("f64", "f64", "f64", "f64", "u64"),
    "pred": DataType("pred", "u32", "u32", "u32", "u32"),
}
APPROX_OUT_DTYPE = {"f16": "f16", "f32": "f32", "f64": "f64"}
NUMPY_DTYPE = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
               "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
               "f16": np.float16, "f32": np.float32, "f64": np.float64}
DTYPE_NAME = {np.dtype(v): k for k, v in NUMPY_DTYPE.items()}
INT_RANGES = {"u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
              "s8": (-2**7, 2**7 - 1), "s16": (-2**15, 2**15 - 1), "s32": (-2**31, 2**31 - 1),
              "s64": (-2**63, 2**63 - 1)}


# ----------------------------------------------------------------------------------------------
# Exact floating-point formats (used only to craft inputs: ties, limits, special encodings).
# ----------------------------------------------------------------------------------------------

def floor_log2(q):
    exponent = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** exponent > q:
        exponent -= 1
    return exponent


class FloatFormat:
    def __init__(self, name, width, mant):
        self.name, self.width, self.mant = name, width, mant
        exp_bits = width - 1 - mant
        self.exp_mask = (1 << exp_bits) - 1
        self.bias = (1 << (exp_bits - 1)) - 1
        self.emin = 1 - self.bias
        self.emax = self.bias
        self.sign = 1 << (width - 1)
        self.inf = self.exp_mask << mant
        self.quiet = 1 << (mant - 1)
        self.max_finite = self.inf - 1
        self.min_normal = 1 << mant
        self.max_subnormal = self.min_normal - 1

    def ulp_exponent(self, magnitude):
        return max(floor_log2(magnitude), self.emin) - self.mant

    def value(self, bits):
        exponent, mantissa = (bits >> self.mant) & self.exp_mask, bits & (self.min_normal - 1)
        if exponent == self.exp_mask:
            return None
        scale = self.emin if exponent == 0 else exponent - self.bias
        significand = mantissa if exponent == 0 else mantissa + self.min_normal
        magnitude = Fraction(significand) * Fraction(2) ** (scale - self.mant)
        return -magnitude if bits & self.sign else magnitude

    def _pack(self, negative, significand, ulp_exp):
        if significand == 2 * self.min_normal:
            significand, ulp_exp = self.min_normal, ulp_exp + 1
        sign = self.sign if negative else 0
        if significand < self.min_normal:
            return sign | significand
        biased = ulp_exp + self.mant + self.bias
        if biased >= self.exp_mask:
            return sign | self.inf
        return sign | (biased << self.mant) | (significand - self.min_normal)

    def encode(self, q):
        """Exact encoding of q, or None when q is not representable as a finite value."""
        q = Fraction(q)
        if q == 0:
            return 0
        ulp_exp = self.ulp_exponent(abs(q))
        scaled = abs(q) / Fraction(2) ** ulp_exp
        if scaled.denominator != 1 or floor_log2(abs(q)) > self.emax:
            return None
        return self._pack(q < 0, int(scaled), ulp_exp)

    def nearest(self, q):
        q = Fraction(q)
        if q == 0:
            return 0
        ulp_exp = self.ulp_exponent(abs(q))
        scaled = abs(q) / Fraction(2) ** ulp_exp
        whole = scaled.numerator // scaled.denominator
        rest = scaled - whole
        if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
            whole += 1
        return self._pack(q < 0, whole, ulp_exp)

    def is_tie(self, q):
        if q == 0:
            return False
        scaled = abs(q) / Fraction(2) ** self.ulp_exponent(abs(q))
        return scaled - (scaled.numerator // scaled.denominator) == Fraction(1, 2)


F16 = FloatFormat("f16", 16, 10)
BF16 = FloatFormat("bf16", 16, 7)
F32 = FloatFormat("f32", 32, 23)
F64 = FloatFormat("f64", 64, 52)
FORMATS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}
STORAGE_OF_FORMAT = {"f16": "f16", "bf16": "u16", "f32": "f32", "f64": "f64"}


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def random_bits(rng, width, count):
    return [int(x) for x in rng.integers(0, 2**width, size=count, dtype=np.uint64)]


def random_moderate(fmt, rng, spread=6):
    exponent = min(max(int(rng.integers(-spread, spread + 1)), fmt.emin), fmt.emax)
    mantissa = int(rng.integers(0, fmt.min_normal))
    sign = fmt.sign if rng.integers(0, 2) else 0
    return sign | ((exponent + fmt.bias) << fmt.mant) | mantissa


def float_specials(fmt):
    """24 encodings that every binary float operation is tried on pairwise."""
    one = fmt.encode(1)
    return [0, fmt.sign, one, one | fmt.sign, fmt.encode(Fraction(1, 2)), fmt.encode(Fraction(3, 2)),
            fmt.encode(Fraction(-5, 2)), fmt.encode(3), one + 1, one - 1,
            1, 1 | fmt.sign, fmt.max_subnormal, fmt.min_normal, fmt.min_normal | fmt.sign,
            fmt.max_finite, fmt.max_finite | fmt.sign, fmt.inf, fmt.inf | fmt.sign,
            fmt.inf | fmt.quiet, fmt.sign | fmt.inf | fmt.quiet | 5, fmt.inf | 1,
            fmt.encode(2 ** (fmt.mant + 1)), fmt.nearest(Fraction(1, 3))]


def split_factor(number, limit):
    """Two factors of number, both below limit, or None."""
    for divisor in range(math.isqrt(number), 1, -1):
        if number % divisor == 0 and number // divisor < limit:
            return divisor, number // divisor
    return None


def crafted_float_rows(fmt, rng):
    """(a, b, c) rows whose exact add, mul, fma or div results are rounding ties or edge cases."""
    v = fmt.value
    enc = fmt.encode
    rows = []

    def keep(a, b, c=0):
        if None not in (a, b, c):
            rows.append((a, b, c))

    half_ulp_one = Fraction(1, 2 ** (fmt.mant + 1))
    bases = [Fraction(1), v(fmt.encode(1) + 1), Fraction(3, 2), Fraction(3), Fraction(2 ** (fmt.mant + 1)),
             v(fmt.min_normal) * 3, v(fmt.max_finite)]
    bases += [v(random_moderate(fmt, rng)) for _ in range(3)]
    for base in bases:
        half_ulp = Fraction(2) ** fmt.ulp_exponent(abs(base)) / 2
        for odd in (1, 3):
            for sign in (1, -1):
                a, b = enc(sign * base), enc(sign * odd * half_ulp)
                if a is not None and b is not None and fmt.is_tie(v(a) + v(b)):
                    keep(a, b)
        keep(enc(base), enc(-half_ulp / 2))
    for x in (Fraction(3, 2), Fraction(1), v(fmt.min_normal), v(1)):
        keep(enc(x), enc(-x))
    keep(fmt.min_normal, 1 | fmt.sign)
    keep(enc(v(fmt.min_normal) * 3 / 2), fmt.min_normal | fmt.sign)
    keep(fmt.max_finite, fmt.max_finite)
    keep(enc(half_ulp_one * 4 + 1), enc(-1))

    ka = (fmt.mant + 1) // 2
    kb = fmt.mant + 1 - ka
    keep(enc(1 + Fraction(1, 2**ka)), enc(1 + Fraction(1, 2**kb)))
    found = 0
    while found < 12:
        bits_a, bits_b = int(rng.integers(2, fmt.mant + 1)), int(rng.integers(2, fmt.mant + 1))
        a = Fraction(int(rng.integers(2 ** (bits_a - 1), 2**bits_a)) | 1, 2 ** (bits_a - 1))
        b = Fraction(int(rng.integers(2 ** (bits_b - 1), 2**bits_b)) | 1, 2 ** (bits_b - 1))
        if fmt.is_tie(a * b):
            sign = -1 if found % 3 == 2 else 1
            keep(enc(sign * a), enc(b))
            found += 1
    for target_bits, scale_exp in ((4 * fmt.min_normal - 1, fmt.emax - fmt.mant - 1),
                                   (2 * fmt.min_normal - 1, fmt.emin - fmt.mant - 1),
                                   (fmt.min_normal + 1, fmt.emin - fmt.mant - 1),
                                   (4 * fmt.min_normal - 1, -fmt.mant - 2)):
        factors = split_factor(target_bits, 2 * fmt.min_normal)
        if factors:
            low = scale_exp // 2
            keep(enc(factors[0] * Fraction(2) ** low), enc(factors[1] * Fraction(2) ** (scale_exp - low)))
    for odd in (1, 3, 5):
        keep(odd, enc(Fraction(1, 2)))
        keep(odd, enc(-2))

    one_plus = v(fmt.encode(1) + 1)
    keep(enc(one_plus), enc(one_plus), enc(-1))
    keep(enc(one_plus), enc(2 - one_plus), enc(-1))
    for _ in range(10):
        a, b = v(random_moderate(fmt, rng, 3)), v(random_moderate(fmt, rng, 3))
        product = a * b
        keep(enc(a), enc(b), fmt.nearest(-product))
        ulp_exp = fmt.ulp_exponent(abs(product))
        grid = Fraction(2) ** (ulp_exp - 1)
        steps = product / grid
        floor_steps = steps.numerator // steps.denominator
        target = (floor_steps | 1) * grid
        c = enc(target - product)
        if c is not None and fmt.is_tie(target):
            keep(enc(a), enc(b), c)
    for a, b, c in ((Fraction(3, 2), 2, -3), (Fraction(-3, 2), 2, 3), (0, -1, 0), (1, 1, -1)):
        keep(enc(a), enc(b), enc(c))
    keep(0 | fmt.sign, fmt.sign, fmt.sign)
    keep(fmt.min_normal, enc(Fraction(1, 2)), 0)
    keep(fmt.min_normal, enc(Fraction(3, 2)), fmt.min_normal | fmt.sign)

    keep(enc(1), enc(3))
    keep(enc(2), enc(3))
    keep(enc(-1), enc(3))
    keep(enc(1), fmt.max_finite)
    keep(fmt.max_finite, 1)
    keep(1, fmt.max_finite)
    keep(3, enc(2))
    keep(enc(v(fmt.min_normal) * 3), enc(2 ** (fmt.mant + 1)))
    keep(enc(1), fmt.sign)
    return rows


def float_binary_columns(fmt, rows_wanted):
    """Three bit-pattern columns: all special pairs, crafted ties, then seeded random rows."""
    rng = rng_for("float-binary-" + fmt.name)
    specials = float_specials(fmt)
    n = len(specials)
    a, b, c = [], [], []
    for i, x in enumerate(specials):
        for j, y in enumerate(specials):
            a.append(x)
            b.append(y)
            c.append(specials[(7 * i + 3 * j + 5) % n])
    for x, y, z in crafted_float_rows(fmt, rng):
        a.append(x)
        b.append(y)
        c.append(z)
    kind = 0
    while len(a) < rows_wanted:
        if kind == 0:
            x, y, z = random_bits(rng, fmt.width, 3)
        elif kind == 1:
            x, y, z = (random_moderate(fmt, rng) for _ in range(3))
        elif kind == 2:
            x = random_moderate(fmt, rng)
            y = (x ^ fmt.sign) + int(rng.integers(-3, 4))
            z = random_moderate(fmt, rng)
        elif kind == 3:
            x, y = random_moderate(fmt, rng, 3), random_moderate(fmt, rng, 3)
            z = fmt.nearest(-fmt.value(x) * fmt.value(y)) ^ int(rng.integers(0, 4))
        else:
            x = int(rng.integers(1, 2 * fmt.min_normal)) | (fmt.sign if rng.integers(0, 2) else 0)
            y = random_moderate(fmt, rng, 1)
            z = int(rng.integers(0, 2 * fmt.min_normal))
        a.append(x)
        b.append(y)
        c.append(z)
        kind = (kind + 1) % 5
    assert len(a) == rows_wanted, (fmt.name, len(a))
    return a, b, c


def float_unary_column(fmt, rows_wanted):
    rng = rng_for("float-unary-" + fmt.name)
    values = float_specials(fmt)
    values += [fmt.inf | fmt.quiet | fmt.sign, fmt.inf | (fmt.min_normal - 1), fmt.exp_mask << fmt.mant | 0x3,
               fmt.encode(4), fmt.encode(9), fmt.encode(2) + 1, fmt.encode(Fraction(1, 4)) - 1,
               fmt.encode(-1) + 1, 2, fmt.min_normal + 1, fmt.max_subnormal | fmt.sign]
    for exponent in range(fmt.emin - fmt.mant, fmt.emax + 1, max(1, (fmt.emax - fmt.emin) // 40)):
        values.append(fmt.encode(Fraction(2) ** exponent))
    kind = 0
    while len(values) < rows_wanted:
        if kind == 0:
            values.append(random_bits(rng, fmt.width, 1)[0])
        elif kind == 1:
            values.append(random_moderate(fmt, rng, 20))
        elif kind == 2:
            values.append(int(rng.integers(1, fmt.min_normal)) | (fmt.sign if rng.integers(0, 2) else 0))
        else:
            values.append(random_moderate(fmt, rng, fmt.emax - 1))
        kind = (kind + 1) % 4
    return values[:rows_wanted]


def as_storage(fmt_name, bits):
    storage = STORAGE_OF_FORMAT[fmt_name]
    width = FORMATS[fmt_name].width
    raw = np.array(bits, dtype={16: np.uint16, 32: np.uint32, 64: np.uint64}[width])
    return raw.view(NUMPY_DTYPE[storage])


def pack_halves(low, high):
    return (np.asarray(high, dtype=np.uint32) << 16 | np.asarray(low, dtype=np.uint32)).astype(np.uint32)


# ----------------------------------------------------------------------------------------------
# Integer and bit-pattern inputs.
# ----------------------------------------------------------------------------------------------

INT_EDGES = {
    16: [0, 1, 2, 3, 5, 10, 0x7F, 0x80, 0xFF, 0x100, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF,
         0x5555, 0xAAAA, 0x1234, 0x0F0F, 0xFF00, 0x4000, 0xC000, 0x00F0],
    32: [0, 1, 2, 3, 5, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFF, 0x800000, 0xFFFFFF,
         0x1000000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF, 0x55555555, 0xAAAAAAAA,
         0x12345678],
    64: [0, 1, 2, 3, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 0x100000001,
         0xFFFFFFFF00000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x8000000000000001,
         0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA,
         0x123456789ABCDEF0, 0x00000000FFFF0000, 0x0000000100000000 - 2, 0xFFFFFFFF80000000,
         0x0010000000000001],
}


def int_columns(width, rows_wanted):
    rng = rng_for(f"int-{width}")
    edges = INT_EDGES[width]
    n = len(edges)
    a, b, c = [], [], []
    for i, x in enumerate(edges):
        for j, y in enumerate(edges):
            a.append(x)
            b.append(y)
            c.append(edges[(5 * i + 11 * j + 1) % n])
    mask = (1 << width) - 1
    kind = 0
    while len(a) < rows_wanted:
        if kind == 0:
            row = random_bits(rng, width, 3)
        elif kind == 1:
            row = [int(x) for x in rng.integers(0, 64, size=3)]
        elif kind == 2:
            row = [((1 << int(rng.integers(0, width))) + int(rng.integers(-1, 2))) & mask for _ in range(3)]
        elif kind == 3:
            row = [((1 << (width - 1)) + int(rng.integers(-8, 9))) & mask for _ in range(3)]
        else:
            row = [int(x) & mask for x in rng.integers(-(1 << (width // 2)), 1 << (width // 2), size=3)]
        a.append(row[0])
        b.append(row[1])
        c.append(row[2])
        kind = (kind + 1) % 5
    return a, b, c


def byte_mix_column(rng, count):
    choices = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF]
    words = []
    for _ in range(count):
        word = 0
        for shift in (0, 8, 16, 24):
            byte = choices[int(rng.integers(0, 6))] if rng.integers(0, 2) else int(rng.integers(0, 256))
            word |= byte << shift
        words.append(word)
    return words


SHIFT_AMOUNTS = list(range(0, 41)) + [47, 48, 63, 64, 65, 127, 128, 255, 256, 257, 0x7FFFFFFF, 0x80000000,
                                       0xFFFFFFFF, 0xFFFFFF00, 0x100 | 31]
SHIFT_VALUES = {16: [1, 0x8001, 0xFFFF, 0x7FFF, 0x8000, 0x1234, 0xF0F0, 3],
                32: [1, 0x80000001, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x12345678, 0xF0F0F0F0, 3],
                64: [1, 0x8000000000000001, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
                     0x123456789ABCDEF0, 0xF0F0F0F0F0F0F0F0, 3]}


def shift_columns(rows_wanted):
    rng = rng_for("shift")
    amounts = [amount for amount in SHIFT_AMOUNTS for _ in range(8)]
    values = {w: [v for _ in SHIFT_AMOUNTS for v in SHIFT_VALUES[w]] for w in (16, 32, 64)}
    while len(amounts) < rows_wanted:
        amounts.append(int(rng.integers(0, 70)) if rng.integers(0, 4) else random_bits(rng, 32, 1)[0])
        for width in (16, 32, 64):
            values[width].append(random_bits(rng, width, 1)[0])
    return amounts, values


BITFIELD_POS = [0, 1, 7, 8, 15, 16, 24, 31, 32, 33, 63, 64, 65, 255, 256, 0xFFFFFF1F]
BITFIELD_LEN = [0, 1, 2, 7, 8, 16, 24, 31, 32, 33, 63, 64, 65, 255, 256, 0x101]


def bitfield_columns(rows_wanted):
    rng = rng_for("bitfield")
    pos, length = [], []
    for repeat in range(2):
        for p in BITFIELD_POS:
            for n in BITFIELD_LEN:
                pos.append(p)
                length.append(n)
    edge_rows = len(pos)
    while len(pos) < rows_wanted:
        pos.append(int(rng.integers(0, 70)))
        length.append(int(rng.integers(0, 70)))
    value32 = [0xF0E1D2C3 if i < edge_rows // 2 else 0x87654321 for i in range(edge_rows)]
    value64 = [0xF0E1D2C3B4A59687 if i < edge_rows // 2 else 0x7654321087654321 for i in range(edge_rows)]
    value32 += random_bits(rng, 32, rows_wanted - edge_rows)
    value64 += random_bits(rng, 64, rows_wanted - edge_rows)
    return pos, length, value32, value64, random_bits(rng, 32, rows_wanted), random_bits(rng, 64, rows_wanted)


def prmt_selectors(rows_wanted):
    rng = rng_for("prmt")
    values = [0x3210, 0x7654, 0x0123, 0x4567, 0x1032, 0x5140, 0x8888, 0xFFFF, 0x0000, 0x7777, 0x9ABC, 0xF7E6,
              0xFFFF3210, 0x12340000, 0, 1, 2, 3, 0xFFFFFFFC, 0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF]
    return values + random_bits(rng, 32, rows_wanted - len(values))


def cas_compare(values, width, name):
    rng = rng_for(name)
    out = []
    for i, value in enumerate(values):
        out.append(value if i % 2 == 0 else value ^ (1 << int(rng.integers(0, width))))
    return out


def signed_small(rows_wanted):
    rng = rng_for("signed-small")
    values = [x & 0xFFFFFFFF for x in range(-40, 41)] + [0x7FFFFFFF, 0x80000000]
    while len(values) < rows_wanted:
        values.append(int(rng.integers(-40, 41)) & 0xFFFFFFFF)
    return values


# ----------------------------------------------------------------------------------------------
# Conversion sources: integer limits, narrowing ties and double-rounding traps in every format.
# ----------------------------------------------------------------------------------------------

def float_limit_edges(fmt, low, high):
    out = []
    for limit in (low, high, low - 1, high + 1):
        for delta in (Fraction(-1), Fraction(-1, 2), Fraction(0), Fraction(1, 2), Fraction(1)):
            bits = fmt.encode(limit + delta)
            if bits is not None:
                out.append(bits)
        nearest = fmt.nearest(limit)
        if nearest & ~fmt.sign != fmt.inf and nearest != 0:
            out += [nearest, nearest + 1, nearest - 1]
    return out


def narrowing_tie_edges(src, dst):
    """Values of src that round to dst exactly half-way, just off half-way, or at dst's limits."""
    m = dst.mant
    min_sub = Fraction(2) ** (dst.emin - m)
    candidates = []
    for odd in (1, 3):
        candidates.append(1 + odd * Fraction(1, 2 ** (m + 1)))
        candidates.append(odd * min_sub / 2)
    candidates.append((2 ** (m + 2) - 1) * Fraction(2) ** (dst.emax - m - 1))
    candidates.append((2 ** (m + 1) - 1) * min_sub / 2)
    candidates.append(dst.value(dst.max_finite))
    candidates.append(Fraction(2) ** (dst.emax + 1))
    candidates.append(dst.value(dst.min_normal))
    candidates.append(min_sub)
    out = []
    for value in candidates:
        for sign in (1, -1):
            bits = src.encode(sign * value)
            if bits is None:
                continue
            out.append(bits)
            if value != 0:
                out += [bits + 1, bits - 1]
            nudged = src.encode(sign * value * (1 + Fraction(1, 2**40)))
            if nudged is not None:
                out.append(nudged)
    return out


def cvt_float_source(fmt, rows_wanted):
    rng = rng_for("cvt-" + fmt.name)
    values = float_specials(fmt)
    for x in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(5, 2), Fraction(7, 2), Fraction(-1, 2),
              Fraction(-3, 2), Fraction(-5, 2), Fraction(2 ** fmt.mant + 1, 2), Fraction(2 ** fmt.mant - 1, 2)):
        bits = fmt.encode(x)
        if bits is not None:
            values += [bits, bits + 1, bits - 1]
    for low, high in INT_RANGES.values():
        values += float_limit_edges(fmt, low, high)
    for other in FORMATS.values():
        if other is not fmt:
            values += narrowing_tie_edges(fmt, other)
    values += [fmt.inf | 0x3, fmt.sign | fmt.inf | fmt.quiet, fmt.inf | (fmt.min_normal - 1)]
    values = [v & ((1 << fmt.width) - 1) for v in dict.fromkeys(values)]
    assert len(values) <= rows_wanted // 2, (fmt.name, len(values))
    kind = 0
    while len(values) < rows_wanted:
        if kind == 0:
            values.append(random_bits(rng, fmt.width, 1)[0])
        elif kind == 1:
            q = Fraction(int(rng.integers(-600, 601)), 2)
            values.append(fmt.nearest(q))
        elif kind == 2:
            values.append(random_moderate(fmt, rng, min(fmt.emax - 1, 66)))
        elif kind == 3:
            values.append(random_moderate(fmt, rng, 4))
        else:
            narrower = [other for other in FORMATS.values() if other.mant < fmt.mant]
            if narrower:
                target = narrower[int(rng.integers(0, len(narrower)))]
                base = target.value(random_moderate(target, rng, 12))
                tie = base + Fraction(2) ** target.ulp_exponent(abs(base)) / 2
                bits = fmt.encode(tie)
                if bits is not None:
                    values.append(bits)
        kind = (kind + 1) % 5
    return values


def int_source_edges(width):
    mask = (1 << width) - 1
    values = {0, 1, 2, 3, mask, mask - 1}
    for low, high in INT_RANGES.values():
        for limit in (low, high):
            for delta in (-1, 0, 1):
                values.add((limit + delta) & mask)
    for dst in FORMATS.values():
        for exponent in (dst.mant + 1, dst.mant + 2, dst.mant + 5, width - 2, width - 1):
            if exponent >= width or exponent <= dst.mant:
                continue
            base, ulp = 1 << exponent, 1 << (exponent - dst.mant)
            for offset in (ulp // 2, 3 * ulp // 2, ulp // 2 - 1, ulp // 2 + 1, ulp, -ulp // 2):
                values.add((base + offset) & mask)
                values.add(-(base + offset) & mask)
    for x in (65504, 65519, 65520, 65535, 65536, 2049, 2051, 257, 259):
        values.add(x & mask)
        values.add(-x & mask)
    return sorted(values)


def cvt_int_source(width, rows_wanted):
    if width == 8:
        return list(range(256)) * (rows_wanted // 256)
    rng = rng_for(f"cvt-int-{width}")
    values = int_source_edges(width)
    kind = 0
    while len(values) < rows_wanted:
        if kind == 0:
            values.append(random_bits(rng, width, 1)[0])
        elif kind == 1:
            values.append(int(rng.integers(-1000, 1001)) & ((1 << width) - 1))
        else:
            shift = int(rng.integers(0, width))
            values.append(((1 << shift) + int(rng.integers(-4, 5))) & ((1 << width) - 1))
        kind = (kind + 1) % 3
    return values[:rows_wanted]


# ----------------------------------------------------------------------------------------------
# Inputs for .approx instructions: only ranges where the PTX ISA states an error bound.
# ----------------------------------------------------------------------------------------------

def approx_f32(name, rows_wanted, low, high, specials, positive_bits=False, avoid=None):
    """Specials, then uniform values in [low, high), alternating with positive finite bit patterns if asked."""
    rng = rng_for("approx-" + name)
    values = np.array(specials, dtype=np.uint32).view(np.float32).tolist()
    uniform = rng.uniform(low, high, size=2 * rows_wanted).astype(np.float32).tolist()
    if positive_bits:
        bits = rng.integers(1, 0x7F800000, size=2 * rows_wanted, dtype=np.uint64).astype(np.uint32)
        uniform = [x if i % 2 else y for i, (x, y) in enumerate(zip(uniform, bits.view(np.float32).tolist()))]
    values += [x for x in uniform if avoid is None or not avoid[0] <= x <= avoid[1]]
    return np.array(values[:rows_wanted], dtype=np.float32)


F32_SIGNED_ZEROS_INF_NAN = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0x7F800001]
F32_TINY = [0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000]


def approx_half(fmt, name, rows_wanted, low, high, whole_range=False):
    rng = rng_for("approx-" + name)
    specials = [0, fmt.sign, fmt.inf, fmt.inf | fmt.sign, fmt.inf | fmt.quiet, fmt.inf | fmt.quiet | fmt.sign | 1,
                1, 1 | fmt.sign, fmt.max_subnormal, fmt.min_normal, fmt.encode(1), fmt.encode(-1)]
    values = list(specials)
    while len(values) < rows_wanted:
        if whole_range and len(values) % 2:
            bits = random_bits(rng, 16, 1)[0]
            if bits & fmt.inf != fmt.inf:
                values.append(bits)
        else:
            values.append(fmt.nearest(Fraction(float(rng.uniform(low, high)))))
    return values


def div_approx_operands(rows_wanted, huge_divisor):
    rng = rng_for(f"approx-div-{huge_divisor}")
    specials = F32_SIGNED_ZEROS_INF_NAN + F32_TINY + [0x3F800000, 0x7F7FFFFF, 0xFF7FFFFF]
    dividends = specials + random_bits(rng, 32, rows_wanted - len(specials))
    divisors = []
    while len(divisors) < rows_wanted:
        bits = random_bits(rng, 32, 1)[0]
        exponent = ((bits >> 23) & 0xFF) - 127
        if huge_divisor:
            bits = (bits & 0x807FFFFF) | (254 << 23) if exponent < 127 else bits
            if bits & 0x7FFFFFFF > 0x7F000000 and bits & 0x7FFFFFFF <= 0x7F7FFFFF:
                divisors.append(bits)
        elif -126 <= exponent <= 125:
            divisors.append(bits)
    return dividends[:rows_wanted], divisors


# ----------------------------------------------------------------------------------------------
# Warp-level inputs: one pattern per warp (32 warps in 4 blocks of 256 threads).
# ----------------------------------------------------------------------------------------------

WARPS = 32
PARTIAL_MASKS = [0x0000FFFF, 0xFFFF0000, 0x55555555, 0xAAAAAAAA, 0x80000001, 0x00000004, 0x0F0F0F0F,
                 0xFFFFFFFE, 0x7FFFFFFF, 0x000000FF, 0x00FF00FF, 0x12345678]


def per_warp(patterns):
    return [value for pattern in patterns for value in pattern]


def warp_predicates():
    rng = rng_for("warp-pred")
    patterns = [[1] * 32, [0] * 32, [1] + [0] * 31, [0] * 31 + [0x80000000], [(lane + 1) % 2 for lane in range(32)],
                [lane % 2 * 7 for lane in range(32)], [int(lane < 16) for lane in range(32)]]
    while len(patterns) < WARPS:
        density = len(patterns) % 4
        patterns.append([int(rng.integers(0, 4) < density) * int(rng.integers(1, 2**32)) for _ in range(32)])
    return per_warp(patterns)


def warp_member_masks():
    masks = [0xFFFFFFFF] * (WARPS - len(PARTIAL_MASKS)) + PARTIAL_MASKS
    return per_warp([[mask] * 32 for mask in masks])


def shfl_source(mode, lane, b, c):
    """(source lane, in range) of shfl.sync as the PTX ISA defines it."""
    bval, cval, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask & 0x1F)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - bval
        valid = j >= max_lane
    elif mode == "down":
        j = lane + bval
        valid = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        valid = j <= max_lane
    else:
        j = min_lane | (bval & ~segmask & 0x1F)
        valid = j <= max_lane
    return (j if valid else lane), valid


SHFL_FULL_CONFIGS = [(1, 0x1F), (1, 0x0), (2, 0x1F), (16, 0x1F), (31, 0x1F), (32, 0x1F), (33, 0x1F), (0xFFFFFFFF, 0x1F),
                     (None, 0x1F), (None, 0x0), (None, 0x181F), (None, 0x1800), (None, 0x1C1F), (None, 0x1E1F),
                     (None, 0x1F1F), (None, 0x101F), (None, 0x0F), (None, 0x31F), (None, 0xFFFFFFFF), (None, 0x7)]
SHFL_PARTIAL_CONFIGS = [(0x0000FFFF, 0x101F), (0x0000FFFF, 0x1000), (0xFFFF0000, 0x101F), (0x000000FF, 0x181F),
                        (0x0F0F0F0F, 0x1803), (0x55555555, 0x1F), (0xCCCCCCCC, 0x1E1F), (0xFFFFFFFF, 0x1F),
                        (0x00FF00FF, 0x181F), (0xF0F0F0F0, 0x1C1F), (0x33333333, 0x1E1F), (0x0000FFFF, 0x100F)]


def shfl_columns():
    rng = rng_for("shfl")
    values, offsets, clamps, masks = [], [], [], []
    for uniform_b, c in SHFL_FULL_CONFIGS:
        for lane in range(32):
            offsets.append(uniform_b if uniform_b is not None else int(rng.integers(0, 40)))
            clamps.append(c)
            masks.append(0xFFFFFFFF)
    for mask, c in SHFL_PARTIAL_CONFIGS:
        step = 2 if mask == 0x55555555 else 1
        for lane in range(32):
            for _ in range(1000):
                b = int(rng.integers(0, 32)) * step
                sources = [shfl_source(mode, lane, b, c) for mode in ("up", "down", "bfly", "idx")]
                if not (mask >> lane) & 1 or all((mask >> j) & 1 for j, _ in sources):
                    break
            else:
                raise ValueError(f"no shfl offset keeps lane {lane} inside mask {mask:#x}")
            offsets.append(b)
            clamps.append(c)
            masks.append(mask)
    values = random_bits(rng, 32, len(offsets))
    return values, offsets, clamps, masks


def match_columns():
    rng = rng_for("match")
    patterns32, patterns64 = [], []
    for warp in range(WARPS):
        kind = warp % 8
        if kind == 0:
            low = [0x1234] * 32
        elif kind == 1:
            low = list(range(32))
        elif kind == 2:
            low = [lane & 1 for lane in range(32)]
        elif kind == 3:
            low = [lane // 8 for lane in range(32)]
        elif kind == 4:
            low = [int(x) for x in rng.integers(0, 3, size=32)]
        elif kind == 5:
            low = [0x80000000 if lane == 7 else 0 for lane in range(32)]
        elif kind == 6:
            low = [int(x) for x in rng.integers(0, 2**32, size=32, dtype=np.uint64)]
        else:
            low = [5] * 31 + [6]
        high = [(lane % 3 if warp % 2 else 0) for lane in range(32)]
        patterns32.append(low)
        patterns64.append([(h << 32) | x for h, x in zip(high, low)])
    return per_warp(patterns32), per_warp(patterns64)


def redux_values():
    rng = rng_for("redux")
    patterns = [[0x80000000] * 32, [0x7FFFFFFF] * 32, [0xFFFFFFFF] * 32, list(range(32)),
                [0x80000000 if lane % 2 else 0x7FFFFFFF for lane in range(32)], [1 << lane for lane in range(32)]]
    while len(patterns) < WARPS:
        patterns.append(random_bits(rng, 32, 32))
    return per_warp(patterns)


def block_predicates():
    rng = rng_for("bar-red")
    blocks = [[3] * 256, [0] * 256, [int(t == 100) for t in range(256)],
              [int(rng.integers(0, 2)) for _ in range(256)]]
    return [value for block in blocks for value in block]


# ----------------------------------------------------------------------------------------------
# Atomics under contention: operand values whose combination does not depend on the order.
# ----------------------------------------------------------------------------------------------

CONTENDED_SLOTS = 64


def exact_sum_values(fmt, name, count, choices, initials):
    """Operands such that every partial sum a block can form, from any slot's initial value, is exact."""
    rng = rng_for(name)
    picks = [choices[int(i)] for i in rng.integers(0, len(choices), size=count)]
    grain = Fraction(math.gcd(*[(x * 2**10).numerator for x in picks + initials]), 2**10)
    limit = grain * 2 ** (fmt.mant + 1)
    for ordered in (picks, picks[::-1]):
        for start in range(0, count, BLOCK):
            block = ordered[start:start + BLOCK]
            reach = max(abs(x) for x in initials) + max(sum(x for x in block if x > 0), -sum(x for x in block if x < 0))
            assert reach <= limit, (name, reach, limit)
    return [fmt.encode(x) for x in picks]


SLOT_INITIALS = [Fraction(1, 2), Fraction(-3), Fraction(0), Fraction(7, 4)]


def float_slot_initials(fmt):
    return [fmt.encode(SLOT_INITIALS[i % 4]) for i in range(CONTENDED_SLOTS)]


def build_datasets():
    """Every input array, keyed by file stem."""
    data = {}
    for fmt_name, fmt in FORMATS.items():
        a, b, c = float_binary_columns(fmt, 1024)
        for suffix, column in zip("abc", (a, b, c)):
            data[f"{fmt_name}_{suffix}"] = as_storage(fmt_name, column)
        data[f"{fmt_name}_u"] = as_storage(fmt_name, float_unary_column(fmt, 512))
        data[f"cvt_{fmt_name}"] = as_storage(fmt_name, cvt_float_source(fmt, 1024))
    for fmt_name in ("f16", "bf16"):
        columns = [np.asarray(data[f"{fmt_name}_{s}"]).view(np.uint16) for s in "abc"]
        shuffled = [column[rng_for(fmt_name + "x2" + str(i)).permutation(1024)] for i, column in enumerate(columns)]
        for suffix, low, high in zip("abc", columns, shuffled):
            data[f"{fmt_name}x2_{suffix}"] = pack_halves(low, high)
    data["cvt_f32_b"] = data["cvt_f32"][rng_for("cvt-f32-b").permutation(1024)]

    for width in (16, 32, 64):
        a, b, c = int_columns(width, 1024)
        dtype = {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
        for suffix, column in zip("abc", (a, b, c)):
            data[f"u{width}_{suffix}"] = np.array(column, dtype=dtype)
        data[f"u{width}_cas_cmp"] = np.array(cas_compare(a, width, f"cas-{width}"), dtype=dtype)
    for width in (8, 16, 32, 64):
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
        data[f"cvt_i{width}"] = np.array(cvt_int_source(width, 256 if width == 8 else 1024), dtype=dtype)
    rng = rng_for("bytes")
    for suffix in "abc":
        data[f"bytes_{suffix}"] = np.array(byte_mix_column(rng, 1024), dtype=np.uint32)
    amounts, values = shift_columns(1024)
    data["shift_amount"] = np.array(amounts, dtype=np.uint32)
    for width, dtype in ((16, np.uint16), (32, np.uint32), (64, np.uint64)):
        data[f"shift_u{width}"] = np.array(values[width], dtype=dtype)
    pos, length, value32, value64, base32, base64 = bitfield_columns(1024)
    data["bitfield_pos"] = np.array(pos, dtype=np.uint32)
    data["bitfield_len"] = np.array(length, dtype=np.uint32)
    data["bitfield_u32"] = np.array(value32, dtype=np.uint32)
    data["bitfield_u64"] = np.array(value64, dtype=np.uint64)
    data["bitfield_base_u32"] = np.array(base32, dtype=np.uint32)
    data["bitfield_base_u64"] = np.array(base64, dtype=np.uint64)
    data["signed_small"] = np.array(signed_small(1024), dtype=np.uint32)
    data["fns_base"] = np.array([0, 31] + [int(x) for x in rng_for("fns").integers(0, 32, size=1022)],
                                dtype=np.uint32)
    data["carry_in"] = np.array([int(i % 3 != 0) for i in range(1024)], dtype=np.uint32)
    data["prmt_selector"] = np.array(prmt_selectors(1024), dtype=np.uint32)

    pi = math.pi
    data["approx_trig_2pi"] = approx_f32("trig-2pi", 1024, -2 * pi, 2 * pi, F32_SIGNED_ZEROS_INF_NAN + F32_TINY
                                         + [0x3FC90FDB, 0x40490FDB, 0x40C90FDB, 0xC0490FDB, 0x3F800000])
    data["approx_trig_100pi"] = approx_f32("trig-100pi", 1024, -100 * pi, 100 * pi, [0x439D1463, 0xC39D1463])
    data["approx_ex2"] = approx_f32("ex2", 1024, -152.0, 130.0, F32_SIGNED_ZEROS_INF_NAN + F32_TINY
                                    + [0x42FE0000, 0x43000000, 0xC2FC0000, 0xC3150000, 0x3F000000])
    data["approx_lg2_near"] = approx_f32("lg2-near", 1024, 0.5, 2.0, [0x3F800000, 0x3F800001, 0x3F7FFFFF,
                                                                       0x3F000001, 0x3FFFFFFF])
    data["approx_lg2_wide"] = approx_f32("lg2-wide", 1024, 2.0, 1e30, F32_SIGNED_ZEROS_INF_NAN + F32_TINY
                                         + [0xBF800000, 0x7F7FFFFF, 0x40000000], positive_bits=True,
                                         avoid=(0.5, 2.0))
    data["approx_positive"] = approx_f32("positive", 1024, 0.0, 1e6, F32_SIGNED_ZEROS_INF_NAN + F32_TINY
                                         + [0xBF800000, 0x7F7FFFFF, 0x3F800000, 0x40800000], positive_bits=True)
    data["approx_tanh"] = approx_f32("tanh", 1024, -10.0, 10.0, F32_SIGNED_ZEROS_INF_NAN + F32_TINY
                                     + [0x3F800000, 0x41200000, 0x38000000, 0xB8000000])
    for huge in (False, True):
        dividends, divisors = div_approx_operands(1024 if not huge else 256, huge)
        suffix = "huge" if huge else "normal"
        data[f"approx_div_{suffix}_a"] = np.array(dividends, dtype=np.uint32).view(np.float32)
        data[f"approx_div_{suffix}_b"] = np.array(divisors, dtype=np.uint32).view(np.float32)
    data["approx_ex2_f16"] = as_storage("f16", approx_half(F16, "ex2-f16", 1024, -14.0, 15.9))
    data["approx_tanh_f16"] = as_storage("f16", approx_half(F16, "tanh-f16", 1024, -6.0, 6.0, whole_range=True))
    data["approx_ex2_bf16"] = as_storage("bf16", approx_half(BF16, "ex2-bf16", 1024, -125.0, 127.9))
    data["approx_tanh_bf16"] = as_storage("bf16", approx_half(BF16, "tanh-bf16", 1024, -6.0, 6.0, whole_range=True))
    for name in ("ex2_f16", "tanh_f16", "ex2_bf16", "tanh_bf16"):
        low = np.asarray(data[f"approx_{name}"]).view(np.uint16)
        data[f"approx_{name}x2"] = pack_halves(low, low[rng_for(name + "x2").permutation(1024)])

    data["warp_pred"] = np.array(warp_predicates(), dtype=np.uint32)
    data["warp_mask"] = np.array(warp_member_masks(), dtype=np.uint32)
    values, offsets, clamps, masks = shfl_columns()
    data["shfl_value"] = np.array(values, dtype=np.uint32)
    data["shfl_lane"] = np.array(offsets, dtype=np.uint32)
    data["shfl_clamp"] = np.array(clamps, dtype=np.uint32)
    data["shfl_mask"] = np.array(masks, dtype=np.uint32)
    match32, match64 = match_columns()
    data["match_u32"] = np.array(match32, dtype=np.uint32)
    data["match_u64"] = np.array(match64, dtype=np.uint64)
    data["redux_value"] = np.array(redux_values(), dtype=np.uint32)
    data["block_pred"] = np.array(block_predicates(), dtype=np.uint32)

    data["contend_u32_mem"] = np.array([(i * 0x01010102) & 0xFFFFFFFE for i in range(CONTENDED_SLOTS)],
                                       dtype=np.uint32)
    data["contend_u64_mem"] = np.array([(i * 0x0101010201010102) & 0xFFFFFFFFFFFFFFFE
                                        for i in range(CONTENDED_SLOTS)], dtype=np.uint64)
    data["contend_u32_val"] = np.array([x | 1 for x in random_bits(rng_for("contend-u32"), 32, 1024)],
                                       dtype=np.uint32)
    data["contend_u64_val"] = np.array([x | 1 for x in random_bits(rng_for("contend-u64"), 64, 1024)],
                                       dtype=np.uint64)
    for fmt_name, choices in (("f32", [Fraction(k, 16) for k in range(-128, 129)]),
                              ("f64", [Fraction(k, 16) for k in range(-128, 129)]),
                              ("f16", [Fraction(k, 8) for k in (-2, -1, 0, 1, 2)]),
                              ("bf16", [Fraction(k, 4) for k in (-1, 0, 1)])):
        fmt = FORMATS[fmt_name]
        data[f"contend_{fmt_name}_mem"] = as_storage(fmt_name, float_slot_initials(fmt))
        data[f"contend_{fmt_name}_val"] = as_storage(
            fmt_name, exact_sum_values(fmt, "contend-" + fmt_name, 1024, choices, SLOT_INITIALS))
    for fmt_name in ("f16", "bf16"):
        initial = np.asarray(data[f"contend_{fmt_name}_mem"]).view(np.uint16)
        data[f"contend_{fmt_name}x2_mem"] = pack_halves(initial, initial[::-1])
        values = np.asarray(data[f"contend_{fmt_name}_val"]).view(np.uint16)
        data[f"contend_{fmt_name}x2_val"] = pack_halves(values, values[::-1])
    return data


# ----------------------------------------------------------------------------------------------
# Probe kernels. Thread i (global x index) loads in0[i].. into %a %b %c %x, runs the body, and
# stores %d to out0[i] and %e to out1[i]; predicates travel as u32 0/1.
# ----------------------------------------------------------------------------------------------

INPUT_REGISTERS = ("a", "b", "c", "x")
OUTPUT_REGISTERS = ("d", "e")


@dataclass
class Probe:
    name: str
    body: list
    ins: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    decls: list = field(default_factory=list)
    scalars: list = field(default_factory=list)
    extra_buffers: list = field(default_factory=list)
    tolerance: dict = None
    note: str = None
    approx: bool = False
    launches: list = None
    file: str = None

    def in_dtype(self, position):
        return TYPES[self.ins[position][0].lstrip("&")].in_dtype

    def out_dtype(self, position):
        kind = self.outs[position]
        if self.approx and kind in APPROX_OUT_DTYPE:
            return APPROX_OUT_DTYPE[kind]
        return TYPES[kind].out_dtype


def element_size(dtype):
    return np.dtype(NUMPY_DTYPE[dtype]).itemsize


def render_kernel(probe):
    """PTX text of one probe kernel."""
    params = [f"in{k}" for k in range(len(probe.ins))] + [f"out{k}" for k in range(len(probe.outs))]
    params += [name for name, _ in probe.extra_buffers]
    buffer_sizes = [element_size(probe.in_dtype(k)) for k in range(len(probe.ins))]
    buffer_sizes += [element_size(probe.out_dtype(k)) for k in range(len(probe.outs))]
    buffer_sizes += [element_size(dtype) for _, dtype in probe.extra_buffers]
    decl_params = [f"\t.param .u64 {name}" for name in params]
    decl_params += [f"\t.param .{ptx_type} {name}" for name, ptx_type, _ in probe.scalars]
    lines = [f".visible .entry {probe.name}(", ",\n".join(decl_params), ")", "{"]
    lines.append("\t.reg .b32 %thread, %block, %width, %idx;")
    sizes = sorted(set(buffer_sizes))
    lines.append("\t.reg .b64 " + ", ".join(f"%offset{size}" for size in sizes) + ";")
    lines.append("\t.reg .b64 " + ", ".join(f"%{name}_base, %{name}_ptr" for name in params) + ";")
    for name, ptx_type, _ in probe.scalars:
        lines.append(f"\t.reg .{ptx_type} %{name};")
    for position, (kind, _) in enumerate(probe.ins):
        if kind.startswith("&"):
            continue
        register = INPUT_REGISTERS[position]
        if kind == "pred":
            lines.append(f"\t.reg .b32 %{register}_bits;")
        lines.append(f"\t.reg .{TYPES[kind].register} %{register};")
    for position, kind in enumerate(probe.outs):
        register = OUTPUT_REGISTERS[position]
        if kind == "pred":
            lines.append(f"\t.reg .b32 %{register}_bits;")
        lines.append(f"\t.reg .{TYPES[kind].register} %{register};")
    lines += ["\t" + decl for decl in probe.decls]
    lines.append("")
    lines += ["\tmov.u32 %thread, %tid.x;", "\tmov.u32 %block, %ctaid.x;", "\tmov.u32 %width, %ntid.x;",
              "\tmad.lo.u32 %idx, %block, %width, %thread;"]
    for size in sizes:
        lines.append(f"\tmul.wide.u32 %offset{size}, %idx, {size};")
    for name, size in zip(params, buffer_sizes):
        lines += [f"\tld.param.u64 %{name}_base, [{name}];", f"\tcvta.to.global.u64 %{name}_base, %{name}_base;",
                  f"\tadd.s64 %{name}_ptr, %{name}_base, %offset{size};"]
    for name, ptx_type, _ in probe.scalars:
        lines.append(f"\tld.param.{ptx_type} %{name}, [{name}];")
    for position, (kind, _) in enumerate(probe.ins):
        if kind.startswith("&"):
            continue
        register = INPUT_REGISTERS[position]
        if kind == "pred":
            lines.append(f"\tld.global.u32 %{register}_bits, [%in{position}_ptr];")
            lines.append(f"\tsetp.ne.u32 %{register}, %{register}_bits, 0;")
        else:
            lines.append(f"\tld.global.{TYPES[kind].load} %{register}, [%in{position}_ptr];")
    lines += ["\t" + line if not line.endswith(":") else line for line in probe.body]
    for position, kind in enumerate(probe.outs):
        register = OUTPUT_REGISTERS[position]
        if kind == "pred":
            lines.append(f"\tselp.u32 %{register}_bits, 1, 0, %{register};")
            lines.append(f"\tst.global.u32 [%out{position}_ptr], %{register}_bits;")
        else:
            lines.append(f"\tst.global.{TYPES[kind].store} [%out{position}_ptr], %{register};")
    lines += ["\tret;", "}", ""]
    return "\n".join(lines)


def launch_records(probe, datasets):
    """launches.json entries of one probe; each entry also carries the expected length of every buffer."""
    variants = probe.launches or [{}]
    records = []
    for variant in variants:
        if "grid" in variant:
            grid = variant["grid"]
        else:
            rows = len(datasets[probe.ins[0][1]])
            assert all(len(datasets[dataset]) == rows for _, dataset in probe.ins), probe.name
            assert rows % BLOCK == 0, probe.name
            grid = [rows // BLOCK, 1, 1]
        block = variant.get("block", [BLOCK, 1, 1])
        threads = math.prod(grid) * math.prod(block)
        args, lengths = [], []
        for position, (kind, dataset) in enumerate(probe.ins):
            args.append(f"@inputs/{dataset}.npy")
            lengths.append(variant.get("need", {}).get(position, threads))
        for position in range(len(probe.outs)):
            count = variant.get("out_count", threads)
            args.append(f"zeros:{probe.out_dtype(position)}:{count}")
            lengths.append(count)
        for name, dtype in probe.extra_buffers:
            count = variant.get(name, threads)
            args.append(f"zeros:{dtype}:{count}")
            lengths.append(count)
        for name, ptx_type, default in probe.scalars:
            args.append(f"{ptx_type}:{variant.get(name, default)}")
            lengths.append(None)
        record = {"name": probe.name + variant.get("suffix", ""), "ptx": probe.file, "kernel": probe.name,
                  "grid": grid, "block": block, "shared": variant.get("shared", 0), "args": args,
                  "tolerance": probe.tolerance}
        if probe.note:
            record["note"] = probe.note
        records.append((record, lengths))
    return records


# ----------------------------------------------------------------------------------------------
# Families. Kernel names are the instruction with dots turned into underscores.
# ----------------------------------------------------------------------------------------------

def kernel_name(instruction):
    return instruction.replace(".", "_").replace("::", "_")


def width_of(kind):
    return {"u8": 8, "s8": 8, "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "f16x2": 32,
            "bf16x2": 32, "pred": 32}.get(kind) or int(kind[1:])


def int_data(kind, position):
    return f"u{width_of(kind)}_{'abc'[position]}"


def simple(instruction, ins, outs, operands=None, **extra):
    """One instruction on %d[, %e] and the inputs, e.g. simple("add.u32", [("u32", "u32_a"), ...], ["u32"])."""
    if operands is None:
        destinations = "%d" if len(outs) == 1 else "%d|%e"
        operands = ", ".join([destinations] + [f"%{INPUT_REGISTERS[k]}" for k in range(len(ins))])
    return Probe(kernel_name(instruction), [f"{instruction} {operands};"], ins, outs, **extra)


def int_op(instruction, kinds, out_kind):
    ins = [(kind, int_data(kind, position)) for position, kind in enumerate(kinds)]
    return simple(instruction, ins, [out_kind])


INT_TYPES = ("u16", "s16", "u32", "s32", "u64", "s64")
WIDER = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}


def int_arith_probes():
    probes = []
    for op in ("add", "sub"):
        for kind in INT_TYPES:
            probes.append(int_op(f"{op}.{kind}", [kind, kind], kind))
        probes.append(int_op(f"{op}.sat.s32", ["s32", "s32"], "s32"))
    for packed in ("u16x2", "s16x2"):
        probes.append(int_op(f"add.{packed}", ["u32", "u32"], "u32"))
    for kind in INT_TYPES:
        for half in ("lo", "hi"):
            probes.append(int_op(f"mul.{half}.{kind}", [kind, kind], kind))
            probes.append(int_op(f"mad.{half}.{kind}", [kind, kind, kind], kind))
    for kind, wide in WIDER.items():
        probes.append(int_op(f"mul.wide.{kind}", [kind, kind], wide))
        probes.append(Probe(kernel_name(f"mad.wide.{kind}"), [f"mad.wide.{kind} %d, %a, %b, %c;"],
                            [(kind, int_data(kind, 0)), (kind, int_data(kind, 1)), (wide, int_data(wide, 2))], [wide]))
    probes.append(int_op("mad.hi.sat.s32", ["s32"] * 3, "s32"))
    for kind in ("u32", "s32"):
        for half in ("lo", "hi"):
            probes.append(int_op(f"mul24.{half}.{kind}", [kind] * 2, kind))
            probes.append(int_op(f"mad24.{half}.{kind}", [kind] * 3, kind))
    probes.append(int_op("mad24.hi.sat.s32", ["s32"] * 3, "s32"))
    for op in ("div", "rem", "min", "max"):
        for kind in INT_TYPES:
            probes.append(int_op(f"{op}.{kind}", [kind, kind], kind))
    for instruction in ("min.u16x2", "min.s16x2", "max.u16x2", "max.s16x2", "min.relu.s32", "max.relu.s32",
                        "min.relu.s16x2", "max.relu.s16x2"):
        probes.append(int_op(instruction, ["u32", "u32"], "u32"))
    for op in ("abs", "neg"):
        for kind in ("s16", "s32", "s64"):
            probes.append(int_op(f"{op}.{kind}", [kind], kind))
    for kind in INT_TYPES:
        probes.append(int_op(f"sad.{kind}", [kind] * 3, kind))
    bytes_in = [("u32", "bytes_a"), ("u32", "bytes_b"), ("u32", "bytes_c")]
    for first in ("u32", "s32"):
        for second in ("u32", "s32"):
            probes.append(simple(f"dp4a.{first}.{second}", bytes_in, ["u32"]))
            for half in ("lo", "hi"):
                probes.append(simple(f"dp2a.{half}.{first}.{second}", bytes_in, ["u32"]))
    probes += carry_probes()
    return probes


def carry_probes():
    """Carry-flag instructions: CC.CF is set from the last input != 0 first, and read back into out1 after."""
    probes = []
    chain = {"add.cc": 2, "addc": 2, "addc.cc": 2, "sub.cc": 2, "subc": 2, "subc.cc": 2,
             "mad.lo.cc": 3, "mad.hi.cc": 3, "madc.lo": 3, "madc.hi": 3, "madc.lo.cc": 3, "madc.hi.cc": 3}
    for op, arity in chain.items():
        for kind in ("u32", "s32", "u64", "s64"):
            ins = [(kind, int_data(kind, k)) for k in range(arity)] + [("u32", "carry_in")]
            operands = ", ".join(["%d"] + [f"%{INPUT_REGISTERS[k]}" for k in range(arity)])
            body = [f"add.cc.u32 %carry_set, %{INPUT_REGISTERS[arity]}, -1;", f"{op}.{kind} {operands};",
                    "addc.u32 %e, 0, 0;"]
            probes.append(Probe(kernel_name(f"{op}.{kind}"), body, ins, [kind, "u32"],
                                decls=[".reg .b32 %carry_set;"]))
    limbs = [".reg .b32 %a0, %a1, %b0, %b1, %r0, %r1, %r2, %r3;"]
    body = ["mov.b64 {%a0, %a1}, %a;", "mov.b64 {%b0, %b1}, %b;",
            "mul.lo.u32 %r0, %a0, %b0;", "mul.hi.u32 %r1, %a0, %b0;",
            "mad.lo.cc.u32 %r1, %a0, %b1, %r1;", "madc.hi.u32 %r2, %a0, %b1, 0;",
            "mad.lo.cc.u32 %r1, %a1, %b0, %r1;", "madc.hi.cc.u32 %r2, %a1, %b0, %r2;",
            "madc.hi.u32 %r3, %a1, %b1, 0;", "mad.lo.cc.u32 %r2, %a1, %b1, %r2;", "addc.u32 %r3, %r3, 0;",
            "mov.b64 %d, {%r0, %r1};", "mov.b64 %e, {%r2, %r3};"]
    probes.append(Probe("mul_u64_to_u128_by_limbs", body, [("u64", "u64_a"), ("u64", "u64_b")], ["u64", "u64"],
                        decls=limbs))
    body = ["mov.b64 {%a0, %a1}, %a;", "mov.b64 {%b0, %b1}, %b;",
            "sub.cc.u32 %r0, %a0, %b0;", "subc.cc.u32 %r1, %a1, %b1;", "subc.u32 %r2, 0, 0;",
            "mov.b64 %d, {%r0, %r1};", "mov.b32 %e, %r2;"]
    probes.append(Probe("sub_u64_by_limbs", body, [("u64", "u64_a"), ("u64", "u64_b")], ["u64", "u32"],
                        decls=limbs))
    return probes


PRMT_MODES = ("", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16")
LOP3_TABLES = (0x00, 0xFF, 0xF0, 0xCC, 0xAA, 0x96, 0xE8, 0xCA, 0x80, 0xFE, 0x1E, 0x6A, 0x3C, 0x01, 0x7F, 0xB4)


def bits_probes():
    probes = []
    for op in ("popc", "clz"):
        probes.append(int_op(f"{op}.b32", ["u32"], "u32"))
        probes.append(int_op(f"{op}.b64", ["u64"], "u32"))
    for kind in ("u32", "s32", "u64", "s64"):
        probes.append(int_op(f"bfind.{kind}", [kind], "u32"))
        probes.append(int_op(f"bfind.shiftamt.{kind}", [kind], "u32"))
    probes.append(int_op("brev.b32", ["u32"], "u32"))
    probes.append(int_op("brev.b64", ["u64"], "u64"))
    for kind in ("u32", "s32", "u64", "s64"):
        width = width_of(kind)
        ins = [(kind, f"bitfield_u{width}"), ("u32", "bitfield_pos"), ("u32", "bitfield_len")]
        probes.append(simple(f"bfe.{kind}", ins, [kind]))
    for width in (32, 64):
        ins = [(f"u{width}", f"bitfield_u{width}"), (f"u{width}", f"bitfield_base_u{width}"),
               ("u32", "bitfield_pos"), ("u32", "bitfield_len")]
        probes.append(simple(f"bfi.b{width}", ins, [f"u{width}"]))
    for mode in PRMT_MODES:
        ins = [("u32", "bytes_a"), ("u32", "bytes_b"), ("u32", "prmt_selector")]
        probes.append(simple(f"prmt.b32{mode}", ins, ["u32"]))
    for direction in ("l", "r"):
        for mode in ("clamp", "wrap"):
            ins = [("u32", "shift_u32"), ("u32", "bitfield_base_u32"), ("u32", "shift_amount")]
            probes.append(simple(f"shf.{direction}.{mode}.b32", ins, ["u32"]))
    for width in (16, 32, 64):
        value = [(f"u{width}", f"shift_u{width}"), ("u32", "shift_amount")]
        probes.append(simple(f"shl.b{width}", value, [f"u{width}"]))
        for sign in ("u", "s"):
            probes.append(simple(f"shr.{sign}{width}", value, [f"u{width}"]))
        for op in ("and", "or", "xor"):
            probes.append(int_op(f"{op}.b{width}", [f"u{width}"] * 2, f"u{width}"))
        for op in ("not", "cnot"):
            probes.append(int_op(f"{op}.b{width}", [f"u{width}"], f"u{width}"))
    predicates = [("pred", "warp_pred"), ("pred", "block_pred")]
    for name, text in (("and_pred", "and.pred %d, %a, %b"), ("or_pred", "or.pred %d, %a, %b"),
                       ("xor_pred", "xor.pred %d, %a, %b"), ("not_pred", "not.pred %d, %a"),
                       ("and_pred_negated", "and.pred %d, %a, !%b"), ("or_pred_negated", "or.pred %d, !%a, %b"),
                       ("xor_pred_negated", "xor.pred %d, !%a, !%b")):
        probes.append(Probe(name, [text + ";"], predicates[:1] if name == "not_pred" else predicates, ["pred"]))
    words = [("u32", "bytes_a"), ("u32", "bytes_b"), ("u32", "bytes_c")]
    for table in LOP3_TABLES:
        probes.append(Probe(f"lop3_b32_{table:02x}", [f"lop3.b32 %d, %a, %b, %c, 0x{table:02x};"], words, ["u32"]))
    for logic, table in (("or", 0x96), ("and", 0xE8), ("or", 0x00), ("and", 0xFF)):
        probes.append(Probe(f"lop3_{logic}_b32_{table:02x}_pred",
                            [f"lop3.{logic}.b32 %d|%e, %a, %b, %c, 0x{table:02x}, %x;"],
                            words + [("pred", "warp_pred")], ["u32", "pred"]))
    for mode in ("clamp", "wrap"):
        probes.append(simple(f"bmsk.{mode}.b32", [("u32", "bitfield_pos"), ("u32", "bitfield_len")], ["u32"]))
        for kind in ("s32", "u32"):
            probes.append(simple(f"szext.{mode}.{kind}", [("u32", "bitfield_u32"), ("u32", "bitfield_len")], ["u32"]))
    probes.append(simple("fns.b32", [("u32", "bytes_a"), ("u32", "fns_base"), ("u32", "signed_small")], ["u32"]))
    return probes


INT_COMPARES = {"s": ("eq", "ne", "lt", "le", "gt", "ge"),
                "u": ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"),
                "b": ("eq", "ne")}
FLOAT_COMPARES = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def float_pair(kind):
    return [(kind, f"{kind}_a"), (kind, f"{kind}_b")]


def compare_probes():
    probes = []
    for width in (16, 32, 64):
        for sign, compares in INT_COMPARES.items():
            kind = f"{sign}{width}"
            for compare in compares:
                probes.append(int_op(f"setp.{compare}.{kind}", [kind, kind], "pred"))
    predicate = ("pred", "warp_pred")
    for instruction, kind in (("setp.lt.and.s32", "s32"), ("setp.hi.or.u32", "u32"), ("setp.ne.xor.b64", "b64")):
        ins = [(kind, int_data(kind, 0)), (kind, int_data(kind, 1)), predicate]
        probes.append(simple(instruction, ins, ["pred", "pred"]))
    probes.append(Probe("setp_ge_or_s16_negated", ["setp.ge.or.s16 %d, %a, %b, !%c;"],
                        [("s16", "u16_a"), ("s16", "u16_b"), predicate], ["pred"]))
    for instruction, kind, out in (("set.lt.u32.s32", "s32", "u32"), ("set.hi.s32.u32", "u32", "s32"),
                                   ("set.eq.f32.u32", "u32", "f32"), ("set.ge.u32.s64", "s64", "u32"),
                                   ("set.ls.f32.u16", "u16", "f32")):
        probes.append(int_op(instruction, [kind, kind], out))
    probes.append(simple("set.lt.and.u32.s32", [("s32", "u32_a"), ("s32", "u32_b"), predicate], ["u32"]))
    probes.append(Probe("set_ne_xor_f32_b32_negated", ["set.ne.xor.f32.b32 %d, %a, %b, !%c;"],
                        [("u32", "u32_a"), ("u32", "u32_b"), predicate], ["f32"]))

    for kind, ftz_choices in (("f32", ("", ".ftz")), ("f64", ("",)), ("f16", ("", ".ftz")), ("bf16", ("",))):
        for ftz in ftz_choices:
            for compare in FLOAT_COMPARES:
                probes.append(simple(f"setp.{compare}{ftz}.{kind}", float_pair(kind), ["pred"]))
    for kind, ftz_choices in (("f16x2", ("", ".ftz")), ("bf16x2", ("",))):
        for ftz in ftz_choices:
            for compare in FLOAT_COMPARES:
                probes.append(simple(f"setp.{compare}{ftz}.{kind}", float_pair(kind), ["pred", "pred"]))
    for instruction, kind in (("setp.lt.and.f32", "f32"), ("setp.nan.or.ftz.f32", "f32"),
                              ("setp.geu.xor.f64", "f64"), ("setp.eq.and.f16x2", "f16x2"),
                              ("setp.ltu.or.bf16", "bf16")):
        ins = float_pair(kind) + [predicate]
        probes.append(simple(instruction, ins, ["pred"] if kind == "bf16" else ["pred", "pred"]))
    for instruction, kind, out in (("set.lt.f32.f32", "f32", "f32"), ("set.gtu.ftz.u32.f32", "f32", "u32"),
                                   ("set.neu.s32.f32", "f32", "s32"), ("set.eq.s32.f64", "f64", "s32"),
                                   ("set.num.f32.f64", "f64", "f32"), ("set.lt.f16.f16", "f16", "f16"),
                                   ("set.le.ftz.u32.f16", "f16", "u32"), ("set.lt.f16x2.f16x2", "f16x2", "f16x2"),
                                   ("set.gt.u32.f16x2", "f16x2", "u32"), ("set.nan.bf16.bf16", "bf16", "bf16"),
                                   ("set.le.bf16x2.bf16x2", "bf16x2", "bf16x2"), ("set.ge.s32.bf16x2", "bf16x2", "s32"),
                                   ("set.leu.ftz.f16x2.f16x2", "f16x2", "f16x2")):
        probes.append(simple(instruction, float_pair(kind), [out]))
    probes.append(simple("set.ltu.or.f32.f32", float_pair("f32") + [predicate], ["f32"]))

    for kind in ("b16", "b32", "b64"):
        ins = [(kind, int_data(kind, 0)), (kind, int_data(kind, 1)), predicate]
        probes.append(simple(f"selp.{kind}", ins, [kind]))
    for kind in ("f32", "f64"):
        probes.append(simple(f"selp.{kind}", float_pair(kind) + [predicate], [kind]))
    for instruction, kind, selector in (("slct.b32.s32", "u32", ("s32", "u32_c")),
                                        ("slct.b16.s32", "u16", ("s32", "u32_c")),
                                        ("slct.b64.s32", "u64", ("s32", "u32_c")),
                                        ("slct.f32.f32", "f32", ("f32", "f32_c")),
                                        ("slct.ftz.u32.f32", "u32", ("f32", "f32_c")),
                                        ("slct.f64.f32", "f64", ("f32", "f32_c"))):
        pair = float_pair(kind) if kind.startswith("f") else [(kind, int_data(kind, 0)), (kind, int_data(kind, 1))]
        probes.append(simple(instruction, pair + [selector], [kind]))
    return probes


def bound_note(text):
    return ("PTX ISA 9.0: " + text + "; the tolerance adds half an ulp of the destination for the "
            "emulator's own rounding; NaN, infinities and signed zeros must match exactly")


def approx_probe(instruction, dataset, tolerance, note, kind="f32", decls=(), body=None, outs=None):
    """An .approx probe: floats out, compared within the PTX ISA's stated error."""
    return Probe(kernel_name(instruction) if body is None else instruction,
                 body or [f"{instruction} %d, %a;"], [(kind, dataset)], outs or [kind], decls=list(decls),
                 tolerance=tolerance, note=note, approx=True)


SIN_COS_BOUNDS = (("trig_2pi", "approx_trig_2pi", 2**-20.5, "[-2pi, 2pi]"),
                  ("trig_100pi", "approx_trig_100pi", 2**-14.7, "[-100pi, 100pi]"))


def fp32_probes():
    probes = []
    pair, triple = float_pair("f32"), float_pair("f32") + [("f32", "f32_c")]
    arith_mods = ("", ".rn", ".rz", ".rm", ".rp", ".ftz", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz", ".sat",
                  ".rn.ftz.sat", ".rz.sat", ".rm.sat", ".rp.ftz.sat")
    for op in ("add", "sub", "mul"):
        for mods in arith_mods:
            probes.append(simple(f"{op}{mods}.f32", pair, ["f32"]))
    for mods in (".rn", ".rz", ".rm", ".rp", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz", ".rn.sat", ".rn.ftz.sat",
                 ".rp.sat"):
        probes.append(simple(f"fma{mods}.f32", triple, ["f32"]))
    for mods in (".rn", ".rz.ftz", ".rm.sat", ".rp"):
        probes.append(simple(f"mad{mods}.f32", triple, ["f32"]))
    for mods in (".rn", ".rz", ".rm", ".rp", ".rn.ftz", ".rz.ftz", ".rm.ftz", ".rp.ftz"):
        probes.append(simple(f"div{mods}.f32", pair, ["f32"]))
        probes.append(simple(f"sqrt{mods}.f32", [("f32", "f32_u")], ["f32"]))
        probes.append(simple(f"rcp{mods}.f32", [("f32", "f32_u")], ["f32"]))
    half_ulp = 2**-24
    for ftz in ("", ".ftz"):
        name = f"div.approx{ftz}.f32"
        probes.append(Probe(kernel_name(name), [f"{name} %d, %a, %b;"],
                            [("f32", "approx_div_normal_a"), ("f32", "approx_div_normal_b")], ["f32"],
                            tolerance={"ulp": 2}, approx=True,
                            note="PTX ISA 9.0: div.approx.f32 max 2 ulp for |b| in [2^-126, 2^126]"))
        probes.append(Probe(kernel_name(name) + "_huge_divisor", [f"{name} %d, %a, %b;"],
                            [("f32", "approx_div_huge_a"), ("f32", "approx_div_huge_b")], ["f32"],
                            note="PTX ISA 9.0: for 2^126 < |b| < 2^128 div.approx.f32 returns NaN when a is "
                                 "infinite and a signed zero otherwise: exact"))
        name = f"div.full{ftz}.f32"
        probes.append(Probe(kernel_name(name), [f"{name} %d, %a, %b;"], pair, ["f32"], tolerance={"ulp": 2},
                            approx=True, note="PTX ISA 9.0: div.full.f32 max 2 ulp over the full range"))
        probes.append(approx_probe(f"sqrt.approx{ftz}.f32", "approx_positive", {"rel": 2**-23 + half_ulp},
                                   bound_note("sqrt.approx.f32 max relative error 2^-23 over positive finite inputs")))
        probes.append(approx_probe(f"rsqrt.approx{ftz}.f32", "approx_positive", {"rel": 2**-22.9 + half_ulp},
                                   bound_note("rsqrt.approx.f32 max relative error 2^-22.9 over positive "
                                              "finite inputs")))
        probes.append(approx_probe(f"rcp.approx{ftz}.f32", "f32_u", {"ulp": 1},
                                   "PTX ISA 9.0: rcp.approx.f32 max 1 ulp over the full range"))
        probes.append(approx_probe(f"ex2.approx{ftz}.f32", "approx_ex2", {"ulp": 2},
                                   "PTX ISA 9.0: ex2.approx.f32 max 2 ulp from the correctly rounded result "
                                   "over the full range"))
        for op in ("sin", "cos"):
            for suffix, dataset, bound, span in SIN_COS_BOUNDS:
                instruction = f"{op}.approx{ftz}.f32"
                probes.append(approx_probe(kernel_name(instruction) + "_" + suffix, dataset,
                                           {"abs": bound + 2**-25},
                                           bound_note(f"{op}.approx.f32 max absolute error 2^{math.log2(bound):.1f} "
                                                      f"over {span}"),
                                           body=[f"{instruction} %d, %a;"]))
        instruction = f"lg2.approx{ftz}.f32"
        probes.append(approx_probe(kernel_name(instruction) + "_near_one", "approx_lg2_near", {"abs": 2**-22 + 2**-25},
                                   bound_note("lg2.approx.f32 max absolute error 2^-22 for inputs in (0.5, 2)"),
                                   body=[f"{instruction} %d, %a;"]))
        probes.append(approx_probe(kernel_name(instruction) + "_wide", "approx_lg2_wide", {"rel": 2**-22 + half_ulp},
                                   bound_note("lg2.approx.f32 max relative error 2^-22 for positive finite "
                                              "inputs outside (0.5, 2)"), body=[f"{instruction} %d, %a;"]))
    probes.append(approx_probe("tanh.approx.f32", "approx_tanh", {"rel": 2**-11 + half_ulp},
                               bound_note("tanh.approx.f32 max relative error 2^-11 over the full range")))
    for test in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
        probes.append(simple(f"testp.{test}.f32", [("f32", "f32_u")], ["pred"]))
    probes.append(simple("copysign.f32", pair, ["f32"]))
    for op in ("min", "max"):
        for mods in ("", ".ftz", ".NaN", ".ftz.NaN", ".xorsign.abs", ".NaN.xorsign.abs", ".ftz.NaN.xorsign.abs"):
            probes.append(simple(f"{op}{mods}.f32", pair, ["f32"]))
    for op in ("abs", "neg"):
        for ftz in ("", ".ftz"):
            probes.append(simple(f"{op}{ftz}.f32", [("f32", "f32_u")], ["f32"]))
    return probes


def fp64_probes():
    probes = []
    pair, triple = float_pair("f64"), float_pair("f64") + [("f64", "f64_c")]
    for op in ("add", "sub", "mul"):
        for mods in ("", ".rn", ".rz", ".rm", ".rp"):
            probes.append(simple(f"{op}{mods}.f64", pair, ["f64"]))
    for mods in (".rn", ".rz", ".rm", ".rp"):
        probes.append(simple(f"fma{mods}.f64", triple, ["f64"]))
        probes.append(simple(f"div{mods}.f64", pair, ["f64"]))
        probes.append(simple(f"sqrt{mods}.f64", [("f64", "f64_u")], ["f64"]))
        probes.append(simple(f"rcp{mods}.f64", [("f64", "f64_u")], ["f64"]))
    probes.append(simple("mad.rn.f64", triple, ["f64"]))
    probes.append(approx_probe("rcp.approx.ftz.f64", "f64_u", {"rel": 2**-19},
                               "PTX ISA 9.0 states no bound for this 'gross approximation' computed from the upper "
                               "32 bits (20 mantissa bits) with a zero low word; rel 2^-19 is an assumption",
                               kind="f64"))
    probes.append(approx_probe("rsqrt.approx.ftz.f64", "f64_u", {"rel": 2**-19},
                               "PTX ISA 9.0 states no bound; computed from the upper 32 bits with a zero low word; "
                               "rel 2^-19 is an assumption", kind="f64"))
    probes.append(approx_probe("rsqrt.approx.f64", "f64_u", {"rel": 2**-40},
                               "PTX ISA 9.0 states no bound (emulated in software); rel 2^-40 is an assumption",
                               kind="f64"))
    for test in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
        probes.append(simple(f"testp.{test}.f64", [("f64", "f64_u")], ["pred"]))
    probes.append(simple("copysign.f64", pair, ["f64"]))
    for op in ("min", "max"):
        probes.append(simple(f"{op}.f64", pair, ["f64"]))
    for op in ("abs", "neg"):
        probes.append(simple(f"{op}.f64", [("f64", "f64_u")], ["f64"]))
    return probes


def half_approx_probes():
    probes = []
    cases = (("ex2.approx", "f16", "approx_ex2_f16", {"rel": 2**-9.9 + 2**-11},
              "ex2.approx.f16 max relative error 2^-9.9"),
             ("tanh.approx", "f16", "approx_tanh_f16", {"abs": 2**-10.987 + 2**-12},
              "tanh.approx.f16 max absolute error 2^-10.987"),
             ("ex2.approx.ftz", "bf16", "approx_ex2_bf16", {"rel": 2**-7 + 2**-8},
              "ex2.approx.ftz.bf16 max relative error 2^-7"),
             ("tanh.approx", "bf16", "approx_tanh_bf16", {"abs": 2**-8 + 2**-9},
              "tanh.approx.bf16 max absolute error 2^-8"))
    for op, kind, dataset, tolerance, text in cases:
        note = bound_note(text)
        if kind == "f16":
            probes.append(approx_probe(f"{op}.f16", dataset, tolerance, note, kind="f16"))
            body = [f"{op}.f16x2 %packed, %a;", "mov.b32 {%d, %e}, %packed;"]
            probes.append(approx_probe(kernel_name(f"{op}.f16x2"), dataset + "x2", tolerance, note, kind="f16x2",
                                       decls=[".reg .b32 %packed;"], body=body, outs=["f16", "f16"]))
        else:
            body = [f"{op}.bf16 %result, %a;", "cvt.f32.bf16 %d, %result;"]
            probes.append(approx_probe(kernel_name(f"{op}.bf16"), dataset, tolerance, note + " (bf16 result "
                                       "widened exactly to f32)", kind="bf16", decls=[".reg .b16 %result;"],
                                       body=body, outs=["f32"]))
            body = [f"{op}.bf16x2 %packed, %a;", "mov.b32 {%low, %high}, %packed;", "cvt.f32.bf16 %d, %low;",
                    "cvt.f32.bf16 %e, %high;"]
            probes.append(approx_probe(kernel_name(f"{op}.bf16x2"), dataset + "x2", tolerance, note + " (each bf16 "
                                       "half widened exactly to f32)", kind="bf16x2",
                                       decls=[".reg .b32 %packed;", ".reg .b16 %low, %high;"], body=body,
                                       outs=["f32", "f32"]))
    return probes


def half_probes():
    probes = []
    for kind in ("f16", "f16x2"):
        pair, triple = float_pair(kind), float_pair(kind) + [(kind, f"{kind}_c")]
        for op in ("add", "sub", "mul"):
            for mods in ("", ".rn", ".ftz", ".sat", ".rn.ftz.sat"):
                probes.append(simple(f"{op}{mods}.{kind}", pair, [kind]))
        for mods in (".rn", ".rn.ftz", ".rn.sat", ".rn.ftz.sat", ".rn.relu", ".rn.ftz.relu", ".rn.oob",
                     ".rn.oob.relu"):
            probes.append(simple(f"fma{mods}.{kind}", triple, [kind]))
        for op in ("neg", "abs"):
            for ftz in ("", ".ftz"):
                probes.append(simple(f"{op}{ftz}.{kind}", [(kind, f"{kind}_a")], [kind]))
        for op in ("min", "max"):
            for mods in ("", ".ftz", ".NaN", ".ftz.NaN", ".xorsign.abs", ".ftz.NaN.xorsign.abs"):
                probes.append(simple(f"{op}{mods}.{kind}", pair, [kind]))
    for kind in ("bf16", "bf16x2"):
        pair, triple = float_pair(kind), float_pair(kind) + [(kind, f"{kind}_c")]
        for op in ("add", "sub", "mul"):
            for mods in ("", ".rn"):
                probes.append(simple(f"{op}{mods}.{kind}", pair, [kind]))
        for mods in (".rn", ".rn.relu", ".rn.oob", ".rn.oob.relu"):
            probes.append(simple(f"fma{mods}.{kind}", triple, [kind]))
        for op in ("neg", "abs"):
            probes.append(simple(f"{op}.{kind}", [(kind, f"{kind}_a")], [kind]))
        for op in ("min", "max"):
            for mods in ("", ".NaN", ".xorsign.abs", ".NaN.xorsign.abs"):
                probes.append(simple(f"{op}{mods}.{kind}", pair, [kind]))
    return probes + half_approx_probes()


INTEGER_KINDS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
FLOAT_KINDS = ("f16", "bf16", "f32", "f64")


def cvt_source(kind):
    return f"cvt_i{width_of(kind)}" if kind in INTEGER_KINDS else f"cvt_{kind}"


def saturation_possible(dst, src):
    dst_low, dst_high = INT_RANGES[dst]
    src_low, src_high = INT_RANGES[src]
    return src_low < dst_low or src_high > dst_high


def cvt_modifier_sets(dst, src):
    """Every modifier combination of cvt.dst.src that the probes try (ptxas accepts each of them)."""
    no_bf16_byte = not ({dst, src} & {"u8", "s8"} and {dst, src} & {"bf16"})
    if dst in INTEGER_KINDS and src in INTEGER_KINDS:
        return [""] + ([".sat"] if saturation_possible(dst, src) else [])
    if dst in INTEGER_KINDS:
        if not no_bf16_byte:
            return []
        mods = [".rni", ".rzi", ".rmi", ".rpi"]
        if src == "f32":
            mods += [".rni.ftz", ".rzi.ftz", ".rmi.ftz", ".rpi.ftz"] if dst in ("s32", "u32") else [".rzi.ftz"]
        if src != "bf16" and dst in ("s32", "u8"):
            mods.append(".rni.sat")
        return mods
    if src in INTEGER_KINDS:
        if not no_bf16_byte:
            return []
        mods = [".rn", ".rz", ".rm", ".rp"]
        if dst != "bf16" and src in ("s32", "u64", "s8"):
            mods.append(".rn.sat")
        return mods
    table = {
        ("f16", "bf16"): [".rn", ".rz", ".rm", ".rp"],
        ("bf16", "f16"): [".rn", ".rz", ".rm", ".rp"],
        ("f16", "f32"): [".rn", ".rz", ".rm", ".rp", ".rn.ftz", ".rn.sat", ".rn.relu", ".rn.satfinite", ".rz.relu",
                         ".rn.relu.satfinite", ".rz.satfinite"],
        ("bf16", "f32"): [".rn", ".rz", ".rm", ".rp", ".rn.relu", ".rn.satfinite", ".rz.relu", ".rz.satfinite",
                          ".rn.relu.satfinite"],
        ("f16", "f64"): [".rn", ".rz", ".rm", ".rp", ".rn.sat"],
        ("bf16", "f64"): [".rn", ".rz", ".rm", ".rp"],
        ("f32", "f64"): [".rn", ".rz", ".rm", ".rp", ".rn.ftz", ".rn.sat", ".rn.ftz.sat"],
        ("f32", "f16"): ["", ".ftz", ".sat"],
        ("f64", "f16"): ["", ".sat"],
        ("f32", "bf16"): ["", ".ftz"],
        ("f64", "bf16"): [""],
        ("f64", "f32"): ["", ".ftz", ".sat", ".ftz.sat"],
        ("f16", "f16"): ["", ".rni", ".rzi", ".rmi", ".rpi", ".sat"],
        ("bf16", "bf16"): [".rni", ".rzi", ".rmi", ".rpi"],
        ("f32", "f32"): ["", ".rni", ".rzi", ".rmi", ".rpi", ".rni.ftz", ".rzi.ftz", ".rmi.ftz", ".rpi.ftz", ".sat",
                         ".ftz", ".ftz.sat", ".rni.sat"],
        ("f64", "f64"): ["", ".rni", ".rzi", ".rmi", ".rpi", ".sat"],
    }
    return table[(dst, src)]


def cvt_probes():
    probes = []
    for dst in INTEGER_KINDS + FLOAT_KINDS:
        for src in INTEGER_KINDS + FLOAT_KINDS:
            for mods in cvt_modifier_sets(dst, src):
                probes.append(simple(f"cvt{mods}.{dst}.{src}", [(src, cvt_source(src))], [dst]))
    for instruction, kind, dataset, out in (("cvt.s32.s8", "u16", "cvt_i16", "s32"),
                                            ("cvt.u32.u8", "u16", "cvt_i16", "u32"),
                                            ("cvt.rn.f32.s8", "u16", "cvt_i16", "f32"),
                                            ("cvt.s64.s16", "u32", "cvt_i32", "s64"),
                                            ("cvt.u16.u8", "u32", "cvt_i32", "u16"),
                                            ("cvt.s8.s32", "u32", "cvt_i32", "u32"),
                                            ("cvt.u8.u32", "u32", "cvt_i32", "u32"),
                                            ("cvt.s16.s64", "u64", "cvt_i64", "u64")):
        probes.append(Probe(kernel_name(instruction) + "_register_" + TYPES[kind].register,
                            [f"{instruction} %d, %a;"], [(kind, dataset)], [out]))
    pair = [("f32", "cvt_f32"), ("f32", "cvt_f32_b")]
    for mods in (".rn", ".rz", ".rn.relu", ".rn.satfinite", ".rz.relu.satfinite"):
        probes.append(simple(f"cvt{mods}.f16x2.f32", pair, ["u32"]))
    for mods in (".rn", ".rz", ".rn.relu", ".rn.satfinite", ".rn.relu.satfinite"):
        probes.append(simple(f"cvt{mods}.bf16x2.f32", pair, ["u32"]))
    for mods in (".rna", ".rna.satfinite", ".rn", ".rz", ".rn.relu"):
        probes.append(simple(f"cvt{mods}.tf32.f32", [("f32", "cvt_f32")], ["u32"]))
    words = [("s32", "cvt_i32"), ("s32", "u32_b")]
    for kind in ("u16", "s16"):
        probes.append(simple(f"cvt.pack.sat.{kind}.s32", words, ["u32"]))
    for kind in ("u8", "s8", "u4", "s4", "u2", "s2"):
        probes.append(simple(f"cvt.pack.sat.{kind}.s32.b32", words + [("u32", "u32_c")], ["u32"]))
    return probes


def mov_probes():
    probes = [
        Probe("mov_b64_pack_b32", ["mov.b64 %d, {%a, %b};"], [("u32", "u32_a"), ("u32", "u32_b")], ["u64"]),
        Probe("mov_b64_unpack_b32", ["mov.b64 {%d, %e}, %a;"], [("u64", "u64_a")], ["u32", "u32"]),
        Probe("mov_b32_pack_b16", ["mov.b32 %d, {%a, %b};"], [("u16", "u16_a"), ("u16", "u16_b")], ["u32"]),
        Probe("mov_b32_unpack_b16", ["mov.b32 {%d, %e}, %a;"], [("u32", "u32_a")], ["u16", "u16"]),
        Probe("mov_b32_unpack_low_b16", ["mov.b32 {%d, _}, %a;", "mov.b32 {_, %e}, %a;"], [("u32", "u32_a")],
              ["u16", "u16"]),
        Probe("mov_b64_reorder_b16", ["mov.b64 {%h0, %h1, %h2, %h3}, %a;", "mov.b64 %d, {%h3, %h1, %h2, %h0};"],
              [("u64", "u64_a")], ["u64"], decls=[".reg .b16 %h0, %h1, %h2, %h3;"]),
        Probe("mov_f32_from_b32", ["mov.b32 %d, %a;"], [("u32", "u32_a")], ["f32"]),
        Probe("mov_b64_from_f64", ["mov.b64 %d, %a;"], [("f64", "f64_a")], ["u64"]),
    ]
    constants = ["mov.u32 %word, 0x7FFFFFFF;", "mov.u32 %word, 017;", "mov.u32 %word, 0b101101;",
                 "mov.u32 %word, -5;", "mov.u32 %word, 4294967295;", "mov.u32 %word, 0xFFFFFFFFU;",
                 "mov.f32 %single, 0f3F800000;", "mov.f32 %single, 0fFF800000;", "mov.f32 %single, 0f7FC12345;",
                 "mov.f32 %single, 1.5;", "mov.f32 %single, -0.1;", "add.f32 %single, %single, 0f3F000000;",
                 "mul.lo.u32 %word, %thread, -1;", "add.u32 %word, %thread, 0x80000000;",
                 "mov.f64 %double, 0d3FF0000000000000;", "mov.f64 %double, 0d7FF8000000000001;",
                 "mov.f64 %double, 6.02e23;", "mov.f64 %double, 0.1;", "mov.u64 %long, 0xFFFFFFFFFFFFFFFF;",
                 "mov.u64 %long, -9223372036854775808;", "mov.u16 %short, 0xBEEF;", "mov.b16 %short, -1;"]
    body = ["mul.lo.u32 %slot, %idx, %count;", "mul.wide.u32 %slot_offset, %slot, 8;",
            "add.s64 %slot_ptr, %out0_base, %slot_offset;"]
    widen = {"%word": ["cvt.u64.u32 %value, %word;"],
             "%single": ["mov.b32 %bits, %single;", "cvt.u64.u32 %value, %bits;"],
             "%double": ["mov.b64 %value, %double;"], "%long": ["mov.b64 %value, %long;"],
             "%short": ["cvt.u64.u16 %value, %short;"]}
    for position, line in enumerate(constants):
        register = line.split()[1].rstrip(",")
        body += [line] + widen[register] + [f"st.global.u64 [%slot_ptr+{8 * position}], %value;"]
    body[:0] = [f"mov.u32 %count, {len(constants)};"]
    probes.append(Probe("immediates", body, [], [], extra_buffers=[("out0", "u64")],
                        decls=[".reg .b32 %word, %bits, %slot, %count;", ".reg .f32 %single;", ".reg .f64 %double;",
                               ".reg .b64 %long, %value, %slot_offset, %slot_ptr;", ".reg .b16 %short;"],
                        launches=[{"threads": 32, "grid": [1, 1, 1], "block": [32, 1, 1],
                                   "out0": 32 * len(constants)}]))
    return probes


# ----------------------------------------------------------------------------------------------
# Atomics. Uncontended probes give every thread its own word (old value out, memory checked after
# the launch). Contended probes make every thread of a block hit one of `slots` words of that
# block and record only what does not depend on the order: final values of commutative
# operations, sums of returned values whose multiset is fixed, and counts of successful cas.
# ----------------------------------------------------------------------------------------------

ATOMIC_DATA = {"u32": ("u32", "u32_a", "u32_b", "u32_cas_cmp"), "s32": ("u32", "u32_a", "u32_b", None),
               "b32": ("u32", "u32_a", "u32_b", "u32_cas_cmp"), "u64": ("u64", "u64_a", "u64_b", None),
               "s64": ("u64", "u64_a", "u64_b", None), "b64": ("u64", "u64_a", "u64_b", "u64_cas_cmp"),
               "b16": ("u16", "u16_a", "u16_b", "u16_cas_cmp"), "f32": ("f32", "f32_a", "f32_b", None),
               "f64": ("f64", "f64_a", "f64_b", None), "f16": ("f16", "f16_a", "f16_b", None),
               "bf16": ("bf16", "bf16_a", "bf16_b", None), "f16x2": ("f16x2", "f16x2_a", "f16x2_b", None),
               "bf16x2": ("bf16x2", "bf16x2_a", "bf16x2_b", None)}
UNCONTENDED_ATOMICS = (("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "f32"), ("add", "f64"),
                       ("add.noftz", "f16"), ("add.noftz", "bf16"), ("add.noftz", "f16x2"), ("add.noftz", "bf16x2"),
                       ("exch", "b32"), ("exch", "b64"), ("cas", "b32"), ("cas", "b64"), ("cas", "b16"),
                       ("min", "u32"), ("min", "s32"), ("max", "u32"), ("max", "s32"), ("min", "u64"),
                       ("min", "s64"), ("max", "u64"), ("max", "s64"), ("inc", "u32"), ("dec", "u32"),
                       ("and", "b32"), ("or", "b32"), ("xor", "b32"), ("and", "b64"), ("or", "b64"), ("xor", "b64"))
UNCONTENDED_REDUCTIONS = (("add", "u32"), ("add", "f32"), ("add", "f64"), ("add.noftz", "f16x2"), ("min", "s32"),
                          ("max", "u64"), ("inc", "u32"), ("dec", "u32"), ("and", "b32"), ("xor", "b64"))


def element_bytes(kind):
    return max(width_of(kind) // 8, 1)


def uncontended_ins(op, type_name):
    kind, memory, value, compare = ATOMIC_DATA[type_name]
    if op == "cas":
        return kind, [("&" + kind, memory), (kind, compare), (kind, value)], "%b, %c"
    return kind, [("&" + kind, memory), (kind, value)], "%b"


def shared_slot_setup(kind):
    size = element_bytes(kind)
    return ([".shared .align 8 .b8 scratch[2048];", ".reg .b32 %slot;", f".reg .{TYPES[kind].register} %initial;"],
            ["mov.u32 %slot, scratch;", f"mad.lo.u32 %slot, %thread, {size}, %slot;",
             f"ld.global.{TYPES[kind].load} %initial, [%in0_ptr];", f"st.shared.{TYPES[kind].store} [%slot], %initial;"])


def uncontended_atomic_probes():
    probes = []
    for op, type_name in UNCONTENDED_ATOMICS:
        kind, ins, operands = uncontended_ins(op, type_name)
        instruction = f"atom.global.{op}.{type_name}"
        probes.append(Probe(kernel_name(instruction), [f"{instruction} %d, [%in0_ptr], {operands};"], ins, [kind]))
        decls, setup = shared_slot_setup(kind)
        instruction = f"atom.shared.{op}.{type_name}"
        body = setup + [f"{instruction} %d, [%slot], {operands};", f"ld.shared.{TYPES[kind].load} %e, [%slot];"]
        probes.append(Probe(kernel_name(instruction), body, ins, [kind, kind], decls=decls))
    for op, type_name in UNCONTENDED_REDUCTIONS:
        kind, ins, operands = uncontended_ins(op, type_name)
        instruction = f"red.global.{op}.{type_name}"
        probes.append(Probe(kernel_name(instruction), [f"{instruction} [%in0_ptr], {operands};"], ins, []))
        decls, setup = shared_slot_setup(kind)
        instruction = f"red.shared.{op}.{type_name}"
        body = setup + [f"{instruction} [%slot], {operands};", f"ld.shared.{TYPES[kind].load} %d, [%slot];"]
        probes.append(Probe(kernel_name(instruction), body, ins, [kind], decls=decls))
    for instruction, type_name in (("atom.relaxed.gpu.global.add", "u32"), ("atom.acq_rel.sys.global.cas", "b32"),
                                   ("atom.release.gpu.global.max", "s64"), ("atom.acquire.cta.global.exch", "b64"),
                                   ("atom.add", "f32"), ("atom.relaxed.sys.min", "u32")):
        op = instruction.split(".")[-1]
        kind, ins, operands = uncontended_ins(op, type_name)
        generic = not any(space in instruction for space in (".global", ".shared"))
        body = [f"{instruction}.{type_name} %d, [%in0_ptr], {operands};"]
        decls = []
        if generic:
            decls = [".reg .b64 %generic;"]
            body = ["ld.param.u64 %generic, [in0];", f"add.s64 %generic, %generic, %offset{element_bytes(kind)};",
                    f"{instruction}.{type_name} %d, [%generic], {operands};"]
        probes.append(Probe(kernel_name(f"{instruction}.{type_name}") + ("_generic_global" if generic else ""),
                            body, ins, [kind], decls=decls))
    for instruction, type_name in (("atom.acquire.cta.shared::cta.exch", "b32"), ("atom.add", "u32"),
                                   ("atom.add", "f32"), ("atom.cas", "b64"), ("red.release.sys.shared::cta.add", "f32")):
        op = instruction.split(".")[-1]
        kind, ins, operands = uncontended_ins(op, type_name)
        decls, setup = shared_slot_setup(kind)
        generic = "shared" not in instruction
        address = "%slot"
        if generic:
            decls += [".reg .b64 %generic;"]
            setup += ["cvt.u64.u32 %generic, %slot;", "cvta.shared.u64 %generic, %generic;"]
            address = "%generic"
        destination = "" if instruction.startswith("red") else "%d, "
        body = setup + [f"{instruction}.{type_name} {destination}[{address}], {operands};",
                        f"ld.shared.{TYPES[kind].load} %{'d' if destination == '' else 'e'}, [%slot];"]
        outs = [kind] if destination == "" else [kind, kind]
        probes.append(Probe(kernel_name(f"{instruction}.{type_name}") + ("_generic_shared" if generic else ""),
                            body, ins, outs, decls=decls))
    return probes


CONTENDED_ATOMICS = (("add", "u32"), ("add", "u64"), ("add", "f32"), ("add", "f64"), ("add.noftz", "f16"),
                     ("add.noftz", "bf16"), ("add.noftz", "f16x2"), ("add.noftz", "bf16x2"), ("min", "u32"),
                     ("min", "s32"), ("max", "u32"), ("max", "s32"), ("min", "u64"), ("max", "s64"), ("and", "b32"),
                     ("or", "b32"), ("xor", "b32"), ("and", "b64"), ("or", "b64"), ("xor", "b64"), ("inc", "u32"),
                     ("dec", "u32"), ("exch", "b32"), ("exch", "b64"), ("cas", "b32"), ("cas", "b64"))
CONTENDED_REDUCTIONS = (("add", "u32"), ("add", "f32"), ("max", "s32"), ("xor", "b32"), ("add.noftz", "f16x2"))
CONTENDED_DATA = {"u32": "u32", "s32": "u32", "b32": "u32", "u64": "u64", "s64": "u64", "b64": "u64",
                  "f32": "f32", "f64": "f64", "f16": "f16", "bf16": "bf16", "f16x2": "f16x2", "bf16x2": "bf16x2"}
CONTENDED_GRID = [4, 1, 1]


def contended_probe(space, op, type_name, reduction=False):
    kind = CONTENDED_DATA[type_name]
    size = element_bytes(kind)
    load, store, register = TYPES[kind].load, TYPES[kind].store, TYPES[kind].register
    memory = f"contend_{kind}_mem"
    ins = [("&" + kind, memory), (kind, f"contend_{kind}_val")]
    decls = [".reg .b32 %lane_slot, %slot;", ".reg .b64 %slot_offset, %slot_ptr;", ".reg .pred %leader;",
             f".reg .{register} %old, %final;"]
    scalars = [("slots", "u32", 1)]
    extra, summary_body = [], []
    summary_type = {"inc": "u32", "dec": "u32", "exch": kind, "cas": "u32"}.get(op)
    if summary_type:
        extra = [("summary", summary_type)]
        decls.append(".reg .b64 %summary_offset, %summary_slot;")
        summary_body = [f"mul.wide.u32 %summary_offset, %slot, {element_bytes(summary_type)};",
                        "add.s64 %summary_slot, %summary_base, %summary_offset;"]
    body = ["rem.u32 %lane_slot, %thread, %slots;", "mad.lo.u32 %slot, %block, %slots, %lane_slot;",
            f"mul.wide.u32 %slot_offset, %slot, {size};", "add.s64 %slot_ptr, %in0_base, %slot_offset;",
            "setp.lt.u32 %leader, %thread, %slots;"] + summary_body
    if space == "shared":
        decls += [f".shared .align 8 .b8 slots_smem[{16 * size}];", ".reg .b32 %shared_slot;",
                  f".reg .{register} %initial;"]
        body += ["mov.u32 %shared_slot, slots_smem;", f"mad.lo.u32 %shared_slot, %lane_slot, {size}, %shared_slot;",
                 f"@%leader ld.global.{load} %initial, [%slot_ptr];",
                 f"@%leader st.shared.{store} [%shared_slot], %initial;", "bar.sync 0;"]
        address = "%shared_slot"
    else:
        address = "%slot_ptr"
    operand = "%bound" if op in ("inc", "dec") else "%b"
    if op in ("inc", "dec"):
        scalars.append(("bound", "u32", 100))
    if op == "cas":
        ins.append(("&" + kind, memory))
        decls += [f".reg .{register} %compare;", ".reg .b64 %compare_ptr;", ".reg .pred %won;", ".reg .b32 %one;"]
        body += ["add.s64 %compare_ptr, %in2_base, %slot_offset;", f"ld.global.{load} %compare, [%compare_ptr];"]
        operand = "%compare, %b"
    if reduction:
        body.append(f"red.{space}.{op}.{type_name} [{address}], {operand};")
    else:
        body.append(f"atom.{space}.{op}.{type_name} %old, [{address}], {operand};")
    if op in ("inc", "dec", "exch"):
        body.append(f"red.global.add.{summary_type} [%summary_slot], %old;")
    if op == "cas":
        body += [f"setp.eq.b{width_of(kind)} %won, %old, %compare;", "selp.u32 %one, 1, 0, %won;",
                 "red.global.add.u32 [%summary_slot], %one;"]
    body.append("bar.sync 0;")
    if space == "global" and op in ("exch", "cas"):
        body.append(f"@%leader atom.global.exch.b{width_of(kind)} %final, [%slot_ptr], 0;")
    if space == "shared":
        body.append(f"@%leader ld.shared.{load} %final, [%shared_slot];")
        if op not in ("exch", "cas"):
            body.append(f"@%leader st.global.{store} [%slot_ptr], %final;")
    if op == "exch":
        body.append(f"@%leader red.global.add.{summary_type} [%summary_slot], %final;")
    name = f"{'red' if reduction else 'atom'}_contended_{space}_{kernel_name(op)}_{type_name}"
    launches = []
    for slots, bound in ((1, 100), (5, 7 if op == "inc" else 0xFFFFFFFF)):
        variant = {"suffix": f"_slots{slots}", "grid": CONTENDED_GRID, "slots": slots,
                   "need": {0: 4 * slots, 2: 4 * slots}, "summary": CONTENDED_SLOTS}
        if op in ("inc", "dec"):
            variant["bound"] = bound
        launches.append(variant)
    return Probe(name, body, ins, [], decls=decls, scalars=scalars, extra_buffers=extra, launches=launches)


def atomic_probes():
    probes = uncontended_atomic_probes()
    for space in ("global", "shared"):
        for op, type_name in CONTENDED_ATOMICS:
            probes.append(contended_probe(space, op, type_name))
        for op, type_name in CONTENDED_REDUCTIONS:
            probes.append(contended_probe(space, op, type_name, reduction=True))
    return probes


# ----------------------------------------------------------------------------------------------
# Warp-level and CTA-level collectives, and special registers.
# ----------------------------------------------------------------------------------------------

SENTINEL = "0xDEADBEEF"
MEMBER_DECLS = [".reg .b32 %lane, %member;", ".reg .pred %outside;"]


def member_guard(mask_register, second_output=False):
    """Lanes whose bit is clear in the member mask skip the collective and keep the sentinels."""
    sentinels = [f"mov.u32 %d, {SENTINEL};"] + (["mov.u32 %e, 2;"] if second_output else [])
    return ["mov.u32 %lane, %laneid;", f"shr.b32 %member, {mask_register}, %lane;", "and.b32 %member, %member, 1;",
            "setp.eq.u32 %outside, %member, 0;"] + sentinels + ["@%outside bra SKIP;"]


def warp_probes():
    probes = []
    masked = [("pred", "warp_pred"), ("u32", "warp_mask")]
    for mode, negate in (("all", ""), ("any", ""), ("uni", ""), ("all", "!")):
        suffix = "_negated" if negate else ""
        body = member_guard("%b") + [f"vote.sync.{mode}.pred %vote, {negate}%a, %b;", "selp.u32 %d, 1, 0, %vote;",
                                     "SKIP:"]
        probes.append(Probe(f"vote_sync_{mode}_pred{suffix}", body, masked, ["u32"],
                            decls=MEMBER_DECLS + [".reg .pred %vote;"]))
        probes.append(Probe(f"vote_sync_{mode}_pred{suffix}_full",
                            [f"vote.sync.{mode}.pred %d, {negate}%a, 0xffffffff;"], masked[:1], ["pred"]))
    for negate in ("", "!"):
        suffix = "_negated" if negate else ""
        body = member_guard("%b") + [f"vote.sync.ballot.b32 %d, {negate}%a, %b;", "SKIP:"]
        probes.append(Probe(f"vote_sync_ballot_b32{suffix}", body, masked, ["u32"], decls=MEMBER_DECLS))
        probes.append(Probe(f"vote_sync_ballot_b32{suffix}_full", [f"vote.sync.ballot.b32 %d, {negate}%a, -1;"],
                            masked[:1], ["u32"]))
    divergent_launches = [{}, {"suffix": "_block45", "grid": [2, 1, 1], "block": [45, 1, 1]}]
    body = ["mov.u32 %d, 0;", "@!%a bra SKIP;", "activemask.b32 %active;", "and.b32 %bit, %b, 1;",
            "setp.ne.u32 %vote_in, %bit, 0;", "vote.sync.ballot.b32 %d, %vote_in, %active;", "SKIP:"]
    probes.append(Probe("vote_sync_ballot_b32_divergent", body, [("pred", "warp_pred"), ("u32", "redux_value")],
                        ["u32"], decls=[".reg .b32 %active, %bit;", ".reg .pred %vote_in;"],
                        launches=divergent_launches))
    body = ["activemask.b32 %e;", "@%a bra TAKEN;", "activemask.b32 %d;", "bra DONE;", "TAKEN:",
            "activemask.b32 %d;", "DONE:"]
    probes.append(Probe("activemask_b32", body, [("pred", "warp_pred")], ["u32", "u32"], launches=divergent_launches))
    probes.append(Probe("activemask_b32_after_exit", ["@!%a exit;", "activemask.b32 %d;"], [("pred", "warp_pred")],
                        ["u32"], launches=divergent_launches))

    shfl_ins = [("u32", "shfl_value"), ("u32", "shfl_lane"), ("u32", "shfl_clamp"), ("u32", "shfl_mask")]
    for mode in ("up", "down", "bfly", "idx"):
        body = member_guard("%x", True) + [f"shfl.sync.{mode}.b32 %d|%in_range, %a, %b, %c, %x;",
                                     "selp.u32 %e, 1, 0, %in_range;", "SKIP:"]
        probes.append(Probe(f"shfl_sync_{mode}_b32", body, shfl_ins, ["u32", "u32"],
                            decls=MEMBER_DECLS + [".reg .pred %in_range;"]))
    for name, text in (("shfl_sync_down_b32_imm", "shfl.sync.down.b32 %d|%e, %a, 16, 0x1f, 0xffffffff;"),
                       ("shfl_sync_up_b32_imm", "shfl.sync.up.b32 %d|%e, %a, 1, 0, 0xffffffff;"),
                       ("shfl_sync_bfly_b32_imm", "shfl.sync.bfly.b32 %d|%e, %a, 3, 31, -1;"),
                       ("shfl_sync_idx_b32_imm_width8", "shfl.sync.idx.b32 %d|%e, %a, 5, 0x181f, -1;")):
        probes.append(Probe(name, [text], shfl_ins[:1], ["u32", "pred"]))
    probes.append(Probe("shfl_sync_idx_b32_no_pred", ["shfl.sync.idx.b32 %d, %a, %b, 0x1f, -1;"], shfl_ins[:2],
                        ["u32"]))

    for width in (32, 64):
        ins = [(f"u{width}", f"match_u{width}"), ("u32", "warp_mask")]
        body = member_guard("%b") + [f"match.any.sync.b{width} %d, %a, %b;", "SKIP:"]
        probes.append(Probe(f"match_any_sync_b{width}", body, ins, ["u32"], decls=MEMBER_DECLS))
        body = member_guard("%b", True) + [f"match.all.sync.b{width} %d|%all_equal, %a, %b;",
                                     "selp.u32 %e, 1, 0, %all_equal;", "SKIP:"]
        probes.append(Probe(f"match_all_sync_b{width}", body, ins, ["u32", "u32"],
                            decls=MEMBER_DECLS + [".reg .pred %all_equal;"]))
    for op, type_name in (("add", "u32"), ("add", "s32"), ("min", "u32"), ("min", "s32"), ("max", "u32"),
                          ("max", "s32"), ("and", "b32"), ("or", "b32"), ("xor", "b32")):
        body = member_guard("%b") + [f"redux.sync.{op}.{type_name} %d, %a, %b;", "SKIP:"]
        probes.append(Probe(f"redux_sync_{op}_{type_name}", body, [("u32", "redux_value"), ("u32", "warp_mask")],
                            ["u32"], decls=MEMBER_DECLS))

    block = [("pred", "block_pred")]
    for name, text, out in (("bar_red_popc_u32", "bar.red.popc.u32 %d, 0, %a;", "u32"),
                            ("bar_red_popc_u32_count", "bar.red.popc.u32 %d, 2, 256, %a;", "u32"),
                            ("bar_red_and_pred", "bar.red.and.pred %d, 0, %a;", "pred"),
                            ("bar_red_or_pred", "bar.red.or.pred %d, 1, %a;", "pred"),
                            ("bar_red_or_pred_negated", "bar.red.or.pred %d, 3, !%a;", "pred"),
                            ("barrier_cta_red_and_aligned_pred", "barrier.cta.red.and.aligned.pred %d, 0, %a;", "pred"),
                            ("barrier_red_popc_aligned_u32", "barrier.red.popc.aligned.u32 %d, 5, %a;", "u32")):
        probes.append(Probe(name, [text], block, [out]))
    return probes


SPECIAL_REGISTERS = ("%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y",
                     "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%lanemask_eq", "%lanemask_lt",
                     "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%dynamic_smem_size", "%total_smem_size")
SREG_SHAPES = (([2, 3, 2], [8, 4, 2], 0), ([3, 1, 1], [5, 3, 3], 0), ([1, 2, 3], [33, 1, 1], 256),
               ([2, 1, 1], [4, 4, 4], 1000), ([1, 1, 1], [1024, 1, 1], 0))


def sreg_probes():
    count = len(SPECIAL_REGISTERS)
    decls = [".reg .b32 %value, %linear_block, %linear_thread, %block_size, %linear, %slot;",
             ".reg .b32 %s<12>;", ".reg .b64 %slot_offset, %slot_ptr;", ".reg .pred %first;",
             ".shared .align 4 .b8 static_bytes[100];"]
    body = ["mov.u32 %s0, %tid.x;", "mov.u32 %s1, %tid.y;", "mov.u32 %s2, %tid.z;", "mov.u32 %s3, %ntid.x;",
            "mov.u32 %s4, %ntid.y;", "mov.u32 %s5, %ntid.z;", "mov.u32 %s6, %ctaid.x;", "mov.u32 %s7, %ctaid.y;",
            "mov.u32 %s8, %ctaid.z;", "mov.u32 %s9, %nctaid.x;", "mov.u32 %s10, %nctaid.y;",
            "mad.lo.u32 %linear_block, %s8, %s10, %s7;", "mad.lo.u32 %linear_block, %linear_block, %s9, %s6;",
            "mul.lo.u32 %block_size, %s3, %s4;", "mul.lo.u32 %block_size, %block_size, %s5;",
            "mad.lo.u32 %linear_thread, %s2, %s4, %s1;", "mad.lo.u32 %linear_thread, %linear_thread, %s3, %s0;",
            "mad.lo.u32 %linear, %linear_block, %block_size, %linear_thread;",
            "setp.eq.u32 %first, %linear_thread, 0;", "@%first st.shared.u32 [static_bytes], %linear;",
            f"mul.lo.u32 %slot, %linear, {count};", "mul.wide.u32 %slot_offset, %slot, 4;",
            "add.s64 %slot_ptr, %out0_base, %slot_offset;"]
    for position, register in enumerate(SPECIAL_REGISTERS):
        body += [f"mov.u32 %value, {register};", f"st.global.u32 [%slot_ptr+{4 * position}], %value;"]
    launches = []
    for grid, block, shared in SREG_SHAPES:
        threads = math.prod(grid) * math.prod(block)
        launches.append({"suffix": "_grid" + "x".join(map(str, grid)) + "_block" + "x".join(map(str, block)),
                         "threads": threads, "grid": grid, "block": block, "shared": shared,
                         "out0": threads * count})
    return [Probe("special_registers", body, [], [], decls=decls, extra_buffers=[("out0", "u32")],
                  launches=launches)]


# ----------------------------------------------------------------------------------------------
# Assembly of the directory, and its validation.
# ----------------------------------------------------------------------------------------------

FAMILIES = {
    "int_arith.ptx": ("integer add/sub/mul/mad/div/rem/min/max/abs/neg/sad, dp4a/dp2a, carry chains",
                      int_arith_probes),
    "bits.ptx": ("popc, clz, bfind, brev, bfe, bfi, prmt, shf, shl/shr, logic, lop3, bmsk, szext, fns", bits_probes),
    "compare.ptx": ("setp, set, selp, slct on integers and floats", compare_probes),
    "fp32.ptx": ("f32 arithmetic with every rounding modifier, .ftz, .sat, and the .approx functions", fp32_probes),
    "fp64.ptx": ("f64 arithmetic with every rounding modifier and the f64 approximations", fp64_probes),
    "half.ptx": ("f16, f16x2, bf16, bf16x2 arithmetic and approximations", half_probes),
    "cvt.ptx": ("cvt between every integer and float type, packs, cvt.pack", cvt_probes),
    "mov.ptx": ("mov packing and unpacking, immediate operand syntax", mov_probes),
    "atomics.ptx": ("atom and red on global and shared memory, uncontended and contended", atomic_probes),
    "warp.ptx": ("vote, shfl, activemask, match, redux, bar.red", warp_probes),
    "sreg.ptx": ("special registers in 3D grids and blocks", sreg_probes),
}


def build():
    """(PTX text per file, launches.json object, datasets used, probes by kernel, expected arg lengths)."""
    datasets = build_datasets()
    texts, launches, probes_by_name, lengths = {}, [], {}, {}
    used = set()
    for file_name, (description, family) in FAMILIES.items():
        kernels = []
        for probe in family():
            assert probe.name not in probes_by_name, probe.name
            probe.file = file_name
            probes_by_name[probe.name] = probe
            kernels.append(render_kernel(probe))
            used.update(dataset for _, dataset in probe.ins)
            for record, arg_lengths in launch_records(probe, datasets):
                launches.append(record)
                lengths[record["name"]] = arg_lengths
        texts[file_name] = (f"// Instruction probes: {description}.\n// Generated by tools/make_probes.py; "
                            f"edit the generator, not this file.\n" + PTX_HEADER + "\n" + "\n".join(kernels))
    names = [record["name"] for record in launches]
    assert len(names) == len(set(names)), "duplicate launch names"
    spec = {"ptx": next(iter(FAMILIES)), "launches": launches}
    return texts, spec, {name: datasets[name] for name in sorted(used)}, probes_by_name, lengths


def launches_text(spec):
    """launches.json with one launch per line."""
    rows = ",\n".join("  " + json.dumps(record) for record in spec["launches"])
    return f'{{\n "ptx": {json.dumps(spec["ptx"])},\n "launches": [\n{rows}\n ]\n}}\n'


def write_all():
    texts, spec, datasets, _, _ = build()
    INPUT_DIR.mkdir(parents=True, exist_ok=True)
    for file_name, text in texts.items():
        (PROBE_DIR / file_name).write_text(text)
    (PROBE_DIR / "launches.json").write_text(launches_text(spec))
    for stale in INPUT_DIR.glob("*.npy"):
        if stale.stem not in datasets:
            stale.unlink()
    for name, array in datasets.items():
        np.save(INPUT_DIR / f"{name}.npy", array)
    print(f"wrote {len(texts)} PTX files, {len(spec['launches'])} launches, {len(datasets)} input arrays")


ENTRY_PATTERN = re.compile(r"\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)\s*\{", re.S)
PARAM_PATTERN = re.compile(r"\.param\s+\.(\w+)\s+(\w+)")


def kernel_params(ptx_text):
    return {name: PARAM_PATTERN.findall(params) for name, params in ENTRY_PATTERN.findall(ptx_text)}


def check_launch(record, params, probe, arg_lengths, problems):
    where = f"launch {record['name']}"
    if len(record["args"]) != len(params):
        problems.append(f"{where}: {len(record['args'])} args for {len(params)} parameters")
        return 0
    for dims in (record["grid"], record["block"]):
        if not (1 <= len(dims) <= 3 and all(isinstance(n, int) and n > 0 for n in dims)):
            problems.append(f"{where}: bad dimensions {dims}")
    if math.prod(record["block"]) > 1024:
        problems.append(f"{where}: more than 1024 threads per block")
    buffer_bytes = 0
    input_dtypes = [probe.in_dtype(k) for k in range(len(probe.ins))]
    output_dtypes = [probe.out_dtype(k) for k in range(len(probe.outs))] + [d for _, d in probe.extra_buffers]
    expected_dtypes = input_dtypes + output_dtypes
    for position, (arg, (ptx_type, param_name), need) in enumerate(zip(record["args"], params, arg_lengths)):
        label = f"{where}: arg {position} ({param_name})"
        if ptx_type != "u64":
            dtype, _, value = arg.partition(":")
            if dtype != ptx_type or not value.lstrip("-").isdigit():
                problems.append(f"{label}: scalar {arg!r} does not fit .param .{ptx_type}")
            continue
        if arg.startswith("@"):
            path = PROBE_DIR / arg[1:]
            if not path.is_file():
                problems.append(f"{label}: missing {path.relative_to(ROOT)}")
                continue
            array = np.load(path)
            dtype, count = DTYPE_NAME.get(array.dtype), array.size
        elif arg.startswith("zeros:"):
            _, dtype, count = arg.split(":")
            count = int(count)
        else:
            problems.append(f"{label}: {arg!r} is not a buffer")
            continue
        if dtype not in ARG_DTYPES:
            problems.append(f"{label}: dtype {dtype} is not a launch-spec dtype")
        if position < len(expected_dtypes) and dtype != expected_dtypes[position]:
            problems.append(f"{label}: dtype {dtype}, kernel reads {expected_dtypes[position]}")
        if count < need or (arg.startswith("zeros:") and count != need):
            problems.append(f"{label}: {count} elements, needs {need}")
        buffer_bytes += count * np.dtype(NUMPY_DTYPE[dtype]).itemsize if dtype in NUMPY_DTYPE else 0
    tolerance = record.get("tolerance")
    if tolerance is not None:
        if len(tolerance) != 1 or next(iter(tolerance)) not in ("ulp", "rel", "abs"):
            problems.append(f"{where}: bad tolerance {tolerance}")
        if not record.get("note"):
            problems.append(f"{where}: tolerance without a note")
        if any(d not in ("f16", "f32", "f64") for d in output_dtypes):
            problems.append(f"{where}: tolerance on non-float outputs")
    return buffer_bytes


def check_all(run_ptxas):
    texts, spec, datasets, probes, lengths = build()
    problems = []
    for file_name, text in texts.items():
        path = PROBE_DIR / file_name
        if not path.is_file() or path.read_text() != text:
            problems.append(f"{path.relative_to(ROOT)} is missing or stale: rerun tools/make_probes.py")
    launches_path = PROBE_DIR / "launches.json"
    on_disk = json.loads(launches_path.read_text()) if launches_path.is_file() else None
    if on_disk != json.loads(launches_text(spec)):
        problems.append("launches.json is missing or stale: rerun tools/make_probes.py")
    present = {path.stem for path in INPUT_DIR.glob("*.npy")}
    for extra in sorted(present - set(datasets)):
        problems.append(f"inputs/{extra}.npy is not used by any launch")
    for name, array in datasets.items():
        path = INPUT_DIR / f"{name}.npy"
        if path.is_file():
            stored = np.load(path)
            if stored.dtype != array.dtype or stored.tobytes() != array.tobytes():
                problems.append(f"inputs/{name}.npy differs from what the generator makes")
    params_by_file = {}
    for file_name in {record["ptx"] for record in (on_disk or spec)["launches"]}:
        path = PROBE_DIR / file_name
        params_by_file[file_name] = kernel_params(path.read_text()) if path.is_file() else {}
    expected_bytes = 0
    for record in (on_disk or spec)["launches"]:
        params = params_by_file.get(record.get("ptx", (on_disk or spec)["ptx"]), {}).get(record["kernel"])
        probe = probes.get(record["kernel"])
        if params is None or probe is None or record["name"] not in lengths:
            problems.append(f"launch {record['name']}: kernel {record['kernel']} not found in {record.get('ptx')}")
            continue
        expected_bytes += check_launch(record, params, probe, lengths[record["name"]], problems)
    if run_ptxas:
        for file_name in texts:
            result = subprocess.run([run_ptxas, "-arch=sm_90", str(PROBE_DIR / file_name), "-o", "/dev/null"],
                                    capture_output=True, text=True)
            if result.returncode != 0 or result.stderr.strip():
                problems.append(f"ptxas {file_name}: {result.stderr.strip()[:2000]}")
    input_bytes = sum(path.stat().st_size for path in INPUT_DIR.glob("*.npy"))
    kernel_count = sum(len(kernel_params(text)) for text in texts.values())
    print(f"{len(texts)} PTX files, {kernel_count} kernels, {len(spec['launches'])} launches; inputs "
          f"{input_bytes / 1e6:.2f} MB in {len(present)} files; buffers a GPU run saves: {expected_bytes / 1e6:.2f} MB"
          + ("; ptxas checked every file" if run_ptxas else "; ptxas not found, assembly not checked"))
    for problem in problems:
        print("PROBLEM:", problem)
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="validate the checked-in probes instead of writing them (exit status 1 on problems)")
    arguments = parser.parse_args()
    if arguments.check:
        sys.exit(0 if check_all(shutil.which("ptxas")) else 1)
    write_all()


if __name__ == "__main__":
    main()

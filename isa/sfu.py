"""The H100's special-function unit (MUFU) as pure numpy functions over raw bits, from tables read off the card.

Every function here takes and returns raw codes (np.uint32 for f32 and for the upper word of an f64,
np.uint16 for f16/bf16) and models one SASS instruction, flush-to-zero included; isa.fp builds the PTX
instructions from them and the IEEE instructions ptxas puts around them. How the unit was measured and
why these models are exact: docs/sfu.md. The tables live in isa/sfu_data/tables.npz (each table's
successive differences, loaded on first use); tools/sfu_capture.py regenerates them on an H100 and
records the card and driver beside them in meta.json.

- RCP, RSQ, SQRT (and RCP64H, RSQ64H on the 1.11.20 upper word of a double): a table indexed by the
  mantissa (and, for the square roots, the exponent's parity), its exponent moved by the input's.
- EX2: |x| as a fixed-point number with 24 fraction bits, truncated; 2**integer part times a table
  entry indexed by the (two's complement) fraction, one table for negative and one for positive x.
- LG2: a table for 1 <= x < 2 and one for 1/2 <= x < 1; elsewhere exponent + log2(mantissa) truncated
  toward zero, log2(mantissa) taken to 2**-23 from the first table.
- SIN, COS (of turns): the turns as a fixed-point number with 25 fraction bits, truncated; a table of sine
  over half a turn serves both (sin of the second half turn is minus the first, cos is sin a quarter
  turn on).
- TANH: odd; x below 2**-8 in magnitude is returned as is, 8 and above give 1; in between a table per
  binade indexed by the leading 17 to 21 mantissa bits.
- EX2 and TANH on f16/bf16: the whole 2**16-entry table.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "sfu_data"
TABLES = DATA / "tables.npz"
CANONICAL_NAN = np.uint32(0x7FFFFFFF)
_U32 = np.uint32
_I64 = np.int64

EX2_FRACTION_BITS = 24
TURN_FRACTION_BITS = 25
# tanh: binade (unbiased exponent) -> leading mantissa bits its output depends on (measured exhaustively)
TANH_INDEX_BITS = {-8: 17, -7: 17, -6: 17, -5: 18, -4: 18, -3: 19, -2: 19, -1: 19, 0: 20, 1: 21, 2: 20}
HALF_TABLES = ("ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16")


# ---- table files ------------------------------------------------------------------------------------

_ESCAPE = -128


def encode_tables(tables: dict) -> dict:
    """Arrays for np.savez_compressed holding tables of output codes: each table's successive differences
    (row-major, from 0) as int8, with the few that do not fit (marked -128) listed beside them."""
    arrays = {}
    for name, codes in tables.items():
        codes = np.asarray(codes)
        steps = np.diff(codes.astype(_I64).reshape(-1), prepend=0)
        escape = np.flatnonzero((steps < _ESCAPE + 1) | (steps > 127))
        arrays[f"{name}_steps"] = np.where((steps > _ESCAPE) & (steps <= 127), steps, _ESCAPE).astype(
            np.int8).reshape(codes.shape)
        arrays[f"{name}_escape_index"] = escape.astype(_I64)
        arrays[f"{name}_escape_value"] = steps[escape]
    return arrays


def write_tables(tables: dict, path: Path = TABLES) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **encode_tables(tables))


def read_table(name: str, path: Path = TABLES) -> np.ndarray:
    """Table `name` of `path` (output codes; uint16 for the f16/bf16 units, uint32 otherwise)."""
    with np.load(path, allow_pickle=False) as data:
        steps = data[f"{name}_steps"]
        escape_index, escape_value = data[f"{name}_escape_index"], data[f"{name}_escape_value"]
    flat = steps.astype(_I64).reshape(-1)
    flat[escape_index] = escape_value
    dtype = np.uint16 if name.startswith("half_") else np.uint32
    return np.cumsum(flat).astype(dtype).reshape(steps.shape)


def tanh_grid() -> np.ndarray:
    """The inputs (float64) of the tanh table, binade after binade, each at its index resolution."""
    parts = []
    for exponent, bits in TANH_INDEX_BITS.items():
        parts.append((1.0 + np.arange(1 << bits, dtype=np.float64) / (1 << bits)) * 2.0 ** exponent)
    return np.concatenate(parts)


_SHIFT_SHAPES = {"rcp": ("rcp", 23, 1), "rsqrt": ("rsqrt", 23, 2), "sqrt": ("sqrt", 23, 2),
                 "rcp64h": ("rcp", 20, 1), "rsq64h": ("rsqrt", 20, 2)}


@functools.lru_cache(maxsize=None)
def _shift_table(label):
    """RCP/RSQ/SQRT table, flattened: row `parity` << mantissa_bits | mantissa -> output code."""
    return read_table(label).reshape(-1)


@functools.lru_cache(maxsize=None)
def _ex2_table(sign):
    return read_table(f"ex2_{sign}")


@functools.lru_cache(maxsize=None)
def _sine_table():
    return read_table("sin")


@functools.lru_cache(maxsize=None)
def _lg2_tables():
    """LG2 tables (rows 1 <= x < 2 and 1/2 <= x < 1), and log2(1.m) truncated to 2**-23 (float64) from the
    first."""
    tables = read_table("lg2")
    truncated = np.floor(tables[0].view(np.float32).astype(np.float64) * 2.0 ** 23) * 2.0 ** -23
    return tables, truncated


@functools.lru_cache(maxsize=None)
def _tanh_table():
    """The tanh table, and per binade -8..2 its start in the table and its index width."""
    widths = np.array(list(TANH_INDEX_BITS.values()), dtype=_U32)
    starts = np.concatenate([[0], np.cumsum(np.left_shift(1, widths.astype(_I64)))[:-1]]).astype(np.intp)
    return read_table("tanh"), starts, widths


@functools.lru_cache(maxsize=None)
def _half_table(name):
    return read_table(f"half_{name}")


# ---- shared pieces ---------------------------------------------------------------------------------

def _codes(x) -> np.ndarray:
    """Raw codes as a 1-d uint32 array (callers restore the shape)."""
    return np.asarray(x).astype(_U32).reshape(-1)


def _finish(out, x) -> np.ndarray:
    return out.astype(_U32).reshape(np.shape(x))


def _subset(mask):
    return np.flatnonzero(mask)


def _moved(entry, offset, mantissa_bits, exponent_max):
    """Table entries (positive codes) with `offset` (int32) added to their exponent: 0 below the normal
    range, infinity above it."""
    exponent = (entry >> _U32(mantissa_bits)).astype(np.int32) + offset
    moved = (entry & _U32((1 << mantissa_bits) - 1)) | (exponent.astype(_U32) << _U32(mantissa_bits))
    moved = np.where(exponent < 1, _U32(0), moved)
    return np.where(exponent >= exponent_max, _U32(exponent_max << mantissa_bits), moved)


def _shift_unit(x, label):
    """RCP/RSQ/SQRT on f32 codes (mantissa_bits 23) or f64 upper words (20)."""
    kind, mantissa_bits, parity_count = _SHIFT_SHAPES[label]
    exponent_max = 255 if mantissa_bits == 23 else 2047
    bias = exponent_max >> 1
    infinity = _U32(exponent_max << mantissa_bits)
    table = _shift_table(label)
    codes = _codes(x)
    biased = ((codes >> _U32(mantissa_bits)) & _U32(exponent_max)).astype(np.int32)
    exponent = biased - bias
    if parity_count == 2:
        parity = exponent & 1
        index = (codes & _U32((1 << mantissa_bits) - 1)).astype(np.intp) | (parity.astype(np.intp) << mantissa_bits)
        half = (exponent - parity) >> 1
        offset = half if kind == "sqrt" else -half
    else:
        index = (codes & _U32((1 << mantissa_bits) - 1)).astype(np.intp)
        offset = -exponent
    out = _moved(table[index], offset, mantissa_bits, exponent_max)
    sign = codes & _U32(0x80000000)
    if kind == "rcp":
        out |= sign
    special = _subset((biased == 0) | (biased == exponent_max) | ((sign != 0) & (kind != "rcp")))
    if special.size:
        c, b, s = codes[special], biased[special], sign[special]
        nan = (b == exponent_max) & ((c & _U32((1 << mantissa_bits) - 1)) != 0)
        if kind == "rcp":
            fixed = np.where(b == 0, infinity | s, s)
        elif kind == "rsqrt":
            fixed = np.where(b == 0, infinity | s, np.where(s != 0, CANONICAL_NAN, _U32(0)))
        else:
            fixed = np.where(b == 0, s, np.where(s != 0, CANONICAL_NAN, infinity))
        out[special] = np.where(nan, CANONICAL_NAN, fixed)
    return _finish(out, x)


# ---- the units -------------------------------------------------------------------------------------

def rcp(x) -> np.ndarray:
    """MUFU.RCP: 1/x; subnormal inputs count as zero (1/+-0 = +-inf), results below 2**-126 flush to +-0."""
    return _shift_unit(x, "rcp")


def rsq(x) -> np.ndarray:
    """MUFU.RSQ: 1/sqrt(x); +-0 and subnormals give +-inf, negative x NaN, +inf gives +0."""
    return _shift_unit(x, "rsqrt")


def sqrt(x) -> np.ndarray:
    """MUFU.SQRT: sqrt(x); +-0 and subnormals give +-0, negative x NaN, +inf gives +inf."""
    return _shift_unit(x, "sqrt")


def rcp64h(high) -> np.ndarray:
    """MUFU.RCP64H: the upper word of 1/x from the upper word (1.11.20) of a double x."""
    return _shift_unit(high, "rcp64h")


def rsq64h(high) -> np.ndarray:
    """MUFU.RSQ64H: the upper word of 1/sqrt(x) from the upper word of a double x."""
    return _shift_unit(high, "rsq64h")


def _fixed_point(codes, fraction_bits):
    """trunc(x * 2**fraction_bits) for finite f32 codes x, as float64 integers (exact); 0 for subnormal x,
    which the unit flushes (their products are below 1 anyway)."""
    return np.trunc(codes.view(np.float32).astype(np.float64) * float(1 << fraction_bits))


def _ex2_side(codes, sign):
    """MUFU.EX2 of in-range codes (|x| < 128) that all have the given sign."""
    scaled = np.abs(codes.view(np.float32).astype(np.float64)) * float(1 << EX2_FRACTION_BITS)
    quantised = np.trunc(scaled).astype(_I64)
    signed = -quantised if sign == "negative" else quantised
    index = (signed & ((1 << EX2_FRACTION_BITS) - 1)).astype(np.intp)
    return _moved(_ex2_table(sign)[index], (signed >> EX2_FRACTION_BITS).astype(np.int32), 23, 255)


def ex2(x) -> np.ndarray:
    """MUFU.EX2: 2**x; results below 2**-126 flush to +0, 2**128 and above give +inf, subnormal x gives 1."""
    codes = _codes(x)
    magnitude = codes & _U32(0x7FFFFFFF)
    negative = codes >= _U32(0x80000000)
    in_range = magnitude < _U32(0x43000000)
    inside = np.where(in_range, codes, codes & _U32(0x80000000))
    if negative.all():
        out = _ex2_side(inside, "negative")
    elif not negative.any():
        out = _ex2_side(inside, "positive")
    else:
        out = np.empty(codes.shape, _U32)
        for sign, where in (("negative", np.flatnonzero(negative)), ("positive", np.flatnonzero(~negative))):
            out[where] = _ex2_side(inside[where], sign)
    outside = _subset(~in_range)
    if outside.size:
        m, n = magnitude[outside], negative[outside]
        out[outside] = np.where(m > _U32(0x7F800000), CANONICAL_NAN, np.where(n, _U32(0), _U32(0x7F800000)))
    return _finish(out, x)


def _truncate_to_f32(value):
    """f32 codes of float64 values rounded toward zero."""
    nearest = value.astype(np.float32)
    codes = nearest.view(_U32)
    return np.where(np.abs(nearest.astype(np.float64)) > np.abs(value), codes - _U32(1), codes)


def lg2(x) -> np.ndarray:
    """MUFU.LG2: log2(x); +-0 and subnormals give -inf, negative x NaN, +inf gives +inf."""
    codes = _codes(x)
    tables, truncated = _lg2_tables()
    biased = ((codes >> _U32(23)) & _U32(255)).astype(np.int32)
    mantissa = (codes & _U32(0x7FFFFF)).astype(np.intp)
    exponent = biased - 127
    out = _truncate_to_f32(exponent + (truncated[mantissa] + 2.0 ** -24))
    near = _subset((exponent == 0) | (exponent == -1))
    if near.size:
        out[near] = tables[(exponent[near] == -1).astype(np.intp), mantissa[near]]
    special = _subset((biased == 0) | (biased == 255) | (codes >= _U32(0x80000000)))
    if special.size:
        c, b = codes[special], biased[special]
        fixed = np.where(b == 0, _U32(0xFF800000), np.where(c >= _U32(0x80000000), CANONICAL_NAN, _U32(0x7F800000)))
        out[special] = np.where((c & _U32(0x7FFFFFFF)) > _U32(0x7F800000), CANONICAL_NAN, fixed)
    return _finish(out, x)


def _turn_index(codes):
    finite = (codes & _U32(0x7FFFFFFF)) < _U32(0x7F800000)
    turns = np.abs(_fixed_point(np.where(finite, codes, _U32(0)), TURN_FRACTION_BITS))
    return np.fmod(turns, float(1 << TURN_FRACTION_BITS)).astype(_I64)


def _sine_of_index(index):
    half = 1 << (TURN_FRACTION_BITS - 1)
    value = _sine_table()[(index & (half - 1)).astype(np.intp)]
    return value ^ ((index >= half).astype(_U32) << _U32(31))


def _turn_unit(t, cosine):
    codes = _codes(t)
    index = _turn_index(codes)
    if cosine:
        out = _sine_of_index((index + (1 << (TURN_FRACTION_BITS - 2))) & ((1 << TURN_FRACTION_BITS) - 1))
    else:
        out = _sine_of_index(index) ^ (codes & _U32(0x80000000))
    return _finish(np.where((codes & _U32(0x7FFFFFFF)) >= _U32(0x7F800000), CANONICAL_NAN, out), t)


def sin(t) -> np.ndarray:
    """MUFU.SIN of t turns: sin(2 pi t); subnormal t gives +-0, infinite t NaN."""
    return _turn_unit(t, cosine=False)


def cos(t) -> np.ndarray:
    """MUFU.COS of t turns: cos(2 pi t); subnormal t gives 1, infinite t NaN."""
    return _turn_unit(t, cosine=True)


def tanh(x) -> np.ndarray:
    """MUFU.TANH: tanh(x); subnormals, zeros and |x| < 2**-8 pass through, |x| >= 8 and +-inf give +-1."""
    codes = _codes(x)
    table, starts, widths = _tanh_table()
    magnitude = codes & _U32(0x7FFFFFFF)
    exponent = (magnitude >> _U32(23)).astype(np.int32) - 127
    row = (np.clip(exponent, -8, 2) + 8).astype(np.intp)
    index = starts[row] + ((magnitude & _U32(0x7FFFFF)) >> (_U32(23) - widths[row])).astype(np.intp)
    value = np.where(exponent < -8, magnitude, np.where(exponent > 2, _U32(0x3F800000), table[index]))
    out = value | (codes & _U32(0x80000000))
    return _finish(np.where(magnitude > _U32(0x7F800000), CANONICAL_NAN, out), x)


def half(name: str, codes) -> np.ndarray:
    """MUFU.EX2/TANH .F16/.BF16 (name ex2_f16, ex2_bf16, tanh_f16, tanh_bf16) on 16-bit codes."""
    if name not in HALF_TABLES:
        raise ValueError(f"no MUFU half table {name!r}")
    return _half_table(name)[np.asarray(codes).astype(np.uint16).astype(_I64)]

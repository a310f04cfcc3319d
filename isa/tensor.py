"""Tensor-core and asynchronous-barrier instructions as pure functions: fragment layouts of mma.sync/wmma, the
H100's tensor-core summation (fitted bit for bit on the H100; docs/tensor-cores.md), register words to element
values and back, and the mbarrier object's 64-bit state word."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from isa import fp, halfbits


def element_values(words: np.ndarray, kind: str) -> np.ndarray:
    """Register words of one fragment (lanes × registers) → float64 element values, two per word for 16-bit types."""
    if kind in ("f16", "bf16"):
        halves = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=-1).astype(np.uint16)
        halves = halves.reshape(words.shape[0], -1)
        if kind == "f16":
            return halves.view(np.float16).astype(np.float64)
        return (halves.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if kind == "tf32":
        return (words & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if kind == "f32":
        return words.view(np.float32).astype(np.float64)
    if kind == "f64":
        return words.view(np.float64)
    if kind in ("u8", "s8"):
        octets = np.ascontiguousarray(words.astype(np.uint32)).view(np.uint8).reshape(words.shape[0], -1)
        return (octets.view(np.int8) if kind == "s8" else octets).astype(np.float64)
    if kind == "s32":
        return words.astype(np.uint32).view(np.int32).astype(np.float64)
    raise ValueError(kind)


def fragment_layout(shape: str, kind: str, role: str):
    """(row, column) of each fragment element per lane: arrays of shape (32, elements)."""
    lane = np.arange(32)
    group, tig = lane >> 2, lane & 3
    if shape == "m8n8k4":
        if role == "a":
            return group[:, None], tig[:, None]
        if role == "b":
            return tig[:, None], group[:, None]
        return group[:, None], np.stack([tig * 2, tig * 2 + 1], axis=1)
    if role == "c":
        rows = np.stack([group, group, group + 8, group + 8], axis=1)
        cols = np.stack([tig * 2, tig * 2 + 1, tig * 2, tig * 2 + 1], axis=1)
        return rows, cols
    k = int(shape.split("k")[1])
    if kind == "tf32":
        if role == "a":
            rows = np.stack([group, group + 8, group, group + 8], axis=1)[:, :k // 2]
            cols = np.stack([tig, tig, tig + 4, tig + 4], axis=1)[:, :k // 2]
            return rows, cols
        return np.stack([tig, tig + 4], axis=1)[:, :k // 4], np.stack([group, group], axis=1)[:, :k // 4]
    if role == "a":
        base_rows = [group, group, group + 8, group + 8, group, group, group + 8, group + 8]
        base_cols = [tig * 2, tig * 2 + 1, tig * 2, tig * 2 + 1, tig * 2 + 8, tig * 2 + 9, tig * 2 + 8, tig * 2 + 9]
        count = k // 2
        return np.stack(base_rows[:count], axis=1), np.stack(base_cols[:count], axis=1)
    base_rows = [tig * 2, tig * 2 + 1, tig * 2 + 8, tig * 2 + 9]
    count = k // 4
    return np.stack(base_rows[:count], axis=1), np.stack([group] * count, axis=1)


ALIGNMENT_BITS = {"f16": 25, "bf16": 25, "tf32": 25, "e4m3": 13, "e5m2": 13}


SUM_BITS = {"f16": 23, "bf16": 23, "tf32": 23, "e4m3": 13, "e5m2": 13}


_F32_NAN = np.array(0x7FFFFFFF, dtype=np.uint32).view(np.float32)


_F16_NAN = np.array(0x7FFF, dtype=np.uint16).view(np.float16)


def _exponents(x: np.ndarray) -> np.ndarray:
    """floor(log2 |x|) of each nonzero element; a very small number for zeros."""
    mantissa, exponent = np.frexp(x)
    return np.where(mantissa == 0, -100000, exponent - 1)


def _cut(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """x cut toward zero to a multiple of 2**exponent."""
    quantum = np.ldexp(1.0, np.clip(exponent, -1074, 1023))
    return np.trunc(x / quantum) * quantum


def tensor_core_sum(a: np.ndarray, b: np.ndarray, c: np.ndarray, kind: str, accumulator: str = "f32") -> np.ndarray:
    """A·B + C (a: (..., m, k), b: (..., n, k), c: (..., m, n) float64) as the H100's tensor cores add it, in the
    accumulator type (f32 or f16): each product's exponent is the sum of its factors' exponents; every product
    and C is cut toward zero to ALIGNMENT_BITS below the largest of those exponents and the cut terms are added
    exactly. An f32 sum is then cut toward zero to SUM_BITS below its leading bit (beyond the f32 range it is
    infinite); an f16 sum is rounded to nearest; any NaN comes out as the canonical one. (A single rounding of
    the exact sum agrees with the H100 on only 60 % of random f16 elements; this agrees on all of them.)"""
    with np.errstate(invalid="ignore", over="ignore"):
        products = a[..., :, None, :] * b[..., None, :, :]
        exponents = np.where(products == 0, -100000, _exponents(a)[..., :, None, :] + _exponents(b)[..., None, :, :])
        step = np.maximum(exponents.max(axis=-1), _exponents(c)) - ALIGNMENT_BITS[kind]
        total = _cut(products, step[..., None]).sum(axis=-1) + _cut(c, step)
        if accumulator == "f16":
            return np.where(np.isnan(total), _F16_NAN, total.astype(np.float16))
        total = _cut(total, _exponents(total) - SUM_BITS[kind])
        rounded = total.astype(np.float32)
        too_far = np.isfinite(rounded) & (np.abs(rounded.astype(np.float64)) > np.abs(total))
    rounded = np.where(too_far, np.nextafter(rounded, np.float32(0)), rounded)
    return np.where(np.isnan(total), _F32_NAN, rounded)


def fma_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A·B + C as the H100's f64 tensor core computes it: a chain of fused multiply-adds from C, in k order
    (matches every element of examples/warpmma mmaF64, where a single rounding of the exact sum does not)."""
    accumulator = c
    for k in range(a.shape[2]):
        accumulator = fp.ffma(np.broadcast_to(a[:, :, k, None], c.shape), np.broadcast_to(b[:, None, k, :], c.shape),
                              accumulator, ty="f64")
    return accumulator


WMMA_SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8),
               "m8n8k4": (8, 8, 4)}


def wmma_dims(shape: str, role: str):
    m, n, k = WMMA_SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[role]


def element_bytes(kind: str) -> int:
    return {"f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8, "u8": 1, "s8": 1, "s32": 4}[kind]


#: elements a 32-bit fragment register holds
ELEMENTS_PER_WORD = {"f16": 2, "bf16": 2, "u8": 4, "s8": 4}


def integer_mma(a: np.ndarray, b: np.ndarray, c: np.ndarray, satfinite: bool) -> np.ndarray:
    """A·B + C of integer wmma/mma (a: (..., m, k), b: (..., n, k) u8/s8 values, c: (..., m, n) s32 values, as
    float64): the exact sum in 32 bits, wrapping on overflow, or with .satfinite clamped to the s32 range."""
    total = (a[..., :, None, :] * b[..., None, :, :]).sum(axis=-1) + c
    if satfinite:
        return np.clip(total, -2.0 ** 31, 2.0 ** 31 - 1)
    return (total + 2.0 ** 31) % 2.0 ** 32 - 2.0 ** 31


def wmma_slots(words: np.ndarray, kind: str) -> np.ndarray:
    """Register words (threads, regs) → element values (threads, slots) in float64."""
    return element_values(words, kind).reshape(words.shape[0], -1)


def wmma_words(values: np.ndarray, kind: str, regs: int) -> np.ndarray:
    """Element values (threads, slots) → register words (threads, regs)."""
    if kind in ("f16", "bf16"):
        if kind == "f16":
            halves = values.astype(np.float16).view(np.uint16)
        else:
            halves = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        halves = halves.reshape(values.shape[0], regs, 2).astype(np.uint32)
        return halves[:, :, 0] | (halves[:, :, 1] << np.uint32(16))
    if kind == "f64":
        return values.astype(np.float64).view(np.uint64)
    if kind in ("u8", "s8"):
        octets = values.astype(np.int64).astype(np.uint8).reshape(values.shape[0], regs * 4)
        return np.ascontiguousarray(octets).view(np.uint32).reshape(values.shape[0], regs)
    if kind == "s32":
        return values.astype(np.int64).astype(np.int32).view(np.uint32)
    return values.astype(np.float32).view(np.uint32)


_COUNT_MASK = (1 << 21) - 1


def mbarrier_unpack(word: int):
    return word & _COUNT_MASK, (word >> 21) & _COUNT_MASK, (word >> 42) & _COUNT_MASK, word >> 63


def mbarrier_pack(expected: int, pending: int, transactions: int, phase: int) -> int:
    return (expected & _COUNT_MASK) | ((pending & _COUNT_MASK) << 21) | ((transactions & _COUNT_MASK) << 42) | \
        ((phase & 1) << 63)


def mbarrier_settle(expected, pending, transactions, phase):
    if pending <= 0 and transactions <= 0:
        return expected, expected, 0, phase ^ 1
    return expected, pending, transactions, phase


#: the mbarrier operations mbarrier_apply defines
MBARRIER_OPS = ("init", "arrive", "arrive_drop", "expect_tx", "complete_tx", "test_wait", "try_wait", "pending_count",
                "inval")


def mbarrier_apply(op: str, word: int, operand: Optional[int] = None, *, expect_tx: bool = False,
                   parity: bool = False) -> Tuple[Optional[int], int]:
    """One lane's mbarrier.op on the object's 64-bit state word (bits 0-20 the expected arrivals of a phase, 21-41
    the arrivals still pending, 42-62 the transaction bytes still expected, 63 the phase parity): (the word it
    leaves, None when it writes none; the lane's result: the old word for an arrival, 1 when the phase waited on
    has completed for test_wait/try_wait, the pending count of the state in operand for pending_count). operand:
    the count, the transaction bytes, or the state or parity waited on; expect_tx: .expect_tx on an arrival."""
    expected, pending, transactions, phase = mbarrier_unpack(word)
    if op == "init":
        return mbarrier_pack(operand, operand, 0, 0), 0
    if op in ("arrive", "arrive_drop", "expect_tx", "complete_tx"):
        arrival = op in ("arrive", "arrive_drop")
        amount = operand if operand is not None and arrival and not expect_tx else 1
        if op == "arrive_drop":
            expected -= amount
        if expect_tx:
            transactions += operand
        if op == "complete_tx":
            transactions -= operand
        if arrival:
            pending -= amount
        return mbarrier_pack(*mbarrier_settle(expected, pending, transactions, phase)), word
    if op in ("test_wait", "try_wait"):
        waited_phase = operand & 1 if parity else operand >> 63
        return None, 1 if phase != waited_phase else 0
    if op == "pending_count":
        return None, mbarrier_unpack(operand)[1]
    if op == "inval":
        return 0, 0
    raise ValueError(f"mbarrier.{op} is not one of {', '.join(MBARRIER_OPS)}")


# ---- wgmma: shared-memory matrix descriptors and register operands ----

#: bits 62-63 of a descriptor → the swizzle width in bytes (0: none, the "interleaved" core-matrix layout).
SWIZZLE_WIDTHS = {0: 0, 1: 128, 2: 64, 3: 32}


ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}


TRANSPOSABLE = ("f16", "bf16")


FP8 = ("e4m3", "e5m2")


INTEGERS = ("s8", "u8")


#: (accumulator, A, B) → the K of the shape, as the PTX ISA (and ptxas) allow them
FORMS = {("f16", "f16", "f16"): 16, ("f32", "f16", "f16"): 16, ("f32", "bf16", "bf16"): 16, ("f32", "tf32", "tf32"): 8,
         **{(d, a, b): 32 for d in ("f16", "f32") for a in FP8 for b in FP8},
         **{("s32", a, b): 32 for a in INTEGERS for b in INTEGERS}}


#: integer shapes allow N of 8, 16, 24, 32 and then multiples of 16 (ptxas refuses 40, 56, 72 …)
INTEGER_N = frozenset([8, 16, 24, 32] + list(range(48, 257, 16)))


def descriptor_fields(words: np.ndarray):
    """Per descriptor: start address, leading and stride byte offsets, swizzle width (all int64 arrays)."""
    words = words.astype(np.uint64)
    field = lambda shift: ((words >> np.uint64(shift)) & np.uint64(0x3FFF)).astype(np.int64) << 4
    swizzle = np.vectorize(SWIZZLE_WIDTHS.get, otypes=[np.int64])((words >> np.uint64(62)).astype(np.int64))
    return field(0), field(16), field(32), swizzle


def operand_addresses(words: np.ndarray, rows: np.ndarray, k: int, element_bytes: int, mn_major: bool) -> np.ndarray:
    """Shared-memory byte address of element (row, kk) of an operand stored in PTX's canonical layouts: for
    descriptor i and rows[i] an array (descriptors, rows, k). Rows run along M (for A) or N (for B).

    Core matrices are 8 rows of 16 bytes. K-major: 16-byte chunks along K are LBO apart and groups of
    8 rows SBO apart; with a swizzle of W bytes each row is W bytes long and LBO is unused. MN-major: 16
    bytes along MN, groups of 8 k-rows LBO apart and 16-byte chunks along MN SBO apart; with a swizzle, W
    bytes along MN are contiguous, W-byte chunks along MN are LBO apart and groups of 8 k-rows SBO apart.
    The swizzle XORs address bits [4, 4+log2(W/16)) with bits [7, ...), as the H100 does (examples/wgmma)."""
    start, leading, stride, width = (field[:, None, None] for field in descriptor_fields(words))
    row = rows.astype(np.int64)[:, :, None]
    kk = np.arange(k, dtype=np.int64)[None, None, :]
    swizzled = width > 0
    safe_width = np.where(swizzled, width, 16)
    if mn_major:
        along = row * element_bytes
        plain = start + along // 16 * stride + along % 16 + kk % 8 * 16 + kk // 8 * leading
        wide = start + along // safe_width * leading + along % safe_width + kk % 8 * safe_width + kk // 8 * stride
    else:
        along = kk * element_bytes
        plain = start + row // 8 * stride + row % 8 * 16 + along // 16 * leading + along % 16
        wide = start + row // 8 * stride + row % 8 * safe_width + along
    address = np.where(swizzled, wide, plain)
    mask = np.where(swizzled, safe_width // 16 - 1, 0)
    return address ^ (((address >> 7) & mask) << 4)


def decode_elements(raw: np.ndarray, kind: str) -> np.ndarray:
    """Raw little-endian element bytes (count, size) → float64 (or int64 for s8/u8) values."""
    if kind in ("f16", "bf16", "tf32"):
        words = raw.view(np.uint16 if kind != "tf32" else np.uint32).reshape(-1)
        if kind == "tf32":
            return element_values(words[:, None], "tf32").reshape(-1)
        return element_values(words.astype(np.uint32)[:, None], kind)[:, 0]
    codes = raw.reshape(-1)
    if kind in ("e4m3", "e5m2"):
        return halfbits.decode(codes, halfbits.FORMATS[kind]).astype(np.float64)
    return codes.view(np.int8).astype(np.int64) if kind == "s8" else codes.astype(np.int64)


def register_a_layout(kind: str):
    """(row, column) of each element of A that lane l's four registers hold, as the PTX ISA lays out a warp's 16
    rows: 16-bit and tf32 as mma.sync's A fragment; 8-bit as four bytes per register, registers 0/1 holding rows
    l/4 and l/4 + 8 at k = 4(l%4)..+3, registers 2/3 the same 16 columns on."""
    if ELEMENT_BYTES[kind] == 1:
        lane, register, byte = np.arange(32)[:, None, None], np.arange(4)[None, :, None], np.arange(4)[None, None, :]
        rows = np.broadcast_to(lane // 4 + 8 * (register % 2), (32, 4, 4))
        cols = 4 * (lane % 4) + byte + 16 * (register // 2)
        return rows.reshape(32, 16), cols.reshape(32, 16)
    return fragment_layout("m16n8k8" if kind == "tf32" else "m16n8k16", kind, "a")


def register_elements(words: np.ndarray, kind: str) -> np.ndarray:
    """A's register words (lanes × 4) → element values in the order register_a_layout gives."""
    if ELEMENT_BYTES[kind] == 1:
        return decode_elements(np.ascontiguousarray(words).view(np.uint8), kind).reshape(len(words), -1)
    return element_values(words, kind)


# ---- ldmatrix / stmatrix: 8x8 matrices of 16-bit elements and the warp's fragment of them ----

_LANE = np.arange(32)
_ROW, _PAIR = _LANE >> 2, (_LANE & 3) * 2


def matrix_fragments(matrices: np.ndarray, transpose: bool) -> np.ndarray:
    """ldmatrix: (..., 8, 8) uint16 matrices → each lane's 32-bit word (..., 32): lane l holds elements
    (l/4, 2(l%4)) and the next (of the transposed matrix with .trans), low half first."""
    if transpose:
        low, high = matrices[..., _PAIR, _ROW], matrices[..., _PAIR + 1, _ROW]
    else:
        low, high = matrices[..., _ROW, _PAIR], matrices[..., _ROW, _PAIR + 1]
    return (high.astype(np.uint32) << np.uint32(16)) | low.astype(np.uint32)


def fragments_matrix(words: np.ndarray, transpose: bool) -> np.ndarray:
    """stmatrix: each lane's 32-bit word (..., 32) → the (..., 8, 8) uint16 matrix ldmatrix would read back."""
    words = np.asarray(words, dtype=np.uint32)
    matrices = np.zeros(words.shape[:-1] + (8, 8), dtype=np.uint16)
    low, high = (words & np.uint32(0xFFFF)).astype(np.uint16), (words >> np.uint32(16)).astype(np.uint16)
    if transpose:
        matrices[..., _PAIR, _ROW] = low
        matrices[..., _PAIR + 1, _ROW] = high
    else:
        matrices[..., _ROW, _PAIR] = low
        matrices[..., _ROW, _PAIR + 1] = high
    return matrices


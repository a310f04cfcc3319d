#!/usr/bin/env python3
"""Regenerate examples/: PTX with nvcc, seeded input files, launches.json; --check compares GPU results with numpy references."""

import argparse
import fcntl
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# nvcc -ptx -arch=sm_90 -lineinfo <name>.cu -o <name>.ptx, and -G instead of -lineinfo for the debug build.
NVCC_FLAGS = ("-ptx", "-arch=sm_90", "-lineinfo")
DEBUG_NVCC_FLAGS = ("-ptx", "-arch=sm_90", "-G")
PTXAS_FLAGS = ("-arch=sm_90",)

# nvcc writes the absolute source path into the PTX (.file lines and, with -G, DWARF strings).
# Compiling copies of the sources under one fixed directory keeps the output independent of
# where the checkout lives; the .file lines are then rewritten relative to the example directory.
STAGING = Path(tempfile.gettempdir()) / "gpuemu-examples"

DTYPES = {
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
MASK32, MASK64 = 2**32 - 1, 2**64 - 1


@dataclass
class Close:
    """Reference values whose GPU result may differ by rounding, up to tolerance per element."""
    values: np.ndarray
    tolerance: np.ndarray


@dataclass
class Defined:
    """Reference values that C defines only where `defined` is true; elsewhere the GPU's value is reported."""
    values: np.ndarray
    defined: np.ndarray
    labels: list


@dataclass
class Example:
    """One examples/<name>/ directory. reference(spec, args) gets a launch and its arguments as numpy
    values and returns {argument index: exact ndarray | Close | Defined} and/or {"stdout": text}."""
    name: str
    inputs: dict
    launches: list
    ptx_patterns: list = field(default_factory=list)
    nvcc_flags: tuple = NVCC_FLAGS
    reference: Optional[Callable] = None


def launch(name, kernel, grid, block, args, shared=0, const=None, stdout=False, expect_error=None):
    def dim3(value):
        value = [value] if isinstance(value, int) else list(value)
        return value + [1] * (3 - len(value))

    spec = {"name": name, "kernel": kernel, "grid": dim3(grid), "block": dim3(block),
            "shared": shared, "args": args}
    if const:
        spec["const"] = const
    spec["stdout"] = stdout
    spec["tolerance"] = None
    if expect_error:
        spec["expect_error"] = expect_error
    return spec


def rng_for(name):
    return np.random.default_rng(sum(name.encode()) * 7919 + 2024)


def uniform_pm1(rng, count):
    """float32 uniformly in [-1, 1): multiples of 2**-23, never 1.0."""
    return rng.random(count, dtype=np.float32) * np.float32(2) - np.float32(1)


def wide_range_floats(rng, count):
    """float32 of both signs spread over about twelve decimal orders of magnitude."""
    exponents = rng.integers(-20, 21, count).astype(np.int32)
    return np.ldexp(rng.standard_normal(count).astype(np.float32), exponents).astype(np.float32)


def bits_to(values, dtype):
    unsigned = {4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    mask = MASK32 if unsigned is np.uint32 else MASK64
    return np.array([v & mask for v in values], dtype=unsigned).view(dtype)


def block_partial_sums(a, b, n, blocks, threads):
    products = a[:n].astype(np.float64) * b[:n].astype(np.float64)
    block_of = (np.arange(n) % (blocks * threads)) // threads
    sums = np.bincount(block_of, weights=products, minlength=blocks)
    magnitude = np.bincount(block_of, weights=np.abs(products), minlength=blocks)
    return Close(sums, 2e-5 * magnitude + 1e-30)


# --- the examples --------------------------------------------------------------------------

def transpose_example():
    kernels = [("setRowReadRow", 0), ("setColReadCol", 0), ("setRowReadCol", 0),
               ("setRowReadColDyn", 32 * 32 * 4), ("setRowReadColIpad", 0),
               ("setRowReadColDynIpad", 33 * 32 * 4)]
    launches = [launch(k, k, 1, (32, 32), ["zeros:i32:1024"], shared=s) for k, s in kernels]

    def reference(spec, args):
        index = np.arange(1024, dtype=np.int32)
        if spec["kernel"] in ("setRowReadRow", "setColReadCol"):
            return {0: index}
        return {0: index.reshape(32, 32).T.reshape(-1).copy()}

    return Example("transpose", {}, launches, [r"bar\.sync", r"\.extern \.shared"],
                   reference=reference)


def dot_example():
    n = 33 * 1024
    a = np.arange(n, dtype=np.float32)
    rng = rng_for("dot")
    n_random = 64 * 256 * 4
    inputs = {"a.npy": a, "b.npy": 2 * a,
              "a_random.npy": uniform_pm1(rng, n_random), "b_random.npy": uniform_pm1(rng, n_random)}
    launches = [
        launch("dot", "dot", 32, 256, ["@inputs/a.npy", "@inputs/b.npy", "zeros:f32:32", f"i32:{n}"]),
        launch("dot_random", "dot", 64, 256,
               ["@inputs/a_random.npy", "@inputs/b_random.npy", "zeros:f32:64", f"i32:{n_random}"]),
    ]

    def reference(spec, args):
        a, b, c, count = args
        return {0: a, 1: b, 2: block_partial_sums(a, b, int(count), c.size, 256)}

    return Example("dot", inputs, launches, [r"bar\.sync", r"ld\.shared\.f32"], reference=reference)


def atomic32shared_example():
    inputs = {"pIn.npy": rng_for("atomic32shared").integers(1, 100, 64).astype(np.int32)}
    args = ["zeros:i32:1", "zeros:i32:64", "@inputs/pIn.npy"]
    launches = [launch(k, k, 1, 64, args, shared=256) for k in ("Return32", "Return32One")]

    def reference(spec, args):
        total, out, values = args
        if spec["kernel"] == "Return32":
            out = values + values[0]
        else:
            out = values.copy()
            out[0] += 64 * values[0]
        return {0: total, 1: out, 2: values}

    return Example("atomic32shared", inputs, launches, [r"atom\.shared\.add"], reference=reference)


def matmul_example():
    rng = rng_for("matmul")
    size = 256
    inputs = {"A.npy": uniform_pm1(rng, size * size).reshape(size, size),
              "B.npy": uniform_pm1(rng, size * size).reshape(size, size)}
    launches = [launch("matmul", "Muld", (size // 16, size // 16), (16, 16),
                       ["@inputs/A.npy", "@inputs/B.npy", f"i32:{size}", f"i32:{size}",
                        f"zeros:f32:{size * size}"])]

    def reference(spec, args):
        a, b = args[0].astype(np.float64), args[1].astype(np.float64)
        magnitude = np.abs(a) @ np.abs(b)
        return {0: args[0], 1: args[1],
                4: Close((a @ b).reshape(-1), 2e-5 * magnitude.reshape(-1) + 1e-30)}

    return Example("matmul", inputs, launches, [r"bar\.sync", r"ld\.shared\.f32"],
                   reference=reference)


def localarray_example():
    rng = rng_for("localarray")
    inputs = {"values_small.npy": rng.integers(0, 2**16, 4 * 64 * 16).astype(np.uint16),
              "values_big.npy": rng.integers(0, 2**16, 64 * 256 * 16).astype(np.uint16)}
    launches = [
        launch("localarray", "sortLocal", 4, 64, ["@inputs/values_small.npy", "zeros:u32:256"]),
        launch("localarray_big", "sortLocal", 64, 256, ["@inputs/values_big.npy", "zeros:u32:16384"]),
    ]

    def reference(spec, args):
        values = np.sort(args[0].reshape(-1, 16).astype(np.uint64), axis=1)
        hashes = np.zeros(values.shape[0], dtype=np.uint64)
        for k in range(16):
            hashes = (hashes * np.uint64(31) + values[:, k]) & np.uint64(MASK32)
        return {0: args[0], 1: hashes.astype(np.uint32)}

    return Example("localarray", inputs, launches, [r"ld\.local", r"st\.local", r"__local_depot"],
                   reference=reference)


def constcoef_example():
    rng = rng_for("constcoef")
    taps = np.arange(9) - 4
    coef = np.exp(-0.5 * (taps / 1.7) ** 2)
    inputs = {"signal.npy": uniform_pm1(rng, 4096),
              "coef.npy": (coef / coef.sum()).astype(np.float32)}
    n = 4000
    launches = [launch("constcoef", "convolve", 16, 256,
                       ["@inputs/signal.npy", "zeros:f32:4096", f"i32:{n}"],
                       const={"coef": "@inputs/coef.npy"})]

    def reference(spec, args):
        signal, out, count = args
        count = int(count)
        weights = inputs["coef.npy"].astype(np.float64)
        padded = np.concatenate([np.zeros(4), signal[:count].astype(np.float64), np.zeros(4)])
        windows = np.lib.stride_tricks.sliding_window_view(padded, 9)
        values = np.zeros(out.size)
        tolerance = np.zeros(out.size)
        values[:count] = windows @ weights
        tolerance[:count] = 2e-6 * (np.abs(windows) @ np.abs(weights)) + 1e-30
        return {0: signal, 1: Close(values, tolerance)}

    return Example("constcoef", inputs, launches, [r"ld\.const\.f32", r"\.const \.align 4 \.b8 coef"],
                   reference=reference)


def vectypes_example():
    rng = rng_for("vectypes")
    float_specials = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,
                      0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001, 0x7FBFFFFF, 0x00000001,
                      0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF]
    double_specials = [0x0, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000,
                       0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                       0x7FF8000000000001, 0x7FF0000000000001, 0x7FEFFFFFFFFFFFFF, 0x1,
                       0x000FFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF,
                       0x3FB999999999999A, 0xC00921FB54442D18]
    float_bits = np.concatenate([np.array(float_specials, dtype=np.uint32),
                                 rng.integers(0, 2**32, 64 - len(float_specials), dtype=np.uint64).astype(np.uint32)])
    double_bits = np.concatenate([np.array(double_specials, dtype=np.uint64),
                                  rng.integers(0, 2**63, 64 - len(double_specials), dtype=np.uint64) * np.uint64(2)
                                  + rng.integers(0, 2, 64 - len(double_specials), dtype=np.uint64)])
    inputs = {
        "pairs.npy": rng.integers(INT32_MIN, INT32_MAX + 1, (64, 2)).astype(np.int32),
        "quads.npy": (rng.standard_normal((64, 4)) * 100).astype(np.float32),
        "floats.npy": float_bits.view(np.float32),
        "doubles.npy": double_bits.view(np.float64),
    }
    launches = [
        launch("vectorSwizzle", "vectorSwizzle", 1, 64,
               ["@inputs/pairs.npy", "@inputs/quads.npy", "zeros:i32:128", "zeros:f32:256", "f32:0.1"]),
        launch("reinterpretFloat", "reinterpretFloat", 1, 64,
               ["@inputs/floats.npy", "zeros:i32:64", "zeros:f32:64"]),
        launch("reinterpretDouble", "reinterpretDouble", 1, 64,
               ["@inputs/doubles.npy", "zeros:i64:64", "zeros:i32:64", "zeros:i32:64",
                "zeros:f64:64", "zeros:f64:64"]),
    ]

    def reference(spec, args):
        if spec["kernel"] == "vectorSwizzle":
            pairs, quads, _, _, scale = args
            pairs_out = np.stack([pairs[:, 1], pairs[:, 0] ^ pairs[:, 1]], axis=1).reshape(-1)
            quads_out = np.stack([quads[:, 3] * np.float32(scale), quads[:, 2], quads[:, 1],
                                  quads[:, 0]], axis=1).reshape(-1)
            return {0: pairs, 1: quads, 2: pairs_out, 3: quads_out}
        if spec["kernel"] == "reinterpretFloat":
            bits = args[0].view(np.uint32)
            return {0: args[0], 1: bits.view(np.int32),
                    2: (bits ^ np.uint32(0x80000000)).view(np.float32)}
        bits = args[0].view(np.uint64)
        return {0: args[0], 1: bits.view(np.int64),
                2: (bits >> np.uint64(32)).astype(np.uint32).view(np.int32),
                3: (bits & np.uint64(MASK32)).astype(np.uint32).view(np.int32),
                4: (bits ^ np.uint64(2**63)).view(np.float64),
                5: (bits + np.uint64(1)).view(np.float64)}

    return Example("vectypes", inputs, launches,
                   [r"ld\.global\.v2\.", r"ld\.global\.v4\.", r"st\.global\.v2\.", r"st\.global\.v4\.",
                    r"mov\.b64\s+\{", r"mov\.b64\s+%fd\d+, \{", r"mov\.b64\s+%rd\d+, %fd\d+"],
                   reference=reference)


def printf_example():
    launches = [launch("printf", "printValues", 2, 4, ["f32:1.5"], stdout=True)]

    def reference(spec, args):
        scale = np.float32(args[0])
        blocks, threads = spec["grid"][0], spec["block"][0]
        lines = []
        for block in range(blocks):
            for thread in range(threads):
                gid = block * threads + thread
                f = float(scale * np.float32(gid + 1) / np.float32(3.0))
                g = 1.0e10 * (gid + 1) if gid & 1 else 0.0001 * (gid + 1)
                lines.append("block %d thread %d: d=%d u=%d x=%x f=%f .2f=%.2f s=%s lld=%d e=%e g=%g\n" % (
                    block, thread, (gid - 3) * 1000, 4000000000 + gid,
                    (0xDEADBEEF ^ (gid * 0x01010101)) & MASK32, f, f, "odd" if gid & 1 else "even",
                    (gid - 4) * 123456789012, 1.0 / (gid + 1), g))
        return {"stdout": "".join(lines)}

    return Example("printf", {}, launches, [r"vprintf"], reference=reference)


def vecadd_example():
    rng = rng_for("vecadd")
    n = 64 * 1024
    inputs = {"a.npy": wide_range_floats(rng, n), "b.npy": wide_range_floats(rng, n),
              "a_small.npy": wide_range_floats(rng, 1000), "b_small.npy": wide_range_floats(rng, 1000)}
    launches = [
        launch("vecadd", "vecadd", n // 256, 256, ["@inputs/a.npy", "@inputs/b.npy", f"zeros:f32:{n}", f"i32:{n}"]),
        launch("vecadd_small", "vecadd", 4, 256,
               ["@inputs/a_small.npy", "@inputs/b_small.npy", "zeros:f32:1000", "i32:1000"]),
    ]
    return Example("vecadd", inputs, launches, [r"add\.f32"], reference=vecadd_reference)


def vecadd_reference(spec, args):
    a, b, c, n = args
    return {0: a, 1: b, 2: a[:int(n)] + b[:int(n)]}


def histogram_example():
    rng = rng_for("histogram")
    n = 2**20
    data = np.concatenate([rng.integers(0, 256, n // 2), rng.binomial(255, 0.5, n // 2)])
    inputs = {"data.npy": rng.permutation(data).astype(np.uint8)}
    launches = [launch("histogram", "histogram", 64, 256, ["@inputs/data.npy", f"i32:{n}", "zeros:u32:256"])]

    def reference(spec, args):
        data, size, _ = args
        return {0: data, 2: np.bincount(data[:int(size)], minlength=256).astype(np.uint32)}

    return Example("histogram", inputs, launches, [r"atom\.shared\.add", r"atom\.global\.add"],
                   reference=reference)


def collatz_example():
    launches = [launch("collatz", "collatz", 64, 256, ["zeros:u32:16384", "u64:1"])]

    def reference(spec, args):
        steps, start = args
        x = np.arange(int(start), int(start) + steps.size, dtype=np.uint64)
        count = np.zeros(steps.size, dtype=np.uint32)
        active = x != 1
        while active.any():
            odd = (x & np.uint64(1)) == 1
            x = np.where(active, np.where(odd, np.uint64(3) * x + np.uint64(1), x >> np.uint64(1)), x)
            count += active
            active = x != 1
        return {0: count}

    return Example("collatz", {}, launches, reference=reference)


def reduce_divergent_sync_example():
    a = np.arange(256, dtype=np.float32)
    inputs = {"a.npy": a, "b.npy": 2 * a}
    launches = [launch("reduce_divergent_sync", "dot", 1, 256,
                       ["@inputs/a.npy", "@inputs/b.npy", "zeros:f32:1", "i32:256"])]

    def reference(spec, args):
        a, b, _, _ = args
        # every partial sum is an integer below 2**24, so float32 holds it exactly in any order
        return {0: a, 1: b, 2: np.array([np.sum(a.astype(np.int64) * b.astype(np.int64))], dtype=np.float32)}

    return Example("reduce_divergent_sync", inputs, launches, [r"bar\.sync"], reference=reference)


def warpops_inputs(rng):
    warp0 = rng.integers(-89, 91, 32)
    warp1 = rng.integers(-100, 101, 32)
    warp1[[5, 17]] = [-95, 95]
    a_edges = [0, 1, MASK32, 0x80000000, 0x7FFFFFFF, 0x00800000, 0xFF800000, 0x12345678,
               0x00FFFFFF, 0xFF000000, 0x0000FFFF, 0xFFFF0000]
    b_edges = [0, 31, 32, 33, 63, 64, MASK32, 0x80000000, 0x7FFFFFFF, 0x00FFFFFF, 0x3210, 0x7654,
               0x89AB, 0xCDEF, 0x8888, 0x1]
    a = np.concatenate([a_edges, rng.integers(0, 2**32, 64 - len(a_edges))]).astype(np.uint32)
    b = np.concatenate([b_edges, rng.integers(0, 2**32, 64 - len(b_edges))]).astype(np.uint32)

    pairs32 = [(7, 0), (-7, 0), (0, 0), (INT32_MIN, 0), (INT32_MAX, 0), (INT32_MIN, -1),
               (INT32_MIN, 1), (INT32_MAX, -1), (-7, 2), (7, -2), (-7, -2), (7, 2),
               (INT32_MIN, INT32_MIN), (INT32_MAX, INT32_MIN), (1, INT32_MIN), (-1, INT32_MAX),
               (INT32_MAX, 3), (-1, -1), (-1, 1), (100, 7), (-100, 7), (100, -7), (0, -5), (5, 5)]
    random_numerators = rng.integers(INT32_MIN, INT32_MAX + 1, 64 - len(pairs32))
    random_denominators = rng.integers(-2**15, 2**15, 64 - len(pairs32)) >> rng.integers(0, 15, 64 - len(pairs32))
    random_denominators[random_denominators == 0] = 3
    num32 = np.array([p[0] for p in pairs32] + list(random_numerators), dtype=np.int32)
    den32 = np.array([p[1] for p in pairs32] + list(random_denominators), dtype=np.int32)

    pairs64 = [(7, 0), (-7, 0), (0, 0), (INT64_MIN, 0), (INT64_MIN, -1), (INT64_MIN, 1),
               (INT64_MAX, -1), (-7, 2), (7, -2), (-7, -2), (INT64_MIN, INT64_MIN),
               (INT64_MAX, INT64_MIN), (1, INT64_MIN), (2**40 + 3, 2**20), (-(2**40) - 3, 2**20),
               (2**32 - 1, 2**32 - 1), (2**32, 1), (-1, 2**32), (INT32_MIN, -1), (2**63 - 25, 10**9 + 7),
               (123456789, 1000), (-123456789, 1000)]
    random_numerators = rng.integers(INT64_MIN, INT64_MAX, 64 - len(pairs64), dtype=np.int64, endpoint=True)
    random_denominators = rng.integers(INT64_MIN, INT64_MAX, 64 - len(pairs64), dtype=np.int64, endpoint=True)
    shifts = rng.integers(0, 62, 64 - len(pairs64))
    random_denominators = random_denominators >> shifts
    random_denominators[random_denominators == 0] = 7
    random_numerators[::3] >>= 33
    num64 = np.array([p[0] for p in pairs64] + list(random_numerators), dtype=np.int64)
    den64 = np.array([p[1] for p in pairs64] + list(random_denominators), dtype=np.int64)
    return {"v.npy": rng.integers(-50, 51, 64).astype(np.int32),
            "shuffle_in.npy": np.concatenate([warp0, warp1]).astype(np.int32),
            "bits_a.npy": a, "bits_b.npy": b,
            "num32.npy": num32, "den32.npy": den32, "num64.npy": num64, "den64.npy": den64}


def c_divide(x, y):
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y >= 0) else -quotient


def signed(value, bits):
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def prmt(x, y, selector):
    source = (y << 32) | x
    result = 0
    for k in range(4):
        index = (selector >> (4 * k)) & 7
        result |= ((source >> (8 * index)) & 0xFF) << (8 * k)
    return result


def bit_intrinsics_row(x, y):
    def funnel_left(lo, hi, shift):
        return (((hi << 32) | lo) << shift >> 32) & MASK32

    def funnel_right(lo, hi, shift):
        return (((hi << 32) | lo) >> shift) & MASK32

    sx, sy = signed(x, 32), signed(y, 32)
    return [
        bin(x).count("1"), 32 - x.bit_length(), int(f"{x:032b}"[::-1], 2),
        prmt(x, y, y & 0x7777),
        funnel_left(x, y, y & 31), funnel_left(x, y, min(y, 32)),
        funnel_right(x, y, y & 31), funnel_right(x, y, min(y, 32)),
        (signed(x, 24) * signed(y, 24)) & MASK32, ((x & 0xFFFFFF) * (y & 0xFFFFFF)) & MASK32,
        (x * y) >> 32, ((sx * sy) >> 32) & MASK32,
        (abs(sx - sy) + (x >> 28)) & MASK32, (abs(x - y) + (y >> 28)) & MASK32,
        (x & -x).bit_length(),
        bin((x << 32) | y).count("1") + ((64 - y.bit_length()) << 8),
    ]


def shuffle_rows(values):
    rows = []
    for warp_start in range(0, len(values), 32):
        x = [int(v) for v in values[warp_start:warp_start + 32]]
        sums = list(x)
        offset = 16
        while offset > 0:
            sums = [sums[l] + (sums[l + offset] if l + offset < 32 else sums[l]) for l in range(32)]
            offset //= 2
        for lane in range(32):
            rows.append([
                sum(1 << l for l in range(32) if x[l] > 0),
                int(all(v > -90 for v in x)), int(any(v > 90 for v in x)),
                x[(lane * 7 + 3) & 31], x[lane - 3] if lane >= 3 else x[lane],
                x[lane + 5] if lane + 5 < 32 else x[lane], x[lane ^ 6],
                x[(lane & ~7) + ((lane + 3) % 8)], sums[lane], max(x), sum(x),
                max(v & MASK32 for v in x),
            ])
    return rows


def warpops_example():
    inputs = warpops_inputs(rng_for("warpops"))
    launches = [
        launch("activemaskIf", "activemaskIf", 1, 64, ["@inputs/v.npy", "zeros:u32:64"]),
        launch("activemask_partial", "activemaskIf", 1, 48, ["@inputs/v.npy", "zeros:u32:64"]),
        launch("voteShuffle", "voteShuffle", 1, 64, ["@inputs/shuffle_in.npy", "zeros:i32:768"]),
        launch("bitIntrinsics", "bitIntrinsics", 1, 64,
               ["@inputs/bits_a.npy", "@inputs/bits_b.npy", "zeros:u32:1024"]),
        launch("divRem32", "divRem32", 1, 64, ["@inputs/num32.npy", "@inputs/den32.npy", "zeros:i32:256"]),
        launch("divRem64", "divRem64", 1, 64, ["@inputs/num64.npy", "@inputs/den64.npy", "zeros:i64:256"]),
    ]

    def reference(spec, args):
        kernel, threads = spec["kernel"], spec["block"][0]
        if kernel == "activemaskIf":
            values, out = args
            out = out.copy()
            taken = [t < threads and int(values[t]) % 3 == 0 for t in range(values.size)]
            for t in range(threads):
                if taken[t]:
                    warp = t // 32 * 32
                    out[t] = sum(1 << (l - warp) for l in range(warp, warp + 32) if l < threads and taken[l])
            return {0: values, 1: out}
        if kernel == "voteShuffle":
            rows = shuffle_rows(args[0])
            return {0: args[0], 1: bits_to([v for row in rows for v in row], np.int32)}
        if kernel == "bitIntrinsics":
            a, b, _ = args
            rows = [bit_intrinsics_row(int(x), int(y)) for x, y in zip(a, b)]
            return {0: a, 1: b, 2: np.array(rows, dtype=np.uint32).reshape(-1)}
        bits, dtype, minimum = (32, np.int32, INT32_MIN) if kernel == "divRem32" else (64, np.int64, INT64_MIN)
        mask = (1 << bits) - 1
        results, defined, labels = [], [], []
        for x, y in zip(args[0].tolist(), args[1].tolist()):
            labels += [f"{x}/{y}", f"{x}%{y}", f"{x & mask}u/{y & mask}u", f"{x & mask}u%{y & mask}u"]
            if y == 0:
                results += [0, 0, 0, 0]
                defined += [False] * 4
                continue
            overflow = x == minimum and y == -1
            q = 0 if overflow else c_divide(x, y)
            ux, uy = x & mask, y & mask
            results += [q, x - q * y, ux // uy, ux % uy]
            defined += [not overflow, not overflow, True, True]
        return {0: args[0], 1: args[1], 2: Defined(bits_to(results, dtype), np.array(defined), labels)}

    return Example("warpops", inputs, launches,
                   [r"activemask\.b32", r"vote\.sync\.ballot", r"vote\.sync\.all", r"vote\.sync\.any",
                    r"shfl\.sync\.idx", r"shfl\.sync\.up", r"shfl\.sync\.down", r"shfl\.sync\.bfly",
                    r"redux\.sync", r"prmt\.b32", r"shf\.l\.wrap", r"shf\.r\.clamp", r"brev\.b32",
                    r"clz\.b32", r"popc\.b32", r"sad\.s32", r"mul\.hi\.u32", r"div\.s32", r"div\.u32",
                    r"div\.s64|div\.u64"],
                   reference=reference)


def faults_example():
    launches = [
        launch("misalignedShared", "misalignedShared", 1, 64, ["zeros:f32:64"], shared=512,
               expect_error="CUDA_ERROR_MISALIGNED_ADDRESS"),
        dict(launch("outOfBoundsWrite", "outOfBoundsWrite", 1, 32, ["zeros:i32:16384", f"i32:{2**30}"],
                    expect_error="CUDA_ERROR_ILLEGAL_ADDRESS"),
             sanitizer_error="CUDA_ERROR_ILLEGAL_ADDRESS",
             note="4 GiB past a CuPy pool buffer the H100 reports CUDA_ERROR_INVALID_ADDRESS_SPACE (16 MiB past "
                  "it reported nothing: the pool was mapped there); gpuemu, like compute-sanitizer memcheck, "
                  "reports every access outside an allocation as an illegal address"),
        launch("nullRead", "nullRead", 1, 32, ["u64:0", "zeros:i32:32"],
               expect_error="CUDA_ERROR_ILLEGAL_ADDRESS"),
    ]
    return Example("faults", {}, launches, [r"st\.shared\.f32\s+\[%r\d+\+254\]"],
                   reference=lambda spec, args: {})


def fences_example():
    rng = rng_for("fences")
    inputs = {
        "counter_init.npy": np.array([1000], dtype=np.int32),
        "incdec_init.npy": np.array([0, 3, 100, 0], dtype=np.uint32),
        "minmax_values.npy": rng.integers(-10**9, 10**9, 128).astype(np.int32),
        "minmax_init.npy": np.array([INT32_MAX, INT32_MIN, -1, 0], dtype=np.int32),
        "halves.npy": (rng.integers(-16, 17, 128) * 0.5).astype(np.float32),
        "slots_init.npy": rng.integers(-1000, 1000, 128).astype(np.int32),
        "per_thread_init.npy": rng.integers(-1000, 1000, 128).astype(np.int32),
        "tallies_init.npy": np.array([0, 10, 20, 30, 0x100, 0x12345678, MASK32, 1000000, 5], dtype=np.uint32),
    }
    launches = [
        launch("producerConsumerGlobal", "producerConsumerGlobal", 1, 64,
               ["zeros:i32:32", "zeros:i32:1", "zeros:i32:32"]),
        launch("producerConsumerShared", "producerConsumerShared", 1, 64, ["zeros:i32:32"]),
        launch("spinLockWarp", "spinLockWarp", 1, 32, ["zeros:i32:1", "@inputs/counter_init.npy"]),
        launch("incDecWrap", "incDecWrap", 2, 64, ["@inputs/incdec_init.npy"]),
        launch("minMax", "minMax", 2, 64, ["@inputs/minmax_values.npy", "@inputs/minmax_init.npy"]),
        launch("wideAndFloatAdd", "wideAndFloatAdd", 2, 64,
               ["@inputs/halves.npy", "zeros:u64:1", "zeros:f32:1", "zeros:f64:1"]),
        launch("exchangeSlots", "exchangeSlots", 2, 64, ["@inputs/slots_init.npy", "zeros:i32:128"]),
        launch("atomVsRed", "atomVsRed", 2, 64,
               ["@inputs/per_thread_init.npy", "zeros:i32:128", "@inputs/tallies_init.npy"]),
    ]

    def reference(spec, args):
        kernel = spec["kernel"]
        threads = spec["grid"][0] * spec["block"][0]
        index = np.arange(threads)
        if kernel == "producerConsumerGlobal":
            data = (np.arange(32) ** 2 + 7).astype(np.int32)
            return {0: data, 1: np.array([1], dtype=np.int32), 2: data[::-1].copy()}
        if kernel == "producerConsumerShared":
            return {0: (3 * np.arange(32)[::-1] + 1).astype(np.int32)}
        if kernel == "spinLockWarp":
            return {0: np.zeros(1, np.int32), 1: args[1] + np.int32(threads * (threads + 1) // 2)}
        if kernel == "incDecWrap":
            counters = [int(v) for v in args[0]]
            for _ in range(threads):
                counters[0] = 0 if counters[0] >= 16 else counters[0] + 1
                counters[1] = 10 if counters[1] == 0 or counters[1] > 10 else counters[1] - 1
                counters[2] = 0 if counters[2] >= 5 else counters[2] + 1
                counters[3] = 7 if counters[3] == 0 or counters[3] > 7 else counters[3] - 1
            return {0: np.array(counters, dtype=np.uint32)}
        if kernel == "minMax":
            values, init = args
            unsigned = values.view(np.uint32)
            init_unsigned = init.view(np.uint32)
            extremes = [min(init[0], values.min()), max(init[1], values.max()),
                        min(init_unsigned[2], unsigned.min()), max(init_unsigned[3], unsigned.max())]
            return {0: values, 1: bits_to([int(v) for v in extremes], np.int32)}
        if kernel == "wideAndFloatAdd":
            halves = args[0]
            return {0: halves,
                    1: np.array([threads * 2**33 + int(index.sum())], dtype=np.uint64),
                    2: np.array([halves.astype(np.float64).sum()], dtype=np.float32),
                    3: np.array([(halves.astype(np.float64) * 0.25).sum()])}
        if kernel == "exchangeSlots":
            return {0: (3 * index + 1).astype(np.int32), 1: args[0]}
        per_thread, _, tallies = args
        t = [int(v) for v in tallies]
        t[0:4] = [v + threads // 4 for v in t[0:4]]
        for i in range(threads):
            t[4] |= 1 << (i % 32)
            t[5] ^= (i * 2654435761) & MASK32
            t[6] &= ~(1 << (i % 29)) & MASK32
        t[7] = (t[7] - int(index.sum())) & MASK32
        t[8] = (t[8] + int(index.sum()) + threads) & MASK32
        return {0: (per_thread + index + 1).astype(np.int32), 1: per_thread,
                2: np.array(t, dtype=np.uint32)}

    return Example("fences", inputs, launches,
                   [r"red\.global\.add", r"atom\.global\.cas", r"atom\.global\.exch", r"atom\.global\.inc",
                    r"atom\.global\.dec", r"atom\.global\.min\.s32", r"atom\.global\.min\.u32",
                    r"atom\.global\.add\.u64", r"atom\.global\.add\.f32", r"atom\.global\.add\.f64",
                    r"membar\.gl", r"membar\.cta", r"ld\.volatile"],
                   reference=reference)


def debugbuild_example():
    rng = rng_for("debugbuild")
    n_dot = 8192
    a = np.arange(n_dot, dtype=np.float32)
    inputs = {"a_small.npy": wide_range_floats(rng, 1000), "b_small.npy": wide_range_floats(rng, 1000),
              "dot_a.npy": a, "dot_b.npy": 2 * a}
    launches = [
        launch("vecadd_debug", "vecadd", 4, 256,
               ["@inputs/a_small.npy", "@inputs/b_small.npy", "zeros:f32:1000", "i32:1000"]),
        launch("dot_debug", "dot", 8, 256, ["@inputs/dot_a.npy", "@inputs/dot_b.npy", "zeros:f32:8", f"i32:{n_dot}"]),
    ]

    def reference(spec, args):
        if spec["kernel"] == "vecadd":
            return vecadd_reference(spec, args)
        a, b, c, count = args
        return {0: a, 1: b, 2: block_partial_sums(a, b, int(count), c.size, 256)}

    return Example("debugbuild", inputs, launches,
                   [r"\.target sm_90, debug", r"\.section\s+\.debug_info", r"(?m)^\s*ld\.f32\s", r"(?m)^\s*st\.f32\s"],
                   nvcc_flags=DEBUG_NVCC_FLAGS, reference=reference)


EXAMPLE_BUILDERS = [
    transpose_example, dot_example, atomic32shared_example, matmul_example, localarray_example,
    constcoef_example, vectypes_example, printf_example, vecadd_example, histogram_example,
    collatz_example, reduce_divergent_sync_example, warpops_example, faults_example, fences_example,
    debugbuild_example,
]


# --- generation ----------------------------------------------------------------------------

def write_if_changed(path, data):
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def launches_json(example):
    lines = ["{", f'  "ptx": "{example.name}.ptx",', '  "launches": [']
    for number, spec in enumerate(example.launches):
        fields = [f"      {json.dumps(key)}: {json.dumps(value)}" for key, value in spec.items()]
        closing = "    }," if number + 1 < len(example.launches) else "    }"
        lines += ["    {", ",\n".join(fields), closing]
    lines += ["  ]", "}", ""]
    return "\n".join(lines).encode()


def relative_file_directives(ptx, staged_directory):
    prefix = str(staged_directory) + "/"
    root = str(STAGING) + "/"

    def relative(match):
        path = match.group(2)
        if path.startswith(prefix):
            path = path[len(prefix):]
        elif path.startswith(root):
            path = "../" + path[len(root):]
        return f'{match.group(1)}"{path}"'

    return re.sub(r'^(\s*\.file\s+\d+\s+)"([^"]*)"', relative, ptx, flags=re.M)


def compile_ptx(example):
    """Compile examples/<name>/<name>.cu to PTX; return the PTX text or raise with nvcc's message."""
    with open(Path(tempfile.gettempdir()) / "gpuemu-examples.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(STAGING, ignore_errors=True)
        for source in EXAMPLES.glob("*/*.cu"):
            target = STAGING / source.parent.name / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        staged = STAGING / example.name
        command = ["nvcc", *example.nvcc_flags, f"{example.name}.cu", "-o", f"{example.name}.ptx"]
        result = subprocess.run(command, cwd=staged, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
        ptx = (staged / f"{example.name}.ptx").read_text()
        shutil.rmtree(STAGING, ignore_errors=True)
    return relative_file_directives(ptx, staged)


def check_ptx(example, ptx_path):
    """Return a list of problems: ptxas errors and expected instructions missing from the PTX."""
    problems = []
    text = ptx_path.read_text()
    for pattern in example.ptx_patterns:
        if not re.search(pattern, text):
            problems.append(f"PTX lacks /{pattern}/")
    result = subprocess.run(["ptxas", *PTXAS_FLAGS, str(ptx_path), "-o", "/dev/null"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        problems.append(f"ptxas failed: {result.stderr.strip()}")
    return problems


def generate(example, compile_sources):
    directory = EXAMPLES / example.name
    changed = []
    for filename, array in example.inputs.items():
        if write_if_changed(directory / "inputs" / filename, npy_bytes(array)):
            changed.append(f"inputs/{filename}")
    if write_if_changed(directory / "launches.json", launches_json(example)):
        changed.append("launches.json")
    ptx_path = directory / f"{example.name}.ptx"
    if compile_sources:
        if write_if_changed(ptx_path, compile_ptx(example).encode()):
            changed.append(ptx_path.name)
    problems = check_ptx(example, ptx_path) if shutil.which("ptxas") else ["ptxas not found"]
    return changed, problems


# --- checking GPU results --------------------------------------------------------------------

def resolve_argument(text, directory):
    if text.startswith("@"):
        return np.load(directory / text[1:])
    parts = text.split(":")
    if parts[0] == "zeros":
        return np.zeros(int(parts[2]), dtype=DTYPES[parts[1]])
    dtype = np.dtype(DTYPES[parts[0]])
    if dtype.kind == "f":
        value = float.fromhex(parts[1]) if "0x" in parts[1].lower() else float(parts[1])
        return dtype.type(value)
    return dtype.type(int(parts[1], 0))


def same_bits(actual, expected):
    if actual.dtype != expected.dtype or actual.size != expected.size:
        return False
    unsigned = np.dtype(f"u{actual.dtype.itemsize}")
    return np.array_equal(np.ascontiguousarray(actual).reshape(-1).view(unsigned),
                          np.ascontiguousarray(expected).reshape(-1).view(unsigned))


def compare(actual, expected):
    """Return None when actual matches the reference, else a short description of the difference."""
    if isinstance(expected, Close):
        actual = actual.reshape(-1).astype(np.float64)
        if actual.size != expected.values.size:
            return f"size {actual.size}, reference {expected.values.size}"
        error = np.abs(actual - expected.values)
        bad = ~(error <= expected.tolerance)
        if bad.any():
            first = int(np.argmax(bad))
            return (f"{int(bad.sum())} elements beyond tolerance, first [{first}] = {actual[first].item()!r}, "
                    f"reference {expected.values[first].item()!r}")
        return None
    if isinstance(expected, Defined):
        flat_actual = actual.reshape(-1)
        if flat_actual.dtype != expected.values.dtype or flat_actual.size != expected.values.size:
            return f"dtype/size {flat_actual.dtype}/{flat_actual.size}, reference {expected.values.dtype}/{expected.values.size}"
        wrong = (flat_actual != expected.values) & expected.defined
        if wrong.any():
            first = int(np.argmax(wrong))
            return (f"{int(wrong.sum())} elements differ, first [{first}] = {flat_actual[first].item()}, "
                    f"reference {expected.values[first].item()}")
        return None
    expected = np.asarray(expected)
    if actual.dtype != expected.dtype or actual.size != expected.size:
        return f"dtype/size {actual.dtype}/{actual.size}, reference {expected.dtype}/{expected.size}"
    if same_bits(actual, expected):
        return None
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)
    unsigned = np.dtype(f"u{actual.dtype.itemsize}")
    differ = flat_actual.view(unsigned) != flat_expected.view(unsigned)
    first = int(np.argmax(differ))
    return (f"{int(differ.sum())} elements differ, first [{first}] = {flat_actual[first].item()!r}, "
            f"reference {flat_expected[first].item()!r}")


def check_launch(example, spec, root):
    """Compare one launch's expected/ files with the reference; return (status, details)."""
    directory = root / example.name
    expected_dir = directory / "expected" / spec["name"]
    if not expected_dir.is_dir():
        return "NO-EXPECTED", []
    error_file = expected_dir / "error.txt"
    wanted_error = spec.get("expect_error")
    if error_file.exists():
        error = error_file.read_text().strip()
        if error == wanted_error:
            return "MATCH", [f"error {error}"]
        return "MISMATCH", [f"GPU error {error}, launches.json expects {wanted_error or 'none'}"]
    if wanted_error:
        return "MISMATCH", [f"GPU gave no error, launches.json expects {wanted_error}"]
    args = [resolve_argument(text, directory) for text in spec["args"]]
    references = example.reference(spec, args) if example.reference else {}
    details, mismatch, compared = [], False, 0
    for key, reference in references.items():
        if key == "stdout":
            path = expected_dir / "stdout.txt"
            if not path.exists():
                details.append("stdout.txt missing")
                mismatch = True
                continue
            actual = path.read_text()
            compared += 1
            if actual != reference:
                mismatch = True
                same_lines = sorted(actual.splitlines()) == sorted(reference.splitlines())
                details.append("stdout: same lines, different order" if same_lines else "stdout differs")
            continue
        path = expected_dir / f"arg{key}.npy"
        if not path.exists():
            details.append(f"arg{key}.npy missing")
            mismatch = True
            continue
        actual = np.load(path)
        compared += 1
        difference = compare(actual, reference)
        if difference:
            mismatch = True
            details.append(f"arg{key}: {difference}")
        if isinstance(reference, Defined):
            flat = actual.reshape(-1)
            undefined = np.flatnonzero(~reference.defined)
            if undefined.size:
                details.append("GPU results C leaves undefined: "
                               + ", ".join(f"{reference.labels[i]}={flat[i]}" for i in undefined))
    if not references:
        return "NO-REFERENCE", details
    return ("MISMATCH" if mismatch else "MATCH"), [f"{compared} compared"] + details


def run_check(examples, root):
    counts = {}
    for example in examples:
        for spec in example.launches:
            status, details = check_launch(example, spec, root)
            counts[status] = counts.get(status, 0) + 1
            print(f"{status:12} {example.name}/{spec['name']}" + (f"  ({'; '.join(details)})" if details else ""))
    print("summary: " + ", ".join(f"{count} {status}" for status, count in sorted(counts.items())))
    return 1 if counts.get("MISMATCH") else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", action="append", default=[], help="example name (repeatable)")
    parser.add_argument("--check", action="store_true",
                        help="compare expected/ GPU results with numpy references instead of regenerating")
    parser.add_argument("--no-compile", action="store_true", help="keep the checked-in PTX (no nvcc)")
    parser.add_argument("--examples-dir", type=Path, default=EXAMPLES,
                        help="where --check looks for <example>/expected/ (default: this checkout's examples/)")
    options = parser.parse_args(argv)

    examples = [build() for build in EXAMPLE_BUILDERS]
    unknown = set(options.only) - {e.name for e in examples}
    if unknown:
        parser.error(f"unknown example(s): {', '.join(sorted(unknown))}")
    if options.only:
        examples = [e for e in examples if e.name in options.only]
    if options.check:
        return run_check(examples, options.examples_dir)
    if not options.no_compile and not shutil.which("nvcc"):
        parser.error("nvcc not found (use --no-compile to regenerate inputs only)")

    failed = False
    for example in examples:
        changed, problems = generate(example, not options.no_compile)
        status = "PROBLEM" if problems else ("updated" if changed else "unchanged")
        print(f"{status:9} {example.name}" + (f": {', '.join(changed)}" if changed else ""))
        for problem in problems:
            print(f"          {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Regenerate isa/sfu_data/ (the special-function unit's tables) from an H100: run on the GPU machine.

Reads every table off the card through the PTX instructions that reach each MUFU unit, writes them as
isa.sfu loads them (tables.npz, isa.sfu.write_tables), records the card and driver in meta.json, and
prints what it found. EX2 is the one unit whose input quantisation is searched again here (per sign of
x; the tables are written for isa.sfu.EX2_FRACTION_BITS, and the tool fails if that does not fit); the
other structures were established by the exhaustive sweeps of docs/sfu.md and are proven again by
tools/sfu_truth.py. `--fake` runs on the CPU with isa.fp in place of the card (a test of this script).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from isa import sfu  # noqa: E402
from sfu_device import DIVIDE, HALF_X2, UNARY_F32, FakeBackend, GpuBackend, describe  # noqa: E402

U32 = np.uint32
EX2_CANDIDATES = [(bits, mode) for bits in (24, 25, 26) for mode in ("trunc", "rne", "ceil")]
SHIFT_UNITS = {"rcp": ("rcp_ftz", 23, 1), "rsqrt": ("rsqrt_ftz", 23, 2), "sqrt": ("sqrt_ftz", 23, 2),
               "rcp64h": ("rcp64h", 20, 1), "rsq64h": ("rsq64h", 20, 2)}


class Capture:
    """The backend, how much of the input space a sweep visits, and the tables found."""

    def __init__(self, backend, chunk_bits=27):
        self.b = backend
        self.xp = backend.xp
        self.chunk = 1 << chunk_bits
        self.tables = {}
        self.report = {}

    def ranges(self, start, stop):
        """(start, count) pieces of [start, stop); --fake visits only the first 2**12 codes of each 2**23."""
        if self.b.fake:
            for bin_start in range(start - start % (1 << 23), stop, 1 << 23):
                lo, hi = max(start, bin_start), min(stop, bin_start + (1 << 12))
                if hi > lo:
                    yield lo, hi - lo
            return
        for position in range(start, stop, self.chunk):
            yield position, min(self.chunk, stop - position)

    def inputs(self, start, count):
        return self.xp.arange(start, start + count, dtype=self.xp.uint64).astype(self.xp.uint32)

    def mantissa_count(self, bits):
        return (1 << bits) if not self.b.fake else (1 << 12)


def capture_shift_units(cap):
    """RCP/RSQ/SQRT/RCP64H/RSQ64H: the outputs at exponent 0 (and +1) for every mantissa."""
    xp, b = cap.xp, cap.b
    for label, (op, bits, parity_count) in SHIFT_UNITS.items():
        bias = 127 if bits == 23 else 1023
        rows = []
        for parity in range(parity_count):
            count = cap.mantissa_count(bits)
            codes = xp.arange(count, dtype=xp.uint32) | xp.uint32((bias + parity) << bits)
            if bits == 20:
                out = b.f64(op, codes.astype(xp.uint64) << xp.uint64(32)) >> xp.uint64(32)
            else:
                out = b.unary(op, codes)
            row = np.zeros(1 << bits, U32)
            row[:count] = b.host(out).astype(U32)
            rows.append(row)
        cap.tables[label] = rows[0] if parity_count == 1 else np.stack(rows)


def ex2_candidate_index(xp, x, bits, mode):
    """(whole, index) of f32 codes x under a candidate quantisation q = round(|x| * 2**bits), signed."""
    value = x.view(xp.float32).astype(xp.float64) * float(1 << bits)
    value = xp.where((x & xp.uint32(0x7F800000)) == 0, 0.0, value)  # the unit flushes subnormal x
    magnitude = xp.abs(value)
    rounded = {"trunc": xp.trunc, "rne": xp.rint, "ceil": xp.ceil}[mode](magnitude)
    signed = xp.where(value < 0, -rounded, rounded).astype(xp.int64)
    return signed >> bits, signed & ((1 << bits) - 1)


def capture_ex2(cap):
    """MUFU.EX2 per sign of x: which quantisation of |x| makes the output 2**whole times a table entry of
    the fraction (every input with |x| < 128 and a normal output checks it), and that table."""
    xp, b = cap.xp, cap.b
    found = {}
    for sign, span in (("negative", (0x80000000, 0xC3000000)), ("positive", (0, 0x43000000))):
        tables = {c: xp.full(1 << c[0], -1, dtype=xp.int64) for c in EX2_CANDIDATES}
        mismatches = {c: 0 for c in EX2_CANDIDATES}
        for sweep in ("build", "check"):
            for start, count in cap.ranges(*span):
                x = cap.inputs(start, count)
                out = b.unary("ex2_ftz", x).astype(xp.int64)
                exponent = (out >> 23) & 255
                normal = (exponent >= 1) & (exponent <= 254)
                for candidate in EX2_CANDIDATES:
                    whole, index = ex2_candidate_index(xp, x, *candidate)
                    entry = out - (whole << 23)
                    if sweep == "build":
                        tables[candidate][index[normal]] = entry[normal]
                    else:
                        mismatches[candidate] += int((normal & (tables[candidate][index] != entry)).sum())
        chosen = (sfu.EX2_FRACTION_BITS, "trunc")
        fitting = [c for c in EX2_CANDIDATES if mismatches[c] == 0]
        table = b.host(tables[chosen])
        unreached = table < 0
        cap.tables[f"ex2_{sign}"] = np.where(unreached, 0, table).astype(U32)
        found[sign] = [list(c) for c in fitting]
        cap.report[f"ex2_{sign}"] = {"candidates": {f"{c[0]}_{c[1]}": mismatches[c] for c in EX2_CANDIDATES},
                                     "unreached": int(unreached.sum())}
        if chosen not in fitting:
            raise SystemExit(f"ex2 ({sign} x): truncation to {chosen[0]} fraction bits does not fit this card "
                             f"(mismatches by candidate: {cap.report[f'ex2_{sign}']['candidates']})")
        del tables
    return found


def capture_turns(cap):
    """MUFU.SIN/COS: sin.approx and cos.approx of every finite x, indexed by the turns they reach
    (trunc(|x * f32(1/2pi)| * 2**25), FMUL.RZ as ptxas emits), folded onto one sine table over half
    a turn (sin of the second half is minus the first; cos(t) = sin(t + 1/4))."""
    xp, b = cap.xp, cap.b
    full = 1 << sfu.TURN_FRACTION_BITS
    half = full >> 1
    table = xp.full(half, -1, dtype=xp.int64)
    conflicts = 0
    for sweep in ("build", "check"):
        for op in ("sin", "cos"):
            for lo, hi in ((0, 0x7F800000), (0x80000000, 0xFF800000)):
                for start, count in cap.ranges(lo, hi):
                    x = cap.inputs(start, count)
                    out = b.unary(op, x).astype(xp.int64)
                    turns = b.turns(x).view(xp.float32).astype(xp.float64)
                    index = xp.fmod(xp.trunc(xp.abs(turns) * float(full)), float(full)).astype(xp.int64)
                    if op == "sin":
                        out = out ^ ((x.astype(xp.int64) >> 31) << 31)
                    else:
                        index = (index + (full >> 2)) & (full - 1)
                    entry = xp.where(index >= half, out ^ 0x80000000, out)
                    slot = index & (half - 1)
                    if sweep == "build":
                        table[slot] = entry
                    else:
                        conflicts += int((table[slot] != entry).sum())
    host = b.host(table)
    unreached = host < 0
    cap.tables["sin"] = np.where(unreached, 0, host).astype(U32)
    cap.report["sin"] = {"conflicts": conflicts, "unreached": int(unreached.sum())}


def capture_lg2(cap):
    """MUFU.LG2 for every mantissa at exponents 0 and -1 (the other exponents follow from the first)."""
    xp, b = cap.xp, cap.b
    rows = []
    for biased in (127, 126):
        count = cap.mantissa_count(23)
        out = b.unary("lg2_ftz", xp.arange(count, dtype=xp.uint32) | xp.uint32(biased << 23))
        row = np.zeros(1 << 23, U32)
        row[:count] = b.host(out).astype(U32)
        rows.append(row)
    cap.tables["lg2"] = np.stack(rows)


def capture_tanh(cap):
    """MUFU.TANH at every input of the tanh table (binades -8..2, leading 17-21 mantissa bits)."""
    b = cap.b
    grid = sfu.tanh_grid()
    codes = b.device(grid.astype(np.float32).view(U32))
    cap.tables["tanh"] = b.host(b.unary("tanh", codes)).astype(U32)


def capture_halves(cap):
    xp, b = cap.xp, cap.b
    codes = xp.arange(1 << 16, dtype=xp.uint32).astype(xp.uint16)
    for name in sfu.HALF_TABLES:
        cap.tables[f"half_{name}"] = b.host(b.half(name, codes)).astype(np.uint16)


def edge_f32():
    """Float32 special and boundary codes shared by every test set."""
    values = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.0, 0.5, 3.0, 0.75, 2.0 ** -126, 2.0 ** 126, 2.0 ** 127,
              2.0 ** -127, 2.0 ** -149, 1.5 * 2.0 ** 126, 3.4028234663852886e38, 1.17549421e-38]
    codes = [np.float32(v).view(U32) for v in values]
    codes += [0x7FC00000, 0x7FFFFFFF, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x00000001, 0x007FFFFF,
              0x80000001, 0x807FFFFF, 0x00800000, 0x00800001, 0x7F7FFFFF, 0x7F000000, 0x7E800000, 0x7E800001,
              0x7E7FFFFF, 0x3F7FFFFF, 0x3F800001, 0x3FFFFFFF, 0x3EFFFFFF]
    codes = np.array(codes, dtype=U32)
    return np.concatenate([codes, codes ^ U32(0x80000000)])


def f32_array(values):
    return np.asarray(values, dtype=np.float32).view(U32)


def test_inputs_unary(rng, op, n):
    """Held-out inputs of a unary f32 op: edge codes, op-specific edges, random bits, random in-range values."""
    base, _, _ = op.partition("_")
    special = {
        "ex2": f32_array(np.concatenate([np.arange(-152, 130, 0.25), rng.uniform(-1, 1, 64),
                                          rng.uniform(-2.0 ** -20, 2.0 ** -20, 32)])),
        "lg2": f32_array(np.concatenate([rng.uniform(0.5, 2.0, 200), 2.0 ** rng.uniform(-149, 128, 200)])),
        "sin": f32_array(np.concatenate([rng.uniform(-7, 7, 200), rng.uniform(-1e6, 1e6, 100),
                                          np.ldexp(1.0, np.arange(-30, 30))])),
        "tanh": f32_array(np.concatenate([rng.uniform(-10, 10, 400), 2.0 ** rng.uniform(-20, 4, 200)])),
    }
    special["cos"] = special["sin"]
    extra = special.get(base, f32_array(2.0 ** rng.uniform(-140, 128, 300)))
    random_bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(U32)
    return np.concatenate([edge_f32(), extra, random_bits])


def capture_tests(backend):
    """Held-out test points: a few thousand inputs per instruction (edge codes, then seeded random ones) with
    the H100's outputs, for tests/test_sfu.py; none of them is used to build a table."""
    b = backend
    rng = np.random.default_rng(20260501)
    arrays = {}
    for op in UNARY_F32:
        x = test_inputs_unary(rng, op, 3000)
        arrays[f"{op}_in"] = x
        arrays[f"{op}_out"] = b.host(b.unary(op, b.device(x)))
    for name in ("rcp_ftz_f64", "rsqrt_ftz_f64", "rsqrt_f64"):
        specials = np.array([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                             0x7FF4000000000123, 0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
                             0x3FF0000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FE0000000000000, 0x8010000000000000,
                             0xBFF0000000000000, 0x0008000000000000, 0x7FD0000000000000], dtype=np.uint64)
        random_bits = rng.integers(0, 1 << 63, 3000, dtype=np.uint64) | (
            rng.integers(0, 2, 3000, dtype=np.uint64) << np.uint64(63))
        scaled = np.ldexp(rng.uniform(1, 2, 500), rng.integers(-1074, 1024, 500)).view(np.uint64)
        x = np.concatenate([specials, random_bits, scaled])
        arrays[f"{name}_in"] = x
        arrays[f"{name}_out"] = b.host(b.f64(name, b.device(x)))
    for name in HALF_X2:
        x = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(U32)
        arrays[f"{name}_in"] = x
        arrays[f"{name}_out"] = b.host(b.half(name, b.device(x)))
    for name in DIVIDE:
        edges = edge_f32()
        a = np.concatenate([np.repeat(edges, edges.size), rng.integers(0, 1 << 32, 6000, dtype=np.uint64).astype(U32),
                            f32_array(rng.uniform(-1e3, 1e3, 2000))])
        d = np.concatenate([np.tile(edges, edges.size), rng.integers(0, 1 << 32, 6000, dtype=np.uint64).astype(U32),
                            f32_array(rng.uniform(-1e3, 1e3, 2000))])
        arrays[f"{name}_a"] = a
        arrays[f"{name}_b"] = d
        arrays[f"{name}_out"] = b.host(b.divide(name, b.device(a), b.device(d)))
    return arrays


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=sfu.DATA, help="directory for the tables (default isa/sfu_data)")
    parser.add_argument("--report", type=Path, help="also write the capture report (JSON) here")
    parser.add_argument("--fake", action="store_true", help="isa.fp on the CPU in place of the card")
    parser.add_argument("--compare-with", type=Path, help="report how the new tables differ from those here")
    parser.add_argument("--tests", type=Path, help="capture only the held-out test points, into this .npz")
    args = parser.parse_args(argv)
    began = time.time()
    backend = FakeBackend() if args.fake else GpuBackend()
    if args.tests:
        np.savez_compressed(args.tests, **capture_tests(backend))
        return
    cap = Capture(backend)
    timings = {}
    for name, stage in (("shift units", capture_shift_units), ("lg2", capture_lg2), ("tanh", capture_tanh),
                        ("halves", capture_halves), ("ex2", capture_ex2), ("sin/cos", capture_turns)):
        start = time.time()
        result = stage(cap)
        if name == "ex2":
            ex2_structure = result
        timings[name] = round(time.time() - start, 1)
        print(f"captured {name} in {timings[name]} s", flush=True)
    sfu.write_tables(cap.tables, args.out / "tables.npz")
    meta = {"captured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": describe(backend), "ex2_quantisations_that_fit": ex2_structure,
            "tool": "tools/sfu_capture.py"}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if args.compare_with:
        cap.report["compared_with"] = {}
        for name, stored in cap.tables.items():
            try:
                old = sfu.read_table(name, args.compare_with / "tables.npz")
            except (FileNotFoundError, KeyError):
                cap.report["compared_with"][name] = "absent"
                continue
            if old.shape != stored.shape:
                cap.report["compared_with"][name] = f"shape {old.shape} -> {stored.shape}"
            else:
                differ = int(np.sum(old.astype(np.int64) != stored.astype(np.int64)))
                cap.report["compared_with"][name] = f"{differ} entries differ" if differ else "equal"
    cap.report["timings"] = timings
    cap.report["seconds"] = round(time.time() - began, 1)
    if args.report:
        args.report.write_text(json.dumps(cap.report, indent=1) + "\n")
    print(json.dumps({"ex2": ex2_structure, **{k: v for k, v in cap.report.items() if k != "timings"}}))


if __name__ == "__main__":
    main()

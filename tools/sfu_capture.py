#!/usr/bin/env python3
"""Regenerate isa/sfu_data/ (the special-function unit's tables) from an H100: run on the GPU machine.

Reads every table off the card through the PTX instructions that reach each MUFU unit, writes them in
the format isa.sfu loads (each table's difference from isa.sfu_reference, xz-compressed .npy), records
the card and driver in meta.json, and prints what it found. EX2 is the one unit whose input quantisation
is searched here (per sign of x); the other structures were established by the exhaustive sweeps of
docs/sfu.md and are proven again by tools/sfu_truth.py. `--fake` runs on the CPU with isa.fp in place of
the card (a test of this script only).
"""
from __future__ import annotations

import argparse
import datetime
import io
import json
import lzma
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from isa import sfu, sfu_reference as reference  # noqa: E402
from sfu_device import FakeBackend, GpuBackend, describe  # noqa: E402

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
        kind, _, _ = sfu._SHIFT_SHAPES[label]
        bias = 127 if bits == 23 else 1023
        rows = []
        for parity in range(parity_count):
            count = cap.mantissa_count(bits)
            codes = xp.arange(count, dtype=xp.uint32) | xp.uint32((bias + parity) << bits)
            if bits == 20:
                out = b.f64(op, codes.astype(xp.uint64) << xp.uint64(32)) >> xp.uint64(32)
            else:
                out = b.unary(op, codes)
            row = np.zeros(1 << bits, np.int64)
            row[:count] = b.host(out).astype(np.int64)
            rows.append(row)
        table = np.stack(rows) - sfu.shift_reference(kind, bits, parity_count)
        cap.tables[label] = sfu.narrow(table[0] if parity_count == 1 else table)


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
        best = min(EX2_CANDIDATES, key=lambda c: (mismatches[c], c[0], EX2_CANDIDATES.index(c)))
        table = b.host(tables[best])
        unreached = table < 0
        index = np.arange(table.size)
        predicted = sfu.ex2_reference(index, best[0])
        table = np.where(unreached, predicted, table)
        cap.tables[f"ex2_{sign}"] = sfu.narrow(table - predicted)
        found[sign] = list(best)
        cap.report[f"ex2_{sign}"] = {"candidates": {f"{c[0]}_{c[1]}": mismatches[c] for c in EX2_CANDIDATES},
                                     "chosen": list(best), "unreached": int(unreached.sum())}
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
    predicted = sfu.turn_reference(half)
    host = np.where(unreached, predicted, host)
    cap.tables["sin"] = sfu.narrow(((host - predicted + (1 << 31)) % (1 << 32)) - (1 << 31))
    cap.report["sin"] = {"conflicts": conflicts, "unreached": int(unreached.sum())}


def capture_lg2(cap):
    """MUFU.LG2 for every mantissa at exponents 0 and -1 (the other exponents follow from the first)."""
    xp, b = cap.xp, cap.b
    rows = []
    for biased in (127, 126):
        count = cap.mantissa_count(23)
        out = b.unary("lg2_ftz", xp.arange(count, dtype=xp.uint32) | xp.uint32(biased << 23))
        row = np.zeros(1 << 23, np.int64)
        row[:count] = b.host(out).astype(np.int64)
        rows.append(row)
    cap.tables["lg2"] = sfu.narrow(np.stack(rows) - sfu.lg2_reference())


def capture_tanh(cap):
    """MUFU.TANH at every input of the tanh table (binades -8..2, leading 17-21 mantissa bits)."""
    xp, b = cap.xp, cap.b
    grid = sfu.tanh_grid()
    codes = b.device(grid.astype(np.float32).view(U32))
    out = b.host(b.unary("tanh", codes)).astype(np.int64)
    cap.tables["tanh"] = sfu.narrow(out - reference.f32_bits(reference.tanh(grid)))


def capture_halves(cap):
    xp, b = cap.xp, cap.b
    codes = xp.arange(1 << 16, dtype=xp.uint32).astype(xp.uint16)
    for name in sfu.HALF_TABLES:
        cap.tables[f"half_{name}"] = b.host(b.half(name, codes)).astype(np.uint16)


def _read_from(directory, name):
    return np.load(io.BytesIO(lzma.decompress((directory / f"{name}.npy.xz").read_bytes())), allow_pickle=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=sfu.DATA, help="directory for the tables (default isa/sfu_data)")
    parser.add_argument("--report", type=Path, help="also write the capture report (JSON) here")
    parser.add_argument("--fake", action="store_true", help="isa.fp on the CPU in place of the card")
    parser.add_argument("--compare-with", type=Path, help="report how the new tables differ from those here")
    args = parser.parse_args(argv)
    began = time.time()
    backend = FakeBackend() if args.fake else GpuBackend()
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
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        list(pool.map(sfu.write_table, cap.tables, cap.tables.values(), [args.out] * len(cap.tables)))
    meta = {"captured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": describe(backend), "ex2": ex2_structure, "tool": "tools/sfu_capture.py"}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if args.compare_with:
        cap.report["compared_with"] = {}
        for name, stored in cap.tables.items():
            try:
                old = _read_from(args.compare_with, name)
            except FileNotFoundError:
                cap.report["compared_with"][name] = "absent"
                continue
            same = old.shape == stored.shape and bool(np.array_equal(old.astype(np.int64), stored.astype(np.int64)))
            cap.report["compared_with"][name] = "equal" if same else (
                f"{int(np.sum(old.astype(np.int64) != stored.astype(np.int64)))} entries differ"
                if old.shape == stored.shape else f"shape {old.shape} -> {stored.shape}")
    cap.report["timings"] = timings
    cap.report["seconds"] = round(time.time() - began, 1)
    if args.report:
        args.report.write_text(json.dumps(cap.report, indent=1) + "\n")
    print(json.dumps({"ex2": ex2_structure, **{k: v for k, v in cap.report.items() if k != "timings"}}))


if __name__ == "__main__":
    main()

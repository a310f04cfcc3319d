#!/usr/bin/env python3
"""Compare isa's special-function instructions with the H100 over (nearly) all inputs: run on the GPU machine.

The GPU computes each PTX instruction's outputs chunk by chunk; worker processes on the CPU cores compute
isa.fp's result for the same inputs and count the differences. Unary f32 instructions: all 2**32 codes.
rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64: all 2**32 upper words (the low word a hash of the upper).
rsqrt.approx.f64: 2**28 doubles, every sign and exponent with 2**16 hashed mantissas each. Half
instructions: all 2**16 codes, each lane of the x2 forms. div.approx/div.full: 2**28 operand pairs, every
pair of (sign-free) exponents with 4096 hashed mantissa pairs and signs. Writes report.json and report.md.
`--fake` runs on the CPU with isa.fp as the "GPU" over a small part of each space (a test of this script).
"""
from __future__ import annotations

import argparse
import json
import mmap
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from isa import fp, sfu  # noqa: E402
import sfu_device  # noqa: E402

U32 = np.uint32
U64 = np.uint64
PIECE = 1 << 16
EXAMPLES = 8


def _f32(codes):
    return codes.view(np.float32)


def _codes32(values):
    return np.asarray(values).astype(np.float32).view(U32)


def _f64_from_high(high):
    """Doubles with the given upper words and a low word hashed from them."""
    high = high.astype(U64)
    return ((high << U64(32)) | (mix(high) & U64(0xFFFFFFFF))).view(np.float64)


UNARY = {
    "rcp.approx.f32": ("rcp", lambda x: fp.frcp(_f32(x), ty="f32", mode="approx")),
    "rcp.approx.ftz.f32": ("rcp_ftz", lambda x: fp.frcp(_f32(x), ty="f32", mode="approx", ftz=True)),
    "rsqrt.approx.f32": ("rsqrt", lambda x: fp.frsqrt(_f32(x), ty="f32")),
    "rsqrt.approx.ftz.f32": ("rsqrt_ftz", lambda x: fp.frsqrt(_f32(x), ty="f32", ftz=True)),
    "sqrt.approx.f32": ("sqrt", lambda x: fp.fsqrt(_f32(x), ty="f32", mode="approx")),
    "sqrt.approx.ftz.f32": ("sqrt_ftz", lambda x: fp.fsqrt(_f32(x), ty="f32", mode="approx", ftz=True)),
    "ex2.approx.f32": ("ex2", lambda x: fp.fex2(_f32(x), ty="f32")),
    "ex2.approx.ftz.f32": ("ex2_ftz", lambda x: fp.fex2(_f32(x), ty="f32", ftz=True)),
    "lg2.approx.f32": ("lg2", lambda x: fp.flg2(_f32(x), ty="f32")),
    "lg2.approx.ftz.f32": ("lg2_ftz", lambda x: fp.flg2(_f32(x), ty="f32", ftz=True)),
    "sin.approx.f32": ("sin", lambda x: fp.fsin(_f32(x), ty="f32")),
    "sin.approx.ftz.f32": ("sin_ftz", lambda x: fp.fsin(_f32(x), ty="f32", ftz=True)),
    "cos.approx.f32": ("cos", lambda x: fp.fcos(_f32(x), ty="f32")),
    "cos.approx.ftz.f32": ("cos_ftz", lambda x: fp.fcos(_f32(x), ty="f32", ftz=True)),
    "tanh.approx.f32": ("tanh", lambda x: fp.ftanh(_f32(x), ty="f32")),
    "rcp.approx.ftz.f64": ("rcp_ftz_f64",
                           lambda x: (fp.frcp(_f64_from_high(x), ty="f64", mode="approx", ftz=True).view(U64)
                                      >> U64(32)).astype(U32)),
    "rsqrt.approx.ftz.f64": ("rsqrt_ftz_f64",
                             lambda x: (fp.frsqrt(_f64_from_high(x), ty="f64", ftz=True).view(U64)
                                        >> U64(32)).astype(U32)),
}
DIVIDE = {"div.approx.f32": ("div_approx", "approx", False), "div.approx.ftz.f32": ("div_approx_ftz", "approx", True),
          "div.full.f32": ("div_full", "full", False), "div.full.ftz.f32": ("div_full_ftz", "full", True)}
HALF = {"ex2.approx.f16": ("ex2_f16", fp.fex2, "f16"), "ex2.approx.ftz.bf16": ("ex2_bf16", fp.fex2, "bf16"),
        "tanh.approx.f16": ("tanh_f16", fp.ftanh, "f16"), "tanh.approx.bf16": ("tanh_bf16", fp.ftanh, "bf16")}
PAIRS = 1 << 28
RSQRT_F64_SAMPLES = 1 << 28


def mix(k):
    """splitmix64 of uint64 values (numpy or CuPy arrays alike: wrapping integer arithmetic)."""
    z = k * U64(0x9E3779B97F4A7C15) + U64(0x632BE59BD9B4E019)
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


def pair_operands(k):
    """Operands of divide pair k: exponents k % 256 and (k >> 8) % 256, hashed mantissas and signs."""
    h = mix(k)
    a = ((k & U64(255)) << U64(23)) | (h & U64(0x7FFFFF)) | ((h >> U64(23)) & U64(1)) << U64(31)
    b = (((k >> U64(8)) & U64(255)) << U64(23)) | ((h >> U64(24)) & U64(0x7FFFFF)) | ((h >> U64(47)) & U64(1)) << U64(31)
    return a.astype(U32), b.astype(U32)


def rsqrt_f64_operand(k):
    """Double k of the rsqrt.approx.f64 sample: sign and exponent k % 4096, mantissa hashed."""
    return ((k & U64(4095)) << U64(52)) | (mix(k) & U64((1 << 52) - 1))


# ---- worker side --------------------------------------------------------------------------------------

BUFFERS = []


def shared_buffer(nbytes):
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=np.uint8)


def verify_piece(task):
    """Compare isa with the H100's outputs held in BUFFERS[slot][offset:offset+count]."""
    kind, name, slot, start, offset, count = task
    mismatches, examples, bins = 0, [], {}
    for sub in range(0, count, PIECE):
        n = min(PIECE, count - sub)
        k = np.arange(start + sub, start + sub + n, dtype=U64)
        if kind == "unary":
            got = BUFFERS[slot].view(U32)[offset + sub:offset + sub + n]
            x = k.astype(U32)
            want = np.asarray(UNARY[name][1](x)).reshape(-1).view(U32)
            inputs = [x]
        elif kind == "divide":
            got = BUFFERS[slot].view(U32)[offset + sub:offset + sub + n]
            a, b = pair_operands(k)
            _, mode, ftz = DIVIDE[name]
            want = np.asarray(fp.fdiv(_f32(a), _f32(b), ty="f32", mode=mode, ftz=ftz)).reshape(-1).view(U32)
            inputs = [a, b]
        else:
            got = BUFFERS[slot].view(U64)[offset + sub:offset + sub + n]
            x = rsqrt_f64_operand(k)
            want = np.asarray(fp.frsqrt(x.view(np.float64), ty="f64")).reshape(-1).view(U64)
            inputs = [x]
        bad = np.flatnonzero(got != want)
        if bad.size:
            mismatches += int(bad.size)
            for i in bad[:EXAMPLES - len(examples)]:
                examples.append([hex(int(v[i])) for v in inputs] + [hex(int(got[i])), hex(int(want[i]))])
            key = (inputs[0][bad] >> (inputs[0].dtype.type(23 if inputs[0].dtype == U32 else 52))).astype(np.int64)
            for value, c in zip(*np.unique(key, return_counts=True)):
                bins[int(value)] = bins.get(int(value), 0) + int(c)
    return count, mismatches, examples, bins


# ---- driver side -------------------------------------------------------------------------------------

class Sweep:
    """Runs the GPU side chunk by chunk into two shared buffers while the pool checks the previous chunk."""

    def __init__(self, backend, pool, chunk, workers):
        self.b, self.pool, self.chunk, self.workers = backend, pool, chunk, workers

    def run(self, kind, name, total, gpu_chunk, itemsize):
        pending = {0: [], 1: []}
        totals = {"compared": 0, "mismatches": 0, "examples": [], "bins": {}}

        def drain(slot):
            for result in pending[slot]:
                count, mismatches, examples, bins = result.get()
                totals["compared"] += count
                totals["mismatches"] += mismatches
                totals["examples"] = (totals["examples"] + examples)[:EXAMPLES]
                for key, c in bins.items():
                    totals["bins"][key] = totals["bins"].get(key, 0) + c
            pending[slot] = []

        for index, start in enumerate(range(0, total, self.chunk)):
            count = min(self.chunk, total - start)
            slot = index % 2
            drain(slot)
            out = gpu_chunk(start, count)
            target = BUFFERS[slot][:count * itemsize].view(out.dtype)
            target[:] = self.b.host(out)
            piece = max(PIECE, -(-count // (4 * self.workers)) // PIECE * PIECE)
            for offset in range(0, count, piece):
                task = (kind, name, slot, start + offset, offset, min(piece, count - offset))
                pending[slot].append(self.pool.apply_async(verify_piece, (task,)))
        drain(0)
        drain(1)
        totals["bins"] = dict(sorted(totals["bins"].items())[:64])
        return totals


def unary_gpu(backend, op):
    xp = backend.xp
    if op.endswith("_f64"):
        def run(start, count):
            high = xp.arange(start, start + count, dtype=xp.uint64)
            operand = (high << xp.uint64(32)) | (mix(high) & xp.uint64(0xFFFFFFFF))
            out = backend.f64(op, operand)
            if int(((out & xp.uint64(0xFFFFFFFF)) != 0).sum()):
                raise RuntimeError(f"{op}: a result with a nonzero low word")
            return (out >> xp.uint64(32)).astype(xp.uint32)
        return run
    return lambda start, count: backend.unary(op, xp.arange(start, start + count, dtype=xp.uint64).astype(xp.uint32))


def divide_gpu(backend, op):
    xp = backend.xp

    def run(start, count):
        a, b = pair_operands(xp.arange(start, start + count, dtype=xp.uint64))
        return backend.divide(op, a, b)
    return run


def rsqrt_f64_gpu(backend):
    xp = backend.xp
    return lambda start, count: backend.f64("rsqrt_f64", rsqrt_f64_operand(xp.arange(start, start + count, dtype=xp.uint64)))


def halves(backend):
    """All 2**16 codes of each half instruction; each x2 form with every code in each lane."""
    results = {}
    codes = np.arange(1 << 16, dtype=np.uint32)
    partner = (codes * U32(40503) + U32(12345)) & U32(0xFFFF)
    for instruction, (name, function, ty) in HALF.items():
        ftz = ty == "bf16" and function is fp.fex2
        gpu = backend.host(backend.half(name, backend.device(codes.astype(np.uint16))))
        want = np.asarray(function(codes.astype(np.uint16), ty=ty, ftz=ftz))
        results[instruction] = {"compared": 1 << 16, "mismatches": int((gpu != want).sum()),
                                "examples": [[hex(int(c)), hex(int(gpu[c])), hex(int(want[c]))]
                                             for c in np.flatnonzero(gpu != want)[:EXAMPLES]]}
        packed_name = name + "x2"
        for lanes in ((partner << U32(16)) | codes, (codes << U32(16)) | partner):
            gpu = backend.host(backend.half(packed_name, backend.device(lanes)))
            want = np.asarray(function(lanes, ty=ty + "x2", ftz=ftz))
            entry = results.setdefault(instruction.replace(ty, ty + "x2"), {"compared": 0, "mismatches": 0, "examples": []})
            entry["compared"] += 1 << 16
            entry["mismatches"] += int((gpu != want).sum())
            entry["examples"] += [[hex(int(lanes[c])), hex(int(gpu[c])), hex(int(want[c]))]
                                  for c in np.flatnonzero(gpu != want)[:EXAMPLES]]
    return results


def warm_tables():
    """Load every table before the workers fork, so that they share one copy."""
    probe = np.array([0x3F800001, 0xBF800001, 0x3E000001, 0x00000001], dtype=U32)
    for unit in (sfu.rcp, sfu.rsq, sfu.sqrt, sfu.ex2, sfu.lg2, sfu.sin, sfu.cos, sfu.tanh, sfu.rcp64h, sfu.rsq64h):
        unit(probe)
    for name in sfu.HALF_TABLES:
        sfu.half(name, probe.astype(np.uint16))


def markdown(report):
    lines = ["| instruction | inputs compared | mismatches | examples (input(s), H100, isa) |", "|---|---:|---:|---|"]
    for instruction, entry in report["results"].items():
        examples = "; ".join(" ".join(row) for row in entry.get("examples", [])[:3]) or "-"
        lines.append(f"| `{instruction}` | {entry['compared']:,} | {entry['mismatches']:,} | {examples} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", help="instructions to compare (default: all)")
    parser.add_argument("--seconds", type=float, default=1e9, help="start no new instruction after this")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--fake", action="store_true", help="isa.fp as the GPU, a small part of each space")
    args = parser.parse_args(argv)
    began = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    chunk = 1 << 26 if not args.fake else 1 << 18
    warm_tables()
    BUFFERS.extend([shared_buffer(chunk * 8), shared_buffer(chunk * 8)])
    pool = multiprocessing.get_context("fork").Pool(args.workers)
    backend = sfu_device.FakeBackend() if args.fake else sfu_device.GpuBackend()
    sweep = Sweep(backend, pool, chunk, args.workers)
    full = (1 << 32) if not args.fake else chunk * 2
    plan = [(i, "unary", lambda i=i: (full, unary_gpu(backend, UNARY[i][0]), 4)) for i in UNARY]
    plan += [(i, "divide", lambda i=i: (PAIRS if not args.fake else chunk, divide_gpu(backend, DIVIDE[i][0]), 4))
             for i in DIVIDE]
    plan += [("rsqrt.approx.f64", "f64", lambda: (RSQRT_F64_SAMPLES if not args.fake else chunk,
                                                  rsqrt_f64_gpu(backend), 8))]
    report = {"machine": sfu_device.describe(backend), "tables": json.loads((sfu.DATA / "meta.json").read_text()),
              "results": {}, "not_run": []}
    if not args.only or any(i in HALF or i.replace("x2", "") in HALF for i in args.only):
        report["results"].update(halves(backend))
    for instruction, kind, setup in plan:
        if args.only and instruction not in args.only:
            continue
        if time.time() - began > args.seconds:
            report["not_run"].append(instruction)
            continue
        start = time.time()
        total, gpu_chunk, itemsize = setup()
        result = sweep.run(kind, instruction, total, gpu_chunk, itemsize)
        result["seconds"] = round(time.time() - start, 1)
        report["results"][instruction] = result
        print(f"{instruction}: {result['compared']:,} compared, {result['mismatches']:,} mismatches, "
              f"{result['seconds']} s", flush=True)
    pool.close()
    pool.join()
    report["seconds"] = round(time.time() - began, 1)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()

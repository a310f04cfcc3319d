#!/usr/bin/env python3
"""What compute-sanitizer (racecheck, synccheck, initcheck, memcheck) says about tests/kernels/checks.cu on a real GPU.

Runs on the GPU machine (CUDA 13, CuPy, compute-sanitizer on PATH) and does not import gpuemu:

    python3 tools/sanitizer_checks.py            # writes $OUT/sanitizer/ (or results/sanitizer/)

Every case runs in its own child process under `compute-sanitizer --tool T` with a time limit (a
kernel that hangs on the GPU is killed and recorded as such); each report is saved as
<case>.<tool>.txt, and summary.json lists the exit statuses, the sanitizer's error counts and the
float sums that show the order-dependence of float atomics without a sanitizer.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "kernels" / "checks.ptx"
FENCES = ROOT / "examples" / "fences" / "fences.ptx"
TIME_LIMIT = 60


def float_sum_values():
    values = np.zeros(128, np.float32)
    values[[0, 32, 64]] = [1e8, 1.0, -1e8]
    return values


# case name: (ptx, kernel, grid, block, shared, argument builder, tools)
CASES = {
    "shared_race": (CHECKS, "shared_race", 1, 256, 0, lambda cp: [cp.arange(256, dtype=cp.int32), cp.zeros(256, cp.int32)], ["racecheck"]),
    "shared_race_fixed": (CHECKS, "shared_race_fixed", 1, 256, 0, lambda cp: [cp.arange(256, dtype=cp.int32), cp.zeros(256, cp.int32)], ["racecheck"]),
    "reduce_ok": (CHECKS, "reduce_ok", 1, 256, 0, lambda cp: [cp.arange(256, dtype=cp.float32), cp.zeros(1, cp.float32)], ["racecheck", "synccheck"]),
    "reduce_divergent_sync": (CHECKS, "reduce_divergent_sync", 1, 256, 0, lambda cp: [cp.arange(256, dtype=cp.float32), cp.zeros(1, cp.float32)], ["racecheck", "synccheck"]),
    "warp_exchange_race": (CHECKS, "warp_exchange_race", 1, 32, 0, lambda cp: [cp.arange(32, dtype=cp.int32), cp.zeros(32, cp.int32)], ["racecheck"]),
    "warp_exchange_synced": (CHECKS, "warp_exchange_synced", 1, 32, 0, lambda cp: [cp.arange(32, dtype=cp.int32), cp.zeros(32, cp.int32)], ["racecheck"]),
    "global_sum_race": (CHECKS, "global_sum_race", 1, 64, 0, lambda cp: [cp.arange(64, dtype=cp.int32), cp.zeros(1, cp.int32)], ["racecheck"]),
    "global_sum_atomic": (CHECKS, "global_sum_atomic", 1, 64, 0, lambda cp: [cp.arange(64, dtype=cp.int32), cp.zeros(1, cp.int32)], ["racecheck"]),
    "uninit_shared_read": (CHECKS, "uninit_shared_read", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32)], ["initcheck"]),
    "init_shared_read": (CHECKS, "init_shared_read", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32)], ["initcheck"]),
    "uninit_local_read": (CHECKS, "uninit_local_read", 1, 32, 0, lambda cp: [cp.arange(32, dtype=cp.int32), cp.zeros(32, cp.int32), np.int32(8)], ["initcheck"]),
    "uninitialized_global_input": (CHECKS, "shared_race_fixed", 1, 64, 0, lambda cp: [cp.empty(64, cp.int32), cp.zeros(64, cp.int32)], ["initcheck"]),
    "oob_write": (CHECKS, "oob_write", 2, 64, 0, lambda cp: [cp.zeros(100, cp.int32), np.int32(100)], ["memcheck"]),
    "bounded_write": (CHECKS, "bounded_write", 2, 64, 0, lambda cp: [cp.zeros(100, cp.int32), np.int32(100)], ["memcheck"]),
    "misaligned_shared": (CHECKS, "misaligned_shared", 1, 32, 512, lambda cp: [cp.zeros(32, cp.float32)], ["memcheck"]),
    "aligned_shared": (CHECKS, "aligned_shared", 1, 32, 512, lambda cp: [cp.zeros(32, cp.float32)], ["memcheck"]),
    "shfl_in_divergent_if": (CHECKS, "shfl_in_divergent_if", 1, 32, 0, lambda cp: [cp.arange(32, dtype=cp.int32), cp.zeros(32, cp.int32)], ["synccheck"]),
    "shfl_converged": (CHECKS, "shfl_converged", 1, 64, 0, lambda cp: [cp.arange(64, dtype=cp.int32), cp.zeros(64, cp.int32)], ["synccheck"]),
    "syncwarp_without_caller": (CHECKS, "syncwarp_without_caller", 1, 32, 0, lambda cp: [cp.zeros(32, cp.int32)], ["synccheck"]),
    "vote_names_exited_lanes": (CHECKS, "vote_names_exited_lanes", 1, 32, 0, lambda cp: [cp.arange(32, dtype=cp.int32), cp.zeros(32, cp.int32)], ["synccheck"]),
    "bar_count_48": (CHECKS, "bar_count", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32), np.int32(48)], ["synccheck"]),
    "bar_count_64": (CHECKS, "bar_count", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32), np.int32(64)], ["synccheck"]),
    "barrier_in_both_branches": (CHECKS, "barrier_in_both_branches", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32)], ["synccheck", "racecheck"]),
    "producerConsumerGlobal": (FENCES, "_Z22producerConsumerGlobalPiPViS_", 1, 64, 0, lambda cp: [cp.zeros(32, cp.int32), cp.zeros(1, cp.int32), cp.zeros(64, cp.int32)], ["racecheck"]),
    "producerConsumerShared": (FENCES, "_Z22producerConsumerSharedPi", 1, 64, 0, lambda cp: [cp.zeros(64, cp.int32)], ["racecheck"]),
    "spinLockWarp": (FENCES, "_Z12spinLockWarpPiPVi", 1, 32, 0, lambda cp: [cp.zeros(1, cp.int32), cp.zeros(1, cp.int32)], ["racecheck"]),
}


def run_case(name: str) -> None:
    """Child: launch one case once and synchronise (the sanitizer around this process reports)."""
    import cupy as cp
    ptx, kernel, grid, block, shared, build, _ = CASES[name]
    module = cp.RawModule(path=str(ptx))
    function = module.get_function(kernel)
    function((grid,), (block,), tuple(build(cp)), shared_mem=shared)
    cp.cuda.runtime.deviceSynchronize()


def float_sums(repeats: int = 20):
    """Sum the float_atomic_sum inputs repeatedly on the GPU: the distinct totals the hardware's order gives."""
    import cupy as cp
    function = cp.RawModule(path=str(CHECKS)).get_function("float_atomic_sum")
    values = cp.asarray(float_sum_values())
    totals = []
    for _ in range(repeats):
        total = cp.zeros(1, cp.float32)
        function((1,), (128,), (values, total))
        totals.append(float(total.get()[0]))
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="directory for the reports (default $OUT/sanitizer)")
    options = parser.parse_args()
    if options.run:
        run_case(options.run)
        return 0
    out = Path(options.out or Path(os.environ.get("OUT", ROOT / "results")) / "sanitizer")
    out.mkdir(parents=True, exist_ok=True)
    summary = {"cases": {}}
    for name, (_, _, _, _, _, _, tools) in CASES.items():
        for tool in tools:
            command = ["compute-sanitizer", "--tool", tool, "--print-limit", "40", sys.executable,
                       str(Path(__file__).resolve()), "--run", name]
            started = time.time()
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT, cwd=ROOT)
                status, text = result.returncode, result.stdout + result.stderr
            except subprocess.TimeoutExpired as expired:
                status = "timeout"
                text = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) \
                    else (expired.stdout or "")
            (out / f"{name}.{tool}.txt").write_text(text)
            counts = re.findall(r"(?:ERROR SUMMARY|RACECHECK SUMMARY):[^\n]*", text)
            summary["cases"][f"{name}.{tool}"] = {"status": status, "summary": counts,
                                                  "seconds": round(time.time() - started, 1)}
            print(f"{name:28s} {tool:10s} {status!s:8s} {' | '.join(counts)}", flush=True)
    try:
        totals = float_sums()
        summary["float_atomic_sum_totals"] = totals
        print(f"float_atomic_sum over 20 launches: {sorted(set(totals))}")
    except Exception as error:
        summary["float_atomic_sum_error"] = str(error)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

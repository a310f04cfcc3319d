"""`make bench-schedule`: `--schedule random` against lockstep in one process, per warp-instruction, as the grid grows.

For each workload and grid size the kernel is launched under lockstep and under a random schedule in turn (seeds 0, 1,
2, ...), --repeat times each after one warm-up launch of each; the table gives the least CPU time of a launch of each
kind (process time: the development machine is shared, and CPU time is what other processes disturb least), their
ratio, and the random schedule's microseconds per warp-instruction, which should not grow with the grid. Every output
is checked against numpy (none of these workloads has a result that depends on the schedule). Both run on one engine,
--engine (compiled by default, so that neither waits for "auto" to compile partway through the measured launches).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import emulator  # noqa: E402
from emulator.machine.policies import make_policy  # noqa: E402

EXAMPLES = ROOT / "examples"
BLOCKS = (8, 64, 196)
MATMUL_GRIDS = {8: (8, 1), 64: (8, 8), 196: (14, 14)}
MATMUL_INNER = 64
HISTOGRAM_BYTES_PER_THREAD = 16


def vecadd(blocks: int):
    kernel = emulator.load(EXAMPLES / "vecadd" / "vecadd.ptx").kernel("vecadd")
    n = blocks * 256
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(n).astype(np.float32)

    def launch(policy):
        c = np.zeros(n, np.float32)
        stats = kernel.launch(blocks, 256, [a, b, c, np.int32(n)], policy=policy)
        assert np.array_equal(c, a + b), "vecadd: wrong result"
        return stats
    return launch


def matmul(blocks: int):
    kernel = emulator.load(EXAMPLES / "matmul" / "matmul.ptx").kernel("_Z4MuldPfS_iiS_")
    gx, gy = MATMUL_GRIDS[blocks]
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (16 * gy, MATMUL_INNER)).astype(np.float32)
    b = rng.uniform(-1, 1, (MATMUL_INNER, 16 * gx)).astype(np.float32)
    # not `@`: a BLAS matmul leaves its threads spinning, and process time would count them in the launches after it
    want = (a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]).sum(axis=1)

    def launch(policy):
        c = np.zeros(16 * gy * 16 * gx, np.float32)
        stats = kernel.launch((gx, gy), (16, 16), [a.reshape(-1), b.reshape(-1), np.int32(MATMUL_INNER),
                                                   np.int32(16 * gx), c], policy=policy)
        assert np.abs(c.reshape(want.shape) - want).max() < 1e-3, "matmul: wrong result"
        return stats
    return launch


def collatz(blocks: int):
    kernel = emulator.load(EXAMPLES / "collatz" / "collatz.ptx").kernel("collatz")
    n = blocks * 256
    want = np.zeros(n, np.uint32)
    for index in range(n):
        x, count = index + 1, 0
        while x != 1:
            x = 3 * x + 1 if x & 1 else x >> 1
            count += 1
        want[index] = count

    def launch(policy):
        steps = np.zeros(n, np.uint32)
        stats = kernel.launch(blocks, 256, [steps, np.uint64(1)], policy=policy)
        assert np.array_equal(steps, want), "collatz: wrong result"
        return stats
    return launch


def histogram(blocks: int):
    kernel = emulator.load(EXAMPLES / "histogram" / "histogram.ptx").kernel("histogram")
    n = blocks * 256 * HISTOGRAM_BYTES_PER_THREAD
    data = np.random.default_rng(4).integers(0, 256, n).astype(np.uint8)
    want = np.bincount(data, minlength=256)

    def launch(policy):
        bins = np.zeros(256, np.uint32)
        stats = kernel.launch(blocks, 256, [data, np.int32(n), bins], policy=policy)
        assert np.array_equal(bins, want), "histogram: wrong result"
        return stats
    return launch


WORKLOADS = {"vecadd": vecadd, "matmul": matmul, "collatz": collatz, "histogram": histogram}


def measure(launch, repeat: int):
    """(least lockstep seconds, least random seconds, warp instructions) over repeat launches of each, interleaved."""
    launch(None)
    launch(make_policy("random", 0))
    lockstep, random = [], []
    for seed in range(repeat):
        for policy, times in ((None, lockstep), (make_policy("random", seed), random)):
            start = time.process_time()
            stats = launch(policy)
            times.append(time.process_time() - start)
    return min(lockstep), min(random), stats.warp_instructions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="launches of each kind (default 7)")
    parser.add_argument("--blocks", type=int, nargs="+", default=list(BLOCKS), choices=BLOCKS)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--engine", default="compiled", choices=("auto", "compiled", "interpreter"),
                        help="the engine both schedules run on (default compiled)")
    options = parser.parse_args()
    os.environ["GPUEMU_ENGINE"] = options.engine
    print(f"{'workload':<10} {'blocks':>6} {'lockstep cpu s':>14} {'random cpu s':>12} {'ratio':>6} "
          f"{'warp-instr':>10} {'random us/warp-instr':>20}")
    for name in options.workloads:
        for blocks in options.blocks:
            lockstep, random, warp_instructions = measure(WORKLOADS[name](blocks), options.repeat)
            print(f"{name:<10} {blocks:>6} {lockstep:>14.4f} {random:>12.4f} {random / lockstep:>6.1f} "
                  f"{warp_instructions:>10} {1e6 * random / warp_instructions:>20.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Run tests/kernels/syncwarp.ptx's lock_then_syncwarp on a GPU (CuPy) at grid 1, blocks 32 and 64; save the outputs."""

# Runs on the GPU machine and does not import gpuemu; run it under `compute-sanitizer --tool synccheck` to see
# whether the sanitizer reports the lanes that reach __syncwarp at different times.
import argparse
import sys
from pathlib import Path

import numpy as np

PTX = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "syncwarp.ptx"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="an .npz of every run's lock, counter and out")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    import cupy
    kernel = cupy.RawModule(path=str(PTX)).get_function("lock_then_syncwarp")
    results = {}
    for block in (32, 64):
        for run in range(options.repeat):
            lock, counter, out = cupy.zeros(1, cupy.int32), cupy.zeros(1, cupy.int32), cupy.zeros(block, cupy.int32)
            kernel((1,), (block,), (lock, counter, out))
            cupy.cuda.runtime.deviceSynchronize()
            for name, array in (("lock", lock), ("counter", counter), ("out", out)):
                results[f"block{block}_run{run}_{name}"] = cupy.asnumpy(array)
            print(f"block {block} run {run}: counter {int(counter[0])}, out {sorted(set(cupy.asnumpy(out).tolist()))}")
    np.savez(options.out, **results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

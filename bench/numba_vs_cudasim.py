"""numba.cuda on gpuemu against numba-cuda's own simulator (NUMBA_ENABLE_CUDASIM=1): test counts and wall time on a
slice of numba-cuda's test suite, and warm kernel time on a few kernels (compile excluded; the fastest of --repeat
warm launches in each mode). Needs gpuemu[numba].

    python bench/numba_vs_cudasim.py kernels [--repeat N]
    python bench/numba_vs_cudasim.py tests NUMBA_CUDA_CHECKOUT/testing [module ...]

`tests` runs numba-cuda's tests from the checkout's testing/ directory (its pytest.ini: warnings are errors) once
under the simulator and once with `-p emulator.numba`, each module in a process of its own (a kernel fault leaves
CUDA's context unusable for the rest of the process), and prints each mode's passed/failed/skipped counts per
module, the tests that pass under the simulator but not on gpuemu, and each mode's total wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter, defaultdict

SLICE = ["test_array", "test_atomics", "test_blackscholes", "test_boolean", "test_complex_kernel", "test_constmem",
         "test_device_func", "test_forall", "test_freevar", "test_globals", "test_idiv", "test_laplace",
         "test_localmem", "test_mandel", "test_matmul", "test_minmax", "test_montecarlo", "test_powi",
         "test_py2_div_issue", "test_record_dtype", "test_reduction", "test_slicing", "test_sync", "test_transpose",
         "test_warp_ops"]

KERNELS = r"""
import json, math, sys, time, warnings
import numpy as np
if sys.argv[1] == "gpuemu":
    import emulator.numba
    emulator.numba.install()
from numba import cuda, float32
warnings.simplefilter("ignore")

@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

@cuda.jit
def tiled_matmul(a, b, c):
    sa = cuda.shared.array((16, 16), float32)
    sb = cuda.shared.array((16, 16), float32)
    row, col = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    total = float32(0)
    for tile in range(a.shape[1] // 16):
        sa[tx, ty] = a[row, tile * 16 + ty]
        sb[tx, ty] = b[tile * 16 + tx, col]
        cuda.syncthreads()
        for k in range(16):
            total += sa[tx, k] * sb[k, ty]
        cuda.syncthreads()
    c[row, col] = total

@cuda.jit
def block_sum(x, out):
    partial = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    partial[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    step = 128
    while step > 0:
        if t < step:
            partial[t] += partial[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, partial[0])

rng = np.random.default_rng(0)
x = rng.standard_normal(4096).astype(np.float32)
y = rng.standard_normal(4096).astype(np.float32)
a = rng.standard_normal((64, 64)).astype(np.float32)
b = rng.standard_normal((64, 64)).astype(np.float32)
cases = {
    "saxpy 4096": lambda: saxpy[16, 256](np.float32(2), x, y, np.zeros_like(x)),
    "tiled_matmul 64x64": lambda: tiled_matmul[(4, 4), (16, 16)](a, b, np.zeros_like(a)),
    "block_sum 4096": lambda: block_sum[16, 256](x, np.zeros(1, np.float32)),
}
times = {}
for name, launch in cases.items():
    launch()
    cuda.synchronize()
    runs = []
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        launch()
        cuda.synchronize()
        runs.append(time.perf_counter() - start)
    times[name] = min(runs)
print(json.dumps(times))
"""


def run_kernels(repeat: int) -> None:
    results = {}
    for mode in ("gpuemu", "cudasim"):
        env = dict(os.environ)
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        if mode == "cudasim":
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        done = subprocess.run([sys.executable, "-c", KERNELS, mode, str(repeat)], capture_output=True, text=True,
                              env=env)
        if done.returncode != 0:
            sys.exit(f"{mode} run failed:\n{done.stderr}")
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'kernel (warm launch)':24} {'gpuemu s':>10} {'cudasim s':>10} {'speed-up':>9}")
    for name in results["gpuemu"]:
        ours, theirs = results["gpuemu"][name], results["cudasim"][name]
        print(f"{name:24} {ours:10.3f} {theirs:10.3f} {theirs / ours:8.0f}x")


def outcomes(report: str) -> dict:
    found = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        module = os.path.splitext(os.path.basename(case.get("file") or "?"))[0]
        name = f"{module}::{case.get('classname').lstrip('.')}::{case.get('name')}"
        tags = {child.tag for child in case}
        found[name] = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
    return found


def run_tests(testing: str, modules: list) -> None:
    targets = [f"numba.cuda.tests.cudapy.{m}" for m in modules]
    results, seconds = {}, {}
    for mode in ("cudasim", "gpuemu"):
        env = dict(os.environ)
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        plugin = []
        if mode == "cudasim":
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        else:
            plugin = ["-p", "emulator.numba"]
        results[mode], seconds[mode] = {}, 0.0
        # one process per module: a kernel fault leaves CUDA's context unusable for the rest of its process
        for target in targets:
            with tempfile.TemporaryDirectory() as scratch:
                report = os.path.join(scratch, "report.xml")
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
                                "-o", "addopts=--benchmark-disable", "-o", "junit_family=xunit1",
                                f"--junitxml={report}", "--pyargs", target],
                               cwd=testing, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                seconds[mode] += time.perf_counter() - start
                if os.path.exists(report):
                    results[mode].update(outcomes(report))
    by_module = defaultdict(lambda: {mode: Counter() for mode in results})
    for mode, found in results.items():
        for name, outcome in found.items():
            by_module[name.split("::")[0]][mode][outcome] += 1
    print(f"{'module':48} {'cudasim pass/fail/skip':>24} {'gpuemu pass/fail/skip':>24}")
    totals = {mode: Counter() for mode in results}
    for module in sorted(by_module):
        cells = []
        for mode in ("cudasim", "gpuemu"):
            count = by_module[module][mode]
            totals[mode].update(count)
            cells.append(f"{count['passed']}/{count['failed']}/{count['skipped']}")
        print(f"{module:48} {cells[0]:>24} {cells[1]:>24}")
    cells = [f"{totals[m]['passed']}/{totals[m]['failed']}/{totals[m]['skipped']}" for m in ("cudasim", "gpuemu")]
    print(f"{'total':48} {cells[0]:>24} {cells[1]:>24}")
    simulator_passes = {n for n, o in results["cudasim"].items() if o == "passed"}
    missing = sorted(n for n in simulator_passes if results["gpuemu"].get(n) != "passed")
    print(f"passed under the simulator, not on gpuemu: {len(missing)}")
    for name in missing:
        print(f"  {name}: {results['gpuemu'].get(name, 'not run')}")
    print(f"wall time: cudasim {seconds['cudasim']:.0f} s, gpuemu {seconds['gpuemu']:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    kernels = commands.add_parser("kernels")
    kernels.add_argument("--repeat", type=int, default=3, help="warm launches per kernel; the fastest counts")
    tests = commands.add_parser("tests")
    tests.add_argument("testing", help="numba-cuda checkout's testing/ directory (holds its pytest.ini)")
    tests.add_argument("modules", nargs="*", default=SLICE, help="numba.cuda.tests.cudapy modules")
    arguments = parser.parse_args()
    if arguments.command == "kernels":
        run_kernels(arguments.repeat)
    else:
        run_tests(arguments.testing, arguments.modules)


if __name__ == "__main__":
    main()

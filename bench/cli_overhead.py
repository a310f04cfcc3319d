"""`make bench-cli`: what `gpuemu run` costs beyond the launch itself, on bench/run.py's workloads.

For each workload: the fastest of --repeat `gpuemu run` processes end to end (wall, and user + system CPU), against the
fastest of --repeat warm `Kernel.launch` calls in this process on the same arguments (wall and CPU); the differences
are the command line's own cost (interpreter start, imports, parsing, reading the inputs, writing the outputs, and a
first launch's cold memory). Issue 17's goal: at most 0.2 s. The development machine is shared: CPU time is what
other processes disturb least. `python -c pass` and `python -c "import numpy"` give the floor.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import emulator  # noqa: E402
from emulator.runtime.spec import parse_arg  # noqa: E402
from run import EXAMPLES, WORKLOADS  # noqa: E402

ISSUE_WORKLOADS = ("vecadd 2^20", "matmul 256^3", "histogram 2^20 B", "dot 2^20", "collatz 16K")


def process_seconds(command) -> tuple:
    """(wall, user + system CPU) seconds of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode()
    process.stderr.close()
    if status != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed: {stderr.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def fastest(command, repeat: int) -> tuple:
    runs = [process_seconds(command) for _ in range(repeat)]
    return min(wall for wall, _ in runs), min(cpu for _, cpu in runs)


def dims(text: str):
    return tuple(int(part) for part in text.split(","))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each kind; the fastest is reported")
    options = parser.parse_args()
    print(f"{'':28s} {'wall s':>7s} {'cpu s':>7s}")
    for name, code in (("python -c pass", "pass"), ("python -c 'import numpy'", "import numpy")):
        wall, cpu = fastest([sys.executable, "-c", code], options.repeat)
        print(f"{name:28s} {wall:7.3f} {cpu:7.3f}")
    print(f"\n{'workload':18s} {'launch wall':>11s} {'launch cpu':>10s} {'cli wall':>8s} {'cli cpu':>8s} "
          f"{'wall - launch':>13s} {'cpu - launch':>12s}")
    for workload in WORKLOADS:
        if workload.name not in ISSUE_WORKLOADS:
            continue
        with tempfile.TemporaryDirectory(prefix="gpuemu-bench-cli-") as directory:
            directory = Path(directory)
            specs = workload.make_args(np.random.default_rng(zlib.crc32(workload.name.encode())), directory)
            module = emulator.load(EXAMPLES / workload.ptx)
            kernel = module.kernel(workload.kernel)
            walls, cpus = [], []
            for _ in range(options.repeat + 1):
                args = [parse_arg(spec) for spec in specs]
                started, started_cpu = time.perf_counter(), time.process_time()
                kernel.launch(dims(workload.grid), dims(workload.block), args, workload.shared)
                walls.append(time.perf_counter() - started)
                cpus.append(time.process_time() - started_cpu)
            launch, launch_cpu = min(walls[1:]), min(cpus[1:])
            command = [sys.executable, "-m", "emulator", "run", EXAMPLES / workload.ptx, "--kernel", workload.kernel,
                       "--grid", workload.grid, "--block", workload.block, "--out", directory / "out", "--quiet"]
            for spec in specs:
                command += ["--arg", spec]
            wall, cpu = fastest(command, options.repeat)
            print(f"{workload.name:18s} {launch:11.3f} {launch_cpu:10.3f} {wall:8.3f} {cpu:8.3f} {wall - launch:13.3f} "
                  f"{cpu - launch_cpu:12.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

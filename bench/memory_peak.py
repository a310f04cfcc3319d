"""`make bench-memory`: the peak resident memory of one large buffer through gpuemu, as a multiple of its size.

Each case runs in a child process whose parent reads the child's ru_maxrss; the run's own footprint (the same
command with a 32-element buffer) is subtracted. Cases: `gpuemu run` with the buffer from an .npy file and as
zeros:, and Kernel.launch from Python (the caller's array stays, so about 2x is the floor there). Last, the whole
peak of `gpuemu run` on examples/vecadd with 2^--vecadd-log2 elements (two .npy inputs, a zeros: output), nothing
subtracted, as a multiple of its three arrays (issue 17's goal: at most 1.5x).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT / "tests" / "kernels" / "scale.ptx"
VECADD = ROOT / "examples" / "vecadd" / "vecadd.ptx"
MEASURE = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""
API = """
import sys
import numpy as np
import emulator
n = int(sys.argv[1])
data = np.arange(n, dtype=np.float32) if n > 32 else np.zeros(32, np.float32)
emulator.load(sys.argv[2]).kernel("scale").launch(1, 32, [data, np.zeros(32, np.float32), np.uint32(32)])
"""


def peak(command) -> int:
    result = subprocess.run([sys.executable, "-c", MEASURE, *map(str, command)], capture_output=True, text=True,
                            cwd=ROOT, check=True)
    return int(result.stdout.split()[-1])


def cli(buffer: str, out: Path):
    return [sys.executable, "-m", "emulator", "run", SCALE, "--grid", "1", "--block", "32", "--arg", buffer, "--arg",
            "zeros:f32:32", "--arg", "u32:32", "--quiet", "--out", out]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="the buffer's size in GiB (default 2)")
    parser.add_argument("--vecadd-log2", type=int, default=24, help="log2 of vecadd's length (default 24)")
    options = parser.parse_args()
    n = int(options.gib * (1 << 30)) // 4
    data = n * 4
    with tempfile.TemporaryDirectory(prefix="gpuemu-bench-memory-") as directory:
        directory = Path(directory)
        np.save(directory / "big.npy", np.arange(n, dtype=np.float32))
        np.save(directory / "small.npy", np.zeros(32, np.float32))
        cases = {
            "gpuemu run --arg @big.npy": (cli(f"@{directory / 'big.npy'}", directory / "o1"),
                                          cli(f"@{directory / 'small.npy'}", directory / "o2")),
            f"gpuemu run --arg zeros:f32:{n}": (cli(f"zeros:f32:{n}", directory / "o3"),
                                                 cli("zeros:f32:32", directory / "o4")),
            "Kernel.launch(np.arange(n))": ([sys.executable, "-c", API, n, SCALE],
                                            [sys.executable, "-c", API, 32, SCALE]),
        }
        print(f"buffer: {data / (1 << 30):.2f} GiB ({data:,} bytes)")
        for name, (large, small) in cases.items():
            base, top = peak(small), peak(large)
            print(f"{name:40s} peak RSS {top / (1 << 30):6.2f} GiB, {(top - base) / data:4.2f} x the buffer "
                  f"(footprint without it {base / (1 << 20):.0f} MiB)")
        for name in ("big.npy", "small.npy"):
            (directory / name).unlink()
        vecadd_peak(directory, options.vecadd_log2)
    return 0


def vecadd_peak(directory: Path, log2: int) -> None:
    """The whole peak RSS of `gpuemu run` on vecadd of 2^log2 floats against its three arrays."""
    n = 1 << log2
    rng = np.random.default_rng(0)
    for name in ("a.npy", "b.npy"):
        np.save(directory / name, rng.standard_normal(n).astype(np.float32))
    command = [sys.executable, "-m", "emulator", "run", VECADD, "--kernel", "vecadd", "--grid", n // 256, "--block",
               256, "--arg", f"@{directory / 'a.npy'}", "--arg", f"@{directory / 'b.npy'}", "--arg", f"zeros:f32:{n}",
               "--arg", f"i32:{n}", "--quiet", "--out", directory / "vecadd"]
    data = 3 * 4 * n
    top = peak(command)
    print(f"{'gpuemu run vecadd 2^' + str(log2):40s} peak RSS {top / (1 << 20):6.0f} MiB, {top / data:4.2f} x its "
          f"three arrays ({data / (1 << 20):.0f} MiB)")


if __name__ == "__main__":
    sys.exit(main())

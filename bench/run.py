"""`make bench`: each workload end to end through `gpuemu run` (fastest of --repeat runs): wall time, the launch's own
time from --json, thread-instructions per second of both, peak RSS; then in one process, the interpreter and the
compiled engine side by side (Kernel.launch, medians of interleaved launches) against GPUOcelot's figures from
issue 17, with the first launch's compile time apart, and a one-thread serial loop."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@dataclass
class Workload:
    name: str
    ptx: str
    kernel: str
    grid: str
    block: str
    make_args: Callable[[np.random.Generator, Path], List[str]]
    check: Callable[[Path, Path], str]
    shared: int = 0


def _save(directory: Path, name: str, array: np.ndarray) -> str:
    np.save(directory / name, array)
    return f"@{directory / name}"


def vecadd_args(rng, directory):
    n = 1 << 20
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return [_save(directory, "a.npy", a), _save(directory, "b.npy", b), f"zeros:f32:{n}", f"i32:{n}"]


def vecadd_check(inputs, out):
    a, b, c = (np.load(inputs / "a.npy"), np.load(inputs / "b.npy"), np.load(out / "arg2.npy"))
    return "exact" if np.array_equal(c, a + b) else "WRONG"


def matmul_args(rng, directory):
    a = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    return [_save(directory, "A.npy", a.reshape(-1)), _save(directory, "B.npy", b.reshape(-1)),
            "i32:256", "i32:256", "zeros:f32:65536"]


def matmul_check(inputs, out):
    a = np.load(inputs / "A.npy").reshape(256, 256).astype(np.float64)
    b = np.load(inputs / "B.npy").reshape(256, 256).astype(np.float64)
    c = np.load(out / "arg4.npy").reshape(256, 256)
    error = np.abs(c - a @ b).max()
    return f"max |err| {error:.1e}" if error < 1e-3 else f"WRONG ({error:.1e})"


def histogram_args(rng, directory):
    data = rng.integers(0, 256, 1 << 20).astype(np.uint8)
    return [_save(directory, "data.npy", data), f"i32:{1 << 20}", "zeros:u32:256"]


def histogram_check(inputs, out):
    want = np.bincount(np.load(inputs / "data.npy"), minlength=256)
    return "exact" if np.array_equal(np.load(out / "arg2.npy"), want) else "WRONG"


def dot_args(rng, directory):
    n = 1 << 20
    a = rng.uniform(-1, 1, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    return [_save(directory, "a.npy", a), _save(directory, "b.npy", b), "zeros:f32:64", f"i32:{n}"]


def dot_check(inputs, out):
    a = np.load(inputs / "a.npy").astype(np.float64)
    b = np.load(inputs / "b.npy").astype(np.float64)
    got = float(np.load(out / "arg2.npy").astype(np.float64).sum())
    want = float(a @ b)
    return f"|err| {abs(got - want):.1e}" if abs(got - want) < 1e-2 else "WRONG"


def collatz_args(rng, directory):
    return ["zeros:u32:16384", "u64:1"]


def collatz_check(inputs, out):
    steps = np.load(out / "arg0.npy")
    for i in (0, 1, 26, 16383):
        x, n = i + 1, 0
        while x != 1:
            x = 3 * x + 1 if x & 1 else x // 2
            n += 1
        if steps[i] != n:
            return "WRONG"
    return "spot-checked"


def localarray_args(rng, directory):
    values = rng.integers(0, 1 << 30, 64 * 256 * 16).astype(np.uint32)
    return [_save(directory, "values.npy", values), "zeros:u32:16384"]


def localarray_check(inputs, out):
    return "ran"


def transpose_args(rng, directory):
    return ["zeros:i32:1024"]


def transpose_check(inputs, out):
    got = np.load(out / "arg0.npy")
    return "exact" if np.array_equal(got, np.arange(1024).reshape(32, 32).T.reshape(-1)) else "WRONG"


WORKLOADS = [
    Workload("vecadd 2^20", "vecadd/vecadd.ptx", "vecadd", "4096", "256", vecadd_args, vecadd_check),
    Workload("matmul 256^3", "matmul/matmul.ptx", "Muld", "16,16", "16,16", matmul_args, matmul_check),
    Workload("histogram 2^20 B", "histogram/histogram.ptx", "histogram", "64", "256", histogram_args,
             histogram_check),
    Workload("dot 2^20", "dot/dot.ptx", "dot", "64", "256", dot_args, dot_check),
    Workload("collatz 16K", "collatz/collatz.ptx", "collatz", "64", "256", collatz_args, collatz_check),
    Workload("local sort 16K", "localarray/localarray.ptx", "sortLocal", "64", "256", localarray_args,
             localarray_check),
    Workload("transpose x1024", "transpose/transpose.ptx", "setRowReadCol", "1024", "32,32", transpose_args,
             transpose_check),
]


#: GPUOcelot's in-process launch seconds for the first five workloads (issue 17: rebuilt from tinygrad's snapshot,
#: `ptx_run` after a warm-up, medians of 7 on a 2-core machine); GPUOcelot cannot be installed here
OCELOT_SECONDS = {"vecadd 2^20": 0.77, "matmul 256^3": 1.75, "histogram 2^20 B": 0.23, "dot 2^20": 0.31,
                  "collatz 16K": 0.56}
SERIAL_ROUNDS = 100_000


def _dims(text: str):
    return tuple(int(value) for value in text.split(","))


def _engine_launches(kernel, grid, block, make_args, repeat: int, shared: int = 0) -> Dict[str, object]:
    """First launch of each engine, then `repeat` interleaved launches of both; launch seconds (perf_counter)."""
    from emulator.machine.codegen import ProgramCode
    row: Dict[str, object] = {}
    started = time.perf_counter()
    kernel.launch(grid, block, make_args(), shared, engine="interpreter")
    row["interpreter_first_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    stats = kernel.launch(grid, block, make_args(), shared, engine="compiled")
    row["compiled_first_seconds"] = time.perf_counter() - started
    code = kernel.program.__dict__.get("_gpuemu_code")
    row["compile_seconds"] = code.compile_seconds if isinstance(code, ProgramCode) else None
    times = {"interpreter": [], "compiled": []}
    outputs = {}
    for _ in range(max(1, repeat)):
        for engine in times:
            args = make_args()
            started = time.perf_counter()
            kernel.launch(grid, block, args, shared, engine=engine)
            times[engine].append(time.perf_counter() - started)
            outputs[engine] = [arg.tobytes() for arg in args if isinstance(arg, np.ndarray)]
    row["interpreter_seconds"] = float(np.median(times["interpreter"]))
    row["compiled_seconds"] = float(np.median(times["compiled"]))
    row["second_launch_compile_seconds"] = code.compile_seconds - row["compile_seconds"] if code else None
    row["thread_instructions"] = stats.thread_instructions
    row["identical"] = outputs["interpreter"] == outputs["compiled"]
    return row


def engines(repeat: int, only=None) -> List[Dict[str, object]]:
    """The five GPUOcelot workloads and the serial loop in this process, both engines."""
    from emulator.runtime.module import Device, Module
    from emulator.runtime.spec import parse_arg
    rows = []
    print(f"\nin process (Kernel.launch), medians of {repeat} interleaved launches; the first launch (with the "
          "compile) apart")
    print(f"{'workload':18s} {'ocelot s':>8s} {'interp s':>8s} {'compiled s':>10s} {'x interp':>8s} "
          f"{'compiled /s':>11s} {'x ocelot':>8s} {'compile s':>9s}  outputs")
    for workload in WORKLOADS:
        if workload.name not in OCELOT_SECONDS or (only and only not in workload.name):
            continue
        with tempfile.TemporaryDirectory() as temp:
            rng = np.random.default_rng(zlib.crc32(workload.name.encode()))
            specs = workload.make_args(rng, Path(temp))
            module = Module((EXAMPLES / workload.ptx).read_text(), str(EXAMPLES / workload.ptx), Device())
            kernel = module.kernel(workload.kernel)
            row = _engine_launches(kernel, _dims(workload.grid), _dims(workload.block),
                                   lambda: [parse_arg(spec, temp) for spec in specs], repeat, workload.shared)
        row["workload"] = workload.name
        row["ocelot_seconds"] = OCELOT_SECONDS[workload.name]
        rows.append(row)
        _engine_line(row)
    if not only or "serial" in only:
        module = Module((ROOT / "bench" / "serial_loop.ptx").read_text(), "serial_loop.ptx", Device())
        kernel = module.kernel("serial_loop")
        row = _engine_launches(kernel, (1, 1, 1), (1, 1, 1),
                               lambda: [np.zeros(1, dtype=np.uint32), np.uint32(SERIAL_ROUNDS)], repeat)
        row["workload"] = f"serial loop {SERIAL_ROUNDS // 1000}k"
        rows.append(row)
        _engine_line(row)
    return rows


def _engine_line(row) -> None:
    ocelot = row.get("ocelot_seconds")
    compile_seconds = row["compile_seconds"] or 0.0
    print(f"{row['workload']:18s} {ocelot if ocelot else '-':>8} {row['interpreter_seconds']:8.4f} "
          f"{row['compiled_seconds']:10.4f} {row['interpreter_seconds'] / row['compiled_seconds']:8.1f} "
          f"{row['thread_instructions'] / row['compiled_seconds']:11.2e} "
          f"{(ocelot / row['compiled_seconds']) if ocelot else float('nan'):8.1f} {compile_seconds:9.2f}  "
          f"{'identical' if row['identical'] else 'DIFFER'}", flush=True)


def run_workload(workload: Workload, directory: Path, backend: str, counters: bool) -> Dict[str, object]:
    rng = np.random.default_rng(zlib.crc32(workload.name.encode()))
    args = workload.make_args(rng, directory)
    out = directory / "out"
    stats_path = directory / "stats.json"
    command = [sys.executable, "-m", "emulator", "run", str(EXAMPLES / workload.ptx), "--kernel", workload.kernel,
               "--grid", workload.grid, "--block", workload.block, "--out", str(out), "--json", str(stats_path),
               "--backend", backend]
    if counters:
        command.append("--stats")
    if workload.shared:
        command += ["--shared", str(workload.shared)]
    for arg in args:
        command += ["--arg", arg]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode()
    process.stdout.close()
    process.stderr.close()
    if status != 0:
        return {"workload": workload.name, "error": stderr.strip()}
    stats = json.loads(stats_path.read_text())
    return {
        "workload": workload.name,
        "wall_seconds": wall,
        "kernel_seconds": stats["wall_seconds"],
        "thread_instructions": stats["thread_instructions"],
        "thread_instructions_per_second": stats["thread_instructions"] / wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "check": workload.check(directory, out),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="run workloads whose name contains this")
    parser.add_argument("--json", default=str(ROOT / "build" / "bench.json"), help="where to write the results")
    parser.add_argument("--compare", help="a previous results JSON to show speed-ups against")
    parser.add_argument("--backend", default="auto", choices=("auto", "c", "numpy"))
    parser.add_argument("--no-stats", action="store_true",
                        help="run without --stats (by default every memory-system counter is on)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per workload; the fastest is reported")
    parser.add_argument("--engines-repeat", type=int, default=7,
                        help="interleaved in-process launches per engine for the engines table (the median)")
    parser.add_argument("--no-engines", action="store_true", help="leave out the in-process engines table")
    parser.add_argument("--engines-only", action="store_true", help="only the in-process engines table")
    options = parser.parse_args(argv)
    if options.engines_only:
        rows = engines(options.engines_repeat, options.only)
        Path(options.json).parent.mkdir(parents=True, exist_ok=True)
        Path(options.json).write_text(json.dumps({"engines": rows}, indent=2) + "\n")
        return 0 if all(row["identical"] for row in rows) else 1
    baseline = {}
    if options.compare:
        baseline = {row["workload"]: row for row in json.loads(Path(options.compare).read_text())["results"]}
    results = []
    header = (f"{'workload':18s} {'wall s':>7s} {'kernel s':>8s} {'thread-instr':>13s} {'instr/s':>9s} "
              f"{'kernel/s':>9s} {'RSS MB':>6s}  check")
    print(f"gpuemu run {'without' if options.no_stats else 'with'} --stats, backend {options.backend}")
    print(header + ("  vs baseline" if baseline else ""))
    for workload in WORKLOADS:
        if options.only and options.only not in workload.name:
            continue
        runs = []
        for _ in range(max(1, options.repeat)):
            with tempfile.TemporaryDirectory() as temp:
                runs.append(run_workload(workload, Path(temp), options.backend, not options.no_stats))
        failed = [run for run in runs if "error" in run]
        row = failed[0] if failed else min(runs, key=lambda run: run["wall_seconds"])
        if not failed:
            row["runs"] = len(runs)
            row["kernel_seconds"] = min(run["kernel_seconds"] for run in runs)
        results.append(row)
        if "error" in row:
            print(f"{workload.name:18s} ERROR {row['error']}")
            continue
        line = (f"{row['workload']:18s} {row['wall_seconds']:7.2f} {row['kernel_seconds']:8.3f} "
                f"{row['thread_instructions']:13,d} {row['thread_instructions_per_second']:9.2e} "
                f"{row['thread_instructions'] / row['kernel_seconds']:9.2e} {row['peak_rss_mb']:6.0f}  {row['check']}")
        if row["workload"] in baseline and "wall_seconds" in baseline[row["workload"]]:
            line += f"  {baseline[row['workload']]['wall_seconds'] / row['wall_seconds']:.2f}x"
        print(line, flush=True)
    engine_rows = [] if options.no_engines else engines(options.engines_repeat, options.only)
    Path(options.json).parent.mkdir(parents=True, exist_ok=True)
    Path(options.json).write_text(json.dumps({"results": results, "engines": engine_rows}, indent=2) + "\n")
    failed = any("error" in row or str(row.get("check", "")).startswith("WRONG") for row in results)
    return 1 if failed or not all(row["identical"] for row in engine_rows) else 0


if __name__ == "__main__":
    # the first compiled launch in this process compiles for real: a cache of the bench's own
    os.environ["GPUEMU_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuemu-bench-cache-")
    sys.exit(main())

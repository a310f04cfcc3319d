"""`make bench-stats`: what --stats adds to a launch, in one process: each workload of bench/run.py launched again
and again, in turn without an observer, with the counters and the kernel table `--stats` prints, and with the
per-line counters `--json` adds as well; the median of each and the extra time in percent."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from run import EXAMPLES, ROOT, WORKLOADS  # noqa: E402

from emulator.launching import parse_dims  # noqa: E402
from emulator.cli.hostmalloc import keep_freed_memory  # noqa: E402
from emulator.runtime.module import Device, Module  # noqa: E402
from emulator.runtime.spec import parse_arg    # noqa: E402
from emulator.observers.stats import MemoryStats  # noqa: E402


#: what is timed: the launch alone, plus the counters and the kernel table, plus the per-line counters too
KINDS = ("plain", "stats", "stats_json")


def launch_seconds(kernel, workload, arguments, kind: str) -> float:
    """One launch on fresh copies of the arguments, with what `kind` adds."""
    copies = [value.copy() if isinstance(value, np.ndarray) else value for value in arguments]
    observer = None if kind == "plain" else MemoryStats()
    started = time.perf_counter()
    kernel.launch(parse_dims(workload.grid, "--grid"), parse_dims(workload.block, "--block"), copies, workload.shared,
                  observer=observer)
    if observer is not None:
        observer.kernel_counters()
        if kind == "stats_json":
            observer.line_counters()
    return time.perf_counter() - started


def measure(workload, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as temp:
        specs = workload.make_args(np.random.default_rng(zlib.crc32(workload.name.encode())), Path(temp))
        arguments = [parse_arg(spec) for spec in specs]
    path = EXAMPLES / workload.ptx
    kernel = Module(path.read_text(), str(path), Device()).kernel(workload.kernel)
    times = {kind: [] for kind in KINDS}
    for kind in KINDS:
        launch_seconds(kernel, workload, arguments, kind)
    for round_number in range(repeat):
        shift = round_number % len(KINDS)
        for kind in KINDS[shift:] + KINDS[:shift]:
            times[kind].append(launch_seconds(kernel, workload, arguments, kind))
    row = {"workload": workload.name}
    for kind in KINDS:
        row[f"{kind}_seconds"] = statistics.median(times[kind])
    for kind in KINDS[1:]:
        row[f"{kind}_extra_percent"] = 100.0 * (row[f"{kind}_seconds"] / row["plain_seconds"] - 1.0)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="run workloads whose name contains this")
    parser.add_argument("--repeat", type=int, default=15, help="launches of each kind per workload (median taken)")
    parser.add_argument("--json", default=str(ROOT / "build" / "bench-stats.json"), help="where to write the results")
    options = parser.parse_args(argv)
    keep_freed_memory()
    print(f"--stats cost, median of {options.repeat} launches of each kind")
    print(f"{'workload':18s} {'plain ms':>9s} {'--stats ms':>10s} {'extra':>7s} {'+ --json ms':>11s} {'extra':>7s}")
    results = []
    for workload in WORKLOADS:
        if options.only and options.only not in workload.name:
            continue
        row = measure(workload, max(1, options.repeat))
        results.append(row)
        print(f"{row['workload']:18s} {row['plain_seconds'] * 1e3:9.1f} {row['stats_seconds'] * 1e3:10.1f} "
              f"{row['stats_extra_percent']:+6.1f}% {row['stats_json_seconds'] * 1e3:11.1f} "
              f"{row['stats_json_extra_percent']:+6.1f}%", flush=True)
    Path(options.json).parent.mkdir(parents=True, exist_ok=True)
    Path(options.json).write_text(json.dumps({"results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

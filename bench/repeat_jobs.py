"""`gpuemu run --schedule random --repeat N` at --jobs 1 and --jobs J, interleaved: wall time of each (median of
--rounds), the speed-up, the CPU time of the command and its worker processes together (sampled from /proc every
20 ms, so a machine shared with other work shows as wall time above CPU time), and whether the two runs' stderr and
outputs are identical."""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTOGRAM = ROOT / "examples" / "histogram"
COLLATZ = ROOT / "examples" / "collatz"

#: name: the launch flags (every workload's outputs are the same under any schedule)
WORKLOADS = {
    "histogram": [HISTOGRAM / "histogram.ptx", "--grid", "8", "--block", "256", "--arg",
                  f"@{HISTOGRAM / 'inputs' / 'data.npy'}", "--arg", "i32:16384", "--arg", "zeros:u32:256"],
    "collatz": [COLLATZ / "collatz.ptx", "--grid", "2", "--block", "256", "--arg", "zeros:u32:512", "--arg", "u64:1"],
}


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int):
    """{pid: user + system ticks} of pid and every process below it."""
    parents, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            ticks[int(entry)] = int(fields[11]) + int(fields[12])
    found, todo = {}, [pid]
    while todo:
        current = todo.pop()
        if current in ticks:
            found[current] = ticks[current]
        todo += [child for child, parent in parents.items() if parent == current]
    return found


def run(flags, repeat: int, jobs: int, out: Path):
    """(wall seconds, CPU seconds, (stderr, outputs)) of one command."""
    command = [sys.executable, "-m", "emulator", "run", *map(str, flags), "--schedule", "random", "--repeat",
               str(repeat), "--jobs", str(jobs), "--out", str(out), "--quiet"]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen = {}
    while child.poll() is None:
        seen.update(_cpu_ticks(child.pid))
        time.sleep(0.02)
    stdout, stderr = child.communicate()
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({child.returncode}): {stderr}")
    outputs = {path.name: path.read_bytes() for path in sorted(out.iterdir())}
    return seconds, sum(seen.values()) / TICK, (stderr.replace(str(out), "OUT"), outputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="histogram")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2, help="compared with --jobs 1")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    flags = WORKLOADS[options.workload]
    times = {1: [], options.jobs: []}
    cpu = {1: [], options.jobs: []}
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(options.rounds):
            for jobs in (1, options.jobs):
                seconds, cpu_seconds, result = run(flags, options.repeat, jobs, Path(scratch) / f"out{jobs}-{round_}")
                times[jobs].append(seconds)
                cpu[jobs].append(cpu_seconds)
                results.setdefault(jobs, result)
    serial, parallel = statistics.median(times[1]), statistics.median(times[options.jobs])
    same = results[1] == results[options.jobs]
    print(f"{options.workload}, --repeat {options.repeat}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}: --jobs 1 {serial:.2f} s, --jobs {options.jobs} {parallel:.2f} s "
          f"(median of {options.rounds}), speed-up {serial / parallel:.2f}x; CPU {statistics.median(cpu[1]):.2f} s and "
          f"{statistics.median(cpu[options.jobs]):.2f} s; stderr and outputs {'identical' if same else 'DIFFER'}")
    verdict = re.search(r"--repeat \d+: [^\n]*", results[1][0])
    print(verdict.group(0) if verdict else results[1][0])
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()

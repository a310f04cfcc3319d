#!/usr/bin/env python3
"""Profile example launches with Nsight Compute (ncu) and save their memory counters as expected/<launch>/ncu.json."""

# Runs on the GPU machine. Each directory's selected launches run in one ncu session over
# `gpu_truth.py --in-process --no-save`; the profiled kernels come back in launch order. Metrics
# that this ncu does not offer are left out, and a failing metric group is split and retried so
# that one rejected name cannot lose the others.

import argparse
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_truth import find_spec_files, load_launches  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GPU_TRUTH = Path(__file__).resolve().parent / "gpu_truth.py"

DEFAULT_SELECTION = {
    "examples/transpose": None,
    "examples/dot": None,
    "examples/histogram": None,
    "examples/vecadd": ["vecadd_small"],
    "examples/matmul": None,
    "examples/atomic32shared": None,
    "examples/constcoef": None,
    "examples/localarray": None,
}

METRICS = [
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_shared_atom.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "launch__grid_size",
    "launch__block_size",
]
METRIC_NAME_RE = re.compile(r"^([a-z][a-z0-9_]*__[a-z0-9_]+)\b", re.M)


def find_ncu(requested):
    if requested:
        return requested
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/local/cuda*/bin/ncu") + glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return candidates[-1] if candidates else None


def offered_metric_names(ncu, timeout):
    """Base metric names this ncu offers for the GPU, or None when it cannot say."""
    try:
        result = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        print(f"ncu --query-metrics failed: {error}", flush=True)
        return None
    names = set(METRIC_NAME_RE.findall(result.stdout))
    if result.returncode != 0 or not names:
        print(f"ncu --query-metrics gave no metric list (status {result.returncode}): "
              f"{(result.stderr or result.stdout).strip()[-300:]}", flush=True)
        return None
    return names


def parse_number(text):
    text = text.replace(",", "").strip()
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def parse_csv(output):
    """Return [(kernel name, {metric: value})] in profiling order from ncu --csv output."""
    rows = list(csv.reader(line for line in output.splitlines() if line.startswith('"')))
    header = next((row for row in rows if row[:1] == ["ID"]), None)
    if header is None:
        return []
    column = {name: index for index, name in enumerate(header)}
    kernels = {}
    for row in rows:
        if row == header or len(row) != len(header):
            continue
        identifier = int(row[column["ID"]])
        name, values = kernels.setdefault(identifier, (row[column["Kernel Name"]], {}))
        value = parse_number(row[column["Metric Value"]])
        if value is not None:
            values[row[column["Metric Name"]]] = value
    return [kernels[identifier] for identifier in sorted(kernels)]


def supported_options(ncu):
    result = subprocess.run([ncu, "--help"], capture_output=True, text=True)
    return set(re.findall(r"--[a-z][a-z0-9-]+", result.stdout + result.stderr))


def profile(ncu, options_offered, directory, launches, metrics, timeout):
    """Run one ncu session over the launches; return (list of (kernel, metrics), error message)."""
    entries = sorted({launch.entry for launch in launches})
    optional = [("--print-units", "base"), ("--clock-control", "none"), ("--target-processes", "all"),
                ("--kernel-name-base", "mangled"), ("--print-kernel-base", "mangled")]
    command = [ncu, "--csv"]
    for option, value in optional:
        if option in options_offered:
            command += [option, value]
    if "--kernel-name-base" in options_offered:
        command += ["--kernel-name", f"regex:^({'|'.join(entries)})$"]
    command += ["--metrics", ",".join(metrics),
                sys.executable, str(GPU_TRUTH), str(directory), "--in-process", "--no-save",
                "--only", ",".join(launch.name for launch in launches)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], f"ncu timed out after {timeout:.0f} s"
    kernels = parse_csv(result.stdout)
    errors = [line for line in (result.stdout + result.stderr).splitlines() if "==ERROR==" in line]
    message = "; ".join(errors)[-500:] if errors else ("" if result.returncode == 0 else f"ncu exit status {result.returncode}")
    return kernels, message


def same_kernel(profiled_name, launch):
    return profiled_name in (launch.entry, launch.spec["kernel"]) or profiled_name.startswith(launch.spec["kernel"] + "(")


def collect(ncu, options_offered, directory, launches, metrics, timeout):
    """Return ({launch name: {metric: value}}, [problems]); a metric group that ncu rejects is split and retried."""
    kernels, message = profile(ncu, options_offered, directory, launches, metrics, timeout)
    if len(kernels) == len(launches):
        mismatched = [f"{kernel} for {launch.name}" for launch, (kernel, _) in zip(launches, kernels)
                      if not same_kernel(kernel, launch)]
        if mismatched:
            return {}, [f"profiled kernels do not match the launches: {', '.join(mismatched)}"]
        values = {launch.name: measured for launch, (_, measured) in zip(launches, kernels)}
        return values, [message] if message else []
    if len(metrics) > 1 and "metric" in message.lower():
        half = len(metrics) // 2
        first, first_problems = collect(ncu, options_offered, directory, launches, metrics[:half], timeout)
        second, second_problems = collect(ncu, options_offered, directory, launches, metrics[half:], timeout)
        for name, measured in second.items():
            first.setdefault(name, {}).update(measured)
        return first, first_problems + second_problems
    return {}, [f"{','.join(metrics) if len(metrics) < 4 else f'{len(metrics)} metrics'}: "
                f"{message or f'{len(kernels)} kernels profiled for {len(launches)} launches'}"]


def selection(paths, only):
    """Yield (directory, launches) to profile: the default example set, or every launch under paths."""
    if paths:
        chosen = [(file.parent, None) for file in find_spec_files(paths)]
    else:
        chosen = [(REPO / directory, names) for directory, names in DEFAULT_SELECTION.items()]
    for directory, names in chosen:
        spec_file = directory / "launches.json"
        if not spec_file.is_file():
            print(f"skipped    {directory}: no launches.json", flush=True)
            continue
        launches = [launch for launch in load_launches(spec_file, set())
                    if not launch.problem and not launch.expect_error
                    and (names is None or launch.name in names) and (not only or launch.name in only)]
        if launches:
            yield directory, launches


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", help="directories with launches.json (default: the example set)")
    parser.add_argument("--only", action="append", default=[], help="launch name; repeatable, or comma-separated")
    parser.add_argument("--ncu", help="path of the ncu executable (default: found on PATH or under /usr/local/cuda, /opt/nvidia)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one ncu session may take")
    parser.add_argument("--deadline", type=float, default=0.0,
                        help="skip the directories that would start after this many seconds (0: no limit)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be profiled")
    options = parser.parse_args(argv)
    only = {name for item in options.only for name in item.split(",") if name}
    started = time.monotonic()

    chosen = list(selection(options.paths, only))
    if options.dry_run:
        for directory, launches in chosen:
            print(f"would profile {os.path.relpath(directory)}: {', '.join(l.name for l in launches)}")
        print(f"metrics: {', '.join(METRICS)}")
        return 0
    ncu = find_ncu(options.ncu)
    if not ncu:
        print("gpu_counters: ncu not found", flush=True)
        return 1
    options_offered = supported_options(ncu)
    offered = offered_metric_names(ncu, options.timeout)
    metrics = METRICS
    if offered is not None:
        kept = [metric for metric in METRICS if metric.split(".")[0] in offered or metric.startswith("launch__")]
        missing = sorted(set(METRICS) - set(kept))
        if len(kept) < len(METRICS) // 2:
            print(f"ncu --query-metrics lacks {len(missing)} of {len(METRICS)} metrics; asking for all of them", flush=True)
        else:
            metrics = kept
            if missing:
                print(f"not offered by this ncu and GPU, skipped: {', '.join(missing)}", flush=True)

    failed = False
    profiled = 0
    for directory, launches in chosen:
        if options.deadline and time.monotonic() - started > options.deadline:
            print(f"skipped    {os.path.relpath(directory)}: past the {options.deadline:.0f} s deadline", flush=True)
            failed = True
            continue
        values, problems = collect(ncu, options_offered, directory, launches, metrics, options.timeout)
        for problem in problems:
            print(f"problem    {os.path.relpath(directory)}: {problem}", flush=True)
        for launch in launches:
            measured = values.get(launch.name)
            location = f"{os.path.relpath(directory)}/{launch.name}"
            if not measured:
                print(f"{'NO-DATA':<10} {location}", flush=True)
                failed = True
                continue
            launch.expected_dir.mkdir(parents=True, exist_ok=True)
            (launch.expected_dir / "ncu.json").write_text(json.dumps(dict(sorted(measured.items())), indent=1) + "\n")
            profiled += 1
            shared = [measured.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum") for op in ("ld", "st")]
            print(f"{'NCU':<10} {location:<44} {len(measured)} metrics; shared wavefronts ld/st {shared[0]}/{shared[1]}",
                  flush=True)
    print(f"gpu_counters: {profiled} launches profiled in {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

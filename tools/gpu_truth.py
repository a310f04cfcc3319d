#!/usr/bin/env python3
"""Run the launches of launches.json files on a real GPU (CuPy) and save the results as expected/<launch>/ files."""

# Runs on the GPU machine (Python 3.12, CuPy, numpy) and must not import gpuemu. Each directory's
# launches run in one child process; a launch that expects a fault runs alone in its own child
# (a fault poisons the CUDA context), and a launch that fails or crashes in a batch is retried
# alone. A launch that hangs is killed and reported, not retried.

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DTYPES = {
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
PTX_TYPE_SIZES = {"b8": 1, "s8": 1, "u8": 1, "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
                  "b32": 4, "s32": 4, "u32": 4, "f32": 4, "b64": 8, "s64": 8, "u64": 8, "f64": 8}
ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$%][\w$%]*)\s*(?:\(([^)]*)\))?")
PARAM_RE = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)?(?:\.align\s+\d+\s+)?)?[\w$%]+\s*(?:\[(\d+)\])?")
CONST_RE = re.compile(r"^\s*(?:\.(?:visible|extern|weak)\s+)?\.const\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$%]+)\s*(?:\[(\d*)\])?",
                      re.M)
RUNTIME_TO_DRIVER = {"LaunchFailure": "LAUNCH_FAILED", "AssertTriggered": "ASSERT",
                     "MemoryAllocation": "OUT_OF_MEMORY", "InvalidDeviceFunction": "INVALID_HANDLE",
                     "InvalidConfiguration": "INVALID_VALUE", "InvalidPitchValue": "INVALID_VALUE"}
STATIC_SHARED_LIMIT = 48 * 1024
EXIT_CONTEXT_LOST = 3


class SpecError(Exception):
    """A launch that cannot be built from its launches.json entry."""


# --- reading launches.json and PTX (no CUDA needed) ----------------------------------------

class PtxInfo:
    def __init__(self, path):
        text = path.read_text()
        self.entries = {}
        for match in ENTRY_RE.finditer(text):
            params = match.group(2) or ""
            self.entries[match.group(1)] = [
                PTX_TYPE_SIZES.get(kind, 0) * (int(count) if count else 1)
                for kind, count in PARAM_RE.findall(params)]
        self.constants = {}
        for kind, name, count in CONST_RE.findall(text):
            self.constants[name] = PTX_TYPE_SIZES.get(kind, 0) * (int(count) if count else 1)

    def resolve(self, kernel):
        if kernel in self.entries:
            return kernel
        prefix = f"_Z{len(kernel)}{kernel}"
        candidates = [name for name in self.entries if name.startswith(prefix)]
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            raise SpecError(f"kernel {kernel!r} is ambiguous: {', '.join(candidates)}")
        raise SpecError(f"no .entry {kernel!r} (entries: {', '.join(self.entries) or 'none'})")


def parse_argument(text, directory):
    """Return ("buffer", array or (dtype, count)) or ("scalar", numpy scalar) for one args entry."""
    if text.startswith("@"):
        path = directory / text[1:]
        if not path.exists():
            raise SpecError(f"missing input file {path}")
        return "buffer", path
    parts = text.split(":")
    try:
        if parts[0] == "zeros" and len(parts) == 3:
            return "buffer", (np.dtype(DTYPES[parts[1]]), int(parts[2], 0))
        if len(parts) == 2:
            dtype = np.dtype(DTYPES[parts[0]])
            if dtype.kind == "f":
                literal = parts[1].strip()
                is_hex = literal.lower().lstrip("+-").startswith("0x")
                return "scalar", dtype.type(float.fromhex(literal) if is_hex else float(literal))
            value = int(parts[1], 0)
            if not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
                raise SpecError(f"{text!r}: value out of range for {parts[0]}")
            return "scalar", dtype.type(value)
    except (KeyError, ValueError) as error:
        raise SpecError(f"bad argument {text!r}: {error}") from None
    raise SpecError(f"bad argument {text!r}")


def dim3(value, what):
    value = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(value) <= 3 or not all(isinstance(v, int) and v >= 1 for v in value):
        raise SpecError(f"bad {what} {value!r}")
    return tuple(value + [1] * (3 - len(value)))


class Launch:
    """One launches.json entry, checked against its PTX without touching a GPU."""

    def __init__(self, directory, spec, default_ptx, ptx_cache):
        self.directory = directory
        self.spec = spec
        self.name = spec.get("name") or spec.get("kernel")
        self.expect_error = spec.get("expect_error")
        self.stdout = bool(spec.get("stdout"))
        self.problem = None
        try:
            self.ptx_path = directory / spec.get("ptx", default_ptx or "")
            if not self.ptx_path.is_file():
                raise SpecError(f"missing PTX {self.ptx_path}")
            if self.ptx_path not in ptx_cache:
                ptx_cache[self.ptx_path] = PtxInfo(self.ptx_path)
            info = ptx_cache[self.ptx_path]
            self.entry = info.resolve(spec["kernel"])
            self.grid = dim3(spec.get("grid", 1), "grid")
            self.block = dim3(spec.get("block", 1), "block")
            self.shared = int(spec.get("shared", 0))
            self.args = [parse_argument(text, directory) for text in spec.get("args", [])]
            self.const = {name: directory / text[1:] for name, text in (spec.get("const") or {}).items()}
            for name, path in self.const.items():
                if not path.exists():
                    raise SpecError(f"missing const file {path}")
                if name in info.constants and np.load(path).nbytes > info.constants[name]:
                    raise SpecError(f"const {name}: {np.load(path).nbytes} bytes, symbol holds {info.constants[name]}")
            self.check_parameters(info.entries[self.entry])
        except SpecError as error:
            self.problem = str(error)
        except (KeyError, TypeError, ValueError) as error:
            self.problem = f"bad launch entry: {error!r}"

    def check_parameters(self, param_sizes):
        if len(param_sizes) != len(self.args):
            raise SpecError(f"{self.entry} takes {len(param_sizes)} parameters, args has {len(self.args)}")
        for index, ((kind, value), size) in enumerate(zip(self.args, param_sizes)):
            if kind == "buffer" and size != 8:
                raise SpecError(f"arg{index} is a buffer but parameter {index} has {size} bytes")
            if kind == "scalar" and value.dtype.itemsize != size:
                raise SpecError(f"arg{index} is {value.dtype.itemsize} bytes but parameter {index} has {size}")

    def describe(self):
        parts = []
        for index, (kind, value) in enumerate(self.args):
            if kind == "scalar":
                parts.append(f"{value.dtype.name}({value.item()!r})")
            elif isinstance(value, Path):
                header = np.load(value, mmap_mode="r")
                parts.append(f"{value.name}:{header.dtype.name}{list(header.shape)}->arg{index}.npy")
            else:
                parts.append(f"zeros:{value[0].name}[{value[1]}]->arg{index}.npy")
        consts = "".join(f" const {name}={path.name}" for name, path in self.const.items())
        return (f"{self.entry} grid {self.grid} block {self.block} shared {self.shared}{consts} "
                f"args {' '.join(parts)}" + (" stdout" if self.stdout else "")
                + (f" expect {self.expect_error}" if self.expect_error else ""))

    @property
    def expected_dir(self):
        return self.directory / "expected" / self.name


def find_spec_files(paths):
    files = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            files.append(path)
        elif (path / "launches.json").is_file():
            files.append(path / "launches.json")
        else:
            files += sorted(p for p in path.rglob("launches.json") if "expected" not in p.parts)
    return files


def load_launches(spec_file, only):
    data = json.loads(spec_file.read_text())
    ptx_cache = {}
    launches = [Launch(spec_file.parent, spec, data.get("ptx"), ptx_cache) for spec in data.get("launches", [])]
    names = [launch.name for launch in launches]
    duplicates = {name for name in names if names.count(name) > 1}
    for launch in launches:
        if launch.name in duplicates and not launch.problem:
            launch.problem = f"launch name {launch.name!r} is not unique"
    if only:
        launches = [launch for launch in launches if launch.name in only]
    return launches


# --- running on the GPU (child side) --------------------------------------------------------

def cuda_error_name(error):
    text = str(error)
    match = re.search(r"\bCUDA_ERROR_[A-Z0-9_]+", text)
    if match:
        return match.group(0)
    match = re.search(r"\bcudaError(\w+)", text)
    if match:
        name = match.group(1)
        return "CUDA_ERROR_" + RUNTIME_TO_DRIVER.get(name, re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper())
    return f"{type(error).__name__}: {text}"


class GpuRunner:
    """Runs launches in this process; modules are loaded once per PTX file."""

    def __init__(self, save):
        import cupy
        self.cupy = cupy
        self.save = save
        self.modules = {}
        self.libc = ctypes.CDLL(None)

    def module(self, path):
        if path not in self.modules:
            self.modules[path] = self.cupy.RawModule(path=str(path))
        return self.modules[path]

    def run(self, launch):
        """Run one launch; return a result dict. Raises nothing: CUDA errors come back as status error."""
        cupy = self.cupy
        started = time.perf_counter()
        buffers = {}
        inputs = {}
        try:
            module = self.module(launch.ptx_path)
            kernel = module.get_function(launch.entry)
            for name, path in launch.const.items():
                host = np.ascontiguousarray(np.load(path))
                module.get_global(name).copy_from_host(host.ctypes.data, host.nbytes)
            values = []
            for index, (kind, value) in enumerate(launch.args):
                if kind == "scalar":
                    values.append(value)
                    continue
                if isinstance(value, Path):
                    inputs[index] = np.load(value)
                    buffer = cupy.asarray(inputs[index])
                else:
                    buffer = cupy.zeros(value[1], dtype=value[0])
                buffers[index] = buffer
                values.append(buffer)
            if launch.shared + kernel.shared_size_bytes > STATIC_SHARED_LIMIT:
                kernel.max_dynamic_shared_size_bytes = launch.shared

            def execute():
                kernel(launch.grid, launch.block, tuple(values), shared_mem=launch.shared)
                cupy.cuda.runtime.deviceSynchronize()

            printed = self.capture_stdout(execute) if launch.stdout else execute()
            seconds = time.perf_counter() - started
            host_buffers = {index: cupy.asnumpy(buffer) for index, buffer in buffers.items()}
        except Exception as error:
            result = {"status": "error", "error": cuda_error_name(error), "detail": str(error)[:300],
                      "seconds": time.perf_counter() - started}
            if self.save:
                self.clear_expected(launch)
                if result["error"].startswith("CUDA_ERROR_"):
                    launch.expected_dir.mkdir(parents=True, exist_ok=True)
                    (launch.expected_dir / "error.txt").write_text(result["error"] + "\n")
            return result
        saved = []
        if self.save:
            self.clear_expected(launch)
            launch.expected_dir.mkdir(parents=True, exist_ok=True)
            unchanged = []
            for index, array in host_buffers.items():
                original = inputs.get(index)
                if original is not None and original.dtype == array.dtype and original.shape == array.shape \
                        and original.tobytes() == array.tobytes():
                    unchanged.append(str(index))
                    continue
                np.save(launch.expected_dir / f"arg{index}.npy", array)
                saved.append(f"arg{index}.npy")
            if unchanged:
                (launch.expected_dir / "unchanged.txt").write_text(" ".join(unchanged) + "\n")
                saved.append("unchanged.txt")
            if launch.stdout:
                (launch.expected_dir / "stdout.txt").write_bytes(printed)
                saved.append("stdout.txt")
        result = {"status": "ok", "seconds": seconds, "saved": saved}
        if launch.stdout:
            result["stdout_lines"] = printed.count(b"\n")
        return result

    def capture_stdout(self, execute):
        """Run execute() with file descriptor 1 sent to a temporary file; return what was written."""
        sys.stdout.flush()
        self.libc.fflush(None)
        saved_fd = os.dup(1)
        with tempfile.TemporaryFile() as capture:
            os.dup2(capture.fileno(), 1)
            try:
                execute()
            finally:
                self.libc.fflush(None)
                os.dup2(saved_fd, 1)
                os.close(saved_fd)
            capture.seek(0)
            return capture.read()

    @staticmethod
    def clear_expected(launch):
        if launch.expected_dir.is_dir():
            for path in launch.expected_dir.iterdir():
                if re.fullmatch(r"arg\d+\.npy|stdout\.txt|error\.txt", path.name):
                    path.unlink()


def child_main(job_path):
    """Child process: run the job's launches in order, appending one JSON record per event."""
    job = json.loads(Path(job_path).read_text())
    launches = {launch.name: launch for launch in load_launches(Path(job["spec_file"]), set(job["launches"]))}
    with open(job["results"], "a") as results:
        def record(**fields):
            results.write(json.dumps(fields) + "\n")
            results.flush()

        runner = GpuRunner(job["save"])
        for name in job["launches"]:
            record(event="start", name=name)
            result = runner.run(launches[name])
            record(event="done", name=name, **result)
            if result["status"] == "error":
                sys.stdout.flush()
                os._exit(EXIT_CONTEXT_LOST)
    return 0


# --- orchestration (parent side) ------------------------------------------------------------

class Orchestrator:
    def __init__(self, options):
        self.options = options
        self.counts = {}
        self.failed = False

    def report(self, launch, status, detail):
        self.counts[status] = self.counts.get(status, 0) + 1
        if status not in ("OK", "FAULT", "DRY-RUN"):
            self.failed = True
        location = f"{os.path.relpath(launch.directory)}/{launch.name}"
        print(f"{status:<10} {location:<44} {detail}", flush=True)

    def finish(self, launch, result):
        """Turn a child's result record into the launch's summary line."""
        status = result["status"]
        if status == "ok":
            timing = f"{result['seconds'] * 1000:.1f} ms"
            saved = f"saved {', '.join(result['saved'])}" if result.get("saved") else "not saved"
            lines = f", {result['stdout_lines']} stdout lines" if "stdout_lines" in result else ""
            if launch.expect_error:
                self.report(launch, "NO-FAULT", f"expected {launch.expect_error}, completed in {timing}; {saved}")
            else:
                self.report(launch, "OK", f"{timing}{lines}; {saved}")
        elif status == "error":
            if launch.expect_error == result["error"]:
                self.report(launch, "FAULT", f"{result['error']} as expected")
            elif launch.expect_error:
                self.report(launch, "WRONG-FAULT", f"{result['error']} (expected {launch.expect_error}): {result.get('detail', '')}")
            else:
                self.report(launch, "ERROR", f"{result['error']}: {result.get('detail', '')}")
        else:
            if not self.options.no_save:
                GpuRunner.clear_expected(launch)
                if status == "timeout":
                    launch.expected_dir.mkdir(parents=True, exist_ok=True)
                    (launch.expected_dir / "error.txt").write_text("TIMEOUT\n")
            self.report(launch, status.upper(), result.get("detail", ""))

    def run_child(self, spec_file, launches):
        """Run launches in one child; return ({name: result}, whether any launch started)."""
        with tempfile.TemporaryDirectory(prefix="gpu_truth_") as scratch:
            results_path = Path(scratch) / "results.jsonl"
            job_path = Path(scratch) / "job.json"
            job_path.write_text(json.dumps({"spec_file": str(spec_file), "launches": [l.name for l in launches],
                                            "results": str(results_path), "save": not self.options.no_save}))
            results_path.touch()
            command = [sys.executable, os.path.abspath(__file__), "--child", str(job_path)]
            child = subprocess.Popen(command, stdout=sys.stderr)
            try:
                with open(results_path) as stream:
                    return self.follow_child(child, stream)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()

    def follow_child(self, child, stream):
        """Read the child's records until it exits; kill it when a launch makes no progress in time."""
        results, started, pending = {}, None, ""
        last_progress, limit = time.monotonic(), self.options.startup_timeout
        while True:
            try:
                child.wait(timeout=0.05)
                finished = True
            except subprocess.TimeoutExpired:
                finished = False
            pending += stream.read()
            *lines, pending = pending.split("\n")
            if lines:
                last_progress, limit = time.monotonic(), self.options.launch_timeout
            for line in lines:
                record = json.loads(line)
                if record.pop("event") == "start":
                    started = record["name"]
                else:
                    results[record["name"]] = record
            if finished:
                if started and started not in results:
                    results[started] = {"status": "crashed", "detail": f"child exited with status {child.returncode}"}
                return results, started is not None
            if time.monotonic() - last_progress > limit:
                child.kill()
                child.wait()
                if started and started not in results:
                    results[started] = {"status": "timeout", "detail": f"no result after {limit:.0f} s; child killed"}
                return results, started is not None

    def run_directory(self, spec_file, launches):
        runnable = []
        for launch in launches:
            if launch.problem:
                self.report(launch, "SPEC-ERROR", launch.problem)
            else:
                runnable.append(launch)
        batch = [launch for launch in runnable if not launch.expect_error]
        solos = [launch for launch in runnable if launch.expect_error]
        while batch:
            results, any_started = self.run_child(spec_file, batch)
            if not any_started:
                for launch in batch:
                    self.report(launch, "CHILD-FAILED", "the child process ran no launch (see the log above)")
                break
            remaining = []
            for position, launch in enumerate(batch):
                result = results.get(launch.name)
                if result is None:
                    remaining = batch[position:]
                    break
                if result["status"] in ("ok", "timeout") or len(batch) == 1:
                    self.finish(launch, result)
                else:
                    solos.append(launch)
                    remaining = batch[position + 1:]
                    break
            batch = remaining
        for launch in solos:
            results, _ = self.run_child(spec_file, [launch])
            self.finish(launch, results.get(launch.name, {"status": "crashed", "detail": "no result from child"}))

    def run_in_process(self, launches):
        runner = None
        for launch in launches:
            if launch.problem:
                self.report(launch, "SPEC-ERROR", launch.problem)
                continue
            runner = runner or GpuRunner(not self.options.no_save)
            result = runner.run(launch)
            self.finish(launch, result)
            if result["status"] == "error":
                print("stopping: the CUDA context is unusable after an error", flush=True)
                return


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", help="directories holding launches.json (searched recursively) or files")
    parser.add_argument("--only", action="append", default=[], help="launch name; repeatable, or comma-separated")
    parser.add_argument("--dry-run", action="store_true", help="check and print the launches without a GPU")
    parser.add_argument("--no-save", action="store_true", help="run but write no expected/ files")
    parser.add_argument("--in-process", action="store_true",
                        help="run everything in this process, stopping at the first error (for profilers)")
    parser.add_argument("--launch-timeout", type=float, default=20.0,
                        help="seconds a launch may take before its child is killed (default 20)")
    parser.add_argument("--startup-timeout", type=float, default=120.0,
                        help="seconds a child may take to start its first launch (default 120)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        return child_main(options.child)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    if not options.paths:
        parser.error("give at least one directory")

    only = {name for item in options.only for name in item.split(",") if name}
    orchestrator = Orchestrator(options)
    spec_files = find_spec_files(options.paths)
    if not spec_files:
        print("no launches.json found", flush=True)
        return 1
    all_launches = []
    for spec_file in spec_files:
        try:
            launches = load_launches(spec_file, only)
        except (OSError, json.JSONDecodeError) as error:
            print(f"{'SPEC-ERROR':<10} {os.path.relpath(spec_file)}: {error}", flush=True)
            orchestrator.failed = True
            continue
        if options.dry_run:
            for launch in launches:
                if launch.problem:
                    orchestrator.report(launch, "SPEC-ERROR", launch.problem)
                else:
                    orchestrator.report(launch, "DRY-RUN", launch.describe())
        elif options.in_process:
            all_launches += launches
        else:
            orchestrator.run_directory(spec_file, launches)
    if options.in_process and not options.dry_run:
        orchestrator.run_in_process(all_launches)
    if only:
        found = set()
        for spec_file in spec_files:
            try:
                found |= {spec.get("name") or spec.get("kernel") for spec in json.loads(spec_file.read_text()).get("launches", [])}
            except (OSError, json.JSONDecodeError):
                pass
        for name in sorted(only - found):
            print(f"{'NOT-FOUND':<10} --only {name} matches no launch", flush=True)
            orchestrator.failed = True
    total = sum(orchestrator.counts.values())
    print(f"gpu_truth: {total} launches: "
          + ", ".join(f"{count} {status}" for status, count in sorted(orchestrator.counts.items())), flush=True)
    return 1 if orchestrator.failed else 0


if __name__ == "__main__":
    sys.exit(main())

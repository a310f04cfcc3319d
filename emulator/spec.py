"""Launch specifications (docs/launch-spec.md): one launches.json drives a real GPU and gpuemu alike."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import ir
from .errors import UsageError


DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
          "f16": np.float16, "f32": np.float32, "f64": np.float64}


def _dtype(name: str, spec: str):
    if name not in DTYPES:
        raise UsageError(f"unknown type '{name}' in '{spec}' (use one of {' '.join(DTYPES)})")
    return np.dtype(DTYPES[name])


def _scalar(dtype: np.dtype, text: str, spec: str):
    try:
        if dtype.kind == "f":
            return dtype.type(float(text))
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"'{text}' in '{spec}' is not a {dtype.name} value") from None
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise UsageError(f"{value} in '{spec}' is out of range for {dtype.name}")
    return dtype.type(value)


def parse_arg(spec: str, base_dir: str = "."):
    """`@file.npy` → array, `zeros:f32:1024` → array, `i32:5` → numpy scalar."""
    if spec.startswith("@"):
        path = os.path.join(base_dir, spec[1:])
        try:
            return np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise UsageError(f"argument file '{path}' not found") from None
        except (ValueError, OSError) as error:
            raise UsageError(f"cannot read '{path}' as .npy: {error}") from None
    parts = spec.split(":")
    if parts[0] == "zeros":
        if len(parts) != 3:
            raise UsageError(f"'{spec}' should be zeros:DTYPE:COUNT")
        dtype = _dtype(parts[1], spec)
        try:
            count = int(parts[2], 0)
        except ValueError:
            raise UsageError(f"count '{parts[2]}' in '{spec}' is not an integer") from None
        if count < 0:
            raise UsageError(f"negative count in '{spec}'")
        return np.zeros(count, dtype=dtype)
    if len(parts) != 2:
        raise UsageError(f"'{spec}' is not @file.npy, zeros:DTYPE:COUNT or DTYPE:VALUE")
    return _scalar(_dtype(parts[0], spec), parts[1], spec)


DEFAULT_BUFFER_BYTES_PER_THREAD = 16


def default_arguments(params: List[ir.KernelParam], grid, block) -> Tuple[list, str]:
    """Arguments for a launch given without --arg: zeroed buffers for 64-bit (pointer) parameters,
    the thread count for integer scalars, 1.0 for floating-point ones; and a note saying so."""
    threads = int(np.prod(grid)) * int(np.prod(block))
    buffer_bytes = threads * DEFAULT_BUFFER_BYTES_PER_THREAD
    args = []
    for param in params:
        if param.type in ("u64", "b64"):
            args.append(np.zeros(buffer_bytes, dtype=np.uint8))
        elif param.type.startswith("f"):
            args.append(np.dtype(f"f{param.size}").type(1.0))
        else:
            kind = "u" if param.type.startswith(("u", "b")) else "i"
            args.append(np.dtype(f"{kind}{param.size}").type(min(threads, (1 << (8 * param.size - 1)) - 1)))
    note = (f"no --arg given: each 64-bit parameter gets a zeroed buffer of {buffer_bytes:,} bytes "
            f"({DEFAULT_BUFFER_BYTES_PER_THREAD} per thread), each integer parameter {threads:,} (the thread count)")
    return args, note


@dataclass
class LaunchSpec:
    directory: Path
    name: str
    ptx: Path
    kernel: str
    grid: tuple
    block: tuple
    shared: int
    args: List[str]
    const: Dict[str, str] = field(default_factory=dict)
    stdout: bool = False
    tolerance: Optional[dict] = None
    expect_error: Optional[str] = None
    sanitizer_error: Optional[str] = None

    @property
    def expected_dir(self) -> Path:
        return self.directory / "expected" / self.name

    def arguments(self):
        return [parse_arg(spec, str(self.directory)) for spec in self.args]

    def constants(self):
        return {name: parse_arg(spec, str(self.directory)) for name, spec in self.const.items()}


def read_launches(path: Path) -> List[LaunchSpec]:
    """Every launch of one launches.json."""
    data = json.loads(Path(path).read_text())
    directory = Path(path).parent
    specs = []
    for entry in data["launches"]:
        specs.append(LaunchSpec(
            directory=directory, name=entry["name"], ptx=directory / entry.get("ptx", data.get("ptx")),
            kernel=entry["kernel"], grid=tuple(entry["grid"]), block=tuple(entry["block"]),
            shared=int(entry.get("shared", 0)), args=list(entry["args"]), const=dict(entry.get("const", {})),
            stdout=bool(entry.get("stdout", False)), tolerance=entry.get("tolerance"),
            expect_error=entry.get("expect_error"), sanitizer_error=entry.get("sanitizer_error")))
    return specs


def compare(expected: np.ndarray, actual: np.ndarray, tolerance: Optional[dict]) -> Optional[str]:
    """None when they agree (bit for bit, or within the tolerance); otherwise what differs."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return f"shape/dtype {actual.shape} {actual.dtype} != {expected.shape} {expected.dtype}"
    exp_bits = expected.view(np.uint8).reshape(expected.size, -1) if expected.size else expected
    act_bits = actual.view(np.uint8).reshape(actual.size, -1) if actual.size else actual
    differ = np.flatnonzero(np.any(exp_bits != act_bits, axis=1)) if expected.size else []
    if len(differ) == 0:
        return None
    if tolerance and expected.dtype.kind == "f":
        return _compare_within(expected, actual, tolerance)
    return _describe_difference(expected, actual, differ)


def _compare_within(expected: np.ndarray, actual: np.ndarray, tolerance: dict) -> Optional[str]:
    with np.errstate(all="ignore"):
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        both_nan = np.isnan(e) & np.isnan(a)
        same_inf = np.isinf(e) & (e == a)
        if "ulp" in tolerance:
            spacing = np.abs(np.spacing(expected.astype(expected.dtype))).astype(np.float64)
            bound = tolerance["ulp"] * spacing
        elif "rel" in tolerance:
            bound = tolerance["rel"] * np.abs(e)
        else:
            bound = np.zeros(e.shape)
        if "abs" in tolerance:
            bound = np.maximum(bound, float(tolerance["abs"]))
        ok = both_nan | same_inf | (np.abs(e - a) <= bound)
    bad = np.flatnonzero(~ok.reshape(-1))
    if len(bad) == 0:
        return None
    return _describe_difference(expected, actual, bad)


def _describe_difference(expected: np.ndarray, actual: np.ndarray, differ) -> str:
    first = int(differ[0])
    flat_e, flat_a = expected.reshape(-1), actual.reshape(-1)
    return (f"{len(differ)} of {expected.size} elements differ; first at {first}: "
            f"expected {flat_e[first]!r}, got {flat_a[first]!r}")


def run_launch(spec: LaunchSpec, *, backend: str = "auto", module_cache: Optional[dict] = None):
    """Run one specified launch through gpuemu; returns (arguments after the launch, printed text)."""
    import io
    from .launch import Device, Module
    stdout = io.StringIO()
    key = str(spec.ptx)
    if module_cache is not None and key in module_cache:
        module = module_cache[key]
        module.device.stdout = stdout
    else:
        module = Module(spec.ptx.read_text(), str(spec.ptx), Device(backend=backend, stdout=stdout))
        if module_cache is not None:
            module_cache[key] = module
    for name, value in spec.constants().items():
        module.set_symbol(name, value)
    args = spec.arguments()
    module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
    return args, stdout.getvalue()


def check_launch(spec: LaunchSpec, args, printed: str) -> List[str]:
    """Differences between a run's results and the launch's recorded GPU results (empty when they agree)."""
    expected = spec.expected_dir
    unchanged_file = expected / "unchanged.txt"
    unchanged = set(unchanged_file.read_text().split()) if unchanged_file.exists() else set()
    originals = None
    problems = []
    for index, arg in enumerate(args):
        if not isinstance(arg, np.ndarray):
            continue
        path = expected / f"arg{index}.npy"
        if path.exists():
            want = np.load(path)
        elif str(index) in unchanged:
            originals = originals or spec.arguments()
            want = originals[index]
        else:
            problems.append(f"arg{index}: no recorded result")
            continue
        problem = compare(want, arg, spec.tolerance)
        if problem:
            problems.append(f"arg{index}: {problem}")
    if spec.stdout:
        want_lines = (expected / "stdout.txt").read_text().splitlines()
        if sorted(printed.splitlines()) != sorted(want_lines):
            problems.append("printed text differs")
    return problems

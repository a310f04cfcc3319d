"""Launch specifications (docs/launch-spec.md): one launches.json drives a real GPU and gpuemu alike."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from emulator import ir
from emulator.base.errors import UsageError
from isa.types import TYPES

DTYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
          "f16": np.float16, "f32": np.float32, "f64": np.float64}


def _dtype(name: str, spec: str):
    if name not in DTYPES:
        raise UsageError(f"unknown type '{name}' in '{spec}' (use one of {' '.join(DTYPES)})")
    return np.dtype(DTYPES[name])


NONFINITE_SPELLINGS = ("inf", "infinity", "nan")


def _float_scalar(dtype: np.dtype, text: str, spec: str):
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"'{text}' in '{spec}' is not a {dtype.name} value") from None
    with np.errstate(over="ignore"):
        result = dtype.type(value)
    spelled_nonfinite = text.strip().lstrip("+-").lower() in NONFINITE_SPELLINGS
    if not np.isfinite(result) and not spelled_nonfinite:
        largest = float(np.finfo(dtype).max)
        raise UsageError(f"{text} in '{spec}' is out of range for {dtype.name} (largest {largest:.8g})")
    return result


def _bytes_scalar(text: str, spec: str) -> np.void:
    digits = text.replace("_", "")
    if not digits:
        raise UsageError(f"'{spec}' has no bytes (bytes:HEX, two hex digits a byte)")
    if len(digits) % 2:
        raise UsageError(f"'{spec}' has an odd number of hex digits (bytes:HEX, two hex digits a byte)")
    try:
        return np.void(bytes.fromhex(digits))
    except ValueError:
        raise UsageError(f"'{text}' in '{spec}' is not hex digits (bytes:HEX, two hex digits a byte)") from None


def _scalar(dtype: np.dtype, text: str, spec: str):
    if dtype.kind == "f":
        return _float_scalar(dtype, text, spec)
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"'{text}' in '{spec}' is not a {dtype.name} value") from None
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise UsageError(f"{value} in '{spec}' is out of range for {dtype.name}")
    return dtype.type(value)


def parse_arg(spec: str, base_dir: str = ".", *, lazy: bool = False):
    """`@file.npy` → array, `zeros:f32:1024` → array, `i32:5` → numpy scalar, `bytes:0100ff00` → np.void
    (by-value bytes for a struct or array parameter). lazy: a .npy file is mapped copy-on-write rather than read,
    so its pages are read when the launch copies them (and a refused launch reads nothing)."""
    if spec.startswith("@"):
        path = os.path.join(base_dir, spec[1:])
        try:
            if lazy:
                try:
                    mapped = np.load(path, mmap_mode="c", allow_pickle=False)
                    if isinstance(mapped, np.ndarray):
                        return mapped
                except (ValueError, OSError):  # an empty array, or a file that cannot be mapped: read it
                    pass
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
        raise UsageError(f"'{spec}' is not @file.npy, zeros:DTYPE:COUNT, DTYPE:VALUE or bytes:HEX")
    if parts[0] == "bytes":
        return _bytes_scalar(parts[1], spec)
    return _scalar(_dtype(parts[0], spec), parts[1], spec)


DEFAULT_BUFFER_BYTES_PER_THREAD = 16


def passed_as_bytes(param: ir.KernelParam) -> bool:
    """True for a struct or array passed by value (`.param .align 8 .b8 s[16]`): its size is not its type's."""
    ptx_type = TYPES.get(param.type)
    return ptx_type is None or ptx_type.bytes != param.size


def default_arguments(params: List[ir.KernelParam], grid, block) -> Tuple[list, str]:
    """Arguments for a launch given without --arg: zeroed buffers for 64-bit (pointer) parameters,
    the thread count for integer scalars, 1.0 for floating-point ones, zero bytes for structs and arrays passed
    by value; and a note saying so."""
    threads = int(np.prod(grid)) * int(np.prod(block))
    buffer_bytes = threads * DEFAULT_BUFFER_BYTES_PER_THREAD
    args = []
    for param in params:
        if passed_as_bytes(param):
            args.append(np.void(bytes(param.size)))
        elif param.type in ("u64", "b64"):
            args.append(np.zeros(buffer_bytes, dtype=np.uint8))
        elif param.type.startswith("f"):
            args.append(np.dtype(f"f{param.size}").type(1.0))
        else:
            kind = "u" if param.type.startswith(("u", "b")) else "i"
            args.append(np.dtype(f"{kind}{param.size}").type(min(threads, (1 << (8 * param.size - 1)) - 1)))
    note = (f"no --arg given: each 64-bit parameter gets a zeroed buffer of {buffer_bytes:,} bytes "
            f"({DEFAULT_BUFFER_BYTES_PER_THREAD} per thread), each integer parameter {threads:,} (the thread count)")
    by_value = [param.name for param in params if passed_as_bytes(param)]
    if by_value:
        note += f", each struct or array passed by value ({', '.join(by_value)}) zero bytes of its size"
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
    source: Optional[Path] = None

    @property
    def expected_dir(self) -> Path:
        return self.directory / "expected" / self.name

    @property
    def where(self) -> str:
        """How an error names this launch: `path/launches.json: launch 'name'`."""
        return f"{self.source}: launch '{self.name}'" if self.source else f"launch '{self.name}'"

    def arguments(self):
        try:
            return [parse_arg(spec, str(self.directory)) for spec in self.args]
        except UsageError as error:
            raise UsageError(f"{self.where}: {error}") from None

    def constants(self):
        try:
            return {name: parse_arg(spec, str(self.directory)) for name, spec in self.const.items()}
        except UsageError as error:
            raise UsageError(f"{self.where}: {error}") from None


LAUNCH_KEYS = ("name", "kernel", "ptx", "grid", "block", "shared", "args", "const", "stdout", "tolerance",
               "expect_error", "sanitizer_error", "note")
FILE_KEYS = ("ptx", "launches", "note")
TOLERANCE_BOUNDS = ("ulp", "rel", "abs")


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return (_is_integer(value) or isinstance(value, float)) and math.isfinite(value)


def _shown(value, limit: int = 60) -> str:
    """A JSON value as the file spells it, cut short for an error line."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _EntryReader:
    """Checks one launches.json entry key by key; every problem is a UsageError naming the file and the launch."""

    def __init__(self, path: Path, index: int, entry):
        self.where = f"{path}: launch {index}"
        if not isinstance(entry, dict):
            raise UsageError(f"{self.where}: should be an object, not {_shown(entry)}")
        self.entry = entry
        name = self.string("name")
        self.where = f"{path}: launch '{name}'"
        unknown = sorted(set(entry) - set(LAUNCH_KEYS))
        if unknown:
            self.fail(f"unknown key {', '.join(map(json.dumps, unknown))} (known: {' '.join(LAUNCH_KEYS)})")

    def fail(self, problem: str):
        raise UsageError(f"{self.where}: {problem}")

    def string(self, key: str, default=None, *, required: bool = True):
        if key not in self.entry:
            if required:
                self.fail(f'no "{key}"')
            return default
        value = self.entry[key]
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            self.fail(f'"{key}" should be a non-empty string, not {_shown(value)}')
        return value

    def dims(self, key: str) -> tuple:
        if key not in self.entry:
            self.fail(f'no "{key}"')
        value = self.entry[key]
        values = [value] if _is_integer(value) else value
        if (not isinstance(values, list) or not 1 <= len(values) <= 3
                or not all(_is_integer(v) and v >= 1 for v in values)):
            self.fail(f'"{key}" should be 1 to 3 positive integers, not {_shown(value)}')
        return tuple(values)

    def shared(self) -> int:
        value = self.entry.get("shared", 0)
        if not _is_integer(value) or value < 0:
            self.fail(f'"shared" should be a non-negative integer (bytes), not {_shown(value)}')
        return value

    def args(self) -> List[str]:
        if "args" not in self.entry:
            self.fail('no "args" (use [] for a kernel without parameters)')
        value = self.entry["args"]
        if not isinstance(value, list):
            self.fail(f'"args" should be a list of --arg strings, not {_shown(value)}')
        for index, arg in enumerate(value):
            if not isinstance(arg, str):
                self.fail(f'args[{index}] should be an --arg string such as "i32:7" or "@file.npy", not {_shown(arg)}')
        return list(value)

    def const(self) -> Dict[str, str]:
        value = self.entry.get("const", {})
        if not isinstance(value, dict):
            self.fail(f'"const" should be an object of NAME: "@file.npy", not {_shown(value)}')
        for name, spec in value.items():
            if not isinstance(spec, str) or not spec.startswith("@"):
                self.fail(f'const "{name}" should be "@file.npy", not {_shown(spec)}')
        return dict(value)

    def boolean(self, key: str) -> bool:
        value = self.entry.get(key, False)
        if not isinstance(value, bool):
            self.fail(f'"{key}" should be true or false, not {_shown(value)}')
        return value

    def tolerance(self) -> Optional[dict]:
        value = self.entry.get("tolerance")
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(f'"tolerance" should be null or an object such as {{"ulp": 2}}, not {_shown(value)}')
        unknown = sorted(set(value) - set(TOLERANCE_BOUNDS) - {"note"})
        bounds = [key for key in TOLERANCE_BOUNDS if key in value]
        if unknown:
            self.fail(f'"tolerance" has unknown key {", ".join(map(json.dumps, unknown))} (known: ulp rel abs note)')
        if not bounds:
            self.fail('"tolerance" needs "ulp", "rel" or "abs"')
        if "ulp" in value and "rel" in value:
            self.fail('"tolerance" takes "ulp" or "rel", not both ("abs" may go with either)')
        for key in bounds:
            if not _is_number(value[key]) or value[key] < 0:
                self.fail(f'tolerance "{key}" should be a non-negative number, not {_shown(value[key])}')
        return dict(value)

    def ptx(self, directory: Path, file_ptx: Optional[str]) -> Path:
        name = self.string("ptx", file_ptx, required=False)
        if name is None:
            self.fail('no "ptx", here or at the top of the file')
        path = directory / name
        if not path.is_file():
            self.fail(f"PTX file {path} not found")
        return path


def read_launches(path: Path) -> List[LaunchSpec]:
    """Every launch of one launches.json; a malformed file or entry is a UsageError naming the file and launch."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise UsageError(f'{path}: should be an object with a "launches" list')
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise UsageError(f"{path}: unknown key {', '.join(map(json.dumps, unknown))} (known: {' '.join(FILE_KEYS)})")
    if not isinstance(data.get("launches"), list):
        raise UsageError(f'{path}: should have a "launches" list, not {_shown(data.get("launches"))}')
    file_ptx = data.get("ptx")
    if file_ptx is not None and (not isinstance(file_ptx, str) or not file_ptx):
        raise UsageError(f'{path}: "ptx" should be a non-empty string, not {_shown(file_ptx)}')
    directory = path.parent
    specs = []
    for index, entry in enumerate(data["launches"]):
        reader = _EntryReader(path, index, entry)
        spec = LaunchSpec(
            directory=directory, name=reader.string("name"), ptx=reader.ptx(directory, file_ptx),
            kernel=reader.string("kernel"), grid=reader.dims("grid"), block=reader.dims("block"),
            shared=reader.shared(), args=reader.args(), const=reader.const(), stdout=reader.boolean("stdout"),
            tolerance=reader.tolerance(), expect_error=reader.string("expect_error", required=False),
            sanitizer_error=reader.string("sanitizer_error", required=False), source=path)
        reader.string("note", required=False)
        if any(other.name == spec.name for other in specs):
            reader.fail("a second launch of that name (each has its own expected/<name>/)")
        specs.append(spec)
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

    from emulator.runtime.module import Device, Module
    stdout = io.StringIO()
    key = str(spec.ptx)
    if module_cache is not None and key in module_cache:
        module = module_cache[key]
        module.device.stdout = stdout
    else:
        try:
            text = spec.ptx.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise UsageError(f"{spec.where}: cannot read PTX file {spec.ptx}: {error.strerror or error}") from None
        module = Module(text, str(spec.ptx), Device(backend=backend, stdout=stdout))
        if module_cache is not None:
            module_cache[key] = module
    constants = spec.constants()
    args = spec.arguments()
    try:
        for name, value in constants.items():
            module.set_symbol(name, value)
        kernel = module.kernel(spec.kernel)
        kernel.launch(spec.grid, spec.block, args, spec.shared)
    except UsageError as error:
        raise UsageError(f"{spec.where}: {error}") from None
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
    stdout_file = expected / "stdout.txt"
    if spec.stdout and not stdout_file.exists():
        problems.append("stdout: no recorded result")
    elif spec.stdout:
        want_lines = stdout_file.read_text().splitlines()
        if sorted(printed.splitlines()) != sorted(want_lines):
            problems.append("printed text differs")
    return problems

"""pytest plugin: golden-trace tests of your own kernels, regenerated only with `pytest --update-golden`.

    from emulator.pytest_plugin import assert_trace_matches

    def test_scale_kernel():
        assert_trace_matches("kernels/scale.ptx",
                             {"kernel": "scale", "grid": 1, "block": 64, "args": [x, y, np.int32(64)],
                              "filter": ["warp=0"]},
                             "tests/golden/scale.trace")

A launch is a dict (kernel, grid, block, args; optional shared, const, filter, schedule, seed, arch,
max_steps) or an emulator.spec.LaunchSpec; string arguments are --arg specs (`@file.npy` relative to
the PTX file, `zeros:f32:64`, `i32:5`). The `golden_trace` fixture is the same function.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional, Union

import numpy as np
import pytest

from emulator.base.files import write_atomically

_UPDATE = {"golden": False}


def pytest_addoption(parser) -> None:
    group = parser.getgroup("gpuemu")
    group.addoption("--update-golden", action="store_true", default=False,
                    help="write golden traces (gpuemu assert_trace_matches) instead of comparing with them")


def pytest_configure(config) -> None:
    _UPDATE["golden"] = bool(config.getoption("--update-golden", default=False))


def _argument_label(arg) -> str:
    if isinstance(arg, str):
        return arg
    if isinstance(arg, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(arg).view(np.uint8).tobytes()).hexdigest()[:16]
        return f"array {arg.dtype.name}[{arg.size}] sha256:{digest}"
    return f"{np.asarray(arg).dtype.name}:{arg}"


def _launch_fields(launch) -> dict:
    from emulator.runtime.spec import LaunchSpec
    if isinstance(launch, LaunchSpec):
        return {"kernel": launch.kernel, "grid": launch.grid, "block": launch.block, "shared": launch.shared,
                "args": list(launch.args), "const": dict(launch.const), "base_dir": str(launch.directory)}
    if not isinstance(launch, dict) or not {"kernel", "grid", "block"} <= set(launch):
        raise TypeError("launch must be a dict with kernel, grid, block (and args) or an emulator.spec.LaunchSpec")
    return dict(launch)


def record_trace(ptx: Union[str, os.PathLike], launch) -> str:
    """The trace of one launch of a kernel in a PTX file, as text."""
    from emulator.runtime.module import Device, Module
    from emulator.runtime.spec import parse_arg
    from emulator.runtime.names import arch_number
    from emulator.machine.policies import make_policy
    from emulator.observers.trace import TraceFilter, trace_header, trace_text
    fields = _launch_fields(launch)
    ptx = Path(ptx)
    text = ptx.read_text()
    base_dir = fields.get("base_dir", str(ptx.parent))
    device = Device(stdout=open(os.devnull, "w"))
    try:
        module = Module(text, str(ptx), device)
        for name, value in fields.get("const", {}).items():
            module.set_symbol(name, parse_arg(value, base_dir) if isinstance(value, str) else value)
        raw_args = list(fields.get("args", []))
        args = [parse_arg(a, base_dir) if isinstance(a, str) else a for a in raw_args]
        schedule = fields.get("schedule", "lockstep")
        seed = fields.get("seed", 0)
        arch = fields.get("arch")
        header = trace_header(str(ptx), text, args=[_argument_label(a) for a in raw_args], schedule=schedule,
                              seed=seed)
        options = {"policy": make_policy(schedule, seed, arch=arch_number(arch) if arch is not None else 90)}
        if arch is not None:
            options["arch"] = arch
        if "max_steps" in fields:
            options["max_steps"] = fields["max_steps"]
        return trace_text(module.kernel(fields["kernel"]), fields["grid"], fields["block"], args,
                          fields.get("shared", 0), header=header, trace_filter=TraceFilter(fields.get("filter", [])),
                          **options)
    finally:
        device.stdout.close()


def _same_trace(produced: str, golden: str) -> bool:
    """Equal but for the gpuemu version in the header."""
    produced_lines, golden_lines = produced.splitlines(), golden.splitlines()
    if produced_lines[1:] != golden_lines[1:] or not golden_lines:
        return False
    try:
        head_a, head_b = json.loads(produced_lines[0]), json.loads(golden_lines[0])
    except json.JSONDecodeError:
        return False
    head_a.pop("gpuemu", None)
    head_b.pop("gpuemu", None)
    return head_a == head_b


def assert_trace_matches(ptx: Union[str, os.PathLike], launch, golden: Union[str, os.PathLike], *,
                         update: Optional[bool] = None, context: int = 3) -> None:
    """Run the launch with a trace and compare it with the golden file (write it with --update-golden)."""
    from emulator.observers.trace import diff_traces
    produced = record_trace(ptx, launch)
    golden = Path(golden)
    if update if update is not None else _UPDATE["golden"]:
        golden.parent.mkdir(parents=True, exist_ok=True)
        if not golden.exists() or golden.read_text() != produced:
            write_atomically(str(golden), ".tmp", lambda stream: stream.write(produced), binary=False)
        return
    if not golden.exists():
        pytest.fail(f"golden trace {golden} does not exist: run pytest --update-golden to record it", pytrace=False)
    expected = golden.read_text()
    if _same_trace(produced, expected):
        return
    _, report = diff_traces(expected.splitlines(), produced.splitlines(), context=context,
                            name_a=str(golden), name_b="this run")
    pytest.fail(f"trace differs from {golden} (A: golden, B: this run); if the change is intended, run "
                f"pytest --update-golden\n{report}", pytrace=False)


@pytest.fixture
def golden_trace(request):
    """assert_trace_matches, honouring this session's --update-golden."""
    update = bool(request.config.getoption("--update-golden", default=False))

    def check(ptx, launch, golden, **options):
        options.setdefault("update", update)
        return assert_trace_matches(ptx, launch, golden, **options)
    return check

"""Every example launch reproduces what a real H100 computed from the same PTX and inputs."""
import io
from pathlib import Path

import numpy as np
import pytest

from emulator.errors import DeviceError
from emulator.launch import Device, Module
from emulator.spec import compare, read_launches

ROOT = Path(__file__).resolve().parents[1]
SPECS = [spec for path in sorted((ROOT / "examples").glob("*/launches.json")) for spec in read_launches(path)]


def run_spec(spec):
    stdout = io.StringIO()
    module = Module(spec.ptx.read_text(), str(spec.ptx.relative_to(ROOT)), Device(stdout=stdout))
    for name, value in spec.constants().items():
        module.set_symbol(name, value)
    args = spec.arguments()
    module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
    return args, stdout.getvalue()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.directory.name}-{s.name}")
def test_example_matches_h100(spec):
    expected = spec.expected_dir
    if not expected.exists():
        pytest.skip("no H100 result recorded for this launch yet")
    error_file = expected / "error.txt"
    if error_file.exists():
        with pytest.raises(DeviceError) as info:
            run_spec(spec)
        assert info.value.cuda_error == error_file.read_text().strip()
        return
    args, printed = run_spec(spec)
    unchanged_file = expected / "unchanged.txt"
    unchanged = set(unchanged_file.read_text().split()) if unchanged_file.exists() else set()
    originals = spec.arguments()
    for index, arg in enumerate(args):
        if not isinstance(arg, np.ndarray):
            continue
        path = expected / f"arg{index}.npy"
        if path.exists():
            want = np.load(path)
        else:
            assert str(index) in unchanged, f"no expectation for arg{index}"
            want = originals[index]
        problem = compare(want, arg, spec.tolerance)
        assert problem is None, f"arg{index}: {problem}"
    if spec.stdout:
        want_lines = (expected / "stdout.txt").read_text().splitlines()
        assert sorted(printed.splitlines()) == sorted(want_lines)

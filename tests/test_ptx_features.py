"""The PTX whole programs need (recursion, indirect calls, integer wmma, __managed__, shfl's predicate output,
warp instructions with partial member masks) gives what the H100 gave (tests/ptx_features/, expected/)."""
from pathlib import Path

import pytest

from emulator.errors import DeviceError
from emulator.runtime.spec import check_launch, read_launches, run_launch

ROOT = Path(__file__).resolve().parents[1]
SPECS = read_launches(ROOT / "tests" / "ptx_features" / "launches.json")


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_feature_launch_matches_h100(spec):
    error_file = spec.expected_dir / "error.txt"
    if error_file.exists():
        with pytest.raises(DeviceError) as info:
            run_launch(spec)
        assert info.value.cuda_error == error_file.read_text().strip()
        return
    args, printed = run_launch(spec)
    assert check_launch(spec, args, printed) == []

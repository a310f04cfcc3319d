"""Every example launch reproduces what a real H100 computed from the same PTX and inputs."""
from pathlib import Path

import pytest

from emulator.errors import DeviceError
from emulator.runtime.spec import check_launch, read_launches, run_launch

ROOT = Path(__file__).resolve().parents[1]
SPECS = [spec for path in sorted((ROOT / "examples").glob("*/launches.json")) for spec in read_launches(path)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.directory.name}-{s.name}")
def test_example_matches_h100(spec):
    if not spec.expected_dir.exists():
        pytest.skip("no H100 result recorded for this launch yet")
    error_file = spec.expected_dir / "error.txt"
    if error_file.exists():
        with pytest.raises(DeviceError) as info:
            run_launch(spec)
        assert info.value.cuda_error == (spec.sanitizer_error or error_file.read_text().strip())
        return
    args, printed = run_launch(spec)
    assert check_launch(spec, args, printed) == []

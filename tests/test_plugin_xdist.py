"""gpuemu's pytest plugin under pytest-xdist: a session of golden-trace tests spread over two workers records its
golden files (several tests sharing one) whole, then compares with them and reports a changed one as failed."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "examples" / "vecadd" / "vecadd.ptx"

GOLDEN_TESTS = f'''
import os
from pathlib import Path

import pytest

PTX = {str(VECADD)!r}
LAUNCH = {{"kernel": "vecadd", "grid": 1, "block": 64, "filter": ["warp=0"],
          "args": ["zeros:f32:64", "zeros:f32:64", "zeros:f32:64", "u32:64"]}}


@pytest.mark.parametrize("copy", range(8))
def test_shared_golden(golden_trace, copy):
    golden_trace(PTX, LAUNCH, "golden/shared.trace")
    Path("ran-on").mkdir(exist_ok=True)
    Path("ran-on", f"{{os.environ.get('PYTEST_XDIST_WORKER', 'controller')}}-{{copy}}").touch()


@pytest.mark.parametrize("count", [16, 32, 48, 64])
def test_own_golden(golden_trace, count):
    launch = dict(LAUNCH, args=LAUNCH["args"][:3] + [f"u32:{{count}}"])
    golden_trace(PTX, launch, f"golden/own{{count}}.trace")
'''


def pytest_in(directory: Path, *options):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                           "-p", "no:randomly", *options], cwd=directory, capture_output=True, text=True, timeout=300)


def test_golden_traces_record_and_compare_across_two_xdist_workers(tmp_path):
    (tmp_path / "test_golden.py").write_text(GOLDEN_TESTS)
    recorded = pytest_in(tmp_path, "--update-golden")
    assert recorded.returncode == 0 and "12 passed" in recorded.stdout, recorded.stdout + recorded.stderr
    assert {path.name.split("-")[0] for path in (tmp_path / "ran-on").iterdir()} == {"gw0", "gw1"}
    golden = tmp_path / "golden"
    assert sorted(path.name for path in golden.iterdir()) == ["own16.trace", "own32.trace", "own48.trace",
                                                              "own64.trace", "shared.trace"]
    assert not [path for path in golden.iterdir() if path.name.startswith(".")]
    assert (golden / "own64.trace").read_text() == (golden / "shared.trace").read_text()
    assert (golden / "own16.trace").read_text() != (golden / "own64.trace").read_text()

    (golden / "own32.trace").write_text((golden / "own16.trace").read_text())
    compared = pytest_in(tmp_path)
    assert compared.returncode == 1 and "1 failed, 11 passed" in compared.stdout, compared.stdout
    assert "test_own_golden[32]" in compared.stdout and "trace differs from golden/own32.trace" in compared.stdout

"""The checked-in instruction probes are what tools/make_probes.py generates, and they are self-consistent."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_probes_are_current_and_consistent():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "make_probes.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    if shutil.which("ptxas"):
        assert "ptxas checked every file" in result.stdout

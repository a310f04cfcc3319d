"""The C memory core, linked with AddressSanitizer and UBSan, survives a hostile-input driver."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CORE_DIR = HERE.parents[1] / "emulator" / "memory"
ROUNDS = "100000"


def _compiler():
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def test_core_survives_hostile_inputs_under_address_and_undefined_sanitizers(tmp_path):
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C compiler on PATH")
    driver = tmp_path / "hostile_core"
    build = subprocess.run(
        [compiler, "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", f"-I{CORE_DIR}",
         str(HERE / "hostile_core.c"), str(CORE_DIR / "_core.c"), "-lm", "-o", str(driver)],
        capture_output=True, text=True)
    if build.returncode != 0 and ("asan" in build.stderr or "ubsan" in build.stderr):
        pytest.skip(f"the compiler cannot link the sanitizer runtimes: {build.stderr.strip()[:200]}")
    assert build.returncode == 0, build.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    run = subprocess.run([str(driver), ROUNDS], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Sanitizer" not in run.stderr and "runtime error" not in run.stderr, run.stderr[-4000:]
    assert f"{ROUNDS} rounds survived" in run.stdout

"""gpuemu run's outputs are whole or absent: files appear only when the run ends, a fault or an interrupt leaves
none of the run's files (and none of an earlier run's argK.npy) but a JSON report saying so, and an interrupt at
any moment never leaves a directory that mixes two runs."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "examples" / "vecadd" / "vecadd.ptx"
TRANSPOSE = ROOT / "examples" / "transpose" / "transpose.ptx"


def gpuemu(*args, **options):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, **options)


def vecadd(tmp_path, value: float, n: int, out: Path, report: Path, size: int = 4096, *extra):
    """vecadd of n elements, a = value and b = 1, into --out/--json; the arrays hold size elements."""
    np.save(tmp_path / f"a{value}.npy", np.full(size, value, np.float32))
    np.save(tmp_path / "b.npy", np.ones(size, np.float32))
    return ["run", VECADD, "--kernel", "vecadd", "--grid", str((n + 255) // 256), "--block", "256",
            "--arg", f"@{tmp_path}/a{value}.npy", "--arg", f"@{tmp_path}/b.npy", "--arg", f"zeros:f32:{size}",
            "--arg", f"i32:{n}", "--out", out, "--json", report, "--quiet", *extra]


def no_temporary_files(directory: Path) -> bool:
    return not [path for path in directory.rglob("*") if path.name.endswith(".gpuemu-tmp")]


def test_a_fault_removes_the_earlier_runs_buffers_and_leaves_a_json_that_says_so(tmp_path):
    out, report = tmp_path / "out", tmp_path / "out" / "stats.json"
    assert gpuemu(*vecadd(tmp_path, 1.0, 4096, out, report)).returncode == 0
    assert sorted(path.name for path in out.iterdir()) == ["arg0.npy", "arg1.npy", "arg2.npy", "stats.json"]
    (out / "notes.txt").write_text("mine")
    fault = gpuemu(*vecadd(tmp_path, 2.0, 8192, out, report))
    assert fault.returncode == 4 and "CUDA_ERROR_ILLEGAL_ADDRESS" in fault.stderr
    assert sorted(path.name for path in out.iterdir()) == ["notes.txt", "stats.json"]
    assert json.loads(report.read_text())["status"] == "error" and no_temporary_files(tmp_path)


def test_argk_files_an_earlier_run_wrote_and_this_one_does_not_are_removed(tmp_path):
    out, report = tmp_path / "out", tmp_path / "report.json"
    out.mkdir()
    np.save(out / "arg7.npy", np.zeros(3))
    (out / "arg7.npy.keep").write_text("not gpuemu's name")
    assert gpuemu(*vecadd(tmp_path, 1.0, 4096, out, report)).returncode == 0
    assert sorted(path.name for path in out.iterdir()) == ["arg0.npy", "arg1.npy", "arg2.npy", "arg7.npy.keep"]
    np.testing.assert_array_equal(np.load(out / "arg2.npy"), np.full(4096, 2.0, np.float32))


def test_a_fault_keeps_its_trace_whole_with_the_fault_as_its_end(tmp_path):
    trace = tmp_path / "t.trace"
    result = gpuemu(*vecadd(tmp_path, 2.0, 8192, tmp_path / "out", tmp_path / "r.json", 4096, "--trace", trace))
    assert result.returncode == 4
    assert json.loads(trace.read_text().splitlines()[-1])["end"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert no_temporary_files(tmp_path)


def test_profile_of_a_faulting_launch_writes_no_page_and_an_error_report(tmp_path):
    page, report = tmp_path / "p.html", tmp_path / "p.json"
    page.write_text("an earlier page")
    result = gpuemu("profile", VECADD, "--kernel", "vecadd", "--grid", "2", "--block", "256", "--arg",
                    "zeros:f32:16", "--arg", "zeros:f32:16", "--arg", "zeros:f32:16", "--arg", "i32:512",
                    "--html", page, "--json", report)
    assert result.returncode == 4
    assert page.read_text() == "an earlier page" and json.loads(report.read_text())["status"] == "error"
    assert no_temporary_files(tmp_path)


def _state_of(directory: Path):
    """The a of the run the buffers of --out come from (arg0 holds a, arg1 ones and arg2 starts with a + 1; None
    without buffers; 'mixed' when they disagree), and the report."""
    report = json.loads((directory / "stats.json").read_text())
    buffers = sorted(path.name for path in directory.glob("arg*.npy"))
    if not buffers:
        return None, report
    if buffers != ["arg0.npy", "arg1.npy", "arg2.npy"]:
        return "mixed", report
    a, b, total = (np.load(directory / f"arg{index}.npy") for index in range(3))
    if not (np.all(a == a[0]) and np.all(b == 1) and total[0] == a[0] + 1):
        return "mixed", report
    return float(a[0]), report


def _only_imports(stderr: str) -> bool:
    """Whether a traceback is from before gpuemu's command began (the package still being imported, entry() not yet
    called): no gpuemu frame of it is in entry() or what entry() calls."""
    frames = re.findall(r'File "[^"]*/(?:emulator|isa)/[^"]*", line \d+, in (\S+)', stderr)
    return "entry" not in frames and "main" not in frames and "_main" not in frames


def test_interrupts_at_random_moments_never_leave_a_mixed_directory(tmp_path):
    """Runs with a = 2, 3, 4, ... into one --out, each sent SIGINT (or SIGTERM) at a random moment from its start to
    a little past its usual end. Afterwards --out holds the previous run whole, this run whole, or no buffers and a
    report saying the run was interrupted; never parts of two runs, never a temporary file."""
    rng = random.Random(int(os.environ.get("GPUEMU_INTERRUPT_SEED", "0")) or None)
    out, report = tmp_path / "out", tmp_path / "out" / "stats.json"
    size = 1 << 21
    sizes = {1.0: size // 2}
    started = time.monotonic()
    assert gpuemu(*vecadd(tmp_path, 1.0, size // 2, out, report, size)).returncode == 0
    whole = time.monotonic() - started
    previous, outcomes = 1.0, []
    for attempt in range(6):
        value, n = 2.0 + attempt, size - 256 * attempt
        sizes[value] = n
        command = [sys.executable, "-m", "emulator", *map(str, vecadd(tmp_path, value, n, out, report, size))]
        child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.0, 1.5 * whole))
        chosen = signal.SIGTERM if attempt % 3 == 2 else signal.SIGINT
        child.send_signal(chosen)
        _, stderr = child.communicate(timeout=300)
        # a signal during the interpreter's start-up, before gpuemu's command runs, ends in Python's own report (a
        # KeyboardInterrupt, or an ImportError when it lands inside an extension module's import)
        assert "Traceback" not in stderr or _only_imports(stderr), stderr
        assert child.returncode in (0, 130, 143, -chosen, 1), (child.returncode, stderr)
        state, stats = _state_of(out)
        assert state != "mixed", (attempt, sorted(path.name for path in out.iterdir()))
        assert state in (previous, value, None), (state, previous, value)
        if state is None:
            assert stats["status"] == "interrupted", stats
        else:
            assert stats["status"] == "ok" and stats["grid"] == [(sizes[state] + 255) // 256, 1, 1], (stats, state)
        assert no_temporary_files(out)
        outcomes.append("whole" if state == value else "before" if state == previous else "removed")
        previous = state if state is not None else previous
    assert len(outcomes) == 6, outcomes


def test_a_run_refused_before_its_kernel_loads_removes_the_earlier_runs_buffers(tmp_path):
    out, report = tmp_path / "out", tmp_path / "out" / "stats.json"
    assert gpuemu(*vecadd(tmp_path, 1.0, 4096, out, report)).returncode == 0
    broken = tmp_path / "broken.ptx"
    broken.write_text(VECADD.read_text().replace("ld.param.u64", "ld.param.u64 junk", 1))
    refused = gpuemu(*[broken if argument == VECADD else argument for argument in vecadd(tmp_path, 1.0, 4096, out,
                                                                                         report)])
    assert refused.returncode == 2 and "broken.ptx:" in refused.stderr
    assert sorted(path.name for path in out.iterdir()) == ["stats.json"]
    assert json.loads(report.read_text())["status"] == "error"
    missing = gpuemu(*[f"@{tmp_path}/nowhere.npy" if str(argument).endswith("b.npy") else argument
                       for argument in vecadd(tmp_path, 1.0, 4096, out, report)])
    assert missing.returncode == 2 and json.loads(report.read_text())["status"] == "error"


def test_an_interrupt_noticed_before_run_takes_charge_still_removes_the_earlier_runs_buffers(tmp_path, monkeypatch):
    import argparse

    import emulator.cli
    out, report = tmp_path / "out", tmp_path / "out" / "stats.json"
    arguments = [str(argument) for argument in vecadd(tmp_path, 1.0, 4096, out, report)]
    assert emulator.cli.main(arguments) == 0
    parse = argparse.ArgumentParser.parse_args
    calls = []

    def interrupted_once(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return parse(self, *args, **kwargs)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", interrupted_once)
    assert emulator.cli.main(arguments) == 130
    assert sorted(path.name for path in out.iterdir()) == ["stats.json"]
    assert json.loads(report.read_text())["status"] == "interrupted"

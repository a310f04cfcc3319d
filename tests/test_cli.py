"""The `gpuemu` command as a user types it: outputs, statistics, and one-line errors with their exit statuses."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "examples" / "vecadd"


def gpuemu(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120)


def test_run_writes_every_buffer_argument_and_statistics(tmp_path):
    result = gpuemu("run", VECADD / "vecadd.ptx", "--kernel", "vecadd", "--grid", "4", "--block", "256",
                    "--arg", f"@{VECADD}/inputs/a_small.npy", "--arg", f"@{VECADD}/inputs/b_small.npy",
                    "--arg", "zeros:f32:1000", "--arg", "i32:1000", "--out", tmp_path, "--json", tmp_path / "s.json")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.glob("arg*.npy")) == ["arg0.npy", "arg1.npy", "arg2.npy"]
    want = np.load(VECADD / "expected" / "vecadd_small" / "arg2.npy")
    assert np.load(tmp_path / "arg2.npy").tobytes() == want.tobytes()
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["status"] == "ok" and stats["thread_instructions"] > 0 and stats["warp_instructions"] > 0
    assert stats["wall_seconds"] > 0


def test_kernel_may_be_omitted_when_the_file_has_one(tmp_path):
    result = gpuemu("run", VECADD / "vecadd.ptx", "--grid", "1", "--block", "32", "--arg", "zeros:f32:32",
                    "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "i32:32", "--out", tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args, status, fragment", [
    (["--grid", "1", "--block", "2048", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32",
      "--arg", "i32:32"], 3, "CUDA_ERROR_INVALID_VALUE"),
    (["--grid", "1", "--block", "32", "--arg", "zeros:f32:32"], 2, "takes 4 arguments, 1 given"),
    (["--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32",
      "--arg", "i64:32"], 2, "is int64 (8 bytes) but parameter"),
    (["--grid", "1", "--block", "32", "--arg", "zeros:q32:3"], 2, "unknown type 'q32'"),
    (["--grid", "x", "--block", "32"], 2, "--grid 'x'"),
    (["--grid", "1", "--block", "32", "--arg", "@missing.npy"], 2, "not found"),
    (["--grid", "1", "--block", "32", "--max-steps", "-1"], 2, "--max-steps: -1 is not a positive number"),
    (["--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32",
      "--arg", "i32:32", "--json", "/"], 2, "--json /: is a directory"),
])
def test_bad_input_is_one_line_with_a_nonzero_status(args, status, fragment):
    result = gpuemu("run", VECADD / "vecadd.ptx", *args)
    assert result.returncode == status
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["ptx", "out"])
def test_unusable_path_is_one_line_naming_it(where, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ptx = tmp_path if where == "ptx" else VECADD / "vecadd.ptx"
    out = blocker / "out" if where == "out" else tmp_path / "out"
    result = gpuemu("run", ptx, "--grid", "1", "--block", "32", "--out", out)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("gpuemu: error: ") and str(tmp_path) in last


def test_bad_ptx_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.ptx"
    text = (VECADD / "vecadd.ptx").read_text().replace("add.f32", "add.f32 %f9 %f10,", 1)
    bad.write_text(text)
    result = gpuemu("run", bad, "--grid", "1", "--block", "32")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "add.f32 %f9" in l)
    assert result.returncode == 2 and f"bad.ptx:{line}:" in result.stderr and "error:" in result.stderr


def test_unsupported_opcode_is_named_with_its_line(tmp_path):
    bad = tmp_path / "op.ptx"
    text = (VECADD / "vecadd.ptx").read_text().replace("add.f32", "frobnicate.f32", 1)
    bad.write_text(text)
    result = gpuemu("run", bad, "--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32",
                    "--arg", "zeros:f32:32", "--arg", "i32:32")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "frobnicate" in l)
    assert result.returncode == 2 and "frobnicate" in result.stderr and f"op.ptx:{line}:" in result.stderr


def test_device_fault_reports_kernel_line_block_thread_and_address(tmp_path):
    faults = ROOT / "examples" / "faults"
    result = gpuemu("run", faults / "faults.ptx", "--kernel", "outOfBoundsWrite", "--grid", "1", "--block", "32",
                    "--arg", "zeros:i32:16384", "--arg", "i32:1073741824", "--out", tmp_path,
                    "--json", tmp_path / "s.json")
    assert result.returncode == 4
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "CUDA_ERROR_ILLEGAL_ADDRESS" in message
    for fragment in ("invalid __global__ write of 4 bytes", "kernel outOfBoundsWrite", "faults.ptx:", "faults.cu:",
                     "block (0,0,0)", "thread (0,0,0)", "bytes after the nearest allocation"):
        assert fragment in message
    assert not list(tmp_path.glob("arg*.npy"))
    assert json.loads((tmp_path / "s.json").read_text())["status"] == "error"


def test_misaligned_shared_access_is_a_misaligned_address_error(tmp_path):
    faults = ROOT / "examples" / "faults"
    result = gpuemu("run", faults / "faults.ptx", "--kernel", "misalignedShared", "--grid", "1", "--block", "64",
                    "--shared", "512", "--arg", "zeros:f32:64")
    assert result.returncode == 4 and "CUDA_ERROR_MISALIGNED_ADDRESS" in result.stderr
    assert "__shared__" in result.stderr


def test_constant_symbols_are_set_from_npy(tmp_path):
    spec = json.loads((ROOT / "examples" / "constcoef" / "launches.json").read_text())["launches"][0]
    base = ROOT / "examples" / "constcoef"
    args = []
    for arg in spec["args"]:
        args += ["--arg", arg.replace("@", f"@{base}/")]
    consts = []
    for name, value in spec["const"].items():
        consts += ["--const", f"{name}={value.replace('@', f'@{base}/')}"]
    result = gpuemu("run", base / "constcoef.ptx", "--kernel", spec["kernel"], "--grid", ",".join(map(str, spec["grid"])),
                    "--block", ",".join(map(str, spec["block"])), *args, *consts, "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    expected = sorted((base / "expected" / spec["name"]).glob("arg*.npy"))
    assert expected and all(np.load(tmp_path / e.name).tobytes() == np.load(e).tobytes() for e in expected)


def test_printf_prints_one_line_per_thread_in_c_format():
    base = ROOT / "examples" / "printf"
    spec = json.loads((base / "launches.json").read_text())["launches"][0]
    args = []
    for arg in spec["args"]:
        args += ["--arg", arg]
    result = gpuemu("run", base / "printf.ptx", "--grid", ",".join(map(str, spec["grid"])),
                    "--block", ",".join(map(str, spec["block"])), *args)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted((base / "expected" / "printf" / "stdout.txt").read_text().splitlines())


def test_run_without_args_passes_zeroed_buffers_and_says_so(tmp_path):
    result = gpuemu("run", ROOT / "examples" / "transpose" / "transpose.ptx", "--kernel", "setRowReadRow",
                    "--grid", "1", "--block", "32,32", "--out", tmp_path)
    assert result.returncode == 0 and "no --arg given" in result.stderr
    assert np.array_equal(np.load(tmp_path / "arg0.npy").view(np.int32)[:1024], np.arange(1024))


def test_python_dash_m_and_isa_listing():
    result = gpuemu("isa")
    assert result.returncode == 0 and "ld" in result.stdout.split() and "atom" in result.stdout.split()


def test_launch_reports_progress_after_each_batch_of_ctas():
    import emulator
    module = emulator.load(str(ROOT / "examples" / "vecadd" / "vecadd.ptx"))
    n = 64 * 256
    seen = []
    module.kernel("vecadd").launch(64, 256, [np.ones(n, np.float32), np.ones(n, np.float32),
                                             np.zeros(n, np.float32), np.int32(n)],
                                   batch_bytes=1 << 18, progress=lambda done, total: seen.append((done, total)))
    assert len(seen) > 2 and seen[-1] == (64, 64)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_draws_only_on_a_terminal_after_its_delay_and_erases_itself():
    from emulator.cli.common import Progress
    for stream, delay in ((_Terminal(), 3600), (io.StringIO(), 0)):
        with Progress("vecadd", "CTA", stream=stream, delay=delay) as bar:
            bar(10, 100)
        assert stream.getvalue() == ""
    terminal = _Terminal()
    with Progress("vecadd", "CTA", stream=terminal, delay=0) as bar:
        bar(10, 100)
        assert "vecadd" in terminal.getvalue() and "10/100" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r") and terminal.getvalue().rstrip("\r").endswith(" ")


def test_reader_closing_the_pipe_early_loses_no_output_file_and_prints_no_traceback(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "emulator", "run", str(VECADD / "vecadd.ptx"), "--kernel", "vecadd", "--grid", "4",
               "--block", "256", "--arg", f"@{VECADD}/inputs/a_small.npy", "--arg", f"@{VECADD}/inputs/b_small.npy",
               "--arg", "zeros:f32:1000", "--arg", "i32:1000", "--stats", "--out", str(out), "--json",
               str(tmp_path / "stats.json")]
    environment = dict(os.environ, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=environment)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == 0
    assert "Traceback" not in stderr
    assert (out / "arg2.npy").exists() and json.loads((tmp_path / "stats.json").read_text())["status"] == "ok"


VECADD_ARGS = ["--kernel", "vecadd", "--grid", "4", "--block", "256", "--arg", f"@{VECADD}/inputs/a_small.npy",
               "--arg", f"@{VECADD}/inputs/b_small.npy", "--arg", "zeros:f32:1000", "--arg", "i32:1000"]


def test_output_files_get_the_permissions_the_umask_gives_new_files(tmp_path):
    command = [sys.executable, "-m", "emulator", "run", str(VECADD / "vecadd.ptx"), *VECADD_ARGS,
               "--out", str(tmp_path), "--json", str(tmp_path / "s.json")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120,
                            preexec_fn=lambda: os.umask(0o027))
    assert result.returncode == 0, result.stderr
    for name in ("arg0.npy", "arg2.npy", "s.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o640, name
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("flag, path, fragment", [("--json", "{tmp}", "is a directory"),
                                                  ("--html", "{tmp}/afile/x.html", "cannot create"),
                                                  ("--json", "{tmp}/afile/x.json", "cannot create")])
def test_profile_refuses_an_output_it_cannot_write_before_running_the_kernel(tmp_path, flag, path, fragment):
    (tmp_path / "afile").write_text("")
    result = gpuemu("profile", VECADD / "vecadd.ptx", *VECADD_ARGS, flag, path.format(tmp=tmp_path))
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1 and fragment in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_profile_json_records_the_fault_that_stopped_the_kernel(tmp_path):
    report = tmp_path / "p.json"
    result = gpuemu("profile", ROOT / "examples" / "faults" / "faults.ptx", "--kernel", "nullRead", "--grid", "1",
                    "--block", "32", "--arg", "u64:0", "--arg", "zeros:i32:32", "--json", report)
    assert result.returncode == 4
    assert json.loads(report.read_text())["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"

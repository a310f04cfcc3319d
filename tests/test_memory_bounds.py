"""Bounded host memory: launches and modules that would exceed --max-memory (default: a share of the available
memory) are refused before anything is allocated, with the figures; a large buffer through `gpuemu run` peaks at
no more than 1.5 times its size in resident memory (measured in a child process)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.errors import LaunchError, PTXSemanticError, UsageError
from emulator.runtime import budget
from emulator.runtime.module import Device, Module

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT / "tests" / "kernels" / "scale.ptx"
MiB, GiB = 1 << 20, 1 << 30


def gpuemu(*args, **options):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, **options)


@pytest.mark.parametrize("text, size", [("4G", 4 * GiB), ("512M", 512 * MiB), ("1.5GiB", 3 * GiB // 2),
                                        ("1000000", 1_000_000), ("2GB", 2_000_000_000), ("64k", 65536)])
def test_sizes_read_as_bytes(text, size):
    assert budget.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-1G", "4X", "G", "1e9"])
def test_sizes_that_are_not_sizes_are_usage_errors(text):
    with pytest.raises(UsageError):
        budget.parse_size(text)


def test_a_launch_over_the_limit_is_refused_before_anything_is_allocated():
    device = Device(max_memory="64M")
    kernel = emulator.load(str(SCALE), device=device).kernel("scale")
    before = device.memory.bytes_in_use
    huge = np.zeros(100 * MiB // 4, np.float32)
    with pytest.raises(LaunchError) as caught:
        kernel.launch(1, 32, [huge, np.zeros(32, np.float32), np.uint32(32)])
    message = str(caught.value)
    assert message.startswith("CUDA_ERROR_OUT_OF_MEMORY: launching scale on grid 1x1x1 x block 32x1x1 needs about "
                              "100.0 MiB of host memory (argument copies 100.0 MiB")
    assert "more than the limit of 64.0 MiB (--max-memory)" in message and "\n" not in message
    assert device.memory.bytes_in_use == before
    kernel.launch(1, 32, [np.zeros(1024, np.float32), np.ones(32, np.float32), np.uint32(32)])


def test_thirty_one_gib_globals_are_refused_at_load_not_allocated():
    lines = [".version 8.0", ".target sm_90", ".address_size 64"]
    lines += [f".global .align 4 .b8 g{index}[1073741824];" for index in range(30)]
    text = "\n".join(lines + [".visible .entry k() { ret; }"]) + "\n"
    device = Device(max_memory="8G")
    with pytest.raises(LaunchError, match=r"loading <ptx> needs about 30\.0 GiB of host memory \(30 \.global "
                                          r"variables 30\.0 GiB\), more than the limit of 8\.0 GiB"):
        Module(text, "<ptx>", device)
    assert device.memory.bytes_in_use == 0


@pytest.mark.parametrize("dims, size", [("[2147483648]", "2.0 GiB"), ("[4294967296][4294967296][4294967296]"
                                                                     "[4294967296][4294967296]", "more than 2^64 bytes"),
                                        ("[9999999999999999]" * 300, "more than 2^64 bytes")])
def test_a_global_variable_over_its_limit_is_refused_at_its_line_with_its_size(dims, size):
    text = f".version 8.0\n.target sm_90\n.address_size 64\n.global .b8 big{dims};\n.visible .entry k() {{ ret; }}\n"
    with pytest.raises(PTXSemanticError) as caught:
        Module(text, "<ptx>", Device(max_memory="8G"))
    assert str(caught.value) == f"<ptx>:4:13: error: global variable 'big' of {size} is too large (at most 1.0 GiB)"


def test_the_default_limit_is_a_share_of_what_is_available(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 12 * GiB)
    kernel = emulator.load(str(SCALE)).kernel("scale")
    lazy = np.zeros(int(9.5 * GiB) // 4, np.float32)  # never touched: the launch is refused first
    with pytest.raises(LaunchError, match=r"more than the limit of 9\.0 GiB \(the default: 75% of the 12\.0 GiB "
                                          r"available; set it with --max-memory"):
        kernel.launch(1, 32, [lazy, np.zeros(32, np.float32), np.uint32(32)])


def test_the_cli_refuses_a_buffer_over_max_memory_in_one_line_with_status_3():
    result = gpuemu("run", SCALE, "--grid", "1", "--block", "32", "--arg", "zeros:f32:50000000", "--arg",
                    "zeros:f32:32", "--arg", "u32:32", "--max-memory", "100M")
    assert result.returncode == 3 and len(result.stderr.strip().splitlines()) == 1
    assert "CUDA_ERROR_OUT_OF_MEMORY" in result.stderr and "190.7 MiB" in result.stderr
    bad = gpuemu("run", SCALE, "--grid", "1", "--block", "32", "--max-memory", "lots")
    assert bad.returncode == 2 and "'lots' is not a size" in bad.stderr


def test_control_group_headroom_is_the_least_over_the_groups_and_their_parents(tmp_path):
    (tmp_path / "cgroup").write_text("4:memory:/jobs/one\n0::/jobs/one\n")
    v1 = tmp_path / "sys" / "memory" / "jobs" / "one"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(str(8 * GiB))
    (v1 / "memory.usage_in_bytes").write_text(str(1 * GiB))
    (tmp_path / "sys" / "memory" / "jobs" / "memory.limit_in_bytes").write_text(str(4 * GiB))
    (tmp_path / "sys" / "memory" / "jobs" / "memory.usage_in_bytes").write_text(str(3 * GiB))
    (tmp_path / "sys" / "memory" / "memory.limit_in_bytes").write_text(str(2 ** 63 - 4096))
    (tmp_path / "sys" / "memory" / "memory.usage_in_bytes").write_text(str(5 * GiB))
    assert budget.cgroup_headroom(str(tmp_path / "cgroup"), str(tmp_path / "sys")) == 1 * GiB
    v2 = tmp_path / "sys" / "jobs" / "one"
    v2.mkdir(parents=True)
    (v2 / "memory.max").write_text(str(2 * GiB // 2))
    (v2 / "memory.current").write_text(str(GiB // 4))
    assert budget.cgroup_headroom(str(tmp_path / "cgroup"), str(tmp_path / "sys")) == 3 * GiB // 4
    (v2 / "memory.max").write_text("max")
    assert budget.cgroup_headroom(str(tmp_path / "cgroup"), str(tmp_path / "sys")) == 1 * GiB


PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _peak_rss(*args) -> int:
    """The peak resident memory, in bytes, of `gpuemu ARGS` (measured by a parent process of its own)."""
    result = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "emulator", *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1])


@pytest.mark.parametrize("source", ["file", "zeros"])
def test_a_large_buffer_peaks_at_most_one_and_a_half_times_its_size(tmp_path, source):
    """The peak, less the run's own footprint (the same run with a 32-element buffer), stays within 1.5x the
    buffer: no second copy on the way in, none on the way back, none for the output file; a buffer of zeros the
    kernel barely touches costs little at all."""
    n = 96 * MiB // 4
    data = n * 4
    if source == "file":
        np.save(tmp_path / "big.npy", np.arange(n, dtype=np.float32))
        np.save(tmp_path / "small.npy", np.arange(32, dtype=np.float32))
        big, small = f"@{tmp_path / 'big.npy'}", f"@{tmp_path / 'small.npy'}"
    else:
        big, small = f"zeros:f32:{n}", "zeros:f32:32"

    def run(buffer, out):
        return _peak_rss("run", SCALE, "--grid", "1", "--block", "32", "--arg", buffer, "--arg", "zeros:f32:32",
                         "--arg", "u32:32", "--quiet", "--out", out)
    baseline = run(small, tmp_path / "small")
    peak = run(big, tmp_path / "big")
    assert np.load(tmp_path / "big" / "arg0.npy", mmap_mode="r").shape == (n,)
    assert peak - baseline <= 1.5 * data, f"peak {peak:,} - baseline {baseline:,} > 1.5 x {data:,}"
    if source == "zeros":  # chunks of zeros are neither copied in nor, still zero, copied back
        assert peak - baseline <= 0.25 * data, f"peak {peak:,} - baseline {baseline:,} > 0.25 x {data:,}"


@pytest.mark.parametrize("count", [1 << 40, 1 << 63])
def test_zeros_argument_over_the_limit_is_refused_before_it_is_made(count):
    result = gpuemu("run", SCALE, "--kernel", "scale", "--grid", 1, "--block", 32, "--max-memory", "1G",
                    "--arg", f"zeros:f32:{count}", "--arg", "zeros:f32:32", "--arg", "u32:32")
    assert result.returncode == 3
    assert result.stderr.startswith(f"gpuemu: error: CUDA_ERROR_OUT_OF_MEMORY: argument 'zeros:f32:{count}' needs "
                                    f"about {budget.format_size(4 * count)} of host memory")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_program_that_is_not_a_regular_file_is_refused_without_reading_it():
    result = gpuemu("run", "/dev/zero", "--kernel", "k", "--grid", 1, "--block", 1)
    assert result.returncode == 2
    assert result.stderr.strip() == "gpuemu: error: /dev/zero: not a regular file"

"""Whole CUDA programs built with nvcc -cudart shared run unmodified on gpuemu's libcudart (LD_LIBRARY_PATH)."""
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "cuda_programs")
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def _build_cache() -> pathlib.Path:
    """Where built programs are kept between sessions, per nvcc and per source (never in the repository)."""
    from emulator.cudart.libdir import unsafe_reason
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    digest = hashlib.sha256(version.encode())
    for name in sorted(os.listdir(PROGRAMS)):
        digest.update(name.encode() + pathlib.Path(PROGRAMS, name).read_bytes())
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "gpuemu"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    if unsafe_reason(str(base)):
        return None
    return base / "cuda-programs" / digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def cuda_programs(tmp_path_factory):
    """(library directory, directory of the built programs): every program compiled with nvcc -cudart shared once
    (kept in the user's cache until nvcc or a source changes)."""
    from emulator.cudart.libdir import library_directory
    directory, failed = library_directory()
    if "libcudart.so.13" in failed:
        pytest.skip(f"libcudart.so.13 could not be built: {failed['libcudart.so.13']}")
    sources = sorted(name for name in os.listdir(PROGRAMS) if name.endswith(".cu"))
    out = _build_cache() or tmp_path_factory.mktemp("cuda_programs")
    if all((out / name[:-3]).exists() for name in sources):
        return directory, out
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="building-", dir=out.parent))

    def compile_one(name):
        driver = ["-L", directory, "-lcuda"] if name.startswith("driver_") else []
        result = subprocess.run([NVCC, "-cudart", "shared", "-o", str(scratch / name[:-3]),
                                 os.path.join(PROGRAMS, name), *driver], capture_output=True, text=True)
        return name, result

    with ThreadPoolExecutor(max_workers=4) as pool:
        for name, result in pool.map(compile_one, sources):
            assert result.returncode == 0, f"nvcc {name}: {result.stderr}"
    if out.exists():
        shutil.rmtree(out)
    os.replace(scratch, out)
    return directory, out


def run(cuda_programs, name, **environment):
    directory, out = cuda_programs
    env = dict(os.environ, LD_LIBRARY_PATH=directory, **environment)
    return subprocess.run([str(out / name)], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("name, expected", [
    ("vector_add", "blocks 20, threads 256, c[4999] = -1499.5\nPASS\n"),
    ("matmul_tiled", "PASS\n"),
    ("reduction", "sum -47 (host -47) over 196 blocks\nPASS\n"),
    ("histogram", "total 50000\nPASS\n"),
    ("streams_events", "h[1] = 2, h[4095] = 12285, elapsed time measured\nPASS\n"),
    ("constant_symbol", "evaluated 300 times (300 through the symbol's address)\nPASS\n"),
    ("managed", "values[0] = 250000, values[999] = 249001, launches_seen = 12, managed pointer: yes\nPASS\n"),
    ("grid_sync", "cooperative launch supported: 1, sums[0] = 257, sums[255] = 257\nPASS\n"),
    ("dynamic_shared", "without opting in: cudaErrorInvalidConfiguration; after: hf[0] = 16383, hd[0] = -16383\nPASS\n"),
    ("zero_copy_pitch", "host[499] = 1497, pitch >= row: yes, image[6][99] = 105\nPASS\n"),
    ("memory_forms", "registered[299] = 1299, volume[2][4][6] = 246, row[15] = 0xAB, peer copy 77\nPASS\n"),
])
def test_course_program_passes_its_own_check(cuda_programs, name, expected):
    result = run(cuda_programs, name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith(expected), result.stdout + result.stderr


def test_device_query_reports_an_h100(cuda_programs):
    result = run(cuda_programs, "device_query")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "compute capability 9.0, 132 SMs (attribute 132), warp 32, max threads per block 1024" in result.stdout
    assert "shared memory per block 49152, opt-in 232448, per SM 233472" in result.stdout
    assert "work: max threads 1024, blocks per SM at 256 threads: 8" in result.stdout
    assert "cudaSetDevice(1): cudaErrorInvalidDevice" in result.stdout


def test_device_properties_are_configurable(cuda_programs):
    result = run(cuda_programs, "device_query", GPUEMU_DEVICE="multiProcessorCount=8,major=8,minor=6")
    assert "compute capability 8.6, 8 SMs (attribute 8)" in result.stdout, result.stdout + result.stderr


def test_fault_is_sticky_from_the_next_call_with_a_sanitizer_report(cuda_programs):
    result = run(cuda_programs, "fault")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout == ("launch: cudaSuccess\n"
                             "synchronize: cudaErrorIllegalAddress (an illegal memory access was encountered)\n"
                             "next call: cudaErrorIllegalAddress\n")
    assert "========= Invalid __global__ write of size 4 bytes" in result.stderr
    assert "by thread (0,0,0) in block (0,0,0)" in result.stderr


def test_device_printf_keeps_its_place_in_stdout_and_assert_fails_the_next_call(cuda_programs):
    result = run(cuda_programs, "printf_assert")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "host before the kernels"
    assert sorted(lines[1:7]) == sorted(f"block {b} thread {t} says {40 + t} (20.00)" for b in (0, 1) for t in range(3))
    assert lines[7] == "after the assert: cudaErrorAssert"
    assert "Assertion `data[threadIdx.x] >= 0` failed in kernel checked, block (0,0,0), thread (17,0,0)" in result.stderr


def test_unimplemented_call_returns_not_supported_and_names_itself(cuda_programs):
    result = run(cuda_programs, "unsupported")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ("cudaGraphCreate: cudaErrorNotSupported\nlast error: cudaErrorNotSupported\n"
                             "cudaMalloc after it: cudaSuccess\n")
    assert result.stderr.count("cudaGraphCreate is not implemented") == 1


def test_gpuemu_check_finds_a_race_in_a_whole_program(cuda_programs):
    result = run(cuda_programs, "histogram", GPUEMU_CHECK="race")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ERROR SUMMARY: 0 errors" in result.stderr


def test_gpuemu_stats_prints_a_table_per_launch(cuda_programs):
    result = run(cuda_programs, "vector_add", GPUEMU_STATS="1")
    assert result.returncode == 0
    assert "gpuemu stats: add  grid (20,1,1)  block (256,1,1)" in result.stderr


def test_gpuemu_trace_writes_one_file_per_launch(cuda_programs, tmp_path):
    result = run(cuda_programs, "constant_symbol", GPUEMU_TRACE=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert os.listdir(tmp_path) == ["0001-polynomial.jsonl"]
    assert (tmp_path / "0001-polynomial.jsonl").read_text().count("\n") > 10


def test_driver_api_modules_launches_links_and_entry_points(cuda_programs):
    result = run(cuda_programs, "driver_api")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ("y[999] = 2498.5, calls = 2000 (4-byte global)\n"
                             "after the linked module: y[999] = 1499.5\n"
                             "cuGetProcAddress(cuMemAlloc) is cuMemAlloc_v2: yes\n"
                             "unknown symbol: 500, status 1\n"
                             "cubin image: CUDA_ERROR_NO_BINARY_FOR_GPU\n"
                             "PASS\n")
    assert "is a cubin (SASS for one GPU); gpuemu runs PTX" in result.stderr


@pytest.mark.parametrize("variable, value, message", [
    ("GPUEMU_CHECK", "bogus", "gpuemu: error: GPUEMU_CHECK: unknown checker 'bogus'"),
    ("GPUEMU_DEVICE", "cores=7", "gpuemu: error: GPUEMU_DEVICE: 'cores=7' is not FIELD=VALUE"),
    ("GPUEMU_MAX_STEPS", "many", "gpuemu: error: GPUEMU_MAX_STEPS=many is not a positive whole number"),
])
def test_bad_setting_stops_the_program_with_one_line(cuda_programs, variable, value, message):
    result = run(cuda_programs, "vector_add", **{variable: value})
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_memory_checker_reports_each_invalid_access_once(cuda_programs):
    result = run(cuda_programs, "fault", GPUEMU_CHECK="mem")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.count("========= Invalid __global__ write of size 4 bytes") == 64
    assert "gpuemu: kernel fault: CUDA_ERROR_ILLEGAL_ADDRESS: 64 invalid memory accesses" in result.stderr


def test_gpuemu_debug_opens_the_debugger_at_the_first_launch_then_the_program_goes_on(cuda_programs):
    directory, out = cuda_programs
    env = dict(os.environ, LD_LIBRARY_PATH=directory, GPUEMU_DEBUG="add")
    result = subprocess.run([str(out / "vector_add")], input="break add\nrun\ncontinue\nquit\n", capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Breakpoint 1, add<<<(20,1,1),(256,1,1)>>>" in result.stdout
    assert "[Termination of CUDA Kernel 1 (add<<<(20,1,1),(256,1,1)>>>) on Device 0]" in result.stdout
    assert result.stdout.endswith("blocks 20, threads 256, c[4999] = -1499.5\nPASS\n")
    assert "GPUEMU_DEBUG: the first launch of add" in result.stderr

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
#: programs built and run only by `make test-slow` (GPUEMU_SLOW_TESTS=1): their build alone takes about a minute
SLOW_PROGRAMS = {"thrust_sort.cu"}
SLOW = os.environ.get("GPUEMU_SLOW_TESTS") == "1"


def _build_cache() -> pathlib.Path:
    """Where built programs are kept between sessions (never in the repository): one file per program, named by a
    digest of nvcc's version, the program, check.h and its flags, so a new or changed program is the only one built."""
    from emulator.cudart.libdir import unsafe_reason
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "gpuemu"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    if unsafe_reason(str(base)):
        return None
    return base / "cuda-programs"


def _program_digest(nvcc_version: str, name: str, flags) -> str:
    digest = hashlib.sha256(nvcc_version.encode() + " ".join(flags).encode())
    for part in (name, "check.h"):
        digest.update(part.encode() + pathlib.Path(PROGRAMS, part).read_bytes())
    return digest.hexdigest()[:16]


def _source_flags(name: str) -> list:
    """The extra nvcc flags a program names on a `// nvcc flags: ...` line (e.g. -arch=sm_90 for Hopper-only code)."""
    for line in pathlib.Path(PROGRAMS, name).read_text().splitlines():
        if line.startswith("// nvcc flags:"):
            return line.split(":", 1)[1].split()
    return []


def build_programs(tmp_path_factory, sources, flags=()):
    """(library directory, directory of the built programs): each program compiled with nvcc -cudart shared and
    the flags given (its own `// nvcc flags:` otherwise) once, kept in the user's cache until nvcc, the program,
    check.h or the flags change, linked under its name in a session directory."""
    from emulator.cudart.libdir import library_directory
    directory, failed = library_directory()
    if "libcudart.so.13" in failed:
        pytest.skip(f"libcudart.so.13 could not be built: {failed['libcudart.so.13']}")
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    cache = _build_cache() or tmp_path_factory.mktemp("cuda_programs_cache")
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    built = {name: cache / f"{name[:-3]}-{_program_digest(version, name, flags)}" for name in sources}

    def compile_one(name):
        driver = ["-L", directory, "-lcuda"] if name.startswith("driver_") else []
        scratch = pathlib.Path(tempfile.mkdtemp(prefix="building-", dir=cache))
        result = subprocess.run([NVCC, "-cudart", "shared", *(flags or _source_flags(name)), "-o",
                                 str(scratch / "program"), os.path.join(PROGRAMS, name), *driver],
                                capture_output=True, text=True)
        if result.returncode == 0:
            os.replace(scratch / "program", built[name])
        shutil.rmtree(scratch, ignore_errors=True)
        return name, result

    missing = [name for name in sources if not built[name].exists()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for name, result in pool.map(compile_one, missing):
            assert result.returncode == 0, f"nvcc {name}: {result.stderr}"
    out = tmp_path_factory.mktemp("cuda_programs")
    for name, path in built.items():
        os.symlink(path, out / name[:-3])
    return directory, out


@pytest.fixture(scope="session")
def cuda_programs(tmp_path_factory):
    """Every program, built as its `// nvcc flags:` line says (PTX embedded)."""
    sources = sorted(name for name in os.listdir(PROGRAMS) if name.endswith(".cu") and (SLOW or name not in SLOW_PROGRAMS))
    return build_programs(tmp_path_factory, sources)


def run(cuda_programs, name, **environment):
    directory, out = cuda_programs
    env = dict(os.environ, LD_LIBRARY_PATH=directory, **environment)
    return subprocess.run([str(out / name)], capture_output=True, text=True, env=env, timeout=120)


#: each course program's last lines, as it printed them on an H100 (tests/cuda_programs/h100_stdout.txt); lines that
#: depend on the order the hardware ran the threads in are left out
COURSE_PROGRAMS = [
    ("vector_add", "blocks 20, threads 256, c[4999] = -1499.5\nPASS\n"),
    ("matmul_tiled", "PASS\n"),
    ("reduction", "sum -47 (host -47) over 196 blocks\nPASS\n"),
    ("histogram", "total 50000\nPASS\n"),
    ("streams_events", "h[1] = 2, h[4095] = 12285, elapsed time measured\nPASS\n"),
    ("constant_symbol", "evaluated 300 times (300 through the symbol's address)\nPASS\n"),
    ("managed", "values[0] = 250000, values[999] = 249001, launches_seen = 12, managed pointer: yes\nPASS\n"),
    ("grid_sync", "cooperative launch supported: 1, sums[0] = 257, sums[255] = 257\nPASS\n"),
    ("dynamic_shared", "without opting in: cudaErrorInvalidValue; after: hf[0] = 16383, hd[0] = -16383\nPASS\n"),
    ("zero_copy_pitch", "host[499] = 1497, pitch >= row: yes, image[6][99] = 105\nPASS\n"),
    ("memory_forms", "registered[299] = 1299, volume[2][4][6] = 246, row[15] = 0xAB, peer copy 77\nPASS\n"),
    ("recursion", "stack limit 4096, fib(15) = 610, walk(0, 40) = 8760\nPASS\n"),
    ("inline_ptx_shfl", "scan of warp 7 ends at 63932\nPASS\n"),
    ("virtual_calls", "out[5] = -27, area[7] = 14, area[8] = 192, corners[7] = 4\nPASS\n"),
    ("wmma_int", "d[0][0] = -463646, d[31][31] = 537978\nPASS\n"),
    ("wmma_double", "c[0][0] = -0.201786, c[15][15] = 0.611905\nPASS\n"),
    ("shfl_partial_mask", "ragged sum -12 (host -12), half-warp sum[62] = 11\nPASS\n"),
    ("threadfence_reduction", "GPU sum 1024.000 and 1024.000, CPU sum 1024.000, ticket counter 0\nPASS\n"),
    ("atomic_intrinsics", "\nPASS\n"),
    ("scan", "100000 elements in 196 blocks, out[n-1] = 749987\nPASS\n"),
    ("transpose", "copy             correct (time measured: yes)\nnaive transpose  correct (time measured: yes)\n"
                  "tiled transpose  correct (time measured: yes)\nPASS\n"),
    ("matrix_mul_events", "block 32: MatrixA(128,64), MatrixB(64,128), C[0] = 1.2800, performance measured: yes\n"
                          "Result = PASS\n"),
    ("pitch_2d", "pitch 512 for rows of 148 bytes, result[5][20] = 85, volume[2][3][4] = 234\nPASS\n"),
    ("templates", "int: correct\nfloat: correct\ndouble: correct\nPASS\n"),
    ("stream_callback", "stream 3: callbacks 2, result correct\nPASS\n"),
    ("cg_reduce", "tile 0: sum 161, odd lanes 15; grid total 8082 (host 8082)\nPASS\n"),
    ("occupancy", "attributes: max threads per block 1024, registers counted, ptx version 75\nTest PASSED\n"),
    ("async_copy", "reversed[0] = -20, row sums 3151 3880 4609\nPASS\n"),
    ("warp_intrinsics", "ballot of warp 0: 0xaaaaaaba, 191 positive in buckets 27 56 54 54, dot[31] = -93, "
                        "cycles counted: yes\nPASS\n"),
    pytest.param("thrust_sort", "min -500 max 508 sum 12170 squares 254553518 evens 1502\nPASS\n",
                 marks=pytest.mark.skipif(not SLOW, reason="Thrust takes about a minute to build: make test-slow")),
]


def check_passes(result, expected: str) -> None:
    """A course program ended with its own check's lines, status 0, and nothing of gpuemu's going wrong."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith(expected), result.stdout + result.stderr
    assert "internal error" not in result.stderr and "Warning" not in result.stderr, result.stderr


@pytest.mark.parametrize("name, expected", COURSE_PROGRAMS)
def test_course_program_passes_its_own_check(cuda_programs, name, expected):
    check_passes(run(cuda_programs, name), expected)


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


def check_fault(result) -> None:
    """fault.cu: the fault is the sticky error from the next call, with a compute-sanitizer-style report."""
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout == ("launch: cudaSuccess\n"
                             "synchronize: cudaErrorIllegalAddress (an illegal memory access was encountered)\n"
                             "next call: cudaErrorIllegalAddress\n")
    assert "========= Invalid __global__ write of size 4 bytes" in result.stderr
    assert "by thread (0,0,0) in block (0,0,0)" in result.stderr


def test_fault_is_sticky_from_the_next_call_with_a_sanitizer_report(cuda_programs):
    check_fault(run(cuda_programs, "fault"))


def test_device_printf_keeps_its_place_in_stdout_and_assert_fails_the_next_call(cuda_programs):
    check_printf_assert(run(cuda_programs, "printf_assert"))


def check_printf_assert(result) -> None:
    """printf_assert.cu: device printf in stdout in program order, then the assert as the next call's error."""
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
                             "unknown symbol: 0, status 1\n"
                             "cubin image: CUDA_ERROR_INVALID_IMAGE\n"
                             "PASS\n")
    assert "cubin image: an ELF image for machine" in result.stderr or "cubin image: not a 64-bit" in result.stderr


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


def test_a_launch_refused_before_it_runs_leaves_no_trace_file(cuda_programs, tmp_path):
    result = run(cuda_programs, "dynamic_shared", GPUEMU_TRACE=str(tmp_path))
    assert result.returncode == 0, result.stderr
    traces = sorted(os.listdir(tmp_path))
    assert traces and all((tmp_path / name).stat().st_size > 0 for name in traces), traces
    assert "cudaErrorInvalidValue" in result.stdout          # the first launch was refused: no file for it

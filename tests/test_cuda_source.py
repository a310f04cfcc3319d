"""CUDA C++ sources: gpuemu run/debug/profile k.cu, load() of .cu files and text, RawModule/RawKernel, the PTX cache."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from emulator import cuda_source
from emulator.api import load
from emulator.cuda_source import CudaCompileError, RawKernel, RawModule
from emulator.errors import UsageError

HAS_NVCC = cuda_source.shutil.which("nvcc") is not None
HAS_NVRTC = cuda_source.nvrtc_library() is not None
pytestmark = pytest.mark.skipif(not (HAS_NVCC or HAS_NVRTC),
                                reason="no CUDA compiler (nvcc on PATH or pip install 'gpuemu[cuda]')")
needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="nvcc is not on PATH")
needs_nvrtc = pytest.mark.skipif(not HAS_NVRTC, reason="NVRTC is not installed (pip install 'gpuemu[cuda]')")

VADD = """\
#include "scale.h"

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = SCALE * (a[i] + b[i]);
}
"""

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    monkeypatch.delenv("GPUEMU_CUDA_COMPILER", raising=False)


def gpuemu(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "emulator", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def write_vadd(folder, scale="2.0f"):
    (folder / "vadd.cu").write_text(VADD)
    (folder / "scale.h").write_text(f"#define SCALE {scale}\n")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(100).astype(np.float32)
    b = rng.standard_normal(100).astype(np.float32)
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    return a, b


def test_run_cu_file_compiles_with_its_own_header_and_writes_outputs(tmp_path):
    a, b = write_vadd(tmp_path)
    result = gpuemu("run", "vadd.cu", "--grid", "2", "--block", "64", "--arg", "@a.npy", "--arg", "@b.npy",
                    "--arg", "zeros:f32:100", "--arg", "i32:100", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "arg2.npy"), np.float32(2.0) * (a + b))


def test_compiler_error_is_the_compilers_file_line_report_with_status_2(tmp_path):
    (tmp_path / "bad.cu").write_text("__global__ void broken(float *x)\n{\n    x[threadIdx.x] = y;\n}\n")
    result = gpuemu("run", "bad.cu", "--grid", "1", "--block", "32", "--arg", "zeros:f32:32", cwd=tmp_path)
    assert result.returncode == 2
    assert "bad.cu(3): error" in result.stderr
    assert "Traceback" not in result.stderr


def test_fault_report_names_the_cu_line(tmp_path):
    (tmp_path / "oob.cu").write_text("__global__ void oob(float *x, int n)\n{\n"
                                     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    x[i + n] = 1.0f;\n}\n")
    result = gpuemu("run", "oob.cu", "--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg", "i32:1000",
                    cwd=tmp_path)
    assert result.returncode == 4
    assert "oob.cu:4)" in result.stderr and "CUDA_ERROR_ILLEGAL_ADDRESS" in result.stderr


def test_debug_breaks_on_a_cu_line(tmp_path):
    write_vadd(tmp_path)
    (tmp_path / "commands").write_text("break vadd.cu:7\nrun\n")
    result = gpuemu("debug", "vadd.cu", "--grid", "1", "--block", "32", "--arg", "@a.npy", "--arg", "@b.npy",
                    "--arg", "zeros:f32:100", "--arg", "i32:100", "-x", "commands", "--batch", cwd=tmp_path)
    assert "Breakpoint 1, vadd" in result.stdout, result.stdout + result.stderr
    assert "vadd.cu:7   c[i] = SCALE * (a[i] + b[i]);" in result.stdout


def test_profile_annotates_with_cu_lines(tmp_path):
    write_vadd(tmp_path)
    result = gpuemu("profile", "vadd.cu", "--grid", "2", "--block", "64", "--arg", "@a.npy", "--arg", "@b.npy",
                    "--arg", "zeros:f32:100", "--arg", "i32:100", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "vadd.cu:7  c[i] = SCALE * (a[i] + b[i]);" in result.stdout


def test_load_cu_path_and_a_header_edit_recompiles(tmp_path):
    a, b = write_vadd(tmp_path)
    c = np.zeros(100, dtype=np.float32)
    load(str(tmp_path / "vadd.cu")).kernel("vadd")(1, 128, [a, b, c, 100])
    np.testing.assert_array_equal(c, np.float32(2.0) * (a + b))
    (tmp_path / "scale.h").write_text("#define SCALE 3.0f\n")
    load(tmp_path / "vadd.cu").kernel("vadd")(1, 128, [a, b, c, 100])
    np.testing.assert_array_equal(c, np.float32(3.0) * (a + b))


def test_load_text_with_language_cuda_and_options():
    source = "__global__ void fill(int *out) { out[threadIdx.x] = FACTOR * threadIdx.x; }"
    out = np.zeros(8, dtype=np.int32)
    load(source, language="cuda", options=["-DFACTOR=3"]).kernel("fill")(1, 8, [out])
    np.testing.assert_array_equal(out, 3 * np.arange(8))


def test_arch_is_passed_to_the_compiler():
    assert ".target sm_80" in cuda_source.compile_ptx(SAXPY, arch="sm_80")
    assert ".target sm_90" in cuda_source.compile_ptx(SAXPY)


def test_cached_ptx_is_used_without_running_the_compiler(monkeypatch):
    first = cuda_source.compile_ptx(SAXPY, options=["-DUNUSED=1"])

    def refuse(*args, **kwargs):
        raise AssertionError("the compiler ran although the PTX was cached")

    monkeypatch.setattr(cuda_source.Nvcc, "compile", refuse)
    monkeypatch.setattr(cuda_source.Nvrtc, "compile", refuse)
    assert cuda_source.compile_ptx(SAXPY, options=["-DUNUSED=1"]) == first
    with pytest.raises(AssertionError):
        cuda_source.compile_ptx(SAXPY, options=["-DUNUSED=2"])


def test_cache_entry_that_is_not_signed_is_ignored(tmp_path, monkeypatch):
    ptx = cuda_source.compile_ptx(SAXPY)
    for entry in (tmp_path / "cache" / "cuda").glob("*.bin"):
        entry.write_bytes(entry.read_bytes().replace(b"saxpy", b"evil_"))
    assert cuda_source.compile_ptx(SAXPY) == ptx


def test_raw_kernel_runs_over_numpy_arrays_like_cupy():
    x = np.arange(50, dtype=np.float32)
    y = np.ones(50, dtype=np.float32)
    RawKernel(SAXPY, "saxpy")((1,), (64,), (np.float32(2.0), x, y, np.int32(50)))
    np.testing.assert_array_equal(y, np.float32(2.0) * np.arange(50, dtype=np.float32) + 1)


def test_raw_module_finds_a_mangled_cpp_kernel_by_its_plain_name():
    module = RawModule(code="template <typename T> __global__ void twice(T *v) { v[threadIdx.x] *= 2; }\n"
                            "template __global__ void twice<int>(int *);\n")
    values = np.arange(16, dtype=np.int32)
    module.get_function("twice")((1,), (16,), (values,))
    np.testing.assert_array_equal(values, 2 * np.arange(16))


@needs_nvrtc
def test_nvrtc_compiles_runs_and_reports_errors_without_a_toolkit(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUEMU_CUDA_COMPILER", "nvrtc")
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, dtype=np.float32)
    RawKernel(SAXPY, "saxpy")((1,), (32,), (np.float32(0.5), x, y, np.int32(10)))
    np.testing.assert_array_equal(y, np.float32(0.5) * x)
    assert isinstance(cuda_source.find_compiler(), cuda_source.Nvrtc)
    with pytest.raises(CudaCompileError, match=r"kernel\.cu\(1\): error"):
        cuda_source.compile_ptx("__global__ void k() { undefined_name = 1; }")
    write_vadd(tmp_path)
    assert ".loc" in cuda_source.compile_file(tmp_path / "vadd.cu")  # -lineinfo, and "scale.h" found beside it


@needs_nvcc
def test_nvcc_backend_choice_like_cupy():
    assert isinstance(cuda_source.find_compiler("nvcc"), cuda_source.Nvcc)
    with pytest.raises(UsageError, match="choose nvcc or nvrtc"):
        RawKernel(SAXPY, "saxpy", backend="clang")


def test_missing_compiler_is_one_line_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(cuda_source.shutil, "which", lambda name: None)
    monkeypatch.setattr(cuda_source, "nvrtc_library", lambda: None)
    with pytest.raises(UsageError) as caught:
        cuda_source.compile_ptx(SAXPY)
    message = str(caught.value)
    assert "\n" not in message and "nvcc" in message and "pip install 'gpuemu[cuda]'" in message


def test_cli_without_the_chosen_compiler_is_one_line(tmp_path):
    write_vadd(tmp_path)
    result = gpuemu("run", "vadd.cu", "--grid", "1", "--block", "32", "--arg", "@a.npy", "--arg", "@b.npy",
                    "--arg", "zeros:f32:100", "--arg", "i32:100", cwd=tmp_path,
                    env={"GPUEMU_CUDA_COMPILER": "nvcc", "PATH": os.path.dirname(sys.executable)})
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "nvcc is not on PATH" in result.stderr


def test_compile_error_keeps_the_compilers_lines(tmp_path):
    with pytest.raises(CudaCompileError) as caught:
        cuda_source.compile_ptx(textwrap.dedent("""\
            __global__ void k(int *p)
            {
                p[0] = missing;
            }
            """), file_name="mine.cu")
    assert "mine.cu(3): error" in str(caught.value)
    assert caught.value.exit_status == 2

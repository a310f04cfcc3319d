"""CuPy on gpuemu's drop-in libraries: CuPy 12 (its wheels load libcudart.so.12) runs its kernels on gpuemu, each
result checked against numpy; CuPy 13 and later link NVIDIA's runtime statically and stop with gpuemu's one-line
explanation. Each snippet runs in a subprocess with LD_LIBRARY_PATH=$(gpuemu libdir). Skips without CuPy
(pip install 'gpuemu[cupy]')."""
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from emulator.cudart import libdir


def _cupy_version():
    for distribution in ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"):
        try:
            return tuple(int(part) for part in importlib.metadata.version(distribution).split(".")[:2])
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


CUPY_VERSION = _cupy_version()
pytestmark = pytest.mark.skipif(CUPY_VERSION is None, reason="CuPy is not installed (pip install 'gpuemu[cupy]')")
DYNAMIC_RUNTIME = CUPY_VERSION is not None and CUPY_VERSION < (13, 0)


def _nvrtc12_directory():
    """libnvrtc.so.12's directory from the nvidia-cuda-nvrtc-cu12 wheel (CuPy 12 links NVRTC 12), or None."""
    spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if os.path.exists(os.path.join(location, "lib", "libnvrtc.so.12")):
            return os.path.join(location, "lib")
    return None


def _run_cupy(script: str, cache, timeout: int = 540):
    directory, failures = libdir.library_directory()
    if failures:
        pytest.fail(f"gpuemu's libraries were not built: {failures}")
    paths = [directory] + [path for path in (_nvrtc12_directory(),) if path]
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(paths), CUPY_COMPILE_WITH_PTX="1",
               CUPY_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                          timeout=timeout)


KERNELS = """
    import json
    import numpy as np
    import cupy as cp

    results = {"devices": cp.cuda.runtime.getDeviceCount(), "runtime": cp.cuda.runtime.runtimeGetVersion(),
               "arange": (cp.arange(10) * 2).get().tolist()}
    n = 300
    a = np.linspace(-3, 7, n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32) * np.float32(0.25)
    vector_add = cp.RawKernel(r'''
    extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }''', "vector_add")
    d_a, d_b = cp.asarray(a), cp.asarray(b)
    d_c = cp.full(n, -1, dtype=cp.float32)
    vector_add(((n + 127) // 128,), (128,), (d_a, d_b, d_c, np.int32(n)))
    results["raw"] = d_c.get().tolist()
    square_add = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * x + y", "square_add")
    results["elementwise"] = square_add(d_a, d_b).get().tolist()
    integers = np.random.default_rng(7).integers(-1000, 1000, 2000)
    total = cp.ReductionKernel("int64 x", "int64 y", "x", "a + b", "y = a", "0", "integer_sum")
    results["reduction"] = int(total(cp.asarray(integers)))
    results["reduction_input"] = integers.tolist()
    print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def kernel_results(tmp_path_factory):
    completed = _run_cupy(KERNELS, tmp_path_factory.mktemp("cupy-cache"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1]), completed.stderr


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_sees_one_device_and_a_cuda12_runtime(kernel_results):
    results, _ = kernel_results
    assert results["devices"] == 1
    assert 12000 <= results["runtime"] < 13000


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_array_arithmetic_matches_numpy(kernel_results):
    results, _ = kernel_results
    assert results["arange"] == (np.arange(10) * 2).tolist()


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_raw_and_elementwise_kernels_match_numpy_bit_for_bit(kernel_results):
    results, _ = kernel_results
    a = np.linspace(-3, 7, 300, dtype=np.float32)
    b = np.arange(300, dtype=np.float32) * np.float32(0.25)
    assert np.array_equal(np.array(results["raw"], dtype=np.float32), a + b)
    # NVRTC contracts x * x + y into one fma (as it does for an H100): x * x and the sum are exact in float64 here,
    # so rounding the float64 result once gives the fma's float32
    fused = (a.astype(np.float64) * a + b).astype(np.float32)
    assert np.array_equal(np.array(results["elementwise"], dtype=np.float32), fused)


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_reduction_kernel_sums_exactly(kernel_results):
    results, _ = kernel_results
    assert results["reduction"] == sum(results["reduction_input"])


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_exit_with_live_modules_and_arrays_is_clean(kernel_results):
    _, stderr = kernel_results
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]


@pytest.mark.skipif(not DYNAMIC_RUNTIME, reason="this CuPy links NVIDIA's runtime statically")
def test_cupy12_math_library_call_fails_in_one_line_naming_it(tmp_path):
    completed = _run_cupy("""
        import cupy as cp
        try:
            cp.ones((4, 4), dtype=cp.float32) @ cp.ones((4, 4), dtype=cp.float32)
        except Exception as error:
            print(type(error).__name__, error)
        try:
            cp.random.rand(3)
        except Exception as error:
            print(type(error).__name__, error)
    """, tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.splitlines() == ["CUBLASError CUBLAS_STATUS_NOT_SUPPORTED",
                                             "CURANDError CURAND_STATUS_INITIALIZATION_FAILED"]
    gpuemu_lines = [line for line in completed.stderr.splitlines() if line.startswith("gpuemu:")]
    assert any("cublasCreate_v2 is not implemented by gpuemu's libcublas.so.12" in line for line in gpuemu_lines)
    assert any("curandCreateGenerator is not implemented by gpuemu's libcurand.so.10" in line
               for line in gpuemu_lines)


@pytest.mark.skipif(DYNAMIC_RUNTIME, reason="this CuPy loads libcudart.so.12, which gpuemu provides")
def test_cupy_with_static_runtime_stops_with_one_line_saying_why(tmp_path):
    completed = _run_cupy("""
        import cupy as cp
        try:
            cp.cuda.runtime.getDeviceCount()
        except Exception as error:
            print(type(error).__name__, error)
    """, tmp_path)
    assert completed.stdout.strip() == "CUDARuntimeError cudaErrorNotSupported: operation not supported"
    explanations = [line for line in completed.stderr.splitlines() if "links NVIDIA's CUDA runtime statically" in line]
    assert len(explanations) == 1 and "cuGetExportTable" in explanations[0]

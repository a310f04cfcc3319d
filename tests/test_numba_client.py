"""Unmodified numba.cuda code on gpuemu (emulator.numba): numba-cuda compiles with its own NVVM, gpuemu's libcuda.so.1
runs the PTX. Every result is checked against numpy. Skips without numba-cuda (pip install 'gpuemu[numba]')."""
import math
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (pip install 'gpuemu[numba]')")

import emulator.numba  # noqa: E402

emulator.numba.install()

from numba import cuda, float32, int32, void  # noqa: E402
from numba.core.errors import NumbaPerformanceWarning  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore", category=NumbaPerformanceWarning)
warnings.simplefilter("ignore", NumbaPerformanceWarning)


@cuda.jit(void(float32[:], float32[:], float32[:]))
def add_eager(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit(device=True)
def cube(x):
    return x * x * x


@cuda.jit
def cube_strided(a, out):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        out[i] = cube(a[i])


def test_eager_signature_kernel_on_host_arrays_copies_results_back():
    a = np.linspace(-4, 4, 100, dtype=np.float32)
    b = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    add_eager[4, 32](a, b, out)
    assert np.array_equal(out, a + b)


def test_lazy_kernel_with_device_function_grid_stride_stream_and_shared_size():
    a = np.arange(-50, 50, dtype=np.int64)
    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_out = cuda.device_array_like(d_a)
    cube_strided[3, 8, stream, 64](d_a, d_out)
    stream.synchronize()
    assert np.array_equal(d_out.copy_to_host(), a ** 3)


def test_lazy_kernel_specialises_per_argument_type():
    for dtype in (np.float64, np.int32, np.complex64):
        a = (np.arange(10) - 3).astype(dtype)
        out = np.zeros_like(a)
        cube_strided[1, 16](a, out)
        assert np.array_equal(out, a * a * a), dtype


@cuda.jit
def block_reverse(a, out):
    tile = cuda.shared.array(64, dtype=float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * 64
    tile[t] = a[base + t]
    cuda.syncthreads()
    out[base + t] = tile[63 - t]


def test_shared_array_and_syncthreads_reverse_each_block():
    a = np.arange(256, dtype=np.float32)
    out = np.zeros_like(a)
    block_reverse[4, 64](a, out)
    assert np.array_equal(out, a.reshape(4, 64)[:, ::-1].ravel())


@cuda.jit
def dynamic_shared_sum(a, out):
    buffer = cuda.shared.array(0, dtype=int32)
    t = cuda.threadIdx.x
    buffer[t] = a[t]
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            buffer[t] += buffer[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0] = buffer[0]


def test_dynamic_shared_memory_sized_at_launch():
    a = np.arange(128, dtype=np.int32) * 3 - 17
    out = np.zeros(1, np.int32)
    dynamic_shared_sum[1, 128, 0, 128 * 4](a, out)
    assert out[0] == a.sum()


@cuda.jit
def sync_predicates(a, counts):
    t = cuda.threadIdx.x
    counts[0] = cuda.syncthreads_count(1 if a[t] > 0 else 0)
    counts[1] = cuda.syncthreads_and(1 if a[t] > -100 else 0)
    counts[2] = cuda.syncthreads_or(1 if a[t] > 40 else 0)


def test_syncthreads_count_and_or():
    a = np.arange(-20, 44, dtype=np.int32)
    counts = np.full(3, -1, np.int32)
    sync_predicates[1, 64](a, counts)
    assert counts[0] == (a > 0).sum() and bool(counts[1]) and bool(counts[2])


@cuda.jit
def histogram(values, bins, extremes):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i] % bins.size, 1)
        cuda.atomic.max(extremes, 0, values[i])
        cuda.atomic.min(extremes, 1, values[i])


def test_atomics_from_every_thread_are_all_counted():
    values = np.random.default_rng(3).integers(0, 1000, 777).astype(np.int32)
    bins = np.zeros(10, np.int32)
    extremes = np.array([-1, 10 ** 6], np.int32)
    histogram[(777 + 127) // 128, 128](values, bins, extremes)
    assert np.array_equal(bins, np.bincount(values % 10, minlength=10))
    assert extremes.tolist() == [values.max(), values.min()]


@cuda.jit
def compare_and_swap_first(slot, winners):
    t = cuda.grid(1)
    winners[t] = cuda.atomic.cas(slot, 0, -1, t + 1)


def test_atomic_cas_lets_exactly_one_thread_win():
    slot = np.array([-1], np.int32)
    winners = np.zeros(64, np.int32)
    compare_and_swap_first[2, 32](slot, winners)
    assert (winners == -1).sum() == 1 and slot[0] == 1 + int(np.flatnonzero(winners == -1)[0])


@cuda.jit
def warp_ops(a, shuffled, ballots, votes, reduced):
    t = cuda.threadIdx.x
    lane = t % 32
    value = a[t]
    shuffled[t] = cuda.shfl_down_sync(0xFFFFFFFF, value, 1)
    ballots[t] = cuda.ballot_sync(0xFFFFFFFF, value % 3 == 0)
    votes[t] = cuda.all_sync(0xFFFFFFFF, value >= 0) + 2 * cuda.any_sync(0xFFFFFFFF, value == 5)
    total = value
    offset = 16
    while offset > 0:
        total += cuda.shfl_xor_sync(0xFFFFFFFF, total, offset)
        offset //= 2
    if lane == 0:
        reduced[t // 32] = total


def test_warp_shuffle_ballot_vote_and_butterfly_reduction():
    a = np.arange(64, dtype=np.int32)
    shuffled, ballots, votes = np.zeros(64, np.int32), np.zeros(64, np.uint32), np.zeros(64, np.int32)
    reduced = np.zeros(2, np.int32)
    warp_ops[1, 64](a, shuffled, ballots, votes, reduced)
    warps = a.reshape(2, 32)
    expected_shuffle = np.concatenate([warps[:, 1:], warps[:, 31:]], axis=1).ravel()
    assert np.array_equal(shuffled, expected_shuffle)
    masks = [sum(1 << lane for lane in range(32) if w[lane] % 3 == 0) for w in warps]
    assert ballots.tolist() == [masks[0]] * 32 + [masks[1]] * 32
    assert votes.tolist() == [3] * 32 + [1] * 32
    assert reduced.tolist() == warps.sum(axis=1).tolist()


COEFFICIENTS = np.array([0.5, -1.0, 2.0, 0.25], np.float64)


@cuda.jit
def polynomial(x, out):
    c = cuda.const.array_like(COEFFICIENTS)
    scratch = cuda.local.array(4, dtype=np.float64)
    i = cuda.grid(1)
    if i < x.size:
        power = 1.0
        for k in range(4):
            scratch[k] = c[k] * power
            power *= x[i]
        out[i] = scratch[0] + scratch[1] + scratch[2] + scratch[3]


def test_const_array_like_and_local_array():
    x = np.linspace(-2, 2, 33)
    out = np.zeros_like(x)
    polynomial[2, 32](x, out)
    expected = sum(COEFFICIENTS[k] * x ** k for k in range(4))
    np.testing.assert_allclose(out, expected, rtol=1e-15, atol=1e-15)


@cuda.jit
def transpose_add(a, b, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[j, i] + b[i, j]


def test_two_dimensional_arrays_in_c_f_and_strided_layouts():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((7, 5)).astype(np.float32)
    b_full = rng.standard_normal((10, 14)).astype(np.float32)
    b = cuda.to_device(b_full)[::2, ::2][:, :7]
    assert not b.is_c_contiguous() and not b.is_f_contiguous()
    out = np.asfortranarray(np.zeros((5, 7), np.float32))
    transpose_add[(2, 2), (4, 4)](a, b, out)
    assert np.array_equal(out, a.T + b_full[::2, ::2][:, :7])


@cuda.jit
def volume_sum(v, out):
    i, j, k = cuda.grid(3)
    if i < v.shape[0] and j < v.shape[1] and k < v.shape[2]:
        cuda.atomic.add(out, 0, v[i, j, k])


def test_three_dimensional_array_with_three_dimensional_grid():
    v = np.arange(3 * 5 * 6, dtype=np.int64).reshape(3, 5, 6)
    out = np.zeros(1, np.int64)
    volume_sum[(1, 2, 2), (4, 4, 4)](v, out)
    assert out[0] == v.sum()


PARTICLE = np.dtype([("mass", np.float64), ("charge", np.int32), ("velocity", np.float32)], align=True)


@cuda.jit
def momentum(particles, out):
    i = cuda.grid(1)
    if i < particles.size:
        p = particles[i]
        out[i] = p.mass * p.velocity * p.charge
        particles[i].charge = -p.charge


def test_record_arrays_read_and_written():
    particles = np.zeros(9, PARTICLE)
    particles["mass"] = np.arange(9) + 0.5
    particles["charge"] = np.arange(9) - 4
    particles["velocity"] = np.linspace(1, 2, 9)
    before = particles.copy()
    out = np.zeros(9)
    momentum[1, 16](particles, out)
    expected = before["mass"] * before["velocity"].astype(np.float64) * before["charge"]
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert np.array_equal(particles["charge"], -before["charge"])


@cuda.jit
def rotate(z, angle, out):
    i = cuda.grid(1)
    if i < z.size:
        out[i] = z[i] * complex(math.cos(angle), math.sin(angle)) + z[i].conjugate()


def test_complex_arrays_and_scalars():
    z = (np.arange(12) + 1j * np.arange(12)[::-1]).astype(np.complex128)
    out = np.zeros_like(z)
    rotate[1, 16](z, 0.3, out)
    np.testing.assert_allclose(out, z * complex(math.cos(0.3), math.sin(0.3)) + z.conj(), rtol=1e-14)


@cuda.jit
def affine(pair, offsets, a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] * pair[0] + pair[1] + offsets[0][1] + offsets[1]


def test_tuple_arguments_are_flattened_as_numba_does():
    a = np.arange(20, dtype=np.float64)
    out = np.zeros_like(a)
    affine[1, 32]((2.5, -1), ((1, 0.25), 3), a, out)
    assert np.array_equal(out, a * 2.5 - 1 + 0.25 + 3)


@cuda.jit
def increment(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


def test_pinned_mapped_and_device_arrays_events_and_synchronize():
    pinned = cuda.pinned_array(16, dtype=np.int32)
    pinned[:] = np.arange(16)
    mapped = cuda.mapped_array(16, dtype=np.int32)
    mapped[:] = np.arange(16) * 10
    device = cuda.device_array(16, dtype=np.int32)
    device.copy_to_device(np.full(16, 7, np.int32))
    stream = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    d_pinned = cuda.to_device(pinned, stream=stream)
    for array in (d_pinned, mapped, device):
        increment[1, 16, stream](array)
    d_pinned.copy_to_host(pinned, stream=stream)
    end.record(stream)
    end.synchronize()
    cuda.synchronize()
    assert cuda.event_elapsed_time(start, end) >= 0
    assert np.array_equal(pinned, np.arange(16) + 1)
    assert np.array_equal(mapped, np.arange(16) * 10 + 1)
    assert np.array_equal(device.copy_to_host(), np.full(16, 8))


def test_slices_of_device_arrays_are_views():
    d = cuda.to_device(np.zeros(32, np.int32))
    increment[1, 32](d[8:24])
    assert np.array_equal(d.copy_to_host(), np.r_[np.zeros(8), np.ones(16), np.zeros(8)])


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from numba import cuda

    @cuda.jit
    def scale(a, factor):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= factor

    a = np.arange(int(sys.argv[1]), dtype=np.float32)
    scale[1, 64](a, 3)
    print(a.sum(), cuda.is_available(), *cuda.get_current_device().compute_capability)
""")

OUT_OF_BOUNDS = textwrap.dedent("""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def far_store(a):
        a[(1 << 40) + cuda.grid(1)] = 1

    far_store[1, 1](cuda.to_device(np.zeros(4, np.int32)))
    cuda.synchronize()
""")

PYTEST_FILE = textwrap.dedent("""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def negate(a):
        a[cuda.grid(1)] = -a[cuda.grid(1)]

    def test_negate():
        a = np.arange(32, dtype=np.int16)
        negate[1, 32](a)
        assert np.array_equal(a, -np.arange(32))
""")


def test_python_m_emulator_numba_runs_a_script_with_its_arguments(tmp_path):
    script = tmp_path / "scale.py"
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, "-W", "ignore", "-m", "emulator.numba", str(script), "10"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["135.0", "True", "9", "0"]


def test_pytest_plugin_runs_an_unmodified_numba_test_file(tmp_path):
    (tmp_path / "test_negate.py").write_text(PYTEST_FILE)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "emulator.numba", "-p", "no:cacheprovider",
                             str(tmp_path / "test_negate.py")], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_a_missing_script_is_one_line_and_status_2(tmp_path):
    result = subprocess.run([sys.executable, "-m", "emulator.numba", str(tmp_path / "absent.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "absent.py" in result.stderr


def test_an_out_of_bounds_store_is_a_fault_report_and_numbas_illegal_address_error(tmp_path):
    script = tmp_path / "far_store.py"
    script.write_text(OUT_OF_BOUNDS)
    result = subprocess.run([sys.executable, "-W", "ignore", "-m", "emulator.numba", str(script)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "Invalid __global__ write of size 4 bytes" in result.stderr and "far_store" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].endswith("CUDA_ERROR_ILLEGAL_ADDRESS")


def test_install_after_numba_cuda_was_imported_without_a_driver():
    # pytest --pyargs numba.cuda.tests... imports numba.cuda (whose driver then finds no libcuda) before plugins run
    code = textwrap.dedent("""
        import numpy as np
        from numba import cuda
        from numba.cuda.cudadrv import driver
        assert driver.driver.is_initialized
        import emulator.numba
        emulator.numba.install()

        @cuda.jit
        def bump(a):
            a[cuda.grid(1)] += 1

        a = np.arange(8.0)
        bump[1, 8](a)
        print(a.tolist())
    """)
    environment = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}  # install() set it in this process
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=300,
                            env=environment)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([float(i + 1) for i in range(8)])


@cuda.jit
def scale_by(a, factor, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] * factor


def test_float_scalars_pass_as_raw_bits_without_a_type_warning():
    # the driver hands gpuemu raw parameter bytes; numba-cuda's own test suite turns warnings into errors
    a = np.arange(8, dtype=np.float64)
    out = np.zeros_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scale_by[1, 8](a, 1.5, out)
    assert np.array_equal(out, a * 1.5)

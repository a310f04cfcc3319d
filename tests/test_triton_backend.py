"""gpuemu as Triton's driver: kernel[grid](...) on torch CPU tensors, autotuning, do_bench, device properties."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from emulator.errors import DeviceError  # noqa: E402
from emulator.triton_backend.driver import GpuemuDriver  # noqa: E402

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
if not GpuemuDriver.is_active():
    pytest.skip("a GPU driver is active, so gpuemu's Triton driver is not", allow_module_level=True)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def axpb_kernel(x_ptr, out_ptr, alpha, beta, half, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * alpha + beta + half.to(tl.float32), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        values = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        numerator = tl.exp(values - tl.max(values, axis=0))
        tl.store(out_ptr + row * out_stride + cols, numerator / tl.sum(numerator, axis=0), mask=cols < n_cols)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4),
                          triton.Config({"BLOCK": 128}, num_warps=1)], key=["n"])
@triton.jit
def tuned_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 3.0 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def test_driver_is_gpuemu_on_the_cpu_with_an_sm90_cuda_target():
    driver = triton.runtime.driver.active
    assert isinstance(driver, GpuemuDriver)
    assert driver.get_active_torch_device() == torch.device("cpu")
    target = driver.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)


def test_vector_add_on_cpu_tensors_matches_torch():
    torch.manual_seed(0)
    x, y = torch.rand(5000), torch.rand(5000)
    out = torch.empty_like(x)
    add_kernel[lambda meta: (triton.cdiv(5000, meta["BLOCK"]),)](x, y, out, 5000, BLOCK=1024)
    assert torch.equal(out, x + y)


def test_views_of_one_storage_are_one_buffer_and_offsets_are_kept():
    buffer = torch.arange(300, dtype=torch.float32)
    expected = buffer[:100] + buffer[100:200]
    add_kernel[(1,)](buffer[:100], buffer[100:200], buffer[150:250], 100, BLOCK=128)
    assert torch.equal(buffer[150:250], expected)
    assert torch.equal(buffer[:100], torch.arange(100, dtype=torch.float32))


def test_numpy_memory_through_torch_from_numpy_is_written_in_place():
    x = np.linspace(0, 1, 77, dtype=np.float32)
    out = np.zeros_like(x)
    add_kernel[(1,)](torch.from_numpy(x), torch.from_numpy(x), torch.from_numpy(out), 77, BLOCK=128)
    np.testing.assert_array_equal(out, x + x)


def test_scalar_arguments_keep_their_types():
    x = torch.linspace(-4, 4, 300)
    out = torch.empty_like(x)
    axpb_kernel[(3,)](x, out, 2.5, -1.25, 0.5, 300, BLOCK=128)
    expected = (x.double() * 2.5 - 1.25 + 0.5).float()
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)


def test_persistent_softmax_with_reductions_matches_a_float64_reference():
    torch.manual_seed(1)
    x = torch.randn(37, 300)
    out = torch.empty_like(x)
    softmax_kernel[(8,)](out, x, x.stride(0), out.stride(0), 37, 300, BLOCK=512, num_warps=4)
    torch.testing.assert_close(out.double(), torch.softmax(x.double(), dim=1), rtol=1e-5, atol=1e-7)


def test_fp16_dot_accumulates_in_fp32():
    torch.manual_seed(2)
    a = torch.randn(64, 32).half()
    b = torch.randn(32, 64).half()
    c = torch.empty(64, 64)
    matmul_kernel[(2, 2)](a, b, c, 64, 64, 32, BM=32, BN=32, BK=16, num_warps=4)
    exact = a.double() @ b.double()
    assert (c.double() - exact).abs().max().item() < 32 * 2.0 ** -23 * exact.abs().max().item()


def test_autotuning_compiles_and_runs_every_config():
    x = torch.rand(1000)
    out = torch.empty_like(x)
    tuned_scale_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, out, 1000)
    assert torch.equal(out, 3.0 * x)
    assert len(tuned_scale_kernel.configs_timings) == 3
    assert all(timing[0] > 0 for timing in tuned_scale_kernel.configs_timings.values())


def test_warmup_reports_ptxas_registers_and_h100_properties():
    kernel = add_kernel.warmup(torch.empty(8), torch.empty(8), torch.empty(8), 8, BLOCK=256, grid=(1,))
    kernel._init_handles()
    assert 0 < kernel.n_regs <= 255
    properties = triton.runtime.driver.active.utils.get_device_properties(torch.device("cpu").index)
    assert properties["multiprocessor_count"] == 132 and properties["max_shared_mem"] == 227 * 1024
    assert "gpuemu" in kernel.asm and kernel.asm["gpuemu"].decode() == kernel.asm["ptx"]


def test_out_of_bounds_store_is_a_device_error_not_a_crash():
    x = torch.zeros(10)
    with pytest.raises(DeviceError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        add_kernel[(1,)](x, x, x, 100000, BLOCK=1024)  # reads and writes past the 40-byte storage


def test_do_bench_times_the_emulator_only_when_asked(monkeypatch, capsys):
    monkeypatch.setenv("GPUEMU_TRITON_BENCH", "run")
    x = torch.rand(256)
    out = torch.empty_like(x)
    milliseconds = triton.testing.do_bench(lambda: add_kernel[(1,)](x, x, out, 256, BLOCK=256), warmup=1, rep=1)
    assert milliseconds > 0
    assert "not a GPU" in capsys.readouterr().err


def test_do_bench_stops_the_program_with_a_clear_line_by_default(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent("""\
        import torch, triton
        x = torch.rand(16)
        triton.testing.do_bench(lambda: x + x)
        print("after do_bench")
        """))
    environment = {key: value for key, value in os.environ.items() if key != "GPUEMU_TRITON_BENCH"}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=environment,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "says nothing about a GPU's speed" in result.stderr and "Traceback" not in result.stderr
    assert "after do_bench" not in result.stdout


def test_half_precision_scalars_are_passed_as_their_16_bit_codes():
    from emulator.triton_backend.driver import convert_argument
    assert convert_argument("fp16", 1.5, 0) == np.uint16(0x3E00)
    assert convert_argument("bf16", 1.5, 0) == np.uint16(0x3FC0)
    assert convert_argument("fp32", 0.1, 0).dtype == np.float32
    assert convert_argument("i64", np.int64(-3), 0) == -3

"""wgmma.mma_async: descriptor layouts against the H100's probes, the tensor-core summation, warpgroups, errors."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.errors import DeviceError, PTXSemanticError
from emulator.runtime.spec import read_launches, run_launch
from isa.tensor import tensor_core_sum
from isa.tensor import operand_addresses

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "wgmma"
SPECS = {spec.name: spec for spec in read_launches(EXAMPLE / "launches.json")}
PROBE_CODE_BASE = 0x400


def accumulator_matrix(registers: np.ndarray, n: int) -> np.ndarray:
    """The 64 × n f32 product from 128 threads' accumulator registers, by the PTX ISA's wgmma D layout."""
    lane = np.arange(128) % 32
    slot = np.arange(n // 2)[None, :]
    rows = 16 * (np.arange(128) // 32)[:, None] + lane[:, None] // 4 + 8 * (slot % 4 >= 2)
    cols = 8 * (slot // 4) + 2 * (lane[:, None] % 4) + slot % 2
    matrix = np.zeros((64, n), dtype=registers.dtype)
    matrix[rows, cols] = registers.reshape(128, n // 2)
    return matrix


@pytest.mark.parametrize("name", [name for name in SPECS if "_probe_" in name])
def test_wgmma_descriptor_layout_names_the_element_the_h100_read(name):
    """Probe launches: shared memory holds f16 code 0x400 + element index and A is an identity in registers, so
    the H100's D[k][n] is the code of the element it read for B(k, n)."""
    spec = SPECS[name]
    product = accumulator_matrix(np.load(spec.expected_dir / "arg2.npy"), 64)
    read = product[:16].astype(np.float16).view(np.uint16).astype(np.int64).T - PROBE_CODE_BASE
    descriptor = np.array([int(spec.args[4].split(":")[1])], dtype=np.uint64)
    mn_major = "_tb1_" in name
    addresses = operand_addresses(descriptor, np.arange(64)[None, :], 16, 2, mn_major)[0]
    assert np.array_equal(addresses // 2, read)


def test_tensor_core_sum_cuts_the_small_terms_toward_zero_where_rounding_would_round_up():
    a = np.array([[[1.0, 0.0]]])
    b = np.array([[[1.0, 0.0]]])
    c = np.array([[1.5 * 2.0**-24]])
    assert np.float32(1.0 + 1.5 * 2.0**-24) == np.float32(1.0 + 2.0**-23)
    assert tensor_core_sum(a, b, c, "f16")[0, 0] == np.float32(1.0)
    assert tensor_core_sum(-a, b, -c, "f16")[0, 0] == np.float32(-1.0)


def test_tensor_core_sum_keeps_13_bits_below_the_largest_fp8_product():
    a = np.array([[[16.0, 2.0**-10]]])
    b = np.array([[[16.0, 1.0]]])
    c = np.zeros((1, 1))
    assert tensor_core_sum(a, b, c, "e4m3")[0, 0] == np.float32(256.0)
    assert tensor_core_sum(a, b, c, "f16")[0, 0] == np.float32(256.0 + 2.0**-10)


def test_tensor_core_sum_keeps_14_significant_bits_of_an_fp8_sum():
    one = np.ones((1, 1, 1))
    c = np.array([[1.0 + 2.0**-13]])
    assert tensor_core_sum(one, one, c, "e4m3")[0, 0] == np.float32(2.0)
    assert tensor_core_sum(one, one, c, "f16")[0, 0] == np.float32(2.0 + 2.0**-13)


def test_wgmma_second_warpgroup_of_a_cta_computes_the_same_64_rows_from_its_own_registers(tmp_path):
    spec = SPECS["f16_ta0_tb0_sw0"]
    args = list(spec.args)
    np.save(tmp_path / "c.npy", np.tile(np.load(EXAMPLE / args[1][1:]), 2))
    args[1], args[2] = f"@{tmp_path / 'c.npy'}", "zeros:f32:8192"
    outputs, _ = run_launch(replace(spec, block=(256, 1, 1), args=args))
    result = np.asarray(outputs[2]).reshape(2, 4096)
    expected = np.load(spec.expected_dir / "arg2.npy")
    assert np.array_equal(result[0].view(np.uint32), expected.view(np.uint32))
    assert np.array_equal(result[1].view(np.uint32), result[0].view(np.uint32))


WGMMA_KERNEL = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<40>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    mov.b64 %rd1, 0;
    setp.eq.u32 %p1, %r1, 0;
    wgmma.fence.sync.aligned;
    WGMMA
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    ret;
}
"""
ACCUMULATORS = "{" + ",".join(f"%r{i}" for i in range(4)) + "}"


@pytest.mark.parametrize("instruction, message", [
    (f"wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 0, 0;",
     "wgmma .m64n16 needs 8 accumulator registers, got 4"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, %r5, 1, 0, 0;",
     "wgmma scale and transpose operands must be an integer constant"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1;",
     "takes 8 operands, got 6"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 2, 1, 0, 0;",
     "imm-scale-a and imm-scale-b must be 1 or -1"),
    (f"wgmma.mma_async.sync.aligned.m64n8k32.f32.s8.s8 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1;",
     "wgmma is not defined for .f32.s8.s8"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.bf16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 0, 0;",
     "wgmma is not defined for .f32.f16.bf16"),
    (f"wgmma.mma_async.sync.aligned.m64n8k8.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 0, 0;",
     "wgmma with .f16 inputs needs .k16, not .k8"),
    ("wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {" + ",".join(f"%r{i}" for i in range(20)) +
     "}, %rd1, %rd1, %p1;", "integer wgmma is not defined for .n40"),
    (f"wgmma.mma_async.sync.aligned.m64n8k32.satfinite.f32.e4m3.e4m3 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1;",
     "wgmma .satfinite needs an .s32 accumulator"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 2, 0;",
     "imm-trans-a and imm-trans-b must be 0 or 1"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, 5, 1, 1, 0, 0;",
     "scale-d must be a predicate or the constant 0 or 1"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %r9, 1, 1, 0, 0;",
     "wgmma scale-d must be a .pred register"),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %r9, %rd1, %p1, 1, 1, 0, 0;",
     "wgmma A descriptor must be a .b64 register"),
    ("wgmma.wait_group.sync.aligned %r9;", "wgmma.wait_group takes one integer constant"),
    (f"wgmma.mma_async.sync.aligned.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 0, 0;",
     "needs a shape such as .m64n64k16"),
])
def test_wgmma_misuse_is_one_line_naming_the_instruction(instruction, message):
    with pytest.raises(PTXSemanticError) as info:
        emulator.load(WGMMA_KERNEL.replace("WGMMA", instruction)).kernel("k").launch(1, 128, [np.zeros(4, np.uint32)])
    assert message in str(info.value) and "\n" not in str(info.value)


def test_wgmma_in_a_block_that_is_not_whole_warpgroups_is_an_illegal_instruction():
    instruction = f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {ACCUMULATORS}, %rd1, %rd1, %p1, 1, 1, 0, 0;"
    with pytest.raises(DeviceError) as info:
        emulator.load(WGMMA_KERNEL.replace("WGMMA", instruction)).kernel("k").launch(1, 96, [np.zeros(4, np.uint32)])
    assert info.value.cuda_error == "CUDA_ERROR_ILLEGAL_INSTRUCTION" and "the block has 96 threads" in str(info.value)


def _bits(value: int, kind: str) -> float:
    if kind == "f16":
        return float(np.array([value], np.uint16).view(np.float16)[0])
    return float(np.array([value << 16], np.uint32).view(np.float32)[0])


#: mma.sync.m16n8k16 on the H100 with every A element a, every B element b and C c (16 products each):
#: (input kind, a bits, b bits, C bits (f32, or f16 for an f16 accumulator), accumulator, D bits)
SPECIAL_VALUES_ON_H100 = [
    ("f16", 0x7C00, 0x0000, 0x00000000, "f32", 0x7FFFFFFF),
    ("f16", 0x7C00, 0x3C00, 0xFF800000, "f32", 0x7FFFFFFF),
    ("f16", 0x7E00, 0x3C00, 0x00000000, "f32", 0x7FFFFFFF),
    ("f16", 0xFE00, 0x3C00, 0x00000000, "f32", 0x7FFFFFFF),
    ("f16", 0x3C00, 0x3C00, 0xFFC00001, "f32", 0x7FFFFFFF),
    ("f16", 0x7C00, 0x3C00, 0x00000000, "f32", 0x7F800000),
    ("f16", 0x7BFF, 0x7BFF, 0x7F7FFFFF, "f32", 0x7F7FFFFF),
    ("bf16", 0x7F00, 0x7F00, 0x00000000, "f32", 0x7F800000),
    ("bf16", 0x7F00, 0x7F00, 0xFF800000, "f32", 0xFF800000),
    ("bf16", 0xFF00, 0x7F00, 0x00000000, "f32", 0xFF800000),
    ("bf16", 0x7F7F, 0x3F80, 0xFF7FFFFF, "f32", 0x7F800000),
    ("f16", 0x7C00, 0x0000, 0x0000, "f16", 0x7FFF),
    ("f16", 0x7BFF, 0x7BFF, 0x0000, "f16", 0x7C00),
    ("f16", 0xFBFF, 0x7BFF, 0x0000, "f16", 0xFC00),
    ("f16", 0x3C00, 0x3C00, 0x7E01, "f16", 0x7FFF),
]


@pytest.mark.parametrize("kind, a, b, c, accumulator, expected", SPECIAL_VALUES_ON_H100)
def test_tensor_core_sum_gives_the_h100s_nan_and_infinities(kind, a, b, c, accumulator, expected):
    c_value = _bits(c, "f16") if accumulator == "f16" else float(np.array([c], np.uint32).view(np.float32)[0])
    d = tensor_core_sum(np.full((1, 1, 16), _bits(a, kind)), np.full((1, 1, 16), _bits(b, kind)),
                        np.full((1, 1, 1), c_value), kind, accumulator)
    assert int(d.view(np.uint16 if accumulator == "f16" else np.uint32)[0, 0, 0]) == expected

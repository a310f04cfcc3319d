"""The SIMT machine: divergence, reconvergence, barriers, atomics, warp operations and calls, on nvcc PTX."""
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.errors import DeviceError, PTXSemanticError

KERNELS = Path(__file__).parent / "kernels" / "machine.ptx"
ROOT_PTX_HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"


@pytest.fixture(scope="module")
def module():
    return emulator.load(KERNELS)


def test_activemask_inside_if_is_exactly_the_lanes_taking_it(module):
    rng = np.random.default_rng(1)
    v = rng.integers(-50, 50, 128).astype(np.int32)
    out = np.zeros(128, np.uint32)
    module.kernel("activemask_mod3").launch(2, 64, [v, out])
    for warp in range(4):
        taking = (v[warp * 32:(warp + 1) * 32] % 3) == 0
        mask = sum(1 << lane for lane in range(32) if taking[lane])
        expected = np.where(taking, mask, 0).astype(np.uint32)
        assert np.array_equal(out[warp * 32:(warp + 1) * 32], expected)


def test_syncthreads_inside_divergent_if_completes_on_sm90(module):
    values = np.arange(256, dtype=np.float32)
    out = np.zeros(1, np.float32)
    module.kernel("reduce_sync_in_if").launch(1, 256, [values, out])
    assert out[0] == values.sum()


def test_spin_lock_between_lanes_of_one_warp_completes(module):
    lock = np.zeros(1, np.int32)
    counter = np.zeros(1, np.int32)
    order = np.full(32, -1, np.int32)
    module.kernel("warp_spinlock").launch(1, 32, [lock, counter, order])
    assert counter[0] == 32 and sorted(order) == list(range(32)) and lock[0] == 0


def test_atomic_add_contended_lanes_serialise_in_lane_order(module):
    counter = np.zeros(1, np.int32)
    tickets = np.zeros(96, np.int32)
    module.kernel("atomic_tickets").launch(3, 32, [counter, tickets])
    assert counter[0] == 96 and np.array_equal(np.sort(tickets), np.arange(96))
    assert np.array_equal(tickets, np.arange(96))


def test_shfl_down_tree_reduction_sums_each_warp(module):
    rng = np.random.default_rng(2)
    data = rng.integers(-1000, 1000, 256).astype(np.int32)
    out = np.zeros(8, np.int32)
    module.kernel("shfl_reduce").launch(2, 128, [data, out])
    assert np.array_equal(out, data.reshape(8, 32).sum(axis=1))


def test_ballot_all_any_per_warp(module):
    rng = np.random.default_rng(3)
    data = rng.integers(-50, 50, 64).astype(np.int32)
    out = np.zeros(192, np.uint32)
    module.kernel("ballot_vote").launch(1, 64, [data, out])
    for warp in range(2):
        lanes = data[warp * 32:(warp + 1) * 32]
        ballot = sum(1 << k for k in range(32) if lanes[k] > 0)
        got = out.reshape(64, 3)[warp * 32:(warp + 1) * 32]
        assert (got[:, 0] == ballot).all() and (got[:, 1] == 1).all() and (got[:, 2] == 0).all()


def collatz(x):
    n = 0
    while x != 1:
        x = 3 * x + 1 if x & 1 else x // 2
        n += 1
    return n


def test_noinline_function_call_with_divergent_loop_returns_per_thread(module):
    out = np.zeros(128, np.int32)
    module.kernel("call_collatz").launch(2, 64, [out, np.int32(1)])
    assert list(out) == [collatz(i + 1) for i in range(128)]


def test_dynamically_indexed_local_array_sorts_each_thread(module):
    rng = np.random.default_rng(4)
    data = rng.integers(-100, 100, 64 * 16).astype(np.int32)
    out = np.zeros_like(data)
    module.kernel("local_sort").launch(2, 32, [data, out, np.int32(16)])
    assert np.array_equal(out.reshape(64, 16), np.sort(data.reshape(64, 16), axis=1))


def test_infinite_loop_stops_at_step_limit_with_location(module):
    flag = np.zeros(1, np.int32)
    with pytest.raises(DeviceError) as info:
        module.kernel("forever").launch(1, 32, [flag], max_steps=5000)
    assert info.value.cuda_error == "GPUEMU_STEP_LIMIT" and "machine.ptx:" in str(info.value)


def test_step_limit_message_names_the_limit_given_when_earlier_batches_used_part_of_it(module):
    out = np.zeros(128, np.int32)
    with pytest.raises(DeviceError) as info:
        module.kernel("call_collatz").launch(2, 64, [out, np.int32(1)], max_steps=2500, batch_bytes=1)
    assert info.value.cuda_error == "GPUEMU_STEP_LIMIT"
    assert "ran more than 2500 scheduler steps" in str(info.value)


def test_barrier_that_can_never_complete_is_a_reported_deadlock(module):
    out = np.zeros(128, np.int32)
    with pytest.raises(DeviceError) as info:
        module.kernel("half_barrier").launch(1, 128, [out])
    assert info.value.cuda_error == "GPUEMU_DEADLOCK"
    assert "warp 0 waits" in str(info.value) and "bar.sync 1, 64" in str(info.value)


def test_early_return_threads_do_not_block_the_barrier(module):
    out = np.zeros(200, np.int32)
    module.kernel("early_exit").launch(2, 128, [out, np.int32(200)])
    first = [(t + 1) % 128 for t in range(128)]
    second = [128 + (t + 1) % 72 for t in range(72)]
    assert list(out) == first + second


def test_trap_stops_the_launch_naming_block_and_thread(module):
    v = np.zeros(64, np.int32)
    v[37] = -1
    with pytest.raises(DeviceError) as info:
        module.kernel("trap_if").launch(1, 64, [v])
    assert info.value.cuda_error == "CUDA_ERROR_LAUNCH_FAILED" and "thread (37,0,0)" in str(info.value)


def test_named_barrier_arrive_and_sync_hand_over_data(module):
    out = np.zeros(64, np.int32)
    module.kernel("named_barrier_producer").launch(1, 128, [out])
    assert np.array_equal(out, np.arange(64) * 7)


def test_syncthreads_count_and_or_reduce_the_block(module):
    rng = np.random.default_rng(5)
    v = rng.integers(-4, 60, 96).astype(np.int32)
    out = np.zeros(288, np.int32)
    module.kernel("bar_red_popc").launch(1, 96, [v, out])
    got = out.reshape(96, 3)
    assert (got[:, 0] == np.count_nonzero(v > 0)).all()
    assert (got[:, 1] == 1).all()
    assert (got[:, 2] == int(np.any(v > 50))).all()


def test_barrier_thread_count_that_is_not_a_multiple_of_32_is_an_illegal_instruction():
    ptx = (ROOT_PTX_HEADER + ".visible .entry k(.param .u32 count)\n{\n.reg .b32 %r1;\nld.param.u32 %r1, [count];\n"
           "bar.sync 1, %r1;\nret;\n}\n")
    module = emulator.load(ptx)
    module.kernel("k").launch(1, 64, [np.uint32(64)])
    with pytest.raises(DeviceError) as info:
        module.kernel("k").launch(1, 64, [np.uint32(48)])
    assert info.value.cuda_error == "CUDA_ERROR_ILLEGAL_INSTRUCTION" and "48 threads" in str(info.value)


def test_guard_may_name_a_predicate_declared_without_percent_as_cutlass_inline_asm_does():
    ptx = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 7;
  {
  .reg .pred P1;
  setp.lt.u32 P1, %r1, 4;
  @!P1 mov.u32 %r2, 5;
  @P1 add.u32 %r2, %r2, 1;
  }
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r2;
  ret;
}
"""
    out = np.zeros(8, np.uint32)
    emulator.load(ptx).kernel("k").launch(1, 8, [out])
    assert out.tolist() == [8, 8, 8, 8, 5, 5, 5, 5]


DIVERGENT_LOOP_THEN_SYNC = ROOT_PTX_HEADER + """
.visible .entry divergent_loop_then_sync(.param .u64 out)
{
  .reg .b32 %r<10>;
  .reg .b64 %rd<3>;
  .reg .pred %p1;
  .shared .align 4 .b32 s[64];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  mul.lo.u32 %r2, %r2, 10;
  mov.u32 %r3, 0;
LOOP:
  setp.ge.u32 %p1, %r3, %r2;
  @%p1 bra DONE;
  add.u32 %r3, %r3, 1;
  bra LOOP;
DONE:
  mov.u32 %r4, s;
  shl.b32 %r5, %r1, 2;
  add.u32 %r6, %r4, %r5;
  st.shared.u32 [%r6], %r3;
  bar.sync 0;
  xor.b32 %r7, %r1, 63;
  shl.b32 %r7, %r7, 2;
  add.u32 %r8, %r4, %r7;
  ld.shared.u32 %r9, [%r8];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd1, %rd1, %rd2;
  st.global.u32 [%rd1], %r9;
  ret;
}
"""


@pytest.mark.parametrize("schedule", ["lockstep", "round-robin", "random"])
def test_pre_volta_warp_reconverges_after_a_long_divergent_loop_before_its_barrier(schedule):
    # lane l loops 10 * l times, far more than the backward branches after which the scheduler lets a
    # waiting group run: a pre-Volta warp still runs its lowest group until the lanes that left the
    # loop rejoin it, so the barrier (which counts a warp once) sees each warp whole and every thread
    # reads the count that the mirrored thread of the other warp stored before it
    from emulator.machine.policies import make_policy
    out = np.zeros(64, np.uint32)
    emulator.load(DIVERGENT_LOOP_THEN_SYNC).kernel("divergent_loop_then_sync").launch(
        1, 64, [out], arch="sm_60", policy=make_policy(schedule, 1, arch=60))
    assert out.tolist() == [(63 - t) % 32 * 10 for t in range(64)]


VECTOR_ATOMICS = """.version 8.1
.target sm_90
.address_size 64
.visible .entry vectorAtomics(.param .u64 sums, .param .u64 olds, .param .u64 halves, .param .u32 offset)
{
    .reg .u32 %r<4>;
    .reg .u64 %rd<8>;
    .reg .f32 %f<8>;
    .reg .b32 %h<4>;
    ld.param.u64 %rd1, [sums];
    ld.param.u64 %rd2, [olds];
    ld.param.u64 %rd3, [halves];
    ld.param.u32 %r1, [offset];
    cvt.u64.u32 %rd4, %r1;
    add.u64 %rd1, %rd1, %rd4;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd5, %r2, 8;
    add.u64 %rd2, %rd2, %rd5;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f40000000;
    mov.f32 %f3, 0f40400000;
    mov.f32 %f4, 0f40800000;
    red.global.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};
    atom.global.v2.f32.add {%f5, %f6}, [%rd1+16], {%f1, %f2};
    st.global.v2.f32 [%rd2], {%f5, %f6};
    mov.b32 %h1, 0x3C003C00;
    atom.global.add.noftz.v2.f16x2 {%h2, %h3}, [%rd3], {%h1, %h1};
    ret;
}
"""


def test_vector_float_atomics_add_each_element_and_return_the_old_vector():
    sums, olds, halves = np.zeros(8, np.float32), np.zeros((64, 2), np.float32), np.zeros(4, np.float16)
    emulator.load(VECTOR_ATOMICS).kernel("vectorAtomics").launch(1, 64, [sums, olds, halves, np.uint32(0)])
    assert sums.tolist() == [64.0, 128.0, 192.0, 256.0, 64.0, 128.0, 0.0, 0.0]
    # every lane saw the pair as some number of earlier lanes had left it
    assert sorted(olds[:, 0].tolist()) == list(range(64)) and (olds[:, 1] == 2 * olds[:, 0]).all()
    assert halves.tolist() == [64.0, 64.0, 64.0, 64.0]


def test_vector_atomic_off_its_vector_alignment_is_a_misaligned_address():
    buffers = [np.zeros(16, np.float32), np.zeros((64, 2), np.float32), np.zeros(4, np.float16)]
    with pytest.raises(DeviceError) as info:
        emulator.load(VECTOR_ATOMICS).kernel("vectorAtomics").launch(1, 32, buffers + [np.uint32(8)])
    assert info.value.cuda_error == "CUDA_ERROR_MISALIGNED_ADDRESS" and "red.global.add.v4.f32" in str(info.value)


SPECIAL_KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{{
    .reg .u32 %r<4>;
    .reg .u64 %rd<2>;
    ld.param.u64 %rd1, [p];
    {line}
    st.global.u32 [%rd1], %r1;
    ret;
}}
"""


@pytest.mark.parametrize("special", ["%tid.w", "%ntid.w", "%ctaid.w", "%nctaid.w"])
def test_fourth_component_of_a_vector_special_register_reads_zero(special):
    # an H100 read all four as 0 (2 blocks of 32 threads, every lane) on 2026-11-22
    out = np.full(1, 7, np.uint32)
    emulator.load(SPECIAL_KERNEL.format(line=f"mov.u32 %r1, {special};")).kernel("k").launch(2, 5, [out])
    assert out.tolist() == [0]


@pytest.mark.parametrize("line, message", [
    ("mov.u32 %r1, %ctaid;", "9:5: error: '%ctaid': %ctaid is a vector; name its .x, .y, .z or .w"),
    ("mov.u32 %r1, %laneid.x;", "9:5: error: '%laneid.x': %laneid has no components"),
    ("ld.global.v8.u32 {%r1, %r1, %r1, %r1, %r1, %r1, %r1, %r1}, [%rd1];",
     "9:5: error: a 32-byte access per thread (256-bit load/store) needs sm_100"),
])
def test_special_register_components_and_256_bit_accesses_are_checked_with_their_line(line, message):
    with pytest.raises(PTXSemanticError) as info:
        emulator.load(SPECIAL_KERNEL.format(line=line)).kernel("k").launch(1, 1, [np.zeros(8, np.uint32)])
    assert str(info.value).startswith(f"<ptx>:{message}")


def test_a_register_declared_twice_in_one_block_is_refused_at_its_declaration():
    text = ROOT_PTX_HEADER + ".visible .entry k()\n{\n.reg .u32 %r<4>;\n.reg .u32 %r<4>;\nret;\n}\n"
    with pytest.raises(PTXSemanticError, match=r"^<ptx>:7:\d+: error: duplicate definition of register %r<>$"):
        emulator.load(text).kernel("k").launch(1, 1, [])

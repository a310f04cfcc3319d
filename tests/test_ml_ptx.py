"""What ML compilers emit: tinygrad-style PTX through the GPUOcelot-compatible ptx_run, cp.async, ldmatrix, mma.sync."""
import ctypes
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator import ocelot
from emulator.errors import DeviceError, UsageError

ROOT = Path(__file__).resolve().parents[1]
TINYGRAD = (ROOT / "examples" / "tinygrad" / "tinygrad_style.ptx").read_text()


def kernel_source(name: str) -> str:
    """One entry of tinygrad_style.ptx, as tinygrad hands ptx_run a single-kernel source."""
    header, _, rest = TINYGRAD.partition(".visible .entry")
    for chunk in rest.split(".visible .entry"):
        if chunk.strip().startswith(name + "("):
            return header + ".visible .entry" + chunk
    raise KeyError(name)


def test_ptx_run_elementwise_over_ctypes_host_buffers():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    host_a = (ctypes.c_float * 64)(*a)
    host_b = (ctypes.c_float * 64)(*b)
    host_out = (ctypes.c_float * 64)()
    status = ocelot.ptx_run(kernel_source("E_16_4").encode(), 3, [host_out, host_a, host_b], 4, 1, 1, 16, 1, 1, 0)
    got = np.frombuffer(host_out, dtype=np.float32)
    assert status == 0 and np.array_equal(got, np.maximum(a * np.float32(2) + b, np.float32(0)))


def test_ptx_run_takes_raw_pointers_announced_by_the_allocator():
    values = np.arange(32 * 64, dtype=np.float32)
    host_in = ctypes.create_string_buffer(values.tobytes(), values.nbytes)
    host_out = ctypes.create_string_buffer(32 * 4)
    pointers = [ctypes.cast(host_out, ctypes.c_void_p), ctypes.cast(host_in, ctypes.c_void_p)]
    ocelot.register_buffer(pointers[0], 32 * 4)
    ocelot.register_buffer(pointers[1], values.nbytes)
    try:
        ocelot.ptx_run(kernel_source("r_32_16"), 3, pointers + [ctypes.c_int(64)], 16, 1, 1, 32, 1, 1, 0)
    finally:
        ocelot.unregister_buffer(pointers[0])
        ocelot.unregister_buffer(pointers[1])
    got = np.frombuffer(host_out.raw, dtype=np.float32)
    assert np.array_equal(got, values.reshape(32, 64).sum(axis=1, dtype=np.float64).astype(np.float32))


def test_ptx_run_stray_raw_pointer_is_a_fault_report():
    stray = ocelot.process_mappings()[0].start - (1 << 20)
    with pytest.raises(DeviceError) as info:
        ocelot.ptx_run(kernel_source("E_16_4"), 3, [ctypes.c_void_p(stray)] * 3, 4, 1, 1, 1, 1, 1, 0)
    assert f"{stray:#x}" in info.value.report and "E_16_4" in info.value.summary


def mma_fragments(a: np.ndarray, b: np.ndarray):
    """The PTX ISA's m16n8k16 .f16 fragment layout, per lane: A 8 halves, B 4 halves; C/D 4 floats."""
    frag_a = np.zeros((32, 8), np.float16)
    frag_b = np.zeros((32, 4), np.float16)
    for lane in range(32):
        group, tid = lane // 4, lane % 4
        for i in range(8):
            row = group + 8 * ((i // 2) % 2)
            col = tid * 2 + (i % 2) + 8 * (i // 4)
            frag_a[lane, i] = a[row, col]
        for i in range(4):
            frag_b[lane, i] = b[tid * 2 + (i % 2) + 8 * (i // 2), group]
    return frag_a, frag_b


def test_mma_sync_m16n8k16_follows_the_isa_fragment_layout():
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, (16, 16)).astype(np.float16)
    b = rng.integers(-8, 8, (16, 8)).astype(np.float16)
    frag_a, frag_b = mma_fragments(a, b)
    out = np.zeros((32, 4), np.float32)
    module = emulator.load(TINYGRAD)
    module.kernel("wmma_16_8_16").launch(1, 32, [out, frag_a.view(np.uint16), frag_b.view(np.uint16)])
    d = a.astype(np.float64) @ b.astype(np.float64)
    for lane in range(32):
        group, tid = lane // 4, lane % 4
        want = [d[group, tid * 2], d[group, tid * 2 + 1], d[group + 8, tid * 2], d[group + 8, tid * 2 + 1]]
        assert list(out[lane]) == want


CP_ASYNC = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry stale(.param .u64 src, .param .u64 before, .param .u64 after)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[512];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, buf;
    add.u32 %r3, %r3, %r2;
    mov.u32 %r4, 7;
    st.shared.u32 [%r3], %r4;
    ld.param.u64 %rd1, [src];
    cvt.u64.u32 %rd2, %r2;
    add.s64 %rd3, %rd1, %rd2;
    cp.async.ca.shared.global [%r3], [%rd3], 4;
    cp.async.commit_group;
    ld.shared.u32 %r5, [%r3];
    ld.param.u64 %rd4, [before];
    add.s64 %rd5, %rd4, %rd2;
    st.global.u32 [%rd5], %r5;
    cp.async.wait_group 0;
    ld.shared.u32 %r5, [%r3];
    ld.param.u64 %rd6, [after];
    add.s64 %rd7, %rd6, %rd2;
    st.global.u32 [%rd7], %r5;
    ret;
}
"""


def test_cp_async_lands_only_at_the_wait_so_an_early_read_sees_stale_shared_memory():
    source = np.arange(100, 132, dtype=np.uint32)
    before, after = np.zeros(32, np.uint32), np.zeros(32, np.uint32)
    emulator.load(CP_ASYNC).kernel("stale").launch(1, 32, [source, before, after])
    assert (before == 7).all() and np.array_equal(after, source)


def test_cp_async_zero_fills_past_the_source_size_without_reading_it():
    text = CP_ASYNC.replace("cp.async.ca.shared.global [%r3], [%rd3], 4;",
                            "cp.async.ca.shared.global [%r3], [%rd3], 4, 0;")
    text = text.replace("add.s64 %rd3, %rd1, %rd2;", "add.s64 %rd3, %rd1, 1099511627776;")
    before, after = np.zeros(32, np.uint32), np.zeros(32, np.uint32)
    emulator.load(text).kernel("stale").launch(1, 32, [np.zeros(32, np.uint32), before, after])
    assert (before == 7).all() and (after == 0).all()


def test_triton_kernel_compiled_without_a_gpu_runs_with_tritons_launch_convention():
    triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton to run this)")
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from emulator import triton as gpuemu_triton

    @triton.jit
    def scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, 3.0 * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    source = triton.compiler.ASTSource(fn=scale_add, signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                                "out_ptr": "*fp32", "n": "i32"},
                                       constexprs={"BLOCK": 256})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = np.zeros(1000, np.float32)
    gpuemu_triton.launch(compiled, (4,), [x, y, out, np.int32(1000)])
    fused = (3.0 * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    assert np.array_equal(out, fused)


LDST_MATRIX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry roundtrip(.param .u64 src, .param .u64 frags, .param .u64 dst, .param .u32 trans)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p1;
    .shared .align 16 .b8 in_tile[512];
    .shared .align 16 .b8 out_tile[512];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 4;
    ld.param.u64 %rd1, [src];
    cvt.u64.u32 %rd2, %r2;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.v4.u32 {%r3, %r4, %r5, %r6}, [%rd3];
    mov.u32 %r7, in_tile;
    add.u32 %r8, %r7, %r2;
    st.shared.v4.u32 [%r8], {%r3, %r4, %r5, %r6};
    bar.sync 0;
    ld.param.u32 %r9, [trans];
    setp.ne.u32 %p1, %r9, 0;
    @%p1 bra TRANSPOSED;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r8];
    bra STORE;
TRANSPOSED:
    ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r10, %r11, %r12, %r13}, [%r8];
STORE:
    ld.param.u64 %rd4, [frags];
    add.s64 %rd5, %rd4, %rd2;
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
    mov.u32 %r14, out_tile;
    add.u32 %r15, %r14, %r2;
    stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r15], {%r10, %r11, %r12, %r13};
    bar.sync 0;
    ld.shared.v4.u32 {%r3, %r4, %r5, %r6}, [%r15];
    ld.param.u64 %rd6, [dst];
    add.s64 %rd7, %rd6, %rd2;
    st.global.v4.u32 [%rd7], {%r3, %r4, %r5, %r6};
    ret;
}
"""


@pytest.mark.parametrize("transpose", [False, True])
def test_ldmatrix_hands_each_lane_its_isa_fragment_and_stmatrix_writes_it_back(transpose):
    rows = np.arange(32 * 8, dtype=np.uint16)
    frags = np.zeros(32 * 8, np.uint16)
    back = np.zeros(32 * 8, np.uint16)
    emulator.load(LDST_MATRIX).kernel("roundtrip").launch(1, 32, [rows, frags, back, np.uint32(transpose)])
    matrices = rows.reshape(4, 8, 8)
    got = frags.reshape(32, 4, 2)
    for lane in range(32):
        for m in range(4):
            r, c = lane // 4, 2 * (lane % 4)
            want = (matrices[m, c, r], matrices[m, c + 1, r]) if transpose else (matrices[m, r, c], matrices[m, r, c + 1])
            assert tuple(got[lane, m]) == want
    expected_back = np.stack([m.T for m in matrices]).reshape(-1) if transpose else rows
    assert np.array_equal(back, expected_back)


MBARRIER_TX_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b64 %rd<4>;
.reg .b32 %r<6>;
.reg .pred %p<4>;
.shared .align 8 .b64 bar;
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r1, bar;
mbarrier.init.shared.b64 [%r1], 1;
mbarrier.arrive.expect_tx.shared.b64 %rd2, [%r1], 16;
mbarrier.test_wait.shared.b64 %p1, [%r1], %rd2;
mbarrier.complete_tx.shared.b64 [%r1], 8;
mbarrier.test_wait.shared.b64 %p2, [%r1], %rd2;
mbarrier.complete_tx.shared.b64 [%r1], 8;
mbarrier.test_wait.shared.b64 %p3, [%r1], %rd2;
selp.u32 %r2, 1, 0, %p1;
selp.u32 %r3, 1, 0, %p2;
selp.u32 %r4, 1, 0, %p3;
st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r2};
ret;
}
"""


def test_mbarrier_arrive_expect_tx_holds_the_phase_until_every_byte_completes():
    # PTX ISA: arrive.expect_tx raises the tx-count by 16 before its arrival, so the phase completes
    # only when complete_tx has brought the tx-count back to zero (the H100 agrees: 0 before)
    out = np.zeros(4, np.uint32)
    emulator.load(MBARRIER_TX_PTX).kernel("k").launch(1, 1, [out])
    assert out[:3].tolist() == [0, 0, 1]


BIG_SHARED_PTX = """.version 8.0
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
.visible .entry big_shared(.param .u64 out, .param .u64 scratch, .param .u64 profile)
{
.reg .b32 %r<4>;
.reg .b64 %rd<3>;
mov.u32 %r1, global_smem;
add.u32 %r2, %r1, 65000;
st.shared.u32 [%r2], 7;
ld.shared.u32 %r3, [%r2];
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd2, %rd1;
st.global.u32 [%rd2], %r3;
ret;
}
"""


def test_triton_launch_opts_in_to_the_dynamic_shared_memory_its_metadata_asks_for():
    # Triton's own launcher raises cudaFuncAttributeMaxDynamicSharedMemorySize above 48 KB
    from types import SimpleNamespace
    from emulator import triton as gpuemu_triton
    compiled = SimpleNamespace(asm={"ptx": BIG_SHARED_PTX},
                               metadata=SimpleNamespace(name="big_shared", num_warps=1, shared=65536))
    out = np.zeros(1, np.uint32)
    gpuemu_triton.launch(compiled, (1,), [out])
    assert out[0] == 7


SCRATCH_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry through_scratch(.param .u64 out, .param .u64 scratch, .param .u64 profile)
{
.reg .b32 %r<3>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
ld.param.u64 %rd2, [scratch];
ld.param.u64 %rd3, [profile];
mov.u32 %r1, 11;
st.global.u32 [%rd2], %r1;
st.global.u32 [%rd3], %r1;
ld.global.u32 %r2, [%rd2];
st.global.u32 [%rd1], %r2;
ret;
}
"""


def test_triton_launch_frees_its_scratch_buffers_after_each_launch_and_after_a_failure():
    from types import SimpleNamespace
    from emulator import triton as gpuemu_triton
    from emulator.runtime.module import Device
    compiled = SimpleNamespace(asm={"ptx": SCRATCH_PTX},
                               metadata=SimpleNamespace(name="through_scratch", num_warps=1, shared=0,
                                                        global_scratch_size=64, global_scratch_align=16,
                                                        profile_scratch_size=64, profile_scratch_align=16))
    device = Device()
    out = np.zeros(1, np.uint32)
    for _ in range(20):
        gpuemu_triton.launch(compiled, (1,), [out], device=device)
    with pytest.raises(UsageError):
        gpuemu_triton.launch(compiled, (1,), [None], device=device)
    live = [a for a in device.memory.allocations() if a.name == "triton scratch" and not a.freed]
    assert out[0] == 11 and live == []


SCALE_PTX = (Path(__file__).parent / "kernels" / "scale.ptx").read_text()


def read_only_array(values: np.ndarray) -> np.ndarray:
    values = values.copy()
    values.flags.writeable = False
    return values


@pytest.mark.parametrize("make_input", [read_only_array, lambda v: memoryview(v.tobytes()), lambda v: v.tobytes()],
                         ids=["read-only-array", "memoryview-of-bytes", "bytes"])
def test_ptx_run_reads_read_only_inputs_and_leaves_them_unwritten(make_input):
    values = np.arange(8, dtype=np.float32)
    host_in = make_input(values)
    out = np.zeros(8, np.float32)
    ocelot.ptx_run(SCALE_PTX, 3, [out, host_in, 8], 32, 1, 1, 1, 1, 1, 0)
    assert np.array_equal(out, 2 * values)
    assert np.array_equal(np.frombuffer(host_in, dtype=np.float32), values)


def test_ptx_run_buffer_passed_twice_is_one_device_buffer():
    host = (ctypes.c_float * 8)(*range(8))
    ocelot.ptx_run(SCALE_PTX, 3, [host, host, 8], 32, 1, 1, 1, 1, 1, 0)
    assert np.array_equal(np.frombuffer(host, dtype=np.float32), 2 * np.arange(8, dtype=np.float32))


def test_ptx_run_writes_a_non_contiguous_numpy_output_back_in_its_layout():
    out = np.zeros(16, np.float32)[::2]
    ocelot.ptx_run(SCALE_PTX, 3, [out, np.arange(8, dtype=np.float32), 8], 32, 1, 1, 1, 1, 1, 0)
    assert np.array_equal(out, 2 * np.arange(8, dtype=np.float32))


def test_ptx_run_refuses_a_source_that_is_not_utf8_in_one_line():
    with pytest.raises(UsageError) as info:
        ocelot.ptx_run(b"\xff" + SCALE_PTX.encode(), 3, [np.zeros(8, np.float32)] * 2 + [8], 32, 1, 1, 1, 1, 1, 0)
    assert "not UTF-8" in str(info.value) and "\n" not in str(info.value)

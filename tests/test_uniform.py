"""Launch-uniform registers: found only where every thread computes the same value once, and read as scalars safely."""
import numpy as np

import emulator
from emulator.ir.uniform import uniform_registers

PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ntid.x;
    mul.lo.s32 %r3, %r1, %r2;
    mov.u32 %r4, %tid.x;
    add.s32 %r5, %r3, 7;
    setp.eq.s32 %p1, %r4, 0;
    @%p1 add.s32 %r6, %r3, 1;
    add.s32 %r7, %r3, 2;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    setp.lt.u32 %p2, %r4, 3;
    @%p2 bra SKIP;
    add.s32 %r7, %r7, %r4;
SKIP:
    st.global.u32 [%rd4+128], %r7;
    ret;
}
"""


def names(program, indices):
    return sorted(program.registers[i].name for i in indices)


def test_prologue_registers_computed_from_params_and_ntid_are_uniform_and_the_rest_are_not():
    program = emulator.load(PTX).kernel("k").program
    uniform = names(program, uniform_registers(program))
    assert uniform == ["%r1", "%r2", "%r3", "%r5", "%rd1", "%rd2"]


def test_reading_uniform_registers_as_scalars_gives_the_per_thread_results():
    out = np.zeros(64, np.uint32)
    emulator.load(PTX).kernel("k").launch(1, 32, [out, np.uint32(5)])
    tid = np.arange(32)
    assert (out[:32] == 5 * 32 + 7).all()
    assert np.array_equal(out[32:], np.where(tid < 3, 5 * 32 + 2, 5 * 32 + 2 + tid))


TWICE = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 data, .param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    .shared .align 4 .b32 sh[64];
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [out];
    mov.u32 %r2, 3;
    add.u32 %r8, %r3, 1;
    mov.u32 %r3, 5;
    mov.u32 %r7, 2;
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd4, %r0, 4;
    add.s64 %rd3, %rd2, %rd4;
    mov.u32 %r9, sh;
    atom.shared.add.u32 %r6, [%r9], 1;
    xor.b32 %r4, %r2, %r7;
    xor.b32 %r7, %r4, 27;
    and.b32 %r9, %r7, 255;
    add.u32 %r9, %r9, %r8;
    mul.wide.u32 %rd4, %r9, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.u32 %r4, [%rd5];
    st.global.u32 [%rd3], %r4;
    ret;
}
"""


def test_a_register_the_prologue_writes_twice_or_reads_first_is_not_uniform():
    program = emulator.load(TWICE).kernel("k").program
    assert names(program, uniform_registers(program)) == ["%r2", "%rd1", "%rd2"]


def test_warps_that_run_ahead_under_a_random_schedule_do_not_change_what_the_others_read():
    """%r7 is 2 until each thread's own second write makes it 26, and %r3 is 0 when %r8 reads it: a warp that ran
    ahead used to leave its later values in the scalar the others read (found by an audit, seeds 1, 2 and 6)."""
    from emulator.machine.policies import make_policy
    data = np.arange(256, dtype=np.uint32) * 100
    for seed in range(8):
        for engine in ("interpreter", "compiled"):
            out = np.zeros(128, np.uint32)
            emulator.load(TWICE).kernel("k").launch(1, 128, [data, out], engine=engine,
                                                    policy=make_policy("random", seed))
            assert (out == data[(1 ^ 27) + 1]).all(), (seed, engine)

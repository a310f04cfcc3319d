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

"""`array[imm]` operands, as ptxas takes them: the address of an element in mov/cvta, the element itself in ld/st.

The expected offsets are what ptxas 13.0 compiles these forms to on sm_90 (read off its SASS with cuobjdump):
`mov.u64 %rd, w[3]` for `.b32 w[16]` is w + 12, `.b32 m[4][4]` indexed m[1] is m + 4, a `.v2 .u32` array's v[1]
is v + 4 (the scalar type's size), w[-1] is w - 4, `ld.shared.u32 %r, w[2]` loads [w + 8] and
`st.shared.u32 w[5], %r` stores to [w + 20]; ptxas refuses indexing a variable that is not an array.
"""
import numpy as np
import pytest

import emulator
from emulator.errors import GpuemuError, PTXSyntaxError
from emulator.frontend.ptx import syntax as S
from emulator.frontend.ptx.parse import parse

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"

KERNEL = HEADER + """
.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<12>;
  .reg .b32 %r<8>;
  .shared .align 16 .b32 w[16];
  .shared .align 16 .b32 m[4][4];
  .shared .align 16 .v2 .u32 v[4];
  .shared .align 16 .b8 local0[64];
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, w;
  mov.u64 %rd3, w[3];
  sub.u64 %rd4, %rd3, %rd2;
  st.global.u64 [%rd1], %rd4;
  mov.u64 %rd5, m[1];
  mov.u64 %rd6, m;
  sub.u64 %rd4, %rd5, %rd6;
  st.global.u64 [%rd1+8], %rd4;
  mov.u64 %rd5, v[1];
  mov.u64 %rd6, v;
  sub.u64 %rd4, %rd5, %rd6;
  st.global.u64 [%rd1+16], %rd4;
  mov.u64 %rd5, w[-1];
  sub.u64 %rd4, %rd5, %rd2;
  st.global.u64 [%rd1+24], %rd4;
  mov.u32 %r1, 1234;
  st.shared.u32 [%rd2+8], %r1;
  ld.shared.u32 %r2, w[2];
  st.global.u32 [%rd1+32], %r2;
  mov.u32 %r3, 5678;
  st.shared.u32 w[5], %r3;
  ld.shared.u32 %r4, [%rd2+20];
  st.global.u32 [%rd1+36], %r4;
  mov.u64 %rd7, local0[0];
  mov.u64 %rd8, local0;
  sub.u64 %rd4, %rd7, %rd8;
  st.global.u64 [%rd1+40], %rd4;
  ret;
}
"""


def test_array_index_operands_parse_as_name_and_index():
    module = parse(HEADER + ".visible .entry k()\n{\n.reg .b64 %rd<2>;\n.shared .b8 local0[8];\n"
                   "mov.u64 %rd1, local0[0];\nmov.u64 %rd1, local0[-3];\n}\n", "t.ptx")
    movs = [s for s in module.functions[0].body.statements if isinstance(s, S.Instruction)]
    assert [m.operands[1] for m in movs] == [S.SymIndex("local0", 0), S.SymIndex("local0", -3)]


def test_array_index_is_scaled_by_the_element_type_as_ptxas_does():
    out = np.zeros(6, dtype=np.uint64)
    emulator.load(KERNEL).kernel("k").launch((1, 1, 1), (1, 1, 1), [out])
    offsets = out.view(np.int64)
    assert offsets[0] == 12 and offsets[1] == 4 and offsets[2] == 4 and offsets[3] == -4
    assert out.view(np.uint32)[8:10].tolist() == [1234, 5678]
    assert offsets[5] == 0


def test_indexing_a_scalar_variable_is_refused_like_ptxas():
    text = HEADER + ".visible .entry k()\n{\n.reg .b64 %rd<2>;\n.shared .b32 s;\nmov.u64 %rd1, s[0];\n}\n"
    with pytest.raises(GpuemuError, match="not an array"):
        emulator.load(text).kernel("k")


def test_index_inside_brackets_stays_a_syntax_error_like_ptxas():
    text = HEADER + ".visible .entry k()\n{\n.reg .b32 %r<2>;\n.shared .b32 w[4];\nld.shared.u32 %r1, [w[1]];\n}\n"
    with pytest.raises(PTXSyntaxError):
        parse(text, "bracket.ptx")

"""PTX that once ended in a Python traceback: each is now a file:line:col error (PTX ptxas refuses) or runs as the
PTX ISA says (PTX ptxas accepts); the debugger's exit status after an internal error."""
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emulator.api import load
from emulator.cli import build_parser
from emulator.cli.debug import command_debug
from emulator.debug.commands import Session
from emulator.errors import DeviceError, GpuemuError, PTXSyntaxError

ROOT = Path(__file__).resolve().parents[1]
HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .u32 %r<4>;
\t.reg .u16 %rs<4>;
\t.reg .u64 %rd<6>;
\t.reg .pred %p<2>;
\tld.param.u64 %rd1, [out];
"""
#: the issue's cases that ptxas refuses (checked with ptxas 13.0 -arch=sm_90), the line the error names, and
#: words of the message
REFUSED = {
    "huge_register_name": ("\tmov.u32 %r" + "9" * 4301 + ", 1;\n\tret;\n}", 11, "undeclared register"),
    "cvt_b64": ("\tcvt.b64.u64 %rd2, %rd1;\n\tret;\n}", 11, ".b64 is not one"),
    "cvt_f16x2_from_u32": ("\tcvt.f16x2.u32 %r1, %r2;\n\tret;\n}", 11, "cvt.f16x2.u32 is not defined"),
    "float_constant_for_u16": ("\tmov.u16 %rs1, 1e308;\n\tret;\n}", 11, "floating-point constant"),
    "overflowing_constant": ("\tmad.wide.s32 %rd2, %r1, 1e400, %rd1;\n\tret;\n}", 11, "floating-point constant"),
    "bmsk_without_mode": ("\tmov.u32 %r1, 3;\n\tbmsk.b32 %r2, %r1, 512;\n\tret;\n}", 12, "needs one of .clamp .wrap"),
    "setp_without_comparison": ("\tsetp.b32 %r2, 1, 0, %p1;\n\tret;\n}", 11, "'setp' needs one of .eq"),
    "setp_without_boolop_takes_two_sources": ("\tsetp.eq.u32 %p1, %r1, %r2, %p1;\n\tret;\n}", 11, "takes 3 operands"),
    "alignment_not_a_power_of_two": ("\t.local .align 4294967297 .b8 x[4];\n\tret;\n}", 11, "not a power of two"),
    "add_writes_no_predicate_pair": ("\tadd.u32 %r1|%p1, %r1, %r2;\n\tret;\n}", 11, "not a predicate pair"),
    "float_to_int_without_rounding": ("\tcvt.s32.f64 %r1, 0d3FF0000000000000;\n\tret;\n}", 11, "integer rounding"),
    "huge_array_dimension": ("\t.local .b8 x[" + "9" * 5000 + "];\n\tret;\n}", 11, "too many digits"),
}
ONE_LINE = re.compile(r"^<ptx>:(\d+):(\d+): error: [^\n]+$")

#: special registers are read-only (PTX ISA, "Special Registers"); ptxas refuses each of these writes
SPECIAL_REGISTER_WRITES = {
    "mov": ("mov.u32 %laneid, 3;", "%laneid"),
    "add": ("add.u32 %tid.x, %r1, 1;", "%tid.x"),
    "ld": ("ld.global.u32 %nctaid.y, [%rd1];", "%nctaid.y"),
    "ld_vector": ("ld.global.v2.u32 {%r1, %warpid}, [%rd1];", "%warpid"),
    "cvt": ("cvt.u32.u64 %smid, %rd1;", "%smid"),
    "setp_pair": ("setp.eq.u32 %p1|%laneid, %r1, 0;", "%laneid"),
    "atom": ("atom.global.add.u32 %laneid, [%rd1], 1;", "%laneid"),
    "mov_u64": ("mov.u64 %globaltimer, 1;", "%globaltimer"),
}


@pytest.mark.parametrize("case", sorted(SPECIAL_REGISTER_WRITES))
def test_a_special_register_as_a_destination_is_a_file_line_col_error_naming_it(case):
    line, register = SPECIAL_REGISTER_WRITES[case]
    with pytest.raises(PTXSyntaxError) as caught:
        load(HEAD + "\t" + line + "\n\tret;\n}\n").kernel("k").launch(1, 32, [np.zeros(4, np.uint32)])
    assert type(caught.value).__name__ == "PTXSemanticError"
    assert str(caught.value) == f"<ptx>:11:2: error: {register} is a special register and cannot be written"
    assert caught.value.exit_status == 2


def test_cli_refuses_a_write_to_a_special_register_with_the_ptx_exit_status(tmp_path):
    source = tmp_path / "k.ptx"
    source.write_text(HEAD + "\tmov.u32 %laneid, 3;\n\tret;\n}\n")
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(source), "--grid", "1", "--block", "32",
                             "--arg", "zeros:u32:4"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{source}:11:2: error: %laneid is a special register and cannot be written" in result.stderr


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_ptx_ptxas_refuses_is_a_file_line_col_error(case):
    body, line, words = REFUSED[case]
    with pytest.raises(PTXSyntaxError) as caught:
        load(HEAD + body + "\n").kernel("k").launch(1, 32, [np.zeros(4, np.uint32)])
    message = str(caught.value)
    assert ONE_LINE.match(message) and int(ONE_LINE.match(message).group(1)) == line, message
    assert words in message and len(message) < 400 and caught.value.exit_status == 2


def test_a_label_at_the_end_of_a_body_ends_the_thread():
    body = ("\tmov.u32 %r1, 41;\n\tst.global.u32 [%rd1], %r1;\n\tsetp.eq.u32 %p1, %r1, 41;\n\t@%p1 bra DONE;\n"
            "\tst.global.u32 [%rd1], %r2;\nDONE:\n}")
    out = np.zeros(4, np.uint32)
    load(HEAD + body + "\n").kernel("k").launch(1, 32, [out])
    assert out[0] == 41


def test_a_guarded_branch_last_in_a_body_falls_through_to_the_end():
    body = ("\tmov.u32 %r1, 7;\n\tst.global.u32 [%rd1], %r1;\nAGAIN:\n\tsetp.eq.u32 %p1, %r1, 0;\n"
            "\t@%p1 bra AGAIN;\n}")
    out = np.zeros(4, np.uint32)
    load(HEAD + body + "\n").kernel("k").launch(1, 32, [out])
    assert out[0] == 7


def test_a_lone_surrogate_in_python_text_is_a_syntax_error_at_its_place():
    with pytest.raises(PTXSyntaxError, match=r"^<ptx>:11:21: error: character U\+D800 is a lone surrogate"):
        load(HEAD + "\tmov.u32 %r1, 1; // \ud800\n\tret;\n}\n")


@pytest.mark.parametrize("callee", ["vprintf", "__assertfail"])
def test_a_null_format_pointer_ends_in_a_one_line_device_error(callee):
    declarations = (".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);\n"
                    ".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn, "
                    ".param .b64 s);\n")
    if callee == "vprintf":
        call = ("\t{\n\t.param .b64 f; st.param.b64 [f], 0;\n\t.param .b64 a; st.param.b64 [a], 0;\n"
                "\t.param .b32 r;\n\tcall.uni (r), vprintf, (f, a);\n\t}\n\tret;\n}")
    else:
        call = ("\t{\n\t.param .b64 m; st.param.b64 [m], 0;\n\t.param .b64 f; st.param.b64 [f], 0;\n"
                "\t.param .b32 l; st.param.b32 [l], 0;\n\t.param .b64 n; st.param.b64 [n], 0;\n"
                "\t.param .b64 s; st.param.b64 [s], 1;\n\tcall.uni __assertfail, (m, f, l, n, s);\n\t}\n\tret;\n}")
    text = HEAD.replace(".visible", declarations + ".visible") + call + "\n"
    with pytest.raises(DeviceError) as caught:
        load(text).kernel("k").launch(1, 1, [np.zeros(4, np.uint32)])
    expected = "CUDA_ERROR_ILLEGAL_ADDRESS" if callee == "vprintf" else "CUDA_ERROR_ASSERT"
    assert caught.value.cuda_error == expected and "\n" not in str(caught.value)
    assert caught.value.exit_status == 4


def test_the_cli_reports_refused_ptx_in_one_line_with_status_2(tmp_path):
    body, line, words = REFUSED["bmsk_without_mode"]
    path = tmp_path / "k.ptx"
    path.write_text(HEAD + body + "\n")
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(path), "--grid", "1", "--block", "32",
                             "--arg", "zeros:u32:4"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"gpuemu: error: {path}:{line}:2: error: 'bmsk' needs one of "
                                                  f".clamp .wrap in 'bmsk.b32'"]


def test_debug_exits_non_zero_after_an_internal_error_even_without_batch(monkeypatch):
    def broken(self, argument, repeat):
        raise RuntimeError("a bug")
    monkeypatch.setattr(Session, "cmd_run", broken)
    options = build_parser().parse_args(["debug", str(ROOT / "tests" / "kernels" / "scale.ptx"), "--grid", "1",
                                         "--block", "32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:32",
                                         "--arg", "u32:32"])
    out = io.StringIO()
    status = command_debug(options, stdin=io.StringIO("run\nquit\n"), stdout=out, stderr=out)
    assert status == 1 and "internal error: RuntimeError: a bug" in out.getvalue()
    out = io.StringIO()
    monkeypatch.undo()
    status = command_debug(options, stdin=io.StringIO("run\nquit\n"), stdout=out, stderr=out)
    assert status == 0, out.getvalue()



FUZZED_HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
ATOM_ADD_B16 = FUZZED_HEADER + """.visible .entry k()
{
    .reg .b32 %r<3>;
    .shared .align 4 .b8 s[4];
    mov.u32 %r1, s;
    mov.u32 %r2, 1;
    atom.shared.add.b16 %r2, [%r1], %r2;
    ret;
}
"""
WMMA_NINE_DESTINATIONS = FUZZED_HEADER + """.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<22>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, 16;
    wmma.load.a.sync.aligned.row.m16n16k16.global.s8 {%r2, %r3}, [%rd1], %r1;
    wmma.load.b.sync.aligned.col.m16n16k16.global.s8 {%r4, %r5}, [%rd1], %r1;
    wmma.load.c.sync.aligned.row.m16n16k16.global.s32 {%r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13}, [%rd1], %r1;
    wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32.satfinite {%r14, %r14, %r15, %r16, %r17, %r18, %r19, %r20, %r21}, {%r2, %r3}, {%r4, %r5}, {%r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13};
    ret;
}
"""

WMMA_LOAD_SHORT_FRAGMENT = FUZZED_HEADER + """.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, 16;
    wmma.load.a.sync.aligned.row.m8n32k16.global.bf16 {%r3}, [%rd1], %r1;
    ret;
}
"""

MBARRIER_DOUBLE_COUNT = FUZZED_HEADER + """.visible .entry k()
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    .shared .align 8 .b64 bar;
    mov.u32 %r1, bar;
    mbarrier.init.shared.b64 [%r1], 32;
    mbarrier.arrive.expect_tx.shared.b64 %rd1, [%r1], 0d7FEFFFFFFFFFFFFF;
    ret;
}
"""

WMMA_LOAD_LONG_FRAGMENT = WMMA_LOAD_SHORT_FRAGMENT.replace(
    "%r<4>", "%r<6>").replace("m8n32k16.global.bf16 {%r3}", "m32n8k16.global.s8 {%r2, %r2, %r3, %r4, %r5}")

MMA_F16_RESULT_IN_FOUR_REGISTERS = FUZZED_HEADER + """.visible .entry k()
{
    .reg .f32 %f<9>;
    .reg .b32 %r<4>;
    mov.b32 %r1, 0;
    mov.b32 %r2, 0;
    mov.b32 %r3, 0;
    mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2}, {%r3}, {%f5,%f6,%f7,%f8};
    ret;
}
"""

MMA_F64_M16N8K8 = FUZZED_HEADER + """.visible .entry k()
{
    .reg .f64 %fd<15>;
    mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%fd1,%fd2,%fd3,%fd4}, {%fd5,%fd6,%fd7,%fd8}, {%fd9,%fd10}, {%fd11,%fd12,%fd13,%fd14};
    ret;
}
"""

MMA_M8N8K4_F16 = FUZZED_HEADER + """.visible .entry k()
{
    .reg .f32 %f<17>;
    .reg .b32 %r<5>;
    mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, {%r1,%r2}, {%r3,%r4}, {%f9,%f10,%f11,%f12,%f13,%f14,%f15,%f16};
    ret;
}
"""

PARAM_LOAD_FROM_A_FUNCTION = FUZZED_HEADER + """.func (.param .b32 r) f()
{
    st.param.b32 [r], 0;
    ret;
}
.visible .entry k()
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [f];
    ret;
}
"""

WMMA_BF16_FROM_S8 = WMMA_NINE_DESTINATIONS.replace(
    "s32.s8.s8.s32.satfinite {%r14, %r14,", "bf16.s8.s8.s32 {%r14,")

VPRINTF_WITHOUT_ARGUMENTS = FUZZED_HEADER + """.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;
.visible .entry k()
{
    .reg .b32 %r<2>;
    {
    .param .b32 retval0;
    call.uni (retval0), vprintf, ();
    }
    ret;
}
"""

SHFL_INTO_SPECIAL_REGISTER = FUZZED_HEADER + """.visible .entry k()
{
    .reg .b32 %r<4>;
    .reg .pred %p<2>;
    mov.u32 %r1, 1;
    shfl.sync.down.b32 %laneid|%p1, %r1, 1, 31, -1;
    ret;
}
"""


@pytest.mark.parametrize("text, line, message", [
    (ATOM_ADD_B16, 10, "atom.add is not defined for .b16"),
    (WMMA_BF16_FROM_S8, 13, "wmma.mma with .s8 inputs accumulates in .s32, not .bf16/.s32"),
    (VPRINTF_WITHOUT_ARGUMENTS, 15, "vprintf takes 2 arguments, not 0"),
    (SHFL_INTO_SPECIAL_REGISTER, 9, "%laneid is a special register and cannot be written"),
    (PARAM_LOAD_FROM_A_FUNCTION, 12, "'f' is a function: it has no .param address"),
    (WMMA_NINE_DESTINATIONS, 13, "the d fragment of wmma.mma .m16n16k16 .s32 takes 8 registers, not 9"),
    (WMMA_LOAD_SHORT_FRAGMENT, 10, "a wmma .m8n32k16 a fragment of .bf16 takes 2 registers, not 1"),
    (MBARRIER_DOUBLE_COUNT, 11, "malformed operands"),
    (WMMA_LOAD_LONG_FRAGMENT, 10, "a wmma .m32n8k16 a fragment of .s8 takes 4 registers, not 5"),
    (MMA_F16_RESULT_IN_FOUR_REGISTERS, 11, "the d fragment of mma.sync .m16n8k8 .f16 takes 2 registers, not 4"),
    (MMA_F64_M16N8K8, 7, "mma.sync m16n8k8 with .f64 inputs is not supported"),
    (MMA_M8N8K4_F16, 8, "mma.sync m8n8k4 with .f16 inputs is not supported"),
])
def test_fuzzer_found_operand_forms_are_errors_at_their_line(text, line, message):
    with pytest.raises(GpuemuError) as caught:
        load(text).kernel("k").launch(1, 32, [np.zeros(256, np.int32)] if "wmma" in text else [])
    assert f"<ptx>:{line}:" in str(caught.value) and message in str(caught.value)

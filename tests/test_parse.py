"""Parser: every construct nvcc 13 emits reads into the syntax tree, and bad PTX gets file:line:col errors."""
import pytest

from emulator.frontend.ptx import syntax as S
from emulator.errors import PTXSyntaxError
from emulator.frontend.ptx.parse import parse

HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"


def body(text):
    return parse(HEADER + ".visible .entry k(.param .u64 p)\n{\n" + text + "\n}\n", "t.ptx")


def statements(module):
    out = []

    def walk(block):
        for statement in block.statements:
            if isinstance(statement, S.Block):
                walk(statement)
            else:
                out.append(statement)
    walk(module.functions[0].body)
    return out


def test_modifiers_come_apart_in_any_order():
    (ins,) = [s for s in statements(body(".reg .b32 %r<2>;\nld.u32.global %r1, [p];")) if isinstance(s, S.Instruction)]
    assert ins.opcode == "ld" and ins.modifiers == ("u32", "global")


def test_register_ranges_and_lists_are_declared():
    decls = [s for s in statements(body(".reg .b32 %r<75>, %x;\n.reg .pred %p<3>;")) if isinstance(s, S.RegDecl)]
    assert decls[0].names == (("%r", 75), ("%x", None)) and decls[1].type == "pred"


def test_address_forms_keep_base_and_signed_offset():
    text = ".reg .b64 %rd<3>;\n.shared .b8 buf[16];\nld.global.u32 %rd1, [%rd2+-16];\nld.shared.u8 %rd1, [buf+4];\nld.global.u8 %rd1, [%rd2-8];"
    loads = [s for s in statements(body(text)) if isinstance(s, S.Instruction)]
    assert loads[0].operands[1] == S.Addr(S.Reg("%rd2"), -16)
    assert loads[1].operands[1] == S.Addr(S.Sym("buf"), 4)
    assert loads[2].operands[1] == S.Addr(S.Reg("%rd2"), -8)


def test_immediates_hex_float_double_and_negative():
    text = ".reg .f32 %f1;\n.reg .f64 %fd1;\n.reg .b32 %r1;\nmov.f32 %f1, 0f3F800000;\nmov.f64 %fd1, 0dBFF0000000000000;\nmov.b32 %r1, -0x10;"
    movs = [s for s in statements(body(text)) if isinstance(s, S.Instruction)]
    assert movs[0].operands[1] == S.Imm("f32", 0x3F800000)
    assert movs[1].operands[1] == S.Imm("f64", 0xBFF0000000000000)
    assert movs[2].operands[1] == S.Imm("int", -16)


def test_guards_vectors_pred_pairs_and_sinks():
    text = (".reg .pred %p<3>;\n.reg .b32 %r<5>;\n@!%p1 bra $L__BB0_2;\nmov.b64 {%r1, %r2}, %rd1;\n"
            "setp.lt.s32 %p1|%p2, %r1, %r2;\nshfl.sync.down.b32 %r1|_, %r2, 1, 31, -1;\n$L__BB0_2:\nret;")
    ins = [s for s in statements(body(text)) if isinstance(s, S.Instruction)]
    assert ins[0].guard == "%p1" and ins[0].guard_negated and ins[0].operands == (S.Sym("$L__BB0_2"),)
    assert ins[1].operands[0] == S.Vec((S.Reg("%r1"), S.Reg("%r2")))
    assert ins[2].operands[0] == S.PredPair("%p1", "%p2")


def test_call_sequence_with_nested_block_and_param_declarations():
    text = ("{ // callseq 0, 0\n.reg .b32 temp_param_reg;\n.param .b64 param0;\nst.param.b64 [param0+0], %rd1;\n"
            ".param .b32 retval0;\ncall.uni (retval0), \nvprintf, \n(\nparam0, \nparam1\n);\n} // callseq 0")
    ins = [s for s in statements(body(text)) if isinstance(s, S.Instruction)]
    call = ins[1]
    assert call.opcode == "call" and call.modifiers == ("uni",)
    assert call.operands == (S.CallList((S.Sym("retval0"),)), S.Sym("vprintf"),
                             S.CallList((S.Sym("param0"), S.Sym("param1"))))


def test_module_variables_with_initialisers_extern_and_generic():
    text = (HEADER + ".global .align 1 .b8 $str[3] = {104, 105};\n.const .align 4 .f32 c[2] = {0f3F800000, 0f40000000};\n"
            ".extern .shared .align 16 .b8 tile[];\n.global .align 8 .u64 ptrs[1] = {generic($str)};\n")
    module = parse(text, "v.ptx")
    names = {v.name: v for v in module.variables}
    assert names["$str"].init == [S.Imm("int", 104), S.Imm("int", 105)]
    assert names["tile"].dims == (None,) and "extern" in names["tile"].linkage
    assert names["ptrs"].init == [("generic", "$str", 0)]


def test_debug_sections_loc_and_file_are_read():
    text = (HEADER.replace("sm_90", "sm_90, debug") + ".visible .entry k()\n{\n.loc 1 5 3\nret;\n}\n"
            ".file 1 \"/tmp/k.cu\"\n.section .debug_info\n{\n.b32 723\n.b8 2,0\n.b32 .debug_abbrev\n.b64 $L__func_begin0\n}\n")
    module = parse(text, "d.ptx")
    assert module.target == ("sm_90", "debug") and module.files == ((1, "/tmp/k.cu"),)
    assert S.SourceLoc(1, 5, 3) in module.functions[0].body.statements


def test_entry_directives_and_triton_style_params():
    text = (HEADER + ".visible .entry add_kernel(\n.param .u64 .ptr .global .align 1 add_kernel_param_0,\n"
            ".param .u32 add_kernel_param_1\n)\n.reqntid 128, 1, 1\n.maxntid 128\n{\nret;\n}\n")
    fn = parse(text, "tr.ptx").functions[0]
    assert [p.name for p in fn.params] == ["add_kernel_param_0", "add_kernel_param_1"]
    assert ("reqntid", (128, 1, 1)) in fn.directives


@pytest.mark.parametrize("text, line, col, fragment", [
    ("add.s32 %r1, %r2 %r3;", 6, 18, "expected"),
    ("ld.global.f32 %f1, [%rd1;", 6, 25, "']'"),
    ("mov.u32 %r1, 1 +;", 6, 16, "unexpected"),
])
def test_syntax_errors_name_file_line_column_and_expectation(text, line, col, fragment):
    with pytest.raises(PTXSyntaxError) as info:
        body(text)
    message = str(info.value)
    assert message.startswith(f"t.ptx:{line}:") and "error:" in message and fragment in message
    assert "\n" not in message


def test_unterminated_function_is_an_error_at_end_of_file():
    with pytest.raises(PTXSyntaxError) as info:
        parse(HEADER + ".visible .entry k()\n{\nret;\n", "e.ptx")
    assert "end of file" in str(info.value)


def test_stray_character_is_reported_with_its_text():
    with pytest.raises(PTXSyntaxError) as info:
        body("add.s32 %r1, %r2, #3;")
    assert "'#'" in str(info.value) and "t.ptx:6:19:" in str(info.value)


@pytest.mark.parametrize("text, where, message", [
    (HEADER + ".visible .entry k()\n{\nret;\n}\n.visible .entry k()\n{\nret;\n}\n", "8:10",
     "duplicate definition of function 'k'"),
    (HEADER + ".visible .entry k()\n{\n.reg .u32 %r<2>;\nmov.u32 %r1, 99999999999999999999;\nret;\n}\n", "7:14",
     "constant 99999999999999999999 does not fit in 64 bits"),
    (".version 8.0\n.target sm_90\n.address_size 32\n.visible .entry k()\n{\nret;\n}\n", "3:1",
     ".address_size 32: gpuemu runs 64-bit PTX only"),
])
def test_ptx_that_ptxas_refuses_is_refused_at_its_line(text, where, message):
    with pytest.raises(PTXSyntaxError) as info:
        parse(text, "k.ptx")
    assert str(info.value) == f"k.ptx:{where}: error: {message}"


def test_a_constant_of_more_digits_than_python_converts_is_refused_at_its_token():
    text = HEADER + ".visible .entry k()\n{\n.reg .u32 %r<2>;\nmov.u32 %r1, " + "9" * 10000 + ";\nret;\n}\n"
    with pytest.raises(PTXSyntaxError, match=r"^k\.ptx:7:14: error: constant 9{20}\.\.\.\(10000 characters\) does"):
        parse(text, "k.ptx")


def test_a_byte_order_mark_before_the_ptx_is_skipped():
    module = parse("\ufeff" + HEADER + ".visible .entry k()\n{\nret;\n}\n", "k.ptx")
    assert [function.name for function in module.functions] == ["k"]

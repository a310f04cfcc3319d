"""Source-level debugging: C variables from `nvcc -G`'s DWARF, inlined calls from `.loc ... inlined_at`, and the
user's own line named first wherever gpuemu shows a line (stops, bt, info line, faults, --check, profile).

Kernel: tests/debugbuild/blocksum.cu, checked in as blocksum.G.ptx (nvcc -G) and blocksum.lineinfo.ptx (nvcc
-lineinfo -O3); expected values are computed here from the inputs with numpy."""
import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emulator.api import Device, Module
from emulator.errors import UsageError
from emulator.cli import build_parser
from emulator.cli.debug import command_debug
from emulator.frontend.ptx.parse import parse
from emulator.runtime.faults import source_text, where

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "tests" / "debugbuild"
LAUNCH = ["--kernel", "blocksum", "--grid", "1", "--block", "64", "--arg", "@tests/debugbuild/in.npy",
          "--arg", "zeros:f32:1", "--arg", "@tests/debugbuild/pts.npy", "--arg", "i32:64", "--batch"]
INPUT = np.load(BUILD / "in.npy")
POINTS = np.load(BUILD / "pts.npy")


def sum_of(thread):
    """blocksum's `sum` for a thread: square(v) + scaled(&pts[t % 4], 2), in float32 as the kernel computes it."""
    v = np.float32(INPUT[thread])
    point = POINTS[thread % 4]
    return np.float32(v * v) + np.float32(np.float32(point["x"]) * np.float32(2) + np.float32(point["y"]))


def debug(ptx, script, monkeypatch, *extra):
    monkeypatch.chdir(ROOT)
    options = build_parser().parse_args(["debug", str(ptx), *LAUNCH, *extra])
    out = io.StringIO()
    status = command_debug(options, stdin=io.StringIO(script), stdout=out, stderr=out)
    return status, out.getvalue()


def printed(transcript, number):
    return re.search(rf"^\${number} = (.*)$", transcript, re.M).group(1)


def test_c_locals_arguments_struct_fields_and_shared_arrays_by_c_and_ptx_name(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:28\nrun\ncuda thread (5,0,0)\n"
                        "print sum\nprint/x i\nprint p->x\nprint *p\nprint pts[3].y\nprint n\nprint tile[ty][tx]\n"
                        "ptype p\nwhatis tile\ninfo args\ninfo locals\n", monkeypatch)
    assert status == 0, out
    assert float(printed(out, 1)) == sum_of(5)
    assert printed(out, 2) == "0x5"
    assert float(printed(out, 3)) == POINTS[1]["x"]
    assert printed(out, 4) == f"{{x = {POINTS[1]['x']:g}, y = {POINTS[1]['y']}}}"
    assert printed(out, 5) == str(POINTS[3]["y"])
    assert printed(out, 6) == "64"
    assert printed(out, 7) == "0"      # tile is written on line 29, after this stop
    assert "type = const struct Point {\n    float x;\n    int y;\n} *" in out
    assert "type = @shared float [8][8]" in out
    assert re.search(r"^in = \(@generic const float \*\) 0x[0-9a-f]+$", out, re.M)
    assert re.search(r"^p = \(@generic const Point \*\) 0x[0-9a-f]+$", out, re.M)
    assert f"\nsum = {sum_of(5):g}\n" in out


def test_shared_array_element_by_c_name_and_ptx_name_after_the_barrier(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:33\nrun\nprint s[3]\n"
                        "print _ZZ8blocksumPKfPfPK5PointiE1s[3]\nprint tile[2][5]\nprint &s[3]\ninfo locals\n",
                        monkeypatch)
    assert status == 0, out
    assert float(printed(out, 1)) == float(printed(out, 2)) == sum_of(3)
    assert float(printed(out, 3)) == INPUT[2 * 8 + 5]
    assert printed(out, 4) == "(@shared float *) 0x40c"  # shared variables start after sm_90's reserved kilobyte
    assert "\nk = <optimized out>\n" in out          # k's location list starts after the loop's first pc
    assert "\ntotal = 0\n" in out


def test_a_ptx_only_build_names_function_scope_shared_arrays(monkeypatch):
    monkeypatch.chdir(ROOT)
    options = build_parser().parse_args(["debug", "examples/dot/dot.ptx", "--kernel", "dot", "--grid", "2", "--block",
                                         "256", "--arg", "@examples/dot/inputs/a.npy", "--arg",
                                         "@examples/dot/inputs/b.npy", "--arg", "zeros:f32:2", "--arg", "i32:8192",
                                         "--batch"])
    out = io.StringIO()
    command_debug(options, stdin=io.StringIO("start\nprint _ZZ3dotPfS_S_iE5cache\n"), stdout=out, stderr=out)
    assert "$1 = 1024\n" in out.getvalue(), out.getvalue()   # the first shared variable, after the reserved 1 KB


def test_watch_on_a_c_element_reports_its_writer_and_value(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:28\nrun\ndelete 1\nwatch s[3]\ncontinue\n",
                        monkeypatch)
    assert "Hardware watchpoint 2: s[3]" in out
    assert f"New value = {sum_of(3):g}" in out
    assert "Written by block (0,0,0) thread (3,0,0)" in out


def test_stepping_through_an_inlined_function_names_the_users_line_first_and_reverse_steps_back(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:8\nrun\nbt\nnext\nnext\nreverse-step\n"
                        "reverse-step\nprint $pc\n", monkeypatch)
    assert status == 0, out
    assert "blocksum.cu:25   float sum = square(v);\n  inlined: square at blocksum.cu:8   float r = v * v;" in out
    assert re.search(r"#0  square \(\) at blocksum.G.ptx:(\d+) \(blocksum.cu:8\) \[inlined\]\n"
                     r"#1  blocksum<<<\(1,1,1\),\(64,1,1\)>>> \(\) at blocksum.G.ptx:\1 \(blocksum.cu:25\)", out)
    stops = re.findall(r"^blocksum.G.ptx:(\d+)", out, re.M)
    start = re.search(r"Breakpoint 1, .* at blocksum.G.ptx:(\d+)", out).group(1)
    assert stops == [stops[0], stops[1], stops[0], start] and len({start, *stops}) == 3   # back to where it began
    assert "  inlined: square at blocksum.cu:9   return r;" in out


def test_header_code_inlined_by_nvcc_is_shown_at_the_users_line(monkeypatch):
    status, out = debug(BUILD / "blocksum.lineinfo.ptx", "break blocksum.cu:35\nrun\nbt\ninfo line\n", monkeypatch)
    assert status == 0, out
    assert "blocksum.cu:35   atomicAdd(out, total);\n  inlined: atomicAdd at sm_20_atomic_functions.hpp:84" in out
    assert "#0  atomicAdd () at" in out and "#1  blocksum<<<" in out
    assert "(blocksum.cu:35, inlined: atomicAdd at sm_20_atomic_functions.hpp:84) is at address" in out


NESTED = """.version 8.0
.target sm_90
.address_size 64
.visible .entry chain(.param .u64 x)
{
  .reg .f32 %f<4>;
  .reg .b64 %rd<2>;
  .loc 1 14 5
  ld.param.u64 %rd1, [x];
  ld.global.f32 %f1, [%rd1];
  .loc 1 8 5, function_name $L__info_string0, inlined_at 1 14 5
  .loc 1 3 5, function_name $L__info_string1, inlined_at 1 8 5
  mul.f32 %f2, %f1, %f1;
  .loc 1 9 5, function_name $L__info_string0, inlined_at 1 14 5
  add.f32 %f3, %f2, %f2;
  .loc 1 14 5
  st.global.f32 [%rd1], %f3;
  ret;
}
.file 1 "user.cu"
.file 2 "header.hpp"
.section .debug_str
{
$L__info_string0:
.b8 95,90,53,111,117,116,101,114,102,0
$L__info_string1:
.b8 95,90,53,105,110,110,101,114,102,0
}
"""


def test_nested_inlined_at_chains_are_followed_to_the_users_line():
    program = Module(NESTED, "nested.ptx", Device()).kernel("chain").program
    mul = next(instr for instr in program.instrs if instr.opcode.startswith("mul"))
    add = next(instr for instr in program.instrs if instr.opcode.startswith("add"))
    assert mul.source == ("user.cu", 3) and mul.user_source == ("user.cu", 14)
    assert [(frame.function, frame.call) for frame in mul.inlined] == [("_Z5innerf", ("user.cu", 8)),
                                                                        ("_Z5outerf", ("user.cu", 14))]
    assert source_text(mul) == "user.cu:14, inlined: outer at user.cu:8, inner at user.cu:3"
    assert source_text(add) == "user.cu:14, inlined: outer at user.cu:9"
    assert where(program, add) == "nested.ptx:15 (user.cu:14, inlined: outer at user.cu:9)"
    assert parse(NESTED).strings == (("$L__info_string0", "_Z5outerf"), ("$L__info_string1", "_Z5innerf"))


def test_profile_attributes_header_code_to_the_users_line(monkeypatch, capsys):
    from emulator.cli import main
    monkeypatch.chdir(ROOT)
    assert main(["profile", "tests/debugbuild/blocksum.lineinfo.ptx", *LAUNCH[:-1]]) == 0
    listing = capsys.readouterr().out
    assert "// blocksum.cu:35  atomicAdd(out, total);" in listing
    assert "sm_20_atomic_functions.hpp:84  " not in listing


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_a_fresh_nvcc_G_build_debugs_like_the_checked_in_one(tmp_path, monkeypatch):
    source = tmp_path / "blocksum.cu"
    shutil.copy(BUILD / "blocksum.cu", source)
    subprocess.run(["nvcc", "-G", "-ptx", "-arch=sm_90", str(source), "-o", str(tmp_path / "fresh.ptx")],
                   check=True, capture_output=True, timeout=120)
    status, out = debug(tmp_path / "fresh.ptx", "break blocksum.cu:33\nrun\nprint s[5]\nprint pts[2].x\n",
                        monkeypatch)
    assert status == 0, out
    assert float(printed(out, 1)) == sum_of(5)
    assert float(printed(out, 2)) == POINTS[2]["x"]


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


@needs_nvcc
def test_debugging_a_cu_file_compiles_it_with_G_so_c_locals_show(monkeypatch):
    status, out = debug(BUILD / "blocksum.cu", "break blocksum.cu:28\nrun\ncuda thread (5,0,0)\nprint sum\n"
                        "print p->y\ninfo locals\n", monkeypatch)
    assert status == 0, out
    assert float(printed(out, 1)) == sum_of(5)
    assert printed(out, 2) == str(POINTS[1]["y"])
    assert f"\nsum = {sum_of(5):g}\n" in out


@needs_nvcc
def test_no_G_debugs_a_cu_file_without_c_variables(monkeypatch):
    status, out = debug(BUILD / "blocksum.cu", "break blocksum.cu:28\nrun\ninfo locals\nprint sum\n", monkeypatch,
                        "--no-G")
    assert status == 1, out        # `print sum` fails: the -lineinfo build has no C variables
    assert "\nNo symbol table info available.\n" in out and 'No symbol "sum" in current context.' in out


@needs_nvcc
def test_compiler_options_reach_the_compiler_of_a_cu_file(tmp_path, monkeypatch):
    source = tmp_path / "scale.cu"
    source.write_text("__global__ void scale(float *out)\n{\n    float v = threadIdx.x * FACTOR;\n"
                      "    out[threadIdx.x] = v;\n}\n")
    monkeypatch.chdir(ROOT)
    options = build_parser().parse_args(["debug", str(source), "--grid", "1", "--block", "8", "--arg", "zeros:f32:8",
                                         "--batch", "--compiler-option=-DFACTOR=3.0f"])
    out = io.StringIO()
    status = command_debug(options, stdin=io.StringIO("break scale.cu:4\nrun\ncuda thread (5,0,0)\nprint v\n"),
                           stdout=out, stderr=out)
    assert status == 0, out.getvalue()
    assert float(printed(out.getvalue(), 1)) == 5 * 3.0


def test_compiler_options_for_a_ptx_file_are_refused(monkeypatch):
    with pytest.raises(UsageError, match="--compiler-option applies to a .cu file"):
        debug(BUILD / "blocksum.G.ptx", "", monkeypatch, "--compiler-option=-DN=1")


def test_info_locals_without_debug_information_says_so_as_gdb_does(monkeypatch):
    status, out = debug(BUILD / "blocksum.lineinfo.ptx", "break blocksum.cu:28\nrun\ninfo locals\n", monkeypatch)
    assert status == 0, out
    assert "\nNo symbol table info available.\n" in out and "Undefined info command" not in out


def test_watch_on_a_register_held_c_local_says_in_one_line_that_it_cannot(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:34\nrun\nwatch total\nwatch s[3]\n", monkeypatch)
    assert status == 1, out
    refusal = [line for line in out.splitlines() if "watch 'total'" in line]
    assert len(refusal) == 1 and "register" in refusal[0] and "Cannot access memory" not in out
    assert "Hardware watchpoint 2: s[3]" in out


def test_x_on_a_shared_pointer_or_array_keeps_the_shared_space(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:33\nrun\nx/4f &s[0]\nx/2f s\n"
                        "x/2f _ZZ8blocksumPKfPfPK5PointiE1s\n", monkeypatch)
    assert status == 0, out
    rows = re.findall(r"^@shared 0x400:\t(.*)$", out, re.M)
    assert len(rows) == 3 and "Cannot access memory" not in out
    assert [np.float32(text) for text in rows[0].split("\t")] == [sum_of(thread) for thread in range(4)]
    assert rows[1] == rows[2] == "\t".join(rows[0].split("\t")[:2])


def test_x_on_a_function_scope_shared_array_by_its_ptx_name_in_a_build_without_dwarf(monkeypatch):
    monkeypatch.chdir(ROOT)
    dot = ROOT / "examples" / "dot"
    options = build_parser().parse_args(["debug", str(dot / "dot.ptx"), "--grid", "1", "--block", "256",
                                         "--arg", f"@{dot}/inputs/a.npy", "--arg", f"@{dot}/inputs/b.npy",
                                         "--arg", "zeros:f32:1", "--arg", "i32:256", "--batch"])
    out = io.StringIO()
    status = command_debug(options, stdin=io.StringIO("break dot.cu:27\nrun\nx/2f _ZZ3dotPfS_S_iE5cache\n"),
                           stdout=out, stderr=out)
    assert status == 0, out.getvalue()
    row = re.search(r"^@shared 0x[0-9a-f]+( <[^>]*>)?:\t(.*)$", out.getvalue(), re.M)
    assert row is not None, out.getvalue()
    a, b = np.load(dot / "inputs" / "a.npy"), np.load(dot / "inputs" / "b.npy")
    assert [np.float32(text) for text in row.group(2).split("\t")] == [np.float32(a[0] * b[0]),
                                                                       np.float32(a[1] * b[1])]


def test_finish_from_an_inlined_function_returns_to_the_callers_line(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:8\nrun\ndelete\nfinish\nbt\n", monkeypatch)
    assert status == 0, out
    after = out.split("(gpuemu) finish\n")[1]
    assert after.startswith("Run till exit from #0  square () at blocksum.G.ptx:")
    assert "\nblocksum.cu:25   float sum = square(v);\n" in after
    frames = after.split("(gpuemu) bt\n")[1].splitlines()
    assert len(frames) == 1 and frames[0].startswith("#0  blocksum<<<") and frames[0].endswith("(blocksum.cu:25)")


def test_info_line_in_a_G_build_names_the_users_line_then_the_inlined_call(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:8\nrun\ninfo line\n", monkeypatch)
    assert status == 0, out
    assert re.search(r'^Line \d+ of "blocksum.G.ptx" \(blocksum.cu:25, inlined: square at blocksum.cu:8\) is at',
                     out, re.M), out


def test_info_args_in_an_inlined_frame_lists_only_the_inlined_functions_arguments(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:8 if %tid.x == 5\nrun\ninfo args\nup\n"
                        "info args\n", monkeypatch)
    assert status == 0, out
    inner, outer = out.split("(gpuemu) info args\n")[1:]
    assert inner.split("(gpuemu)")[0].splitlines() == [f"v = {INPUT[5]:g}"]
    assert [line.split(" = ")[0] for line in outer.split("(gpuemu)")[0].splitlines()] == ["in", "out", "pts", "n"]


def test_up_and_down_select_the_frame_that_print_and_info_locals_use(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:14 if %tid.x == 5\nrun\nprint k\nprint sum\n"
                        "up\nprint sum\nprint v\ninfo locals\ndown\nprint k\nup 5\nframe\n", monkeypatch)
    assert status == 1, out                                        # the two commands that fail, as gdb's batch
    assert printed(out, 1) == "2"
    assert 'No symbol "sum" in current context.' in out          # scaled's frame has no `sum`
    assert re.search(r"^#1  0x[0-9a-f]+ in blocksum<<<\(1,1,1\),\(64,1,1\)>>> \(\) at blocksum.G.ptx:\d+ "
                     r"\(blocksum.cu:27\)\nblocksum.cu:27   sum \+= scaled\(p, 2.0f\);$", out, re.M), out
    v = np.float32(INPUT[5])
    assert float(printed(out, 2)) == v * v                         # sum = square(v) before the += of line 27
    assert float(printed(out, 3)) == v
    assert re.search(r"^sum = ", out, re.M) and not re.search(r"^k = ", out, re.M)
    assert printed(out, 4) == "2"
    assert "Initial frame selected; you cannot go up." in out
    assert "(gpuemu) frame\n#0  scaled () at blocksum.G.ptx:" in out   # the failed `up 5` kept frame 0


def test_profile_json_gives_the_users_line_as_source_and_the_chain_as_inlined(monkeypatch, tmp_path):
    import json
    from emulator.cli import main
    monkeypatch.chdir(ROOT)
    report = tmp_path / "profile.json"
    assert main(["profile", "tests/debugbuild/blocksum.lineinfo.ptx", *LAUNCH[:-1], "--json", str(report)]) == 0
    lines = json.loads(report.read_text())["lines"].values()
    atomic = [entry for entry in lines if entry.get("global_atomic_requests")]
    assert len(atomic) == 1 and atomic[0]["source"].endswith("blocksum.cu:35"), atomic
    assert re.fullmatch(r"(.*/)?blocksum\.cu:35, inlined: atomicAdd at (.*/)?sm_20_atomic_functions\.hpp:84",
                        atomic[0]["inlined"]), atomic[0]["inlined"]
    own = [entry for entry in lines if entry.get("source", "").endswith("blocksum.cu:28")]
    assert own and all("inlined" not in entry for entry in own)


def test_info_locals_in_an_inlined_frame_lists_only_the_inlined_functions_locals(monkeypatch):
    status, out = debug(BUILD / "blocksum.G.ptx", "break blocksum.cu:8 if %tid.x == 5\nrun\ninfo locals\nup\n"
                        "info locals\n", monkeypatch)
    assert status == 0, out
    inner, outer = out.split("(gpuemu) info locals\n")[1:]
    inner_names = [line.split(" = ")[0] for line in inner.split("(gpuemu)")[0].splitlines()]
    outer_names = [line.split(" = ")[0] for line in outer.split("(gpuemu)")[0].splitlines()]
    assert "sum" not in inner_names and "v" not in inner_names   # the caller's sum and its v (square's argument)
    assert "sum" in outer_names


def test_dwarf_byte_directives_read_ptx_integer_literals():
    from emulator.observers.debugger.dwarf import DwarfSections
    sections = DwarfSections([".section .debug_abbrev", "{", ".b8 010,0x10,0b11,16,020U", "}"], {})
    assert sections.sections[".debug_abbrev"] == bytes([8, 16, 3, 16, 16])


def test_a_g_build_whose_dwarf_cannot_be_read_is_debugged_at_the_ptx_level(monkeypatch, tmp_path):
    text = (BUILD / "blocksum.G.ptx").read_text()
    start = text.index(".section\t.debug_info")
    broken = text[:start] + text[start:].replace(".b8 2\n", ".b8 07777777777777777777777\n", 1).replace(
        ".b8 1\n", ".b8 089\n", 1)
    ptx = tmp_path / "blocksum.G.ptx"
    ptx.write_text(broken)
    status, out = debug(ptx, "break blocksum.cu:28\nrun\ninfo locals\nprint %tid.x\n", monkeypatch)
    assert "internal error" not in out and status == 0, out
    assert "No symbol table info available." in out

"""`gpuemu debug` as people drive it: scripted sessions against reviewed transcripts, printed values against
numpy and the H100, reverse execution restoring the exact machine state, and one real terminal session.

Transcripts live in tests/debugger_sessions/ (NAME.gdb: the command line on its first line, then the
commands; NAME.out: the reviewed transcript). Regenerate them on purpose only, and review the diff:
GPUEMU_REGENERATE_SESSIONS=1 python -m pytest tests/test_debugger.py -k transcript
"""
import io
import os
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from emulator import cli
from emulator.cli import build_parser
from emulator.debug.commands import Session
from emulator.observers.debugger.control import Engine, Plan
from emulator.observers.debugger.expr import DebugError, evaluate, format_lanes, format_scalar, parse_expression
from emulator.cli.debug import command_debug

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = ROOT / "tests" / "debugger_sessions"
DOT = ROOT / "examples" / "dot"
DOT_ARGS = ["examples/dot/dot.ptx", "--kernel", "dot", "--grid", "2", "--block", "256",
            "--arg", "@examples/dot/inputs/a.npy", "--arg", "@examples/dot/inputs/b.npy",
            "--arg", "zeros:f32:2", "--arg", "i32:8192"]


def debug(argv, script):
    """(exit status, transcript) of `gpuemu debug ARGV < script`, stdout and stderr in one stream."""
    options = build_parser().parse_args(["debug", *argv])
    out = io.StringIO()
    status = command_debug(options, stdin=io.StringIO(script), stdout=out, stderr=out)
    return status, out.getvalue()


def values_of(transcript, number):
    """The values printed as $number (one, or the lanes of `{...}`)."""
    line = re.search(rf"^\${number} = (.*)$", transcript, re.M).group(1)
    return [float(v) for v in line.strip("{}").split(", ")]


def dot_partial_sums(blocks=2, threads=256, n=8192):
    """Each thread's `temp` at __syncthreads(): fma chains in float32 (exact in float64: integer inputs)."""
    a = np.load(DOT / "inputs" / "a.npy").astype(np.float64)
    b = np.load(DOT / "inputs" / "b.npy").astype(np.float64)
    assert np.all(a == np.round(a)) and np.all(b == np.round(b))
    sums = np.zeros(blocks * threads, dtype=np.float32)
    stride = blocks * threads
    for tid in range(stride):
        temp = np.float32(0)
        for i in range(tid, n, stride):
            temp = np.float32(a[i] * b[i] + np.float64(temp))
        sums[tid] = temp
    return sums


def ptx_line(path, text):
    return next(number for number, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


# ---- reviewed transcripts ------------------------------------------------------------------------------

@pytest.mark.parametrize("script", sorted(SESSIONS.glob("*.gdb")), ids=lambda path: path.stem)
def test_scripted_session_transcript_matches_the_reviewed_one(script, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = script.read_text()
    header = text.splitlines()[0]
    assert header.startswith("# gpuemu debug ")
    status, transcript = debug(shlex.split(header[len("# gpuemu debug "):]) + ["--batch"], text)
    transcript += f"[exit status {status}]\n"
    expected = script.with_suffix(".out")
    if os.environ.get("GPUEMU_REGENERATE_SESSIONS") == "1":
        expected.write_text(transcript)
    assert transcript == expected.read_text()


# ---- values against independent references -------------------------------------------------------------

def test_print_all_lanes_and_examined_shared_memory_are_the_numpy_partial_sums(monkeypatch):
    monkeypatch.chdir(ROOT)
    sums = dot_partial_sums()
    _, transcript = debug(DOT_ARGS, "break 74\nrun\ncuda block 1 thread 37\nprint %f13 @all\nprint %f13\n"
                                    "x/8wx @shared 0x400\nprint %r3 @all\n")
    assert values_of(transcript, 1) == list(sums[256 + 32:256 + 64])
    assert values_of(transcript, 2) == [sums[256 + 37]]
    assert values_of(transcript, 3) == list(range(32, 64))
    words = re.findall(r"^@shared 0x[0-9a-f]+:\t(.*)$", transcript, re.M)
    shown = [int(word, 16) for line in words for word in line.split("\t")]
    assert shown == [int(bits) for bits in sums[256:264].view(np.uint32)]


def test_watchpoint_names_the_writing_thread_and_pc_with_old_and_new_values(monkeypatch):
    monkeypatch.chdir(ROOT)
    sums = dot_partial_sums()
    _, transcript = debug(DOT_ARGS, "break 74\nrun\nwatch @shared 0x440\ncontinue\n")
    store_line = ptx_line(DOT / "dot.ptx", "st.shared.f32 \t[%r8], %f10;")
    old, new = sums[16], np.float32(sums[16] + sums[16 + 128])
    assert f"Old value = {float(old):.9g}\nNew value = {float(new):.9g}\n" in transcript
    assert f"Written by block (0,0,0) thread (16,0,0) at dot.ptx:{store_line}" in transcript
    assert "thread (16,0,0), device 0, sm 0, warp 0, lane 16]" in transcript


def test_focus_message_has_cuda_gdb_layout(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(DOT_ARGS, "break 74\nrun\ncuda block 1 thread 3\n")
    assert ("[Switching focus to CUDA kernel 1, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 1, "
            "warp 0, lane 3]") in transcript


def test_divergent_lanes_show_in_info_cuda_warps(monkeypatch):
    monkeypatch.chdir(ROOT)
    folder = "examples/reduce_divergent_sync"
    _, transcript = debug([f"{folder}/reduce_divergent_sync.ptx", "--grid", "1", "--block", "256",
                           "--arg", f"@{folder}/inputs/a.npy", "--arg", f"@{folder}/inputs/b.npy",
                           "--arg", "zeros:f32:1", "--arg", "i32:256"],
                          "break 89 if %r22 == 16\nrun\ninfo cuda warps\n")
    # i = 16: lanes 0-15 of warp 0 take the if, lanes 16-31 wait at its end
    row = next(line for line in transcript.splitlines() if line.startswith("*  0"))
    assert row.split()[2:4] == ["0x0000ffff", "0xffff0000"]


def test_a_session_that_reverses_and_replays_still_ends_with_the_h100_result(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["examples/dot/dot.ptx", "--grid", "32", "--block", "256", "--arg", "@examples/dot/inputs/a.npy",
            "--arg", "@examples/dot/inputs/b.npy", "--arg", "zeros:f32:32", "--arg", "i32:33792",
            "--out", str(tmp_path)]
    status, transcript = debug(argv + ["--batch"], "break 96\nrun\ncontinue\ncontinue\nreverse-continue\n"
                                                   "reverse-step 7\nstep 3\nreverse-continue\ndelete\ncontinue\n")
    assert status == 0 and "[Termination of CUDA Kernel 1" in transcript
    expected = np.load(DOT / "expected" / "dot" / "arg2.npy")
    assert np.load(tmp_path / "arg2.npy").tobytes() == expected.tobytes()


# ---- reverse execution restores the exact state --------------------------------------------------------

def machine_state(session):
    batch = session.batch
    memory = batch.memory
    state = [register.copy() for register in batch.regs] + [batch.cc.copy(), batch.status.copy(),
                                                             batch.bar_arrived.copy(), batch.live.copy()]
    state += [memory.shared_bytes(cta).copy() for cta in range(batch.n_ctas)]
    state += [memory.local_bytes(thread).copy() for thread in range(batch.n)]
    state += [memory.read(a.address, a.size) for a in memory.allocations() if not a.freed and a.kind == "global"]
    if batch.depth is not None:
        state += [batch.depth.copy(), batch.stack_pc.copy()]
    return state


def same(first, second):
    return len(first) == len(second) and all(a.dtype == b.dtype and a.tobytes() == b.tobytes()
                                             for a, b in zip(first, second))


REVERSIBLE = {
    "shared and barriers": (DOT_ARGS, "break 74", 40),
    "local memory": (["examples/localarray/localarray.ptx", "--grid", "4", "--block", "64", "--arg",
                      "@examples/localarray/inputs/values_small.npy", "--arg", "zeros:u32:256"],
                     "break 94", 60),
    "calls and returns": (["tests/kernels/machine.ptx", "--kernel", "call_collatz", "--grid", "1", "--block", "64",
                           "--arg", "zeros:i32:64", "--arg", "i32:5"], "break 429", 30),
    "divergent barrier and exits": (["examples/reduce_divergent_sync/reduce_divergent_sync.ptx", "--grid", "1",
                                     "--block", "256", "--arg", "@examples/reduce_divergent_sync/inputs/a.npy",
                                     "--arg", "@examples/reduce_divergent_sync/inputs/b.npy", "--arg",
                                     "zeros:f32:1", "--arg", "i32:256"], "break 89 if %r22 == 16", 40),
}


@pytest.mark.parametrize("case", sorted(REVERSIBLE))
def test_reverse_step_restores_the_exact_registers_memory_and_scheduler_state(case, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv, breakpoint, steps = REVERSIBLE[case]
    out = io.StringIO()
    session = Session(build_parser().parse_args(["debug", *argv]), out, out)
    try:
        for line in (breakpoint, "run", "delete"):
            assert session.execute(line), out.getvalue()
        before = machine_state(session)
        assert session.execute(f"stepi {steps}"), out.getvalue()
        after = machine_state(session)
        assert not same(before, after)
        assert session.execute(f"reverse-stepi {steps}"), out.getvalue()
        assert same(machine_state(session), before)
        assert session.execute(f"stepi {steps}"), out.getvalue()
        assert same(machine_state(session), after)
    finally:
        session.execute("kill")


def test_reverse_execution_stops_at_the_start_of_a_short_history(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(DOT_ARGS + ["--history", "50"], "break 96\nrun\nreverse-continue\nprint $pc\n")
    assert "\nNo more reverse-execution history.\n" in transcript
    _, transcript = debug(DOT_ARGS + ["--history", "0"], "break 96\nrun\nreverse-step\n")
    assert "recording is off (--history 0)" in transcript


class Unattended:
    """The session side of an Engine with no breakpoints, watchpoints or focus."""
    breakpoints_at = {}
    watchpoints = []
    focus_thread = None


def test_history_keeps_the_last_100000_warp_instructions_at_a_bounded_cost():
    import emulator
    kernel = emulator.load(ROOT / "examples" / "collatz" / "collatz.ptx").kernel("collatz")
    engine = Engine(Unattended(), kernel, [np.zeros(4096, np.uint32), np.uint64(1)], (16, 1, 1), (256, 1, 1),
                    shared=0, max_steps=10 ** 8, max_dynamic_shared=None, history_limit=100_000)
    event, stats = engine.start(Plan("continue"))
    history = engine.history
    assert event == "finished" and stats.warp_instructions > 150_000 and history.dropped > 0
    widest = max(record.warps for record in history.records)
    assert 100_000 <= history.warps < 100_000 + widest
    assert history.nbytes / history.warps < 600


# ---- expressions and formats ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / -2", -3), ("-7 / 2", -3), ("7 % -2", 1), ("-7 % 2", -1),
    ("1 << 4 | 1", 17), ("6 & 3 == 2", 0), ("2 + 3 * 4 == 14 && !(1 > 2)", 1), ("0x10 + 010", 24),
    ("~0 & 0xff", 255), ("1 || 1 / 1", 1), ("3 > 2 > 1", 0),
])
def test_expressions_follow_c_precedence_and_integer_division(text, value):
    assert int(evaluate(parse_expression(text), None)) == value


@pytest.mark.parametrize("value, fmt, shown", [
    (np.int32(-1), "x", "0xffffffff"), (np.int32(37), "t", "100101"), (np.int32(37), "o", "045"),
    (np.uint32(0x4e2cd2ad), "f", "724872000"), (np.float32(1.5), "x", "0x3fc00000"), (np.float32(0.1), None, "0.100000001"),
    (np.float64(0.1), None, "0.10000000000000001"), (np.uint32(4294967295), "d", "-1"), (np.int32(65), "c", "65 'A'"),
    (np.bool_(True), None, "true"), (np.array(0x7fc00000, np.uint32).view(np.float32)[()], None, "nan(0x400000)"),
    (np.float32(-np.inf), None, "-inf"),
])
def test_values_print_in_gdb_formats(value, fmt, shown):
    assert format_scalar(value, fmt) == shown


def test_runs_of_ten_equal_lanes_print_as_repeats():
    assert format_lanes(["0"] * 16 + ["1", "2"]) == "{0 <repeats 16 times>, 1, 2}"
    assert format_lanes(["3"] * 9) == "{" + ", ".join(["3"] * 9) + "}"


def test_bad_expressions_answer_with_one_line():
    for text in ("1 +", "(1", "1 $ 2", "1 / 0"):
        with pytest.raises(DebugError) as error:
            evaluate(parse_expression(text), None)
        assert "\n" not in str(error.value)


# ---- the command line ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, fragment", [
    (["missing.ptx", "--grid", "1", "--block", "32"], "no such file"),
    (["examples/dot/dot.ptx", "--grid", "1", "--block", "32", "--arg", "zeros:f32:4"], "takes 4 arguments, 1 given"),
    (DOT_ARGS + ["-x", "missing.gdb"], "cannot read the command file"),
])
def test_bad_command_lines_are_one_line_with_status_2(argv, fragment, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.main(["debug", *argv]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_batch_scripts_run_from_x_files_and_report_failures_in_the_exit_status(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    good, bad = tmp_path / "good.gdb", tmp_path / "bad.gdb"
    good.write_text("break 74\nrun\nprint %tid.x\n")
    bad.write_text("break 74\nrun\nprint %nosuch\n")
    status, transcript = debug(DOT_ARGS + ["-x", str(good), "--batch"], "print 999\n")
    assert status == 0 and "(gpuemu) print %tid.x\n$1 = 0\n" in transcript and "999" not in transcript
    status, transcript = debug(DOT_ARGS + ["-x", str(bad), "--batch"], "")
    assert status == 1 and "No register %nosuch in dot." in transcript


def test_empty_lines_repeat_and_unambiguous_prefixes_resolve(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(DOT_ARGS, "break 74\nru\nstepi\n\n\ncont\n")
    assert "dot.ptx:76   shr.u32" in transcript and "dot.ptx:78   setp.eq" in transcript
    assert "dot.ptx:79   @%p3 bra" in transcript and "[Termination of CUDA Kernel 1" in transcript


# ---- a real terminal -----------------------------------------------------------------------------------

def _at_prompt(child) -> None:
    """Wait for the prompt and for the line editor to take the terminal (echo off): keys sent before that reach
    a cooked terminal and may be dropped when it switches to raw mode, which on a loaded machine can take long."""
    child.expect_exact("(gpuemu)")
    assert child.waitnoecho(timeout=60)


def test_terminal_session_has_a_prompt_completion_and_history():
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", PYTHONPATH=str(ROOT))
    child = pexpect.spawn(sys.executable, ["-m", "emulator", "debug", *DOT_ARGS], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=60, dimensions=(40, 120))
    try:
        _at_prompt(child)
        child.send("bre\t")                      # completes to "break " (drawn as "bre", then "ak")
        child.expect_exact("ak")
        child.send("74\r")
        child.expect_exact("Breakpoint 1 at 0x1d0: file dot.ptx, line 74.")
        _at_prompt(child)
        child.send("run\r")
        child.expect_exact("Breakpoint 1, dot<<<(2,1,1),(256,1,1)>>> at dot.ptx:74")
        _at_prompt(child)
        child.send("print %tid.x\r")
        child.expect_exact("$1 = 0")
        _at_prompt(child)
        child.send("\x1b[A")                     # up arrow: the last command again
        child.expect_exact("print %tid.x")
        child.send("\r")
        child.expect_exact("$2 = 0")
        _at_prompt(child)
        child.send("info cuda wa\t\r")           # completes to "info cuda warps "
        child.expect_exact("Wp Active Lanes Mask")
        _at_prompt(child)
        child.send("quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0




def test_ctrl_c_interrupts_a_kernel_that_never_ends():
    # the loop changes its counter every turn, so it is no livelock: only the interrupt stops it
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", PYTHONPATH=str(ROOT))
    child = pexpect.spawn(sys.executable, ["-m", "emulator", "debug", "tests/kernels/count_forever.ptx", "--kernel",
                                           "count_forever", "--grid", "1", "--block", "32", "--max-steps", "1000000000"],
                          cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(40, 120))
    try:
        _at_prompt(child)
        child.send("run\r")
        child.expect_exact("[Launch of CUDA Kernel 1")
        time.sleep(0.5)
        child.sendintr()
        child.expect_exact("Program received signal SIGINT, Interrupt.")
        child.expect_exact("count_forever<<<(1,1,1),(32,1,1)>>> at count_forever.ptx:")
        _at_prompt(child)
        child.send("kill\r")
        child.expect_exact("killed]")
        _at_prompt(child)
        child.send("quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_printf_output_in_a_session_is_the_h100_output(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(["examples/printf/printf.ptx", "--grid", "2", "--block", "4", "--arg", "f32:1.5"],
                          "break 78\nrun\ndelete\ncontinue\n")
    printed = [line for line in transcript.splitlines() if line.startswith("block ")]
    expected = (ROOT / "examples" / "printf" / "expected" / "printf" / "stdout.txt").read_text().splitlines()
    assert printed == expected


# ---- SASS listings -------------------------------------------------------------------------------------

RETURN32 = ["--grid", "1", "--block", "64", "--shared", "256", "--arg", "zeros:i32:1", "--arg", "zeros:i32:64",
            "--arg", "@examples/sass/inputs/pIn.npy"]


@pytest.mark.parametrize("listing, kernel, launch", [
    ("examples/warpops/warpops.sm_90.sass", "voteShuffle",
     ["--grid", "1", "--block", "64", "--arg", "@examples/warpops/inputs/shuffle_in.npy", "--arg", "zeros:i32:768"]),
    ("examples/sass/kernels.sm_90.sass", "reduceShfl",
     ["--grid", "2", "--block", "64", "--arg", "zeros:i32:128", "--arg", "zeros:i32:1", "--arg", "i32:128"]),
    ("examples/sass/kernels.sm_75.sass", "reduceShfl",
     ["--grid", "2", "--block", "64", "--arg", "zeros:i32:128", "--arg", "zeros:i32:1", "--arg", "i32:128"]),
    ("examples/sass/kernels.sm_75.sass", "atomicsMix",
     ["--grid", "2", "--block", "100", "--arg", "zeros:i32:200", "--arg", "zeros:i32:6", "--arg", "zeros:u32:1"]),
])
def test_sass_listings_with_shuffles_that_write_no_predicate_start_and_run(listing, kernel, launch, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, transcript = debug([listing, "--kernel", kernel, *launch, "--batch"], "start\nnext 3\ncontinue\n")
    assert status == 0 and "internal error" not in transcript, transcript
    assert f"Temporary breakpoint 1, {kernel}<<<" in transcript
    assert "[Termination of CUDA Kernel 1" in transcript


def test_an_internal_error_at_session_start_is_one_line_not_a_traceback(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)

    def broken(program):
        raise AttributeError("'SinkRef' object has no attribute 'reg'")

    monkeypatch.setattr("emulator.debug.commands.Registers", broken)
    assert cli.main(["debug", *DOT_ARGS, "--batch"]) == 1
    err = capsys.readouterr().err
    assert err == "gpuemu: error: internal error: AttributeError: 'SinkRef' object has no attribute 'reg'\n"


def test_sass_breakpoints_pc_and_info_line_use_the_listing_addresses(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(["examples/sass/return32.sm_20.sass", *RETURN32],
                          "break *0x58\nbreak 12\nrun\nprint $pc\ninfo line\nbreak *0x5c\n")
    assert "Breakpoint 1 at 0x58: file return32.sm_20.sass, line 15." in transcript
    assert "Breakpoint 2 at 0x40: file return32.sm_20.sass, line 12." in transcript
    assert "Breakpoint 2, Return32<<<(1,1,1),(64,1,1)>>> at return32.sm_20.sass:12   SSY 0x80;" in transcript
    assert "$1 = 0x40 <Return32+64>" in transcript
    assert 'Line 12 of "return32.sm_20.sass" is at address 0x40 <Return32+64>: SSY 0x80;' in transcript
    assert "No instruction at address 0x5c (instructions are 8 bytes apart, 0x0 to 0xa0)." in transcript


def test_sass_x_i_and_stepi_take_an_expanded_instruction_as_one(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(["examples/sass/return32.sm_20.sass", *RETURN32],
                          "break *0x58\nrun\nx/3i $pc\nstepi\nreverse-stepi\nprint $pc\n")
    assert ("=> 0x58 <Return32+88>:\tLDSLK P0, R2, [R3];\n"
            "   0x60 <Return32+96>:\t@P0 IADD R2, R2, R0;\n"
            "   0x68 <Return32+104>:\t@P0 STSUL [R3], R2;\n") in transcript
    assert "(gpuemu) stepi\nreturn32.sm_20.sass:16   @P0 IADD R2, R2, R0;\n" in transcript
    assert "(gpuemu) reverse-stepi\nreturn32.sm_20.sass:15   LDSLK P0, R2, [R3];\n" in transcript
    assert "$1 = 0x58 <Return32+88>" in transcript


def test_sass_warps_waiting_for_a_lock_show_its_listing_address(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(["examples/sass/return32one.sm_20.sass", *RETURN32],
                          "break *0x60\nrun\ncontinue\ninfo cuda warps\n")
    rows = [line.split() for line in transcript.split("(gpuemu) info cuda warps\n")[1].splitlines()[2:4]]
    # warp 0's lane 2 holds the one lock; warp 1 waits at the LDSLK (0x58), inside the 0x0-0xa0 listing
    assert [row[-5] for row in rows] == ["0x0000000000000060", "0x0000000000000058"]


def test_sass_info_registers_lists_the_listing_registers_and_print_takes_cuda_gdb_names(monkeypatch):
    monkeypatch.chdir(ROOT)
    _, transcript = debug(["examples/vecadd/vecadd.sm_90.sass", "--grid", "1", "--block", "64",
                           "--arg", "@examples/vecadd/inputs/a.npy", "--arg", "@examples/vecadd/inputs/b.npy",
                           "--arg", "zeros:f32:64", "--arg", "i32:64"],
                          "start\nnext 4\ninfo registers\nprint $R9\nprint %R9\n")
    listed = [line.split()[0] for line in transcript.split("(gpuemu) info registers\n")[1].split("(gpuemu)")[0]
              .splitlines()]
    assert listed[:2] == ["R0", "R1"] and "UR4" in listed and "P0" in listed
    assert not any(name.startswith("%") for name in listed)
    assert "$1 = 64\n" in transcript and "$2 = 64\n" in transcript
    _, transcript = debug(["examples/sass/return32.sm_20.sass", *RETURN32], "break *0x60\nrun\ninfo registers\n")
    assert "%lock_stall" not in transcript and "\nP0 " in transcript and "\nR3 " in transcript


# ---- values, focus and the command line ----------------------------------------------------------------

def test_x_s_escapes_once_as_gdb_does(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = tmp_path / "text.npy"
    np.save(text, np.frombuffer(b'T\xeb\x92D"q\\\n\xc3\xa9\x00', dtype=np.uint8))
    _, transcript = debug(["examples/dot/dot.ptx", "--grid", "1", "--block", "32", "--arg", f"@{text}",
                           "--arg", f"@{text}", "--arg", "zeros:f32:1", "--arg", "i32:1"], "start\nx/s param_0\n")
    assert re.search(r'^0x[0-9a-f]+:\t"T\\353\\222D\\"q\\\\\\né"$', transcript, re.M), transcript


TWO_KERNELS = """.version 7.0
.target sm_70
.address_size 64

.visible .entry early(.param .u64 early_param_0)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	@%p1 exit;
	ld.param.u64 %rd1, [early_param_0];
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd1, %rd1, %rd2;
	st.global.u32 [%rd1], %r1;
	ret;
}

.visible .entry retyped(.param .u64 retyped_param_0)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [retyped_param_0];
	cvta.to.global.u64 %rd1, %rd1;
	mov.b32 %r1, -1;
	st.global.u32 [%rd1], %r1;
	mov.b32 %r1, -2;
	st.global.s32 [%rd1], %r1;
	mov.b32 %r1, -3;
	st.global.b32 [%rd1], %r1;
	ret;
}
"""


def test_watchpoint_values_keep_one_type_from_hit_to_hit(tmp_path):
    ptx = tmp_path / "two.ptx"
    ptx.write_text(TWO_KERNELS)
    _, transcript = debug([str(ptx), "--kernel", "retyped", "--grid", "1", "--block", "1", "--arg", "zeros:u32:1"],
                          "start\nwatch retyped_param_0\ncontinue\ncontinue\ncontinue\n")
    shown = re.findall(r"^Old value = (.*)\nNew value = (.*)$", transcript, re.M)
    # u32, then s32 and b32 stores: all shown as the first writer's u32
    assert shown == [("0", "4294967295"), ("4294967295", "4294967294"), ("4294967294", "4294967293")]


def test_print_pc_of_an_exited_lane_says_it_has_exited(tmp_path):
    ptx = tmp_path / "two.ptx"
    ptx.write_text(TWO_KERNELS)
    _, transcript = debug([str(ptx), "--kernel", "early", "--grid", "1", "--block", "64", "--arg", "zeros:u32:64"],
                          f"break {ptx_line(ptx, 'st.global.u32')}\nrun\ncuda warp 0 lane 0\nprint $pc\ninfo line\n")
    assert "[thread (0,0,0) of block (0,0,0) has exited]" in transcript
    assert "(gpuemu) print $pc\n$pc has no value: the lane has exited.\n" in transcript
    assert "(gpuemu) info line\nThe focused thread has exited.\n" in transcript


def test_a_negative_history_length_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.main(["debug", *DOT_ARGS, "--history", "-5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuemu: error: argument --history: -5 is negative") and len(err.splitlines()) == 1


def test_an_unusable_out_directory_is_refused_before_the_session(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    blocker = tmp_path / "afile"
    blocker.write_text("")
    monkeypatch.setattr("sys.stdin", io.StringIO("run\n"))
    assert cli.main(["debug", *DOT_ARGS, "--out", str(blocker / "sub")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"gpuemu: error: --out {blocker / 'sub'}: Not a directory\n"
    assert "Launch of CUDA Kernel" not in captured.out


#: vprintf with a null format pointer: the call reads address 0 (PTX ISA: vprintf's first argument is the
#: format string's generic address), which no allocation holds
NULL_FORMAT_PRINTF = """.version 8.0
.target sm_90
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;
.visible .entry null_format()
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    mov.u64 %rd1, 0;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd1;
    .param .b64 param1;
    st.param.b64 [param1+0], %rd1;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    ld.param.b32 %r1, [retval0+0];
    }
    ret;
}
"""
NULL_FORMAT_CALL_LINE = 21


def test_a_vprintf_reading_a_bad_format_address_stops_before_the_call_as_a_device_exception(tmp_path):
    program = tmp_path / "null_format.ptx"
    program.write_text(NULL_FORMAT_PRINTF)
    assert "call.uni" in NULL_FORMAT_PRINTF.splitlines()[NULL_FORMAT_CALL_LINE - 1]
    status, out = debug([str(program), "--grid", "1", "--block", "1", "--batch"], "run\nbt\ncontinue\n")
    assert status == 0, out
    assert "CUDA Exception: Warp Illegal Address" in out
    assert f"at null_format.ptx:{NULL_FORMAT_CALL_LINE}   call.uni" in out
    assert re.search(rf"^#0  null_format<<<\(1,1,1\),\(1,1,1\)>>> \(\) at null_format.ptx:{NULL_FORMAT_CALL_LINE}$",
                     out, re.M)
    assert "Access to 0x0 is out of bounds" in out
    assert out.rstrip().endswith("with CUDA_ERROR_ILLEGAL_ADDRESS]")

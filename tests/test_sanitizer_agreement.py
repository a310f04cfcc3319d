"""gpuemu's checkers against what compute-sanitizer reported on an H100 for the same launches.

tests/sanitizer/<case>.<tool>.txt are the reports that tools/sanitizer_checks.py recorded (CUDA 13.0,
driver 580) and summary.json their exit statuses and summary lines. Each test runs the launch that
tool ran — its own argument builders, over numpy instead of CuPy — under the matching gpuemu checker,
and either compares the two reports where they agree or pins gpuemu's side of a difference that
docs/checks.md ("Where gpuemu and compute-sanitizer differ") explains.

compute-sanitizer names SASS offsets and CUDA lines (`at shared_race+0x200 in checks.cu:10`); gpuemu
names PTX offsets, PTX lines and the same CUDA lines, so reports are compared on the CUDA lines."""
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np
import pytest

import emulator
from emulator.observers.checks import CheckSession, compare_outputs
from emulator.errors import DeviceError
from emulator.machine.policies import RandomSchedule

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "sanitizer"
SUMMARY = json.loads((RECORDED / "summary.json").read_text())
CHECKER_OF_TOOL = {"racecheck": "race", "synccheck": "sync", "initcheck": "init", "memcheck": "mem"}


def load_sanitizer_cases():
    spec = importlib.util.spec_from_file_location("sanitizer_checks", ROOT / "tools" / "sanitizer_checks.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.CASES


CASES = load_sanitizer_cases()


class NumpyAsCupy:
    """The part of CuPy the case builders use; `empty` buffers are remembered as never written."""
    int32, float32 = np.int32, np.float32
    arange, zeros = staticmethod(np.arange), staticmethod(np.zeros)

    def __init__(self):
        self.unwritten = []

    def empty(self, *shape_and_dtype):
        array = np.zeros(*shape_and_dtype)
        self.unwritten.append(array)
        return array


@dataclass
class Run:
    session: CheckSession
    report: str
    error: Optional[DeviceError]


def run_case(case: str, tool: str, arch: Optional[str] = None) -> Run:
    ptx, kernel, grid, block, shared, build, tools = CASES[case]
    assert tool in tools
    fake = NumpyAsCupy()
    args = build(fake)
    unwritten = [index for index, arg in enumerate(args) if any(arg is buffer for buffer in fake.unwritten)]
    session = CheckSession({CHECKER_OF_TOOL[tool]}, uninitialized_params=unwritten)
    options = {} if arch is None else {"arch": arch}
    try:
        emulator.load(ptx).kernel(kernel).launch(grid, block, args, shared, observer=session, **options)
        error = None
    except DeviceError as failure:
        error = failure
    return Run(session, session.report(), error)


# ---- reading compute-sanitizer-style reports ----

FINDING_HEADS = ("Error: Race", "Warning: Race", "Barrier error", "Uninitialized __", "Invalid __")


@dataclass
class Record:
    headline: str
    details: List[str]

    @property
    def at(self) -> str:
        return next(line for line in self.details if line.startswith("at "))

    @property
    def by(self) -> str:
        return next(line for line in self.details if line.startswith("by "))


def records(text: str) -> List[Record]:
    """The findings of a report, host backtraces left out: headline and indented lines of each."""
    found, current = [], None
    for line in text.splitlines():
        if not line.startswith("========="):
            continue
        body = line[len("========= "):]
        if not body.strip():
            current = None
        elif body.startswith("    "):
            detail = body.strip()
            if current is not None and not detail.startswith(("Saved host backtrace", "Host Frame")):
                current.details.append(detail)
        else:
            current = Record(body, []) if body.startswith(FINDING_HEADS) else None
            if current is not None:
                found.append(current)
    return found


def recorded(case: str, tool: str) -> str:
    return (RECORDED / f"{case}.{tool}.txt").read_text()


def summary_line(text: str, prefix: str) -> str:
    return next(line[len("========= "):] for line in text.splitlines() if line.startswith(f"========= {prefix}"))


def source_line(where: str) -> str:
    """`checks.cu:10` of `at k+0x200 in checks.cu:10` or `at k+0xb0 in /x/checks.ptx:49 (/y/checks.cu:10)`."""
    where = re.sub(r" \[\d+ \w+\]$", "", where).rstrip(")")
    file_and_line = where.rsplit(" ", 1)[-1].lstrip("(")
    return file_and_line.rsplit("/", 1)[-1]


def race_pair(record: Record):
    """(severity, first access kind, its CUDA line, second kind, its CUDA line, hazards) of a race record."""
    first = re.match(r"(Error|Warning): Race reported between (\w+) access at (.*)$", record.headline)
    second = re.match(r"and (\w+) access at (.*?)(?: \[(\d+) hazards\])?$", record.details[0])
    return (first.group(1), first.group(2), source_line(first.group(3)), second.group(1),
            source_line(second.group(2)), int(second.group(3) or 1))


def status(case: str, tool: str):
    return SUMMARY["cases"][f"{case}.{tool}"]["status"]


# ---- where both agree ----

def test_shared_race_is_the_write_read_pair_racecheck_reports_with_the_same_hazard_count():
    h100_text = recorded("shared_race", "racecheck")
    ours = run_case("shared_race", "racecheck")
    expected = [("Error", "Write", "checks.cu:10", "Read", "checks.cu:11", 1024)]
    assert [race_pair(r) for r in records(h100_text)] == expected
    assert [race_pair(r) for r in records(ours.report)] == expected
    assert summary_line(ours.report, "RACECHECK SUMMARY") == summary_line(h100_text, "RACECHECK SUMMARY") == \
        "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"


def test_intra_warp_exchange_is_a_racecheck_warning_on_both():
    h100_text = recorded("warp_exchange_race", "racecheck")
    ours = run_case("warp_exchange_race", "racecheck")
    expected = [("Warning", "Write", "checks.cu:125", "Read", "checks.cu:126", 128)]
    assert [race_pair(r) for r in records(h100_text)] == expected
    assert [race_pair(r) for r in records(ours.report)] == expected
    assert summary_line(ours.report, "RACECHECK SUMMARY") == summary_line(h100_text, "RACECHECK SUMMARY") == \
        "RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)"
    assert ours.session.errors() == 0


SILENT_ON_BOTH = [("shared_race_fixed", "racecheck"), ("reduce_ok", "racecheck"), ("reduce_ok", "synccheck"),
                  ("reduce_divergent_sync", "racecheck"), ("warp_exchange_synced", "racecheck"),
                  ("global_sum_atomic", "racecheck"), ("init_shared_read", "initcheck"),
                  ("bounded_write", "memcheck"), ("aligned_shared", "memcheck"), ("shfl_converged", "synccheck"),
                  ("vote_names_exited_lanes", "synccheck"), ("bar_count_64", "synccheck"),
                  ("barrier_in_both_branches", "racecheck"), ("producerConsumerGlobal", "racecheck"),
                  ("spinLockWarp", "racecheck")]


@pytest.mark.parametrize("case, tool", SILENT_ON_BOTH)
def test_correct_twins_report_nothing_on_both(case, tool):
    h100_text = recorded(case, tool)
    assert status(case, tool) == 0 and records(h100_text) == []
    ours = run_case(case, tool)
    assert ours.error is None and records(ours.report) == [], ours.report
    assert ours.session.errors() == 0 and ours.session.warnings() == 0
    prefix = "RACECHECK SUMMARY" if tool == "racecheck" else "ERROR SUMMARY"
    assert summary_line(ours.report, prefix) == summary_line(h100_text, prefix)


def assert_one_record_per_thread_agrees(case: str, tool: str, errors: int, headline: str, line: str):
    """compute-sanitizer prints one record per thread; gpuemu one with the count: same headline,
    same CUDA line, same first thread, and the same ERROR SUMMARY."""
    h100_text = recorded(case, tool)
    h100 = records(h100_text)
    assert {(r.headline, source_line(r.at)) for r in h100} == {(headline, line)}
    assert summary_line(h100_text, "ERROR SUMMARY") == f"ERROR SUMMARY: {errors} errors"
    ours = run_case(case, tool)
    [record] = records(ours.report)
    assert (record.headline, source_line(record.at), record.by) == (headline, line, h100[0].by)
    assert summary_line(ours.report, "ERROR SUMMARY") == f"ERROR SUMMARY: {errors} errors"
    return ours


def test_unwritten_global_input_is_one_uninitialized_read_per_thread():
    # cp.empty(64) read by all 64 threads of shared_race_fixed at `s[t] = in[t]`
    ours = assert_one_record_per_thread_agrees("uninitialized_global_input", "initcheck", 64,
                                               "Uninitialized __global__ memory read of size 4 bytes",
                                               "checks.cu:17")
    assert "[64 accesses]" in ours.report


def test_syncwarp_mask_without_the_caller_is_invalid_for_every_lane_of_the_call():
    assert_one_record_per_thread_agrees("syncwarp_without_caller", "synccheck", 32,
                                        "Barrier error detected. Invalid arguments.", "sm_30_intrinsics.hpp:110")


def test_threads_released_from_another_syncthreads_are_divergent_in_block():
    ours = assert_one_record_per_thread_agrees("barrier_in_both_branches", "synccheck", 32,
                                               "Barrier error detected. Divergent thread(s) in block.",
                                               "checks.cu:195")
    # synccheck stops the launch at its error (exit status 1, unspecified launch failure); gpuemu
    # reports and lets it finish, as the H100 does without a sanitizer (racecheck's run: status 0)
    assert status("barrier_in_both_branches", "synccheck") == 1 and ours.error is None
    assert status("barrier_in_both_branches", "racecheck") == 0


def test_misaligned_shared_writes_are_memcheck_records_until_memcheck_stops_the_kernel():
    h100_text = recorded("misaligned_shared", "memcheck")
    h100 = records(h100_text)
    # 32 invalid writes, then memcheck kills the launch: the 3 other errors are the CUDA calls that fail
    assert len(h100) == 32 and h100_text.count("Program hit cudaErrorLaunchFailure") + \
        h100_text.count("Program hit CUDA_ERROR_LAUNCH_FAILED") == 3
    assert summary_line(h100_text, "ERROR SUMMARY") == "ERROR SUMMARY: 35 errors"
    ours = run_case("misaligned_shared", "memcheck")
    assert ours.error.cuda_error == "CUDA_ERROR_MISALIGNED_ADDRESS"
    mine = records(ours.report)
    for theirs, own in zip(h100, mine[:32]):
        assert (own.headline, source_line(own.at), own.by) == (theirs.headline, source_line(theirs.at), theirs.by)
        their_address = int(re.match(r"Access to 0x([0-9a-f]+) is misaligned", theirs.details[-1]).group(1), 16)
        own_address = int(re.match(r"Access to 0x([0-9a-f]+) is misaligned", own.details[-1]).group(1), 16)
        assert own_address == their_address
    # gpuemu keeps going (--check mem) and also lists the 32 misaligned reads of line 109
    assert {(r.headline, source_line(r.at)) for r in mine[32:]} == {
        ("Invalid __shared__ read of size 4 bytes", "checks.cu:109")}
    assert len(mine) == 64 and ours.session.errors() == 64


def test_barrier_count_that_is_not_whole_warps_stops_the_launch_with_an_illegal_instruction():
    h100_text = recorded("bar_count_48", "synccheck")
    assert status("bar_count_48", "synccheck") == 1 and "cudaErrorIllegalInstruction" in h100_text
    assert records(h100_text) == []
    ours = run_case("bar_count_48", "synccheck")
    assert ours.error.cuda_error == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
    [record] = records(ours.report)
    assert record.headline == "Barrier error detected. Invalid arguments." and source_line(record.at) == "checks.cu:175"


# ---- where they differ (docs/checks.md says why) ----

def test_global_memory_races_are_gpuemu_only_because_racecheck_watches_shared_memory():
    assert records(recorded("global_sum_race", "racecheck")) == []
    ours = run_case("global_sum_race", "racecheck")
    pairs = [race_pair(r) for r in records(ours.report)]
    assert [pair[:5] for pair in pairs] == [("Error", "Read", "checks.cu:139", "Write", "checks.cu:139"),
                                            ("Error", "Write", "checks.cu:139", "Write", "checks.cu:139")]
    assert all("on __global__ address" in r.details[-1] for r in records(ours.report))


def test_volatile_flag_handshake_is_a_racecheck_error_but_no_race_for_gpuemu():
    h100 = records(recorded("producerConsumerShared", "racecheck"))
    h100_pairs = {frozenset([(pair[1], pair[2]), (pair[3], pair[4])]) for pair in map(race_pair, h100)}
    assert h100_pairs == {frozenset([("Read", "fences.cu:44"), ("Write", "fences.cu:35")]),
                          frozenset([("Read", "fences.cu:41"), ("Write", "fences.cu:39")])}
    assert race_pair(h100[0])[5] == 128
    assert run_case("producerConsumerShared", "racecheck").session.errors() == 0
    # every shared access on the lines racecheck names is volatile (a strong access in the PTX memory
    # model), which the SASS that racecheck watches no longer shows: there they are plain LDS/STS
    ptx = (ROOT / "examples" / "fences" / "fences.ptx").read_text()
    program = emulator.load(ptx).kernel("producerConsumerShared").program
    flagged = {int(line.split(":")[1]) for pair in h100_pairs for _, line in pair}
    shared_accesses = [instr.opcode for instr in program.instrs
                       if instr.source and instr.source[1] in flagged and ".shared" in instr.opcode]
    assert len(shared_accesses) == 4 and all(".volatile." in opcode for opcode in shared_accesses)
    # as racecheck sees it — volatile gone, fences not taken as ordering — gpuemu finds the same pairs
    plain = ptx.replace("ld.volatile.shared", "ld.shared").replace("st.volatile.shared", "st.shared") \
        .replace("membar.cta;", "")
    session = CheckSession({"race"})
    emulator.load(plain).kernel("producerConsumerShared").launch(1, 64, [np.zeros(64, np.int32)], observer=session)
    ours = [race_pair(r) for r in records(session.report())]
    assert {frozenset([(pair[1], pair[2]), (pair[3], pair[4])]) for pair in ours} == h100_pairs
    assert next(pair[5] for pair in ours if pair[4] == "fences.cu:44") == 128


def test_divergent_syncthreads_that_sm90_tolerates_is_reported_by_gpuemu_only():
    assert status("reduce_divergent_sync", "synccheck") == 0
    assert records(recorded("reduce_divergent_sync", "synccheck")) == []
    ours = run_case("reduce_divergent_sync", "synccheck")
    assert ours.error is None
    assert [r.headline for r in records(ours.report)] == ["Barrier error detected. Divergent thread(s) in block.",
                                                          "Barrier error detected. Divergent thread(s) in warp."]
    # threads waiting while others had left: 128 + 64 + 32 (whole warps gone), 16 + 8 + 4 + 2 + 1 (part of warp 0)
    assert ours.session.errors() == 255


def test_full_warp_shuffle_in_a_divergent_if_is_reported_by_gpuemu_only():
    assert records(recorded("shfl_in_divergent_if", "synccheck")) == []
    ours = run_case("shfl_in_divergent_if", "synccheck")
    [record] = records(ours.report)
    assert record.headline == "Barrier error detected. Divergent thread(s) in warp."
    assert ours.session.errors() == 16


@pytest.mark.parametrize("case, space, errors", [("uninit_shared_read", "shared", 32),
                                                 ("uninit_local_read", "local", 16)])
def test_uninitialized_shared_and_local_reads_are_gpuemu_only_as_initcheck_watches_global_memory(case, space, errors):
    assert records(recorded(case, "initcheck")) == []
    ours = run_case(case, "initcheck")
    [record] = records(ours.report)
    assert record.headline == f"Uninitialized __{space}__ memory read of size 4 bytes"
    assert ours.session.errors() == errors


def test_out_of_bounds_write_into_a_pool_is_gpuemu_only():
    # CuPy's pool maps memory past the 400-byte buffer, so the H100 run never faulted
    assert records(recorded("oob_write", "memcheck")) == [] and status("oob_write", "memcheck") == 0
    ours = run_case("oob_write", "memcheck")
    assert ours.error.cuda_error == "CUDA_ERROR_ILLEGAL_ADDRESS" and ours.session.errors() == 28


def test_vote_naming_exited_lanes_is_reported_only_for_pre_volta():
    assert records(recorded("vote_names_exited_lanes", "synccheck")) == []
    ours = run_case("vote_names_exited_lanes", "synccheck", arch="sm_60")
    [record] = records(ours.report)
    assert record.headline == "Barrier error detected. Invalid arguments." and "have exited" in record.details[-1]


def test_float_atomic_sum_the_h100_gave_is_the_default_schedule_and_one_of_repeat():
    # warp 0 adds 1e8, warp 1 adds 1, warp 2 adds -1e8: 1.0 only when warp 1 adds last
    totals = SUMMARY["float_atomic_sum_totals"]
    assert len(totals) == 20 and set(totals) == {0.0}
    values = np.zeros(128, np.float32)
    values[[0, 32, 64]] = [1e8, 1.0, -1e8]
    float_atomic_sum = emulator.load(ROOT / "tests" / "kernels" / "checks.ptx").kernel("float_atomic_sum")
    total = np.zeros(1, np.float32)
    float_atomic_sum.launch(1, 128, [values, total])
    assert total[0] == 0.0
    results = []
    for seed in range(12):
        total = np.zeros(1, np.float32)
        float_atomic_sum.launch(1, 128, [values, total], policy=RandomSchedule(seed))
        results.append((seed, [(1, total)], None))
    assert {float(t[0]) for _, [(_, t)], _ in results} == {0.0, 1.0}
    assert not compare_outputs(results)["identical"]


COVERED = ({"shared_race.racecheck", "warp_exchange_race.racecheck", "uninitialized_global_input.initcheck",
            "syncwarp_without_caller.synccheck", "barrier_in_both_branches.synccheck", "misaligned_shared.memcheck",
            "bar_count_48.synccheck", "global_sum_race.racecheck", "producerConsumerShared.racecheck",
            "reduce_divergent_sync.synccheck", "shfl_in_divergent_if.synccheck", "uninit_shared_read.initcheck",
            "uninit_local_read.initcheck", "oob_write.memcheck"}
           | {f"{case}.{tool}" for case, tool in SILENT_ON_BOTH})


def test_every_recorded_case_is_compared():
    assert set(SUMMARY["cases"]) == COVERED
    assert {f"{case}.{tool}" for case, spec in CASES.items() for tool in spec[-1]} == COVERED

"""Checkers on tests/kernels/checks.cu: each faulty kernel reported as described, each correct twin silent.

Expected counts are derived by hand from the kernels' indexing (comments say how)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_parallel import order_dependent_floats

import emulator
from emulator.errors import DeviceError
from emulator.machine.policies import RandomSchedule, RoundRobin
from emulator.observers.checks import CheckSession, compare_outputs

ROOT = Path(__file__).resolve().parents[1]
COUNT_FOREVER = (ROOT / "tests" / "kernels" / "count_forever.ptx").read_text()
CHECKS = ROOT / "tests" / "kernels" / "checks.ptx"
SOURCE = (ROOT / "tests" / "kernels" / "checks.cu").read_text().splitlines()


def cuda_line(fragment: str, after: str = "") -> str:
    """`checks.cu:N` of the first source line containing fragment (after the first line containing `after`)."""
    start = next(i for i, line in enumerate(SOURCE) if after in line)
    return f"checks.cu:{next(i for i, line in enumerate(SOURCE[start:], start + 1) if fragment in line)}"


@pytest.fixture(scope="module")
def module():
    return emulator.load(CHECKS)


def check(module, kernel, grid, block, args, checks, shared=0, **options):
    session = CheckSession(checks)
    try:
        module.kernel(kernel).launch(grid, block, args, shared, observer=session, **options)
        error = None
    except DeviceError as failure:
        error = failure
    return session, session.report(), error


def ints(n, scale=1):
    return np.arange(n, dtype=np.int32) * scale


# ---- race ----

def test_missing_syncthreads_between_store_and_neighbour_load_is_a_race(module):
    session, report, error = check(module, "shared_race", 1, 256, [ints(256), np.zeros(256, np.int32)], {"race"})
    assert error is None
    # every thread t reads the 4 bytes of s[(t + 1) % 256], stored by another thread with no barrier
    # between: 256 reads x 4 bytes = 1024 hazards (a hazard is a byte, as racecheck counts)
    assert "Error: Race reported between Write access at shared_race+" in report
    assert f"({cuda_line('s[t] = in[t];')})" in report and f"({cuda_line('out[t] = s[(t + 1)')})" in report
    assert "and Read access at shared_race+" in report and "[1024 hazards]" in report
    assert "thread (1,0,0) (write) and thread (0,0,0) (read) of block (0,0,0) on __shared__ address 0x4" in report
    assert "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" in report
    assert session.race.hazards == 1024 and session.errors() == 1


def test_before_volta_only_hazards_between_warps_count(module):
    session, report, _ = check(module, "shared_race", 1, 256, [ints(256), np.zeros(256, np.int32)], {"race"},
                               arch="sm_60")
    # threads 31, 63, ..., 223 read a word of the next warp, thread 255 the word of thread 0: 8 words
    assert session.race.hazards == 8 * 4 and "[32 hazards]" in report


def test_correct_twins_report_no_race(module):
    for kernel, block, args in (("shared_race_fixed", 256, [ints(256), np.zeros(256, np.int32)]),
                                ("reduce_ok", 256, [np.arange(256, dtype=np.float32), np.zeros(1, np.float32)]),
                                ("warp_exchange_synced", 32, [ints(32), np.zeros(32, np.int32)]),
                                ("global_sum_atomic", 64, [ints(64), np.zeros(1, np.int32)])):
        session, report, error = check(module, kernel, 1, block, args, {"race", "sync"})
        assert error is None and session.errors() == 0, report
        assert "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" in report


def test_blocks_writing_the_same_global_words_are_not_compared(module):
    # every block stores out[t] for t < 64: the same words from 4 CTAs, never from two threads of one
    session, report, _ = check(module, "shared_race_fixed", 4, 64, [ints(64), np.zeros(64, np.int32)], {"race"})
    assert session.errors() == 0, report


CORRECT_EXAMPLES = ["dot/dot", "transpose/setRowReadCol", "transpose/setRowReadColDyn", "fences/producerConsumerGlobal",
                    "fences/producerConsumerShared", "fences/spinLockWarp", "histogram/histogram",
                    "atomic32shared/Return32", "warpops/voteShuffle", "mathlib/warpScan", "mathlib/bitonicSort",
                    "triton/matmul_f16_mma", "triton/softmax", "localarray/localarray"]


@pytest.mark.parametrize("name", CORRECT_EXAMPLES)
def test_correct_examples_report_nothing(name):
    from emulator.runtime.module import Device, Module
    from emulator.runtime.spec import read_launches
    directory, launch_name = name.split("/")
    spec = next(s for s in read_launches(ROOT / "examples" / directory / "launches.json") if s.name == launch_name)
    example = Module(spec.ptx.read_text(), str(spec.ptx), Device())
    for symbol, value in spec.constants().items():
        example.set_symbol(symbol, value)
    session = CheckSession({"race", "sync", "init", "mem"})
    example.kernel(spec.kernel).launch(spec.grid, spec.block, spec.arguments(), spec.shared, observer=session)
    assert session.errors() == 0, session.report()


def test_lanes_of_one_warp_race_without_syncwarp_on_sm70_and_later(module):
    session, report, _ = check(module, "warp_exchange_race", 1, 32, [ints(32), np.zeros(32, np.int32)], {"race"})
    # lane t reads the 4 bytes of s[t ^ 1], written by its neighbour lane: 128 hazards, all inside warp 0,
    # so a warning (warp-synchronous code), which leaves the error count at 0
    assert session.race.hazards == 32 * 4
    assert "Warning: Race reported between Write access" in report and "(0 errors, 1 warning)" in report
    assert session.errors() == 0 and session.warnings() == 1
    session, _, _ = check(module, "warp_exchange_race", 1, 32, [ints(32), np.zeros(32, np.int32)], {"race"},
                          arch="sm_60")
    assert session.race.hazards == 0


def test_unsynchronised_global_read_modify_write_races_between_warps(module):
    session, report, _ = check(module, "global_sum_race", 1, 64, [ints(64), np.zeros(1, np.int32)], {"race"})
    assert "Read access at global_sum_race+" in report and "and Write access at global_sum_race+" in report
    assert "on __global__ address 0x" in report and session.errors() == 2


def test_flags_with_fences_and_volatile_handshakes_are_not_races():
    fences = emulator.load(ROOT / "examples" / "fences" / "fences.ptx")
    for kernel in ("producerConsumerGlobal", "producerConsumerShared"):
        session = CheckSession({"race"})
        args = ([np.zeros(32, np.int32), np.zeros(1, np.int32), np.zeros(64, np.int32)]
                if kernel.endswith("Global") else [np.zeros(64, np.int32)])
        fences.kernel(kernel).launch(1, 64, args, observer=session)
        assert session.errors() == 0, session.report()


# ---- sync ----

def test_syncthreads_in_a_divergent_if_is_reported_on_sm90(module):
    session, report, error = check(module, "reduce_divergent_sync", 1, 256,
                                   [np.arange(256, dtype=np.float32), np.zeros(1, np.float32)], {"sync"})
    assert error is None
    assert "Barrier error detected. Divergent thread(s) in block." in report
    assert f"({cuda_line('__syncthreads();', after='if (t < i) {')})" in report
    # i = 128, 64, 32: whole warps skip the barrier while 128 + 64 + 32 threads wait at it;
    # i = 16 .. 1: part of warp 0 skips it while 16 + 8 + 4 + 2 + 1 threads wait
    assert "128 thread(s) of the block exited without reaching `bar.sync 0;`" in report
    assert "[224 threads]" in report and "Divergent thread(s) in warp." in report and "[31 threads]" in report
    assert session.errors() == 224 + 31


def test_divergent_reduction_deadlocks_with_per_warp_barriers(module):
    session, report, error = check(module, "reduce_divergent_sync", 1, 256,
                                   [np.arange(256, dtype=np.float32), np.zeros(1, np.float32)], {"sync"},
                                   arch="sm_60")
    assert error is not None and error.cuda_error == "GPUEMU_DEADLOCK"
    # i = 128: warps 0-3 wait at the barrier, warps 4-7 leave the loop and exit
    assert "warps 0-3 wait at the barrier at pc 24" in str(error) and "warps 4-7 exited" in str(error)
    assert f"({cuda_line('__syncthreads();', after='if (t < i) {')})" in str(error) and "(sm_60)" in str(error)
    assert "Barrier can never complete (deadlock)" in report and "needs every warp of the block" in report


def test_correct_reduction_completes_with_per_warp_barriers(module):
    out = np.zeros(1, np.float32)
    session, report, error = check(module, "reduce_ok", 1, 256, [np.arange(256, dtype=np.float32), out],
                                   {"sync", "race"}, arch="sm_60")
    assert error is None and session.errors() == 0 and out[0] == 255 * 256 / 2


def test_threads_released_from_different_syncthreads_are_divergent(module):
    out = np.zeros(64, np.int32)
    session, report, error = check(module, "barrier_in_both_branches", 1, 64, [out], {"sync"})
    # barrier 0 lets both warps through, so warp 1 reads what warp 0 stored and the other way round
    assert error is None and list(out) == [-t for t in range(32, 64)] + list(range(32))
    # one error for each of the 32 threads waiting at the first of the two barriers
    assert session.errors() == 32
    assert "one barrier released threads waiting at different instructions, e.g. thread (0,0,0) and " \
           "thread (32,0,0)" in report
    first = cuda_line("__syncthreads();", after="barrier_in_both_branches")
    second = cuda_line("__syncthreads();", after="s[t] = -t;")
    assert f"({first})" in report and f"({second})" in report


def test_barrier_thread_counts_must_be_whole_warps_and_reachable(module):
    _, report, error = check(module, "bar_count", 1, 64, [np.zeros(64, np.int32), np.int32(48)], {"sync"})
    assert error.cuda_error == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
    assert "Barrier error detected. Invalid arguments." in report
    assert "thread count 48 is not a multiple of the warp size (32)" in report
    session, _, error = check(module, "bar_count", 1, 64, [np.zeros(64, np.int32), np.int32(64)], {"sync"})
    assert error is None and session.errors() == 0
    _, report, error = check(module, "bar_count", 1, 64, [np.zeros(64, np.int32), np.int32(128)], {"sync"})
    assert error.cuda_error == "GPUEMU_DEADLOCK"
    assert "thread count 128 is more than the 64 threads of the block" in report
    assert "64 thread(s) wait at `bar.sync 1, %r1;`, which needs 128 threads" in report


def test_warp_sync_masks_must_name_the_caller_and_lanes_that_are_there(module):
    session, report, _ = check(module, "shfl_in_divergent_if", 1, 32, [ints(32), np.zeros(32, np.int32)], {"sync"})
    assert "Barrier error detected. Divergent thread(s) in warp." in report and session.errors() == 16
    assert "membermask 0xffffffff names lanes 16-31 that do not execute this instruction with lane 0" in report
    session, report, _ = check(module, "syncwarp_without_caller", 1, 32, [np.zeros(32, np.int32)], {"sync"})
    assert "Barrier error detected. Invalid arguments." in report
    assert "membermask 0xfffffffe does not include lane 0" in report
    # lane 0 leaves itself out of the bar.warp.sync that all 32 lanes execute: the whole call is invalid
    assert session.errors() == 32
    session, report, _ = check(module, "shfl_converged", 1, 64, [ints(64), np.zeros(64, np.int32)], {"sync"})
    assert session.errors() == 0, report


def test_masks_may_name_exited_lanes_from_sm70_on(module):
    # vote.sync waits for the non-exited lanes of its mask (PTX ISA); before sm_70 every lane of the
    # mask must execute it, and lanes 16-31 have returned
    args = [ints(32), np.zeros(32, np.int32)]
    session, report, _ = check(module, "vote_names_exited_lanes", 1, 32, args, {"sync"})
    assert session.errors() == 0, report
    session, report, _ = check(module, "vote_names_exited_lanes", 1, 32, args, {"sync"}, arch="sm_60")
    assert "membermask 0xffffffff names lanes 16-31, which have exited" in report and session.errors() == 16


def test_a_spin_loop_that_never_ends_is_a_livelock_naming_every_warp(module):
    session, _, error = check(module, "spin_forever", 1, 64, [np.zeros(1, np.int32), np.zeros(64, np.int32)],
                              {"sync"})
    assert error.cuda_error == "GPUEMU_LIVELOCK"
    assert "warp 0 is at pc 7" in str(error) and "warp 1 exited" in str(error)
    assert f"({cuda_line('while (*flag == 0)')})" in str(error)
    out = np.zeros(64, np.int32)
    session, _, error = check(module, "spin_until_set", 1, 64, [np.zeros(1, np.int32), out], {"sync", "race"})
    assert error is None and (out[:32] == 7).all() and session.errors() == 0




def test_a_loop_that_only_counts_is_no_livelock_but_runs_into_the_step_limit():
    # the counter reaches -5 only after 2**32 - 5 iterations: the loop ends, so it is no livelock (a livelock
    # verdict needs the whole state to come back), and the step limit stops it
    with pytest.raises(DeviceError) as info:
        emulator.load(COUNT_FOREVER).kernel("count_forever").launch(1, 32, [], spin_limit=50, max_steps=20_000)
    assert info.value.cuda_error == "GPUEMU_STEP_LIMIT"


COUNT_TO_60000 = COUNT_FOREVER.replace("count_forever()", "count_to(.param .u64 out)").replace(
    "setp.ne.s32 %p1, %r1, -5;", "setp.ne.s32 %p1, %r1, 60000;").replace(
    "    ret;", "    .reg .b64 %rd<2>;\n    ld.param.u64 %rd1, [out];\n    cvta.to.global.u64 %rd1, %rd1;\n"
           "    st.global.u32 [%rd1], %r1;\n    ret;")


def test_a_long_loop_that_only_changes_registers_finishes():
    # an H100 runs a register-only loop of any length to its end; 60,000 iterations are 1,200 spin checks
    out = np.zeros(1, np.uint32)
    emulator.load(COUNT_TO_60000).kernel("count_to").launch(1, 1, [out], spin_limit=50)
    assert out[0] == 60000


@pytest.mark.parametrize("engine", ["interpreter", "compiled"])
def test_a_loop_whose_counter_lives_in_local_memory_is_no_livelock(engine):
    # 40,000 iterations are 4 checks at the default spin limit of 10,000; pcs and registers repeat at every
    # check, only the local bytes change, so the loop must run to its end
    iterations = 40_000
    out = np.zeros(2, np.uint32)
    emulator.load(ROOT / "tests" / "kernels" / "local_counter.ptx").kernel("local_counter").launch(
        1, 1, [out, np.uint32(iterations)], engine=engine)
    running_hash = 0
    for count in range(1, iterations + 1):
        running_hash = (running_hash * 3 + count) % 2**32
    assert out.tolist() == [iterations, running_hash]


# ---- init ----

def test_reads_of_shared_memory_nothing_wrote(module):
    session, report, _ = check(module, "uninit_shared_read", 1, 64, [np.zeros(64, np.int32)], {"init"})
    # out[t] = s[63 - t] and only s[0..31] were written: threads 0..31 read garbage
    assert "Uninitialized __shared__ memory read of size 4 bytes" in report and "[32 accesses]" in report
    assert session.errors() == 32
    assert "by thread (0,0,0) in block (0,0,0)" in report and f"({cuda_line('out[t] = s[63 - t];')})" in report
    session, report, _ = check(module, "init_shared_read", 1, 64, [np.zeros(64, np.int32)], {"init"})
    assert session.errors() == 0, report


def test_reads_of_local_memory_nothing_wrote(module):
    session, report, _ = check(module, "uninit_local_read", 1, 32, [ints(32), np.zeros(32, np.int32), np.int32(8)],
                               {"init"})
    # a[0..7] filled, lane t reads a[t & 15]: lanes 8-15 and 24-31 read unwritten words
    assert "Uninitialized __local__ memory read of size 4 bytes" in report and "[16 accesses]" in report
    assert "by thread (8,0,0)" in report
    session, _, _ = check(module, "uninit_local_read", 1, 32, [ints(32), np.zeros(32, np.int32), np.int32(16)],
                          {"init"})
    assert session.errors() == 0


# ---- mem ----

def test_every_invalid_access_is_listed_with_check_mem(module):
    session, report, error = check(module, "oob_write", 2, 64, [np.zeros(100, np.int32), np.int32(100)], {"mem"})
    # 128 threads write out[i] for a 100-element buffer: i = 100..127 are out of bounds
    assert error.cuda_error == "CUDA_ERROR_ILLEGAL_ADDRESS" and session.mem.total == 28
    assert report.count("Invalid __global__ write of size 4 bytes") == 28
    assert "by thread (36,0,0) in block (1,0,0)" in report and "is 1 bytes after the nearest allocation" in report
    assert "28 invalid memory accesses" in str(error)
    session, _, error = check(module, "bounded_write", 2, 64, [np.zeros(100, np.int32), np.int32(100)], {"mem"})
    assert error is None and session.errors() == 0


def test_misaligned_shared_access_is_named(module):
    _, report, error = check(module, "misaligned_shared", 1, 32, [np.zeros(32, np.float32)], {"mem"}, shared=512)
    # floats start at byte 254 after the 1 KB the driver reserves (the H100 reports 0x4fe): every lane's 4-byte
    # access is misaligned, at the store and at the load
    assert error.cuda_error == "CUDA_ERROR_MISALIGNED_ADDRESS"
    assert report.count("Invalid __shared__ write of size 4 bytes") == 32 and "Access to 0x4fe is misaligned" in report
    session, _, error = check(module, "aligned_shared", 1, 32, [np.zeros(32, np.float32)], {"mem"}, shared=512)
    assert error is None and session.errors() == 0


# ---- schedules ----

def test_round_robin_and_random_schedules_keep_results_and_reconverge():
    machine = emulator.load(ROOT / "tests" / "kernels" / "machine.ptx")
    for policy in (RoundRobin(), RandomSchedule(3)):
        lock, counter, order = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(32, -1, np.int32)
        machine.kernel("warp_spinlock").launch(1, 32, [lock, counter, order], policy=policy)
        assert counter[0] == 32 and sorted(order) == list(range(32))
    data, out = np.arange(256, dtype=np.int32), np.zeros(8, np.int32)
    machine.kernel("shfl_reduce").launch(2, 128, [data, out], policy=RandomSchedule(5))
    assert np.array_equal(out, data.reshape(8, 32).sum(axis=1))


def test_float_atomics_depend_on_the_warp_order(module):
    # warp 0 adds 1e8, warp 1 adds 1, warp 2 adds -1e8: 1e8 + 1 and -1e8 + 1 round back to +-1e8 in
    # float32, so the sum is 1 when warp 1 adds last and 0 otherwise
    values = np.zeros(128, np.float32)
    values[[0, 32, 64]] = [1e8, 1.0, -1e8]
    results = []
    for seed in range(12):
        total = np.zeros(1, np.float32)
        module.kernel("float_atomic_sum").launch(1, 128, [values, total], policy=RandomSchedule(seed))
        results.append((seed, [(1, total)], None))
    sums = {float(total[0]) for _, [(_, total)], _ in results}
    assert sums == {0.0, 1.0}
    outcome = compare_outputs(results)
    assert not outcome["identical"] and outcome["distinct_results"] == 2


def test_random_schedules_reorder_far_apart_warps_of_a_large_grid(module):
    # as above, over 64 blocks: warps 0, 100 and 200 add 1e8, 1 and -1e8, every other lane 0; the sum is 1 only
    # when warp 100 adds after both others, which index order (lockstep, or warps run together) never gives
    values = np.zeros(64 * 128, np.float32)
    values[[0, 100 * 32, 200 * 32]] = [1e8, 1.0, -1e8]
    kernel = module.kernel("float_atomic_sum")

    def total(policy):
        result = np.zeros(1, np.float32)
        stats = kernel.launch(64, 128, [values, result], policy=policy)
        return float(result[0]), stats.steps
    assert total(None)[0] == 0.0
    runs = {seed: total(RandomSchedule(seed)) for seed in range(40)}
    assert {result for result, _ in runs.values()} == {0.0, 1.0}
    assert all(total(RandomSchedule(seed)) == runs[seed] for seed in (0, 1, 2))


LAST_WRITER = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry last_writer(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  st.global.u32 [%rd2], %r2;
  ret;
}
"""


def test_random_schedules_draw_which_warp_of_a_block_stores_last():
    # every thread stores its warp number to one word: the last warp to store wins. Warps that reach the store
    # together run in index order (lockstep's answer is always warp 7); random schedules let any warp be last
    kernel = emulator.load(LAST_WRITER).kernel("last_writer")
    out = np.zeros(1, np.uint32)
    kernel.launch(1, 256, [out])
    assert out[0] == 7
    winners = []
    for seed in range(40):
        out = np.zeros(1, np.uint32)
        kernel.launch(1, 256, [out], policy=RandomSchedule(seed))
        winners.append(int(out[0]))
    counts = np.bincount(winners, minlength=8)
    assert len(counts) == 8 and np.count_nonzero(counts) >= 6 and counts[7] < len(winners), counts


def test_random_schedule_runs_many_warps_per_scheduler_step_on_a_large_grid():
    # one warp-instruction per scheduler step made a random schedule's cost per instruction grow with the grid
    kernel = emulator.load(ROOT / "examples" / "vecadd" / "vecadd.ptx").kernel("vecadd")
    n = 196 * 256
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    lockstep = kernel.launch(196, 256, [a, b, np.zeros(n, np.float32), np.int32(n)])
    for seed in range(5):
        c = np.zeros(n, np.float32)
        stats = kernel.launch(196, 256, [a, b, c, np.int32(n)], policy=RandomSchedule(seed))
        assert np.array_equal(c, a + b)
        assert stats.warp_instructions == lockstep.warp_instructions and stats.steps * 8 <= stats.warp_instructions, seed


def test_random_turns_of_several_instructions_keep_shuffles_and_intra_warp_locks_correct():
    machine = emulator.load(ROOT / "tests" / "kernels" / "machine.ptx")
    data = np.arange(1024, dtype=np.int32)
    for seed in range(8):
        out = np.zeros(32, np.int32)
        machine.kernel("shfl_reduce").launch(8, 128, [data, out], policy=RandomSchedule(seed))
        assert np.array_equal(out, data.reshape(32, 32).sum(axis=1)), seed
        lock, counter, order = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(32, -1, np.int32)
        machine.kernel("warp_spinlock").launch(1, 32, [lock, counter, order], policy=RandomSchedule(seed))
        assert counter[0] == 32 and sorted(order) == list(range(32)), seed


# ---- command line ----

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "emulator", "run", str(CHECKS), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_reports_and_fails_on_findings_and_stays_quiet_on_twins(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.int32))
    args = ["--grid", "1", "--block", "64", "--arg", f"@{tmp_path / 'in.npy'}", "--arg", "zeros:i32:64"]
    faulty = run_cli("--kernel", "shared_race", *args, "--check", "race,sync,init", "--out", tmp_path / "faulty")
    assert faulty.returncode == 1 and "Race reported between" in faulty.stderr and "Traceback" not in faulty.stderr
    assert faulty.stderr.strip().splitlines()[-1].startswith("gpuemu: error: 1 error found by --check")
    clean = run_cli("--kernel", "shared_race_fixed", *args, "--check", "all", "--out", tmp_path / "clean")
    assert clean.returncode == 0 and "ERROR SUMMARY: 0 errors" in clean.stderr
    assert (np.load(tmp_path / "clean" / "arg1.npy") == (np.arange(64) + 1) % 64).all()
    kept = run_cli("--kernel", "shared_race", *args, "--check", "race", "--error-exitcode", "0",
                   "--out", tmp_path / "kept")
    assert kept.returncode == 0 and (tmp_path / "kept" / "arg1.npy").exists()


def test_cli_deadlock_livelock_and_fault_are_one_line_errors(tmp_path):
    np.save(tmp_path / "f.npy", np.arange(256, dtype=np.float32))
    deadlock = run_cli("--kernel", "reduce_divergent_sync", "--grid", "1", "--block", "256", "--arg",
                       f"@{tmp_path / 'f.npy'}", "--arg", "zeros:f32:1", "--arch", "sm_60")
    assert deadlock.returncode == 4 and len(deadlock.stderr.strip().splitlines()) == 1
    assert "GPUEMU_DEADLOCK" in deadlock.stderr and "warps 0-3 wait at the barrier" in deadlock.stderr
    livelock = run_cli("--kernel", "spin_forever", "--grid", "1", "--block", "64", "--arg", "zeros:i32:1",
                       "--arg", "zeros:i32:64", "--spin-limit", "500")
    assert livelock.returncode == 4 and "GPUEMU_LIVELOCK" in livelock.stderr and "over 500 loop" in livelock.stderr
    fault = run_cli("--kernel", "oob_write", "--grid", "2", "--block", "64", "--arg", "zeros:i32:100",
                    "--arg", "i32:100")
    assert fault.returncode == 4 and len(fault.stderr.strip().splitlines()) == 1
    assert "block (1,0,0), thread (36,0,0)" in fault.stderr
    listed = run_cli("--kernel", "oob_write", "--grid", "2", "--block", "64", "--arg", "zeros:i32:100",
                     "--arg", "i32:100", "--check", "mem", "--max-errors", "2")
    assert listed.returncode == 4 and listed.stderr.count("Invalid __global__ write") == 2
    assert "ERROR SUMMARY: 26 errors were not printed. Use --max-errors option" in listed.stderr


def test_cli_repeat_reports_schedule_dependent_outputs(tmp_path):
    np.save(tmp_path / "f.npy", order_dependent_floats())
    np.save(tmp_path / "i.npy", np.arange(128, dtype=np.int32))
    common = ["--grid", "1", "--block", "128", "--schedule", "random", "--repeat", "6"]
    differs = run_cli("--kernel", "float_atomic_sum", *common, "--arg", f"@{tmp_path / 'f.npy'}", "--arg",
                      "zeros:f32:1")
    assert differs.returncode == 1 and "outputs differ between schedules" in differs.stderr
    same = run_cli("--kernel", "int_atomic_sum", *common, "--arg", f"@{tmp_path / 'i.npy'}", "--arg", "zeros:i32:1")
    assert same.returncode == 0 and "outputs identical under 6 random schedules (seeds 0-5)" in same.stderr


def test_cli_rejects_bad_check_options_in_one_line():
    base = ["--kernel", "reduce_ok", "--grid", "1", "--block", "32", "--arg", "zeros:f32:32", "--arg", "zeros:f32:1"]
    for extra, fragment in ((["--check", "speed"], "unknown checker 'speed'"),
                            (["--arch", "volta"], "architecture 'volta' is not sm_NN"),
                            (["--repeat", "3"], "--repeat runs random schedules"),
                            (["--schedule", "sideways"], "invalid choice")):
        result = run_cli(*base, *extra)
        assert result.returncode == 2 and fragment in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_uninitialized_argument_reads_are_reported(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.int32))
    result = run_cli("--kernel", "shared_race_fixed", "--grid", "1", "--block", "64", "--arg",
                     f"@{tmp_path / 'in.npy'}", "--arg", "zeros:i32:64", "--check", "init", "--uninitialized-arg", "0")
    # all 64 threads read in[t] of the buffer declared never written
    assert result.returncode == 1 and "Uninitialized __global__ memory read of size 4 bytes" in result.stderr
    assert "[64 accesses]" in result.stderr


def test_repeated_schedules_do_not_print_the_kernels_printf_output_again():
    command = [sys.executable, "-m", "emulator", "run", str(ROOT / "examples" / "printf" / "printf.ptx"), "--kernel",
               "printValues", "--grid", "2", "--block", "4", "--arg", "f32:1.5", "--schedule", "random"]
    once = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    repeated = subprocess.run(command + ["--repeat", "3"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert once.returncode == repeated.returncode == 0, repeated.stderr
    assert len(once.stdout.splitlines()) == 8 and repeated.stdout == once.stdout


FERMI_RETURN32ONE = [str(ROOT / "examples" / "sass" / "return32one.sm_20.sass"), "--kernel", "Return32One", "--grid",
                     "1", "--block", "64", "--shared", "256", "--arg", "zeros:i32:1", "--arg", "zeros:i32:64",
                     "--arg", f"@{ROOT / 'examples' / 'sass' / 'inputs' / 'pIn.npy'}"]


def test_random_schedules_run_a_fermi_listing_as_fermi_with_the_lockstep_result(tmp_path):
    # the listing's sm_20 warps reconverge as warps; scheduling its lanes as sm_90's independent groups deadlocked
    def run(*extra):
        out = tmp_path / "-".join(extra or ("lockstep",))
        result = subprocess.run([sys.executable, "-m", "emulator", "run", *FERMI_RETURN32ONE, "--out", str(out),
                                 *extra], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert result.returncode == 0, result.stderr
        return np.load(out / "arg1.npy")
    want = run()
    for seed in range(3):
        assert np.array_equal(run("--schedule", "random", "--seed", str(seed)), want)


@pytest.mark.parametrize("arch, fragment", [("sm_90", "this SASS listing is sm_20 code"),
                                            ("sm_0", "is not sm_NN")])
def test_arch_other_than_a_sass_listings_own_or_not_an_architecture_is_refused(arch, fragment):
    result = subprocess.run([sys.executable, "-m", "emulator", "run", *FERMI_RETURN32ONE, "--arch", arch],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2 and fragment in result.stderr and result.stderr.count("\n") == 1


def test_syncwarp_reached_apart_waits_for_every_lane_and_synccheck_is_silent():
    # lane 0 loops 200 times under a lock while lanes 1-31 already sit at __syncwarp; from sm_70 bar.warp.sync
    # waits for the lanes of its mask, so each lane reads the whole count after it (CUDA's __syncwarp
    # guarantees the ordering); compute-sanitizer's synccheck reports nothing here
    module = emulator.load(ROOT / "tests" / "kernels" / "syncwarp.ptx")
    out = np.zeros(32, np.int32)
    session, report, error = check(module, "lock_then_syncwarp", 1, 32,
                                   [np.zeros(1, np.int32), np.zeros(1, np.int32), out], {"sync", "race"})
    assert error is None and session.errors() == 0, report
    assert (out == 200).all()


def test_syncwarp_reached_apart_by_two_warps_matches_the_h100():
    # the H100 (three runs, and one under synccheck: tests/sanitizer/lock_then_syncwarp.synccheck.txt, 0 errors) at
    # block 64: the counter ends at 400, every lane of a warp reads one value, the warp that took the lock second
    # reads 400 and the first at least its own 200 (200 in the plain runs, 206 under the sanitizer)
    module = emulator.load(ROOT / "tests" / "kernels" / "syncwarp.ptx")
    counter, out = np.zeros(1, np.int32), np.zeros(64, np.int32)
    session, report, error = check(module, "lock_then_syncwarp", 1, 64, [np.zeros(1, np.int32), counter, out],
                                   {"sync"})
    assert error is None and session.errors() == 0, report
    assert counter[0] == 400
    warps = [set(out[:32].tolist()), set(out[32:].tolist())]
    assert all(len(values) == 1 for values in warps)
    assert sorted(value for values in warps for value in values)[1] == 400
    assert all(200 <= value <= 400 for values in warps for value in values)

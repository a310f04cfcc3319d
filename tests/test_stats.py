"""--stats counters: each counting rule on hand-made access patterns, the seed's transposes against the H100,
and every example whose PTX memory instructions map one-to-one onto SASS against Nsight Compute on the H100."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.runtime.module import Device
from emulator.memory import c_core_available
from emulator.runtime.spec import read_launches
from emulator.memory import Memory
from emulator.observers.stats import (MemoryStats, count_contention, count_distinct, count_sectors, count_wavefronts,
    interleaved_local)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FULL = 0xFFFFFFFF

PATTERNS = ROOT / "tests" / "stats_patterns"   # made by make_patterns.py; the same launches run on the H100
SHARED_LD, SHARED_V2, SHARED_V4 = "shared_ld_u32", "shared_ld_v2", "shared_ld_v4"


def counters(kernel, *, stride=4, offset=0, mask=FULL, block=32, bank_bytes=4, backend="auto"):
    """Kernel totals of one launch of a patterns.ptx kernel: thread t accesses byte t * stride + offset
    of its space where bit (t % 32) of mask is set."""
    module = emulator.load(PATTERNS / "patterns.ptx", device=Device(backend=backend))
    stats = MemoryStats(bank_bytes)
    args = [np.zeros(64, np.uint32), np.zeros(1 << 14, np.uint8), np.uint32(stride), np.uint32(offset),
            np.uint32(mask)]
    module.kernel(kernel).launch(1, block, args, observer=stats)
    return stats.kernel_counters()


def shared(kind, result):
    return (result[f"shared_{kind}_requests"], result[f"shared_{kind}_transactions"],
            result[f"shared_{kind}_bank_conflicts"])


# ---- shared memory: 32 banks of 4 bytes, broadcast, phases for 8/16-byte accesses ----

@pytest.mark.parametrize("kernel, stride, mask, block, want", [
    (SHARED_LD, 4, FULL, 32, (1, 1, 0)),            # stride 1 word: every lane its own bank
    (SHARED_LD, 8, FULL, 32, (1, 2, 1)),            # stride 2 words: two words per bank
    (SHARED_LD, 128, FULL, 32, (1, 32, 31)),        # stride 32 words: all lanes in one bank
    (SHARED_LD, 132, FULL, 32, (1, 1, 0)),          # stride 33 words: the padded column
    (SHARED_LD, 0, FULL, 32, (1, 1, 0)),            # one word: broadcast
    (SHARED_LD, 64, FULL, 32, (1, 16, 15)),         # stride 16 words: 16 words in bank 0, 16 in bank 16
    (SHARED_V2, 8, FULL, 32, (1, 2, 0)),            # 8-byte lanes: two half-warp phases of 128 bytes
    (SHARED_V2, 16, FULL, 32, (1, 4, 2)),           # 8 bytes every 16: each phase spans 256 bytes
    (SHARED_V4, 16, FULL, 32, (1, 4, 0)),           # 16-byte lanes: four quarter-warp phases
    (SHARED_V4, 32, FULL, 32, (1, 8, 4)),           # 16 bytes every 32: each phase spans 256 bytes
    (SHARED_LD, 4, FULL, 48, (2, 2, 0)),            # partial warp: 16 lanes still make a request
    (SHARED_LD, 8, 0x55555555, 32, (1, 2, 1)),      # even lanes only: words 0,4,..,60 fill 8 banks twice
    (SHARED_LD, 128, 0x0000000F, 32, (1, 4, 3)),    # four active lanes in one bank
    (SHARED_V2, 8, 0x0000FFFF, 32, (1, 1, 0)),      # only the first phase has lanes
    (SHARED_LD, 4, 0, 32, (0, 0, 0)),               # no active lane: no request
])
def test_shared_load_wavefronts_and_conflicts(kernel, stride, mask, block, want):
    assert shared("load", counters(kernel, stride=stride, mask=mask, block=block)) == want


def test_shared_stores_follow_the_same_bank_rules():
    assert shared("store", counters("shared_st_u32", stride=128)) == (1, 32, 31)
    assert shared("store", counters("shared_st_u32", stride=132)) == (1, 1, 0)


@pytest.mark.parametrize("stride, want", [
    (4, (1, 1, 0)),        # two lanes per 8-byte word, 16 banks
    (8, (1, 1, 0)),        # one 8-byte word per bank
    (128, (1, 16, 15)),    # 8-byte words 16k: banks 0 and 16, sixteen words each
    (256, (1, 32, 31)),    # 8-byte words 32k: all in bank 0
])
def test_kepler_eight_byte_bank_mode(stride, want):
    assert shared("load", counters(SHARED_LD, stride=stride, bank_bytes=8)) == want


def test_generic_accesses_count_in_the_space_they_resolve_to():
    result = counters("generic_ld_u32", stride=128)
    assert shared("load", result) == (1, 32, 31)
    assert result["global_load_requests"] == 0


def test_shared_atomics_that_return_the_old_value_serialise_lanes_on_one_word():
    # shared_atom_one_word on the H100 (tests/stats_patterns): 32 wavefronts, 31 conflicts
    result = counters("shared_atom", stride=0)
    assert shared("atomic", result) == (1, 32, 31)
    assert result["shared_atomic_contention"] == 32 and result["shared_atomic_max_contention"] == 32
    spread = counters("shared_atom", stride=4)
    assert shared("atomic", spread) == (1, 1, 0) and spread["shared_atomic_max_contention"] == 1


UNUSED_RESULT_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<2>;
.shared .align 4 .b32 s[32];
mov.u32 %r1, s;
atom.shared.add.u32 %r2, [%r1], 1;
atom.shared.add.u32 %r3, [%r1], 1;
ld.param.u64 %rd1, [out];
st.global.u32 [%rd1], %r3;
ret;
}
"""


def test_atomics_whose_old_value_goes_unused_share_a_wavefront_per_word():
    # ptxas makes an unused-result atomicAdd(p, 1) an ATOMS.POPC.INC (histogram.sm_90.sass), whose
    # lanes on one word cost one wavefront (histogram's ncu.json); a used result serialises them
    module = emulator.load(UNUSED_RESULT_PTX)
    stats = MemoryStats()
    module.kernel("k").launch(1, 32, [np.zeros(1, np.uint32)], observer=stats)
    per_line = {pc: stats.access[(pc, "shared_atomic")][1] for pc, kind in stats.access if kind == "shared_atomic"}
    assert sorted(per_line.values()) == [1, 32]
    assert per_line[min(per_line)] == 1


@pytest.mark.parametrize("backend", ["c", "numpy"] if c_core_available() else ["numpy"])
@pytest.mark.parametrize("stride, mask, want", [
    (8, FULL, (1, 2, 1)),               # words 0, 2, .., 62: banks 0, 2, .., 30 hold two words each
    (128, FULL, (1, 32, 31)),           # every lane its own word of bank 0 (the H100: 32 wavefronts)
    (128, 0x0000000F, (1, 4, 3)),       # four lanes in bank 0
])
def test_shared_atomics_on_distinct_words_serialise_per_bank(backend, stride, mask, want):
    result = counters("shared_atom", stride=stride, mask=mask, backend=backend)
    assert shared("atomic", result) == want
    assert result["shared_atomic_max_contention"] == 1


# ---- global memory: 32-byte sectors, bytes requested / bytes moved ----

@pytest.mark.parametrize("kernel, stride, offset, mask, block, want", [
    ("global_ld_u32", 4, 0, FULL, 32, (1, 4, 100.0)),
    ("global_ld_u32", 4, 4, FULL, 32, (1, 5, 80.0)),      # misaligned by one word: 5 sectors
    ("global_ld_u32", 128, 0, FULL, 64, (2, 64, 12.5)),   # hardware-facts.md: 2 requests, 64 sectors
    ("global_ld_u8", 1, 0, FULL, 32, (1, 1, 100.0)),
    ("global_ld_u8", 1, 16, FULL, 32, (1, 2, 50.0)),      # 32 bytes straddling two sectors
    ("global_ld_u64", 8, 0, FULL, 32, (1, 8, 100.0)),
    ("global_ld_v4", 16, 0, FULL, 32, (1, 16, 100.0)),
    ("global_ld_u32", 0, 0, FULL, 32, (1, 1, 400.0)),     # broadcast: 128 bytes asked, 32 moved
    ("global_ld_u32", 4, 0, 0x000000FF, 32, (1, 1, 100.0)),
    ("global_ld_u32", 4, 0, FULL, 48, (2, 6, 100.0)),
])
def test_global_load_sectors_and_efficiency(kernel, stride, offset, mask, block, want):
    result = counters(kernel, stride=stride, offset=offset, mask=mask, block=block)
    assert (result["global_load_requests"], result["global_load_sectors"], result["gld_efficiency"]) == want


def test_global_stores_and_atomics():
    store = counters("global_st_u32", stride=4)
    assert (store["global_store_requests"], store["global_store_sectors"], store["gst_efficiency"]) == (1, 4, 100.0)
    atomic = counters("global_atom", stride=0)
    assert (atomic["global_atomic_requests"], atomic["global_atomic_sectors"]) == (1, 1)
    assert atomic["global_atomic_contention"] == 32
    reduction = counters("global_red", stride=4)
    assert (reduction["global_atomic_requests"], reduction["global_atomic_sectors"]) == (1, 4)


# ---- local, constant, parameters ----

def test_local_memory_interleaves_lanes_by_32_bit_word():
    # Consecutive lanes own consecutive words (CUDA programming guide); the localarray example confirms
    # it against the H100 below. A 64-bit access touches two words 128 bytes apart: two rows, two
    # requests (the H100 counts each LDL.64 of localarray as two requests).
    word = counters("local_ld_u32", stride=0)
    assert (word["local_load_requests"], word["local_load_sectors"]) == (1, 4)
    double = counters("local_ld_u64", stride=0)
    assert (double["local_load_requests"], double["local_load_sectors"]) == (2, 8)
    # the kernel first stores one word at offset 0 from every lane (4 sectors), then half the warp stores
    store = counters("local_st_u32", stride=0, mask=0x0000FFFF)
    assert (store["local_store_requests"], store["local_store_sectors"]) == (2, 4 + 2)


def test_constant_loads_serialise_over_distinct_addresses():
    same = counters("const_ld_u32", stride=0)
    assert (same["constant_load_requests"], same["constant_load_transactions"]) == (1, 1)
    spread = counters("const_ld_u32", stride=4)
    assert (spread["constant_load_requests"], spread["constant_load_transactions"]) == (1, 32)
    assert spread["global_load_requests"] == 0


def test_parameter_reads_are_constant_bank_reads_not_global_requests():
    result = counters("global_ld_u32")   # five ld.param: stride, offset, mask, data, out
    assert result["param_load_requests"] == 5 and result["global_load_requests"] == 1


# ---- instructions, divergence, barriers ----

DIVERGE_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry diverge()
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	setp.lt.u32 %p1, %r2, 16;
	@%p1 bra SKIP;
	add.u32 %r3, %r1, 1;
SKIP:
	bar.sync 0;
	ret;
}
"""


def test_divergent_branches_and_warp_execution_efficiency():
    stats = MemoryStats()
    emulator.load(DIVERGE_PTX).kernel("diverge").launch(1, 64, [], observer=stats)
    result = stats.kernel_counters()
    # per warp: mov, and, setp, bra, bar, ret with 32 lanes and add with 16 (lanes 16..31)
    assert result["warp_instructions"] == 2 * 7
    assert result["thread_instructions"] == 2 * (6 * 32 + 16)
    assert result["warp_execution_efficiency"] == pytest.approx(100 * 208 / 224)
    assert (result["branches"], result["divergent_branches"], result["branch_efficiency"]) == (2, 2, 0.0)
    assert result["barriers"] == 2


@pytest.mark.parametrize("backend", ["c", "numpy"] if c_core_available() else ["numpy"])
def test_only_warps_with_lanes_on_both_sides_of_a_branch_diverge(backend):
    # block 48: warp 0 splits at lane 16; warp 1 holds lanes 0..15 only, which all skip
    stats = MemoryStats()
    module = emulator.load(DIVERGE_PTX, device=Device(backend=backend))
    module.kernel("diverge").launch(3, 48, [], observer=stats)
    result = stats.kernel_counters()
    assert (result["branches"], result["divergent_branches"]) == (6, 3)


def test_partial_warps_lower_warp_execution_efficiency():
    result = counters(SHARED_LD, block=48)
    assert result["warp_execution_efficiency"] == pytest.approx(75.0)


@pytest.mark.skipif(not c_core_available(), reason="the C memory core is not built")
def test_both_memory_backends_count_the_same():
    for kernel, stride in ((SHARED_V2, 16), ("global_ld_u32", 36), ("local_ld_u64", 8),
                           ("shared_atom", 0), ("const_ld_u32", 8)):
        assert counters(kernel, stride=stride, block=48, backend="c") == \
            counters(kernel, stride=stride, block=48, backend="numpy")


def _patterns(width: int, rng):
    """Warp address patterns (6 warps of 32 lanes, width-aligned): every warp its own shape."""
    lane = np.arange(32, dtype=np.uint64)
    w = np.uint64(width)
    shapes = [lane * w, lane * w * np.uint64(2), lane * np.uint64(128), lane * np.uint64(132 // width * width),
              np.zeros(32, np.uint64), (lane % np.uint64(16)) * w, (lane // np.uint64(16)) * np.uint64(64),
              (np.uint64(31) - lane) * w, rng.permutation(32).astype(np.uint64) * w,
              rng.integers(0, 4096 // width, 32).astype(np.uint64) * w, lane * w + w * np.uint64(3)]
    for start in range(0, len(shapes), 2):
        rows = [shapes[(start + k) % len(shapes)] + np.uint64(k * 512) for k in range(6)]
        yield np.concatenate(rows)
    ascending = [0, 1, 2, 3, 4, 6, 10]
    yield np.concatenate([shapes[index] + np.uint64(k * 4096) for k, index in enumerate(ascending)])
    yield np.concatenate([shapes[4] + np.uint64(k * 96) for k in range(5)])
    yield np.concatenate([shapes[index] + np.uint64(k * 4096) for k, index in enumerate((0, 1, 2, 3, 10))])


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
def test_whole_warp_shortcuts_agree_with_the_memory_core(width):
    memory, rng = Memory(), np.random.default_rng(width)
    for addresses in _patterns(width, rng):
        threads = np.arange(len(addresses), dtype=np.int64) + 64
        for lanes in (None, threads, threads[threads % 3 != 0]):
            picked = addresses if lanes is None or len(lanes) == len(addresses) else addresses[threads % 3 != 0]
            for bank_bytes in (4, 8):
                warps, counts = memory.shared_wavefronts(picked, lanes, width, bank_bytes)
                assert count_wavefronts(memory, picked, lanes, width, bank_bytes) == (len(warps), counts.sum())
            warps, counts = memory.global_sectors(picked, lanes, width)
            assert count_sectors(memory, picked, lanes, width) == (len(warps), counts.sum())
            warps, counts = memory.global_sectors(*interleaved_local(picked, lanes, width))
            assert count_sectors(memory, picked, lanes, width, local=True) == (len(warps), counts.sum())
            warps, counts = memory.distinct_addresses(picked, lanes)
            assert count_distinct(memory, picked, lanes) == (len(warps), counts.sum())
            _, same = memory.max_same_address(picked, lanes)
            assert count_contention(memory, picked, lanes) == (same.sum(), same.max())


# ---- the examples against the H100 ----

NCU_NAMES = {
    "shared_load_requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_load_transactions": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_load_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "shared_store_transactions": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared_store_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "shared_atomic_requests": "smsp__sass_inst_executed_op_shared_atom.sum",
    "shared_atomic_transactions": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "shared_atomic_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "local_load_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "local_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "local_store_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "local_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
}
# Where ptxas changed the PTX memory instructions, the H100's counts are not the PTX's: say which.
SASS_DIFFERS = {
    ("matmul", "matmul"): {
        # 32 ld.shared.f32 per tile became 16 LDS + 4 LDS.128 (matmul.sm_90.sass): fewer, wider requests.
        "shared_load_requests": 256 * 8 * 16 * 32,
        "shared_load_transactions": None,
        "shared_load_bank_conflicts": None,
    },
}
NCU_LAUNCHES = sorted((path.parts[-4], path.parts[-2]) for path in EXAMPLES.glob("*/expected/*/ncu.json"))


def _launch(example: str, name: str) -> MemoryStats:
    spec = next(s for s in read_launches(EXAMPLES / example / "launches.json") if s.name == name)
    module = emulator.load(spec.ptx)
    for symbol, value in spec.constants().items():
        module.set_symbol(symbol, value)
    stats = MemoryStats()
    module.kernel(spec.kernel).launch(spec.grid, spec.block, spec.arguments(), spec.shared, observer=stats)
    return stats


@pytest.mark.parametrize("example, name", NCU_LAUNCHES, ids=[f"{e}/{n}" for e, n in NCU_LAUNCHES])
def test_counters_match_nsight_compute_on_the_h100(example, name):
    ncu = json.loads((EXAMPLES / example / "expected" / name / "ncu.json").read_text())
    result = _launch(example, name).kernel_counters()
    differs = SASS_DIFFERS.get((example, name), {})
    for ours, theirs in NCU_NAMES.items():
        if ours in differs:
            if differs[ours] is not None:
                assert result[ours] == differs[ours], ours
            continue
        assert result[ours] == ncu[theirs], f"{ours}: gpuemu {result[ours]}, H100 {ncu[theirs]}"
    atomics = ncu["l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"] + \
        ncu["l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"]
    atomic_sectors = ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"] + \
        ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"]
    assert (result["global_atomic_requests"], result["global_atomic_sectors"]) == (atomics, atomic_sectors)


PATTERN_LAUNCHES = read_launches(PATTERNS / "launches.json")
MEASURED_PATTERNS = [spec for spec in PATTERN_LAUNCHES if (spec.expected_dir / "ncu.json").exists()]
# ncu's shared request counters count executed SASS instructions: a warp whose lanes are all predicated
# off may count there although it moves nothing; generic loads may count as generic instructions.
INSTRUCTION_COUNTERS = {"shared_load_requests", "shared_store_requests", "shared_atomic_requests"}


@pytest.mark.skipif(not MEASURED_PATTERNS, reason="no H100 counters for tests/stats_patterns yet "
                                                  "(tests/stats_patterns/gpu.sh records them)")
@pytest.mark.parametrize("spec", MEASURED_PATTERNS, ids=[spec.name for spec in MEASURED_PATTERNS])
def test_hand_made_patterns_match_nsight_compute(spec):
    ncu = json.loads((spec.expected_dir / "ncu.json").read_text())
    module = emulator.load(spec.ptx)
    stats = MemoryStats()
    module.kernel(spec.kernel).launch(spec.grid, spec.block, spec.arguments(), spec.shared, observer=stats)
    result = stats.kernel_counters()
    for ours, theirs in NCU_NAMES.items():
        if theirs not in ncu:
            continue
        if ours in INSTRUCTION_COUNTERS and spec.name in ("shared_no_lane", "generic_shared_stride32"):
            assert ncu[theirs] in (0, 1) and result[ours] in (0, 1), ours
            continue
        assert result[ours] == ncu[theirs], f"{ours}: gpuemu {result[ours]}, H100 {ncu[theirs]}"


TRANSPOSES = {  # hardware-facts.md: ld requests, ld wavefronts, st requests, st wavefronts, ld/st conflicts
    "setRowReadRow": (32, 32, 32, 32, 0, 0),
    "setColReadCol": (32, 1024, 32, 1024, 992, 992),
    "setRowReadCol": (32, 1024, 32, 32, 992, 0),
    "setRowReadColDyn": (32, 1024, 32, 32, 992, 0),
    "setRowReadColIpad": (32, 32, 32, 32, 0, 0),
    "setRowReadColDynIpad": (32, 32, 32, 32, 0, 0),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_seed_transposes_match_hardware_facts(name):
    result = _launch("transpose", name).kernel_counters()
    got = tuple(result[key] for key in ("shared_load_requests", "shared_load_transactions", "shared_store_requests",
                                        "shared_store_transactions", "shared_load_bank_conflicts",
                                        "shared_store_bank_conflicts"))
    assert got == TRANSPOSES[name]
    assert (result["global_store_requests"], result["global_store_sectors"]) == (32, 128)


def test_per_line_counters_sum_to_the_kernel_and_name_the_cuda_line():
    stats = _launch("transpose", "setRowReadCol")
    lines = stats.line_counters()
    loads = [entry for entry in lines.values() if entry.get("shared_load_requests")]
    assert len(loads) == 1
    assert loads[0]["shared_load_transactions_per_request"] == 32.0 and loads[0]["source"] == "transpose.cu:33"
    assert sum(entry["warp_instructions"] for entry in lines.values()) == stats.kernel_counters()["warp_instructions"]


# ---- the command line ----

def gpuemu(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_run_stats_prints_a_table_and_fills_the_json(tmp_path):
    report = tmp_path / "stats.json"
    result = gpuemu("run", EXAMPLES / "transpose" / "transpose.ptx", "--kernel", "setRowReadCol", "--grid", "1",
                    "--block", "32,32", "--arg", "zeros:i32:1024", "--stats", "--json", report)
    assert result.returncode == 0, result.stderr
    shared_load = next(line for line in result.stdout.splitlines() if line.strip().startswith("shared load"))
    assert shared_load.split()[2:6] == ["32", "1,024", "32.00", "992"]
    data = json.loads(report.read_text())
    assert (data["shared_load_requests"], data["shared_load_transactions"], data["shared_load_bank_conflicts"],
            data["shared_load_transactions_per_request"]) == (32, 1024, 992, 32.0)
    assert (data["global_store_requests"], data["global_store_sectors"], data["gst_efficiency"]) == (32, 128, 100.0)
    assert any(entry.get("shared_load_bank_conflicts") == 992 for entry in data["lines"].values())


def test_bank_mode_8_halves_the_column_read_conflicts(tmp_path):
    report = tmp_path / "stats.json"
    result = gpuemu("run", EXAMPLES / "transpose" / "transpose.ptx", "--kernel", "setRowReadCol", "--grid", "1",
                    "--block", "32,32", "--arg", "zeros:i32:1024", "--bank-mode", "8", "--json", report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    # column j of tile[32][32] in 8-byte banks: words 16*i + j/2 fall into two banks, 16 words each
    assert (data["bank_mode"], data["shared_load_transactions"], data["shared_store_transactions"]) == (8, 512, 32)


def test_bad_bank_mode_is_one_line_with_status_2():
    result = gpuemu("run", EXAMPLES / "transpose" / "transpose.ptx", "--kernel", "setRowReadCol", "--grid", "1",
                    "--block", "32,32", "--arg", "zeros:i32:1024", "--bank-mode", "3")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "--bank-mode" in result.stderr and "Traceback" not in result.stderr


class _OneInstructionAtATime(MemoryStats):
    per_instruction = True


@pytest.mark.parametrize("example, name", [("dot", "dot"), ("collatz", "collatz"), ("transpose", "setRowReadCol")])
def test_counting_straight_line_runs_at_once_gives_the_per_instruction_counts(example, name):
    spec = next(s for s in read_launches(EXAMPLES / example / "launches.json") if s.name == name)
    results = []
    for observer in (MemoryStats(), _OneInstructionAtATime()):
        emulator.load(spec.ptx).kernel(spec.kernel).launch(spec.grid, spec.block, spec.arguments(), spec.shared,
                                                           observer=observer)
        results.append((observer.warp_count, observer.lane_count, observer.line_counters()))
    assert results[0] == results[1]
    assert sum(results[0][0]) > 0


def test_repeated_lanes_on_uniform_local_addresses_count_as_if_each_were_counted_afresh(monkeypatch):
    spec = next(s for s in read_launches(EXAMPLES / "localarray" / "launches.json") if s.name == "localarray_big")

    def count(reuse: bool):
        if not reuse:
            monkeypatch.setattr(MemoryStats, "_uniform_local_totals",
                                lambda self, memory, addresses, threads, width:
                                memory.request_totals("local_sectors", addresses, threads, width))
        observer = MemoryStats()
        module = emulator.load(str(spec.ptx))
        module.kernel(spec.kernel).launch(spec.grid, spec.block, spec.arguments(), observer=observer)
        return observer.kernel_counters(), observer.line_counters()

    assert count(reuse=True) == count(reuse=False)


def test_uniform_local_count_reuse_tells_widths_and_misaligned_addresses_apart():
    memory = Memory()
    observer = MemoryStats()
    observer._last_local = None
    observer._whole_batch_local = {}
    lanes = np.array([0, 1, 2, 9, 17, 40, 41, 63], dtype=np.int64)
    for address, width in ((16, 4), (16, 8), (24, 8), (18, 2), (20, 2), (16, 4)):
        addresses = np.full(len(lanes), address, dtype=np.uint64)
        got = observer._uniform_local_totals(memory, addresses, lanes.copy(), width)
        assert got == memory.request_totals("local_sectors", addresses, lanes, width), (address, width)
    for address, width, n in ((16, 4, 64), (16, 8, 64), (16, 4, 40), (18, 2, 40), (20, 2, 40), (16, 4, 64)):
        addresses = np.full(n, address, dtype=np.uint64)
        got = observer._uniform_local_totals(memory, addresses, None, width)
        assert got == memory.request_totals("local_sectors", addresses, None, width), (address, width, n)


def test_stats_cost_benchmark_reports_both_medians_for_a_workload(tmp_path):
    report = tmp_path / "cost.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "stats_cost.py"), "--only", "dot", "--repeat", "1",
                             "--json", str(report)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(report.read_text())["results"]
    assert row["workload"] == "dot 2^20" and min(row["plain_seconds"], row["stats_seconds"], row["stats_json_seconds"]) > 0
    for kind in ("stats", "stats_json"):
        assert row[f"{kind}_extra_percent"] == pytest.approx(100 * (row[f"{kind}_seconds"] / row["plain_seconds"] - 1))

"""Golden traces of every example, byte-identical reruns, trace filters, and `trace diff` finding a one-instruction change."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emulator.pytest_plugin import assert_trace_matches, record_trace
from emulator.runtime.spec import read_launches
from emulator.observers.trace import diff_traces

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
CHECKS = ROOT / "tests" / "kernels" / "checks.ptx"
#: every golden trace follows warp 0 of block 0; these launches keep only some instructions as well
NARROW = {
    "fences/spinLockWarp": ["op=st,membar,bar"],
    "triton/matmul_f32_ieee": ["op=st,bar"],
    "triton/matmul_tf32_mma": ["op=st,bar,mma"],
    "triton/matmul_f16_mma": ["op=st,bar,mma"],
    "matmul/matmul": ["op=st,bar"],
    "histogram/histogram": ["op=st,atom,red,bar"],
    "localarray/localarray": ["op=st"],
    "localarray/localarray_big": ["op=st"],
    "debugbuild/dot_debug": ["op=ld,st,bar"],
    **{f"triton/{name}": ["op=bar,wgmma"] for name in ("matmul_f16_wgmma", "matmul_bf16_wgmma", "matmul_tf32_wgmma",
                                                       "matmul_fp8e4m3_wgmma", "matmul_f16_wgmma_w8")},
    "triton/attention": ["op=st"],
    "mathlib/bitonicSort": ["op=st,bar"],
}
#: examples/corpus is pinned by its H100 outputs (tests/test_examples.py); its 101 launches add no trace kinds
LAUNCHES = [spec for path in sorted((ROOT / "examples").glob("*/launches.json")) if path.parent.name != "corpus"
            for spec in read_launches(path)]


def golden_launch(spec):
    key = f"{spec.directory.name}/{spec.name}"
    narrow = ["op=wgmma"] if spec.directory.name == "wgmma" else NARROW.get(key, [])
    return {"kernel": spec.kernel, "grid": spec.grid, "block": spec.block, "shared": spec.shared,
            "args": spec.args, "const": spec.const, "base_dir": str(spec.directory),
            "filter": ["block=0", "warp=0"] + narrow}


@pytest.mark.parametrize("spec", LAUNCHES, ids=lambda s: f"{s.directory.name}/{s.name}")
def test_example_matches_its_golden_trace(spec, golden_trace):
    golden_trace(spec.ptx, golden_launch(spec), GOLDEN / f"{spec.directory.name}.{spec.name}.trace")


def test_golden_traces_stay_small():
    sizes = [path.stat().st_size for path in GOLDEN.glob("*.trace")]
    assert len(sizes) == len(LAUNCHES) and sum(sizes) < 6_000_000


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def fixed_launch_args(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.int32))
    return ["--kernel", "shared_race_fixed", "--grid", "2", "--block", "64", "--arg", f"@{tmp_path / 'in.npy'}",
            "--arg", "zeros:i32:64"]


def test_two_runs_of_one_launch_write_byte_identical_traces(tmp_path):
    for name in ("a", "b"):
        result = run_cli("run", CHECKS, *fixed_launch_args(tmp_path), "--trace", tmp_path / f"{name}.trace")
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.trace").read_bytes() == (tmp_path / "b.trace").read_bytes()
    result = run_cli("trace", "diff", tmp_path / "a.trace", tmp_path / "b.trace")
    assert result.returncode == 0 and "traces identical" in result.stdout


def test_the_same_seed_gives_the_same_random_schedule_trace():
    def launch(seed):
        return {"kernel": "reduce_ok", "grid": 1, "block": 128, "schedule": "random", "seed": seed,
                "args": [np.arange(128, dtype=np.float32), np.zeros(1, np.float32)]}
    first, second, other = (record_trace(CHECKS, launch(seed)) for seed in (7, 7, 8))
    assert first == second and first != other


def test_records_hold_the_lane_values_memory_and_counters(tmp_path):
    launch = {"kernel": "shared_race_fixed", "grid": 1, "block": 64,
              "args": [np.arange(64, dtype=np.int32) * 3, np.zeros(64, np.int32)], "filter": ["warp=1", "op=ld"]}
    records = [json.loads(line) for line in record_trace(CHECKS, launch).splitlines()]
    header, body = records[0], records[1:]
    assert header["kernel"] == "shared_race_fixed" and header["filter"] == "warp=1 op=ld"
    executed = [r for r in body if "pc" in r]
    assert all(r["warp"] == 1 for r in executed)
    texts = {r["instr"]: r["text"] for r in body if "instr" in r}
    shared_load = next(r for r in executed if texts[r["pc"]].startswith("ld.shared"))
    # thread t = 32 + lane reads s[(t + 1) % 64], which thread (t + 1) % 64 filled with 3 * ((t + 1) % 64)
    want = [f"0x{3 * ((32 + lane + 1) % 64):08x}" for lane in range(32)]
    assert list(shared_load["regs"].values())[0] == want
    access = shared_load["mem"][0]
    assert access["space"] == "shared" and access["width"] == 4 and access["value"] == want
    assert access["wavefronts"] == 1
    global_load = next(r for r in executed if texts[r["pc"]].startswith("ld.global"))
    assert global_load["mem"][0]["sectors"] == 4 and body[-1]["end"] == "ok"


def test_trace_filter_keeps_only_the_named_blocks_warps_and_pcs(tmp_path):
    launch = {"kernel": "shared_race_fixed", "grid": 2, "block": 64,
              "args": [np.arange(64, dtype=np.int32), np.zeros(64, np.int32)], "filter": ["block=1", "pc=3-5"]}
    executed = [json.loads(line) for line in record_trace(CHECKS, launch).splitlines()]
    executed = [r for r in executed if "pc" in r]
    # pcs 3, 4, 5 for the 2 warps of block 1: six records
    assert [(r["block"], r["warp"], r["pc"]) for r in executed] == \
        [([1, 0, 0], w, pc) for pc in (3, 4, 5) for w in (0, 1)]


def test_trace_diff_finds_a_one_instruction_change(tmp_path):
    text = CHECKS.read_text()
    start = text.index(".visible .entry shared_race_fixed(")
    old = "add.s32 \t%r6, %r1, 1;"
    at = text.index(old, start)
    changed = tmp_path / "checks.ptx"
    changed.write_text(text[:at] + "add.s32 \t%r6, %r1, 2;" + text[at + len(old):])
    line = text[:at].count("\n") + 1
    args = fixed_launch_args(tmp_path)
    assert run_cli("run", CHECKS, *args, "--trace", tmp_path / "a.trace").returncode == 0
    assert run_cli("run", changed, *args, "--trace", tmp_path / "b.trace").returncode == 0
    result = run_cli("trace", "diff", tmp_path / "a.trace", tmp_path / "b.trace", "--context", "2")
    assert result.returncode == 1
    report = result.stdout
    assert f"A #66: pc 13 = line {line} (checks.cu:19): `add.s32 %r6, %r1, 1;`" in report
    assert f"B #66: pc 13 = line {line} (checks.cu:19): `add.s32 %r6, %r1, 2;`" in report
    # tid + 1 against tid + 2 in every lane of the first warp
    assert "%r6 differs in 32 lanes: lane 0: A 0x00000001 B 0x00000002" in report
    assert report.count("\n  #") == 2


def test_trace_diff_reports_bad_input_in_one_line(tmp_path):
    (tmp_path / "bad.trace").write_text("not json\n")
    result = run_cli("trace", "diff", tmp_path / "bad.trace", tmp_path / "bad.trace")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "not a gpuemu trace line" in result.stderr
    result = run_cli("run", CHECKS, "--kernel", "reduce_ok", "--grid", "1", "--block", "32", "--arg", "zeros:f32:32",
                     "--arg", "zeros:f32:1", "--trace", tmp_path / "t", "--trace-filter", "blocks")
    assert result.returncode == 2 and "--trace-filter 'blocks'" in result.stderr


def test_a_failing_launch_ends_its_trace_with_the_error():
    launch = {"kernel": "oob_write", "grid": 2, "block": 64, "args": [np.zeros(100, np.int32), np.int32(100)]}
    last = json.loads(record_trace(CHECKS, launch).splitlines()[-1])
    assert last["end"] == "CUDA_ERROR_ILLEGAL_ADDRESS" and "thread (36,0,0)" in last["message"]


def test_golden_assertion_fails_with_the_diff_and_updates_on_request(tmp_path):
    launch = {"kernel": "reduce_ok", "grid": 1, "block": 64,
              "args": [np.arange(64, dtype=np.float32), np.zeros(1, np.float32)], "filter": ["warp=0"]}
    golden = tmp_path / "golden" / "reduce.trace"
    with pytest.raises(pytest.fail.Exception, match="does not exist"):
        assert_trace_matches(CHECKS, launch, golden, update=False)
    assert_trace_matches(CHECKS, launch, golden, update=True)
    assert_trace_matches(CHECKS, launch, golden, update=False)
    lines = golden.read_text().splitlines()
    record = json.loads(lines[2])
    record["mask"] = "0000ffff"
    golden.write_text("\n".join(lines[:2] + [json.dumps(record, separators=(",", ":"))] + lines[3:]) + "\n")
    with pytest.raises(pytest.fail.Exception, match="mask: A 0000ffff B ffffffff"):
        assert_trace_matches(CHECKS, launch, golden, update=False)


def test_diff_of_traces_that_end_at_different_points():
    a = ['{"gpuemu":"x","format":1}', '{"instr":0,"line":1,"text":"ret;"}', '{"end":"ok","records":0}']
    b = a[:2]
    identical, report = diff_traces(a, b)
    assert not identical and "B #2: (trace ends)" in report


def test_trace_of_a_launch_the_memory_checker_fails_ends_with_its_error(tmp_path):
    trace = tmp_path / "t.jsonl"
    result = subprocess.run([sys.executable, "-m", "emulator", "run", str(ROOT / "examples" / "faults" / "faults.ptx"),
                             "--kernel", "nullRead", "--grid", "1", "--block", "32", "--arg", "u64:0",
                             "--arg", "zeros:i32:32", "--trace", str(trace), "--check", "mem"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 4
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert "gpuemu" in records[0]
    assert records[-1]["end"] == "CUDA_ERROR_ILLEGAL_ADDRESS" and records[-1]["records"] > 0


def test_an_access_with_values_on_one_side_only_is_reported_whole_not_as_zero_lanes():
    from emulator.observers.trace import differing_lanes
    record = {"block": [0, 0, 0], "warp": 0, "pc": 3, "mask": "00000003",
              "mem": [{"op": "load", "space": "global", "width": 4, "addr": ["0x10", "0x14"], "value": ["1", "2"]}]}
    other = json.loads(json.dumps(record))
    del other["mem"][0]["value"]
    assert differing_lanes(record, other) == ["memory value: A ['1', '2'] B None"]

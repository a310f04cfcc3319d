"""The compiled engine computes what the interpreter computes, bit for bit: every recorded example's outputs, printed
text, counters and faults, and each compiled instruction form on edge values checked against Python's own arithmetic."""
import io
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from emulator.base.errors import DeviceError, UsageError
from emulator.machine.codegen import build as codegen_build
from emulator.machine.codegen.emit import generate
from emulator.machine.policies import make_policy
from emulator.ir.uniform import uniform_registers
from emulator.runtime.module import Device, Module
from emulator.runtime.spec import read_launches

ROOT = Path(__file__).resolve().parents[1]
SPECS = [spec for path in sorted((ROOT / "examples").glob("*/launches.json")) for spec in read_launches(path)
         if spec.expected_dir.exists()]
#: programs longer than this compile for seconds; they run in the slow tests (GPUEMU_SLOW_TESTS=1)
QUICK_PROGRAM_LIMIT = 200
SLOW = bool(os.environ.get("GPUEMU_SLOW_TESTS"))

pytestmark = pytest.mark.skipif(codegen_build.compiler() is None, reason="no C compiler for the compiled engine")


def _run(spec, engine, policy=None):
    stdout = io.StringIO()
    module = Module(spec.ptx.read_text(encoding="utf-8", errors="replace"), str(spec.ptx), Device(stdout=stdout))
    for name, value in spec.constants().items():
        module.set_symbol(name, value)
    args = spec.arguments()
    kernel = module.kernel(spec.kernel)
    try:
        stats = kernel.launch(spec.grid, spec.block, args, spec.shared, engine=engine, policy=policy)
    except DeviceError as error:
        return ("fault", error.cuda_error, str(error))
    outputs = [arg.tobytes() for arg in args if isinstance(arg, np.ndarray)]
    return ("ok", outputs, stdout.getvalue(), stats.warp_instructions, stats.thread_instructions, stats.steps,
            stats.batches)


def _program_length(spec) -> int:
    module = Module(spec.ptx.read_text(encoding="utf-8", errors="replace"), str(spec.ptx), Device())
    return len(module.kernel(spec.kernel).program.instrs)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.directory.name}-{s.name}")
def test_example_is_bit_identical_in_both_engines(spec):
    if not SLOW and _program_length(spec) > QUICK_PROGRAM_LIMIT:
        pytest.skip(f"more than {QUICK_PROGRAM_LIMIT} instructions to compile (GPUEMU_SLOW_TESTS=1 runs it)")
    interpreted = _run(spec, "interpreter")
    compiled = _run(spec, "compiled")
    assert compiled[0] == interpreted[0]
    if interpreted[0] == "fault":
        assert compiled == interpreted
        return
    assert compiled[1] == interpreted[1], "outputs differ"
    assert compiled[2:] == interpreted[2:], "printed text or counters differ"


RANDOM_SCHEDULE_EXAMPLES = ("vecadd", "matmul", "histogram", "dot", "collatz", "atomic32shared", "fences", "localarray",
                            "reduce_divergent_sync", "transpose", "warpops", "constcoef", "faults", "printf")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("spec", [spec for spec in SPECS if spec.directory.name in RANDOM_SCHEDULE_EXAMPLES],
                         ids=lambda s: f"{s.directory.name}-{s.name}")
def test_random_schedule_runs_the_same_turns_in_both_engines(spec, seed):
    """A random schedule's turns run compiled code where they cover it whole: the same seed gives the same run,
    outputs and counters in both engines."""
    if not SLOW and _program_length(spec) > QUICK_PROGRAM_LIMIT:
        pytest.skip(f"more than {QUICK_PROGRAM_LIMIT} instructions to compile (GPUEMU_SLOW_TESTS=1 runs it)")
    runs = [_run(spec, engine, make_policy("random", seed)) for engine in ("interpreter", "compiled")]
    assert runs[1] == runs[0]


def _corpus(name):
    return next(spec for spec in SPECS if spec.directory.name == "corpus" and spec.name == name)


def test_softmax_causal_vec4_matches_the_h100_when_compiled():
    """ld.global.v4 and shfl around compiled stretches: an earlier compiled engine got 1,387 of 4,096 wrong here."""
    spec = _corpus("softmax_causal_vec4")
    module = Module(spec.ptx.read_text(), str(spec.ptx), Device())
    args = spec.arguments()
    module.kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared, engine="compiled")
    want = np.load(spec.expected_dir / "arg0.npy")
    assert args[0].tobytes() == want.tobytes()


def test_fault_in_a_compiled_stretch_reports_the_interpreters_instruction_thread_and_address():
    faults = [spec for spec in SPECS if (spec.expected_dir / "error.txt").exists()]
    assert faults
    for spec in faults:
        interpreted, compiled = _run(spec, "interpreter"), _run(spec, "compiled")
        assert interpreted[0] == compiled[0] == "fault"
        assert compiled == interpreted


def test_the_example_programs_are_mostly_compiled():
    """Most straight-line instructions of the quick examples run as generated code (a guard against a generator
    that silently leaves everything to the interpreter)."""
    total = covered = 0
    modules = {}
    for spec in SPECS:
        if spec.directory.name not in ("vecadd", "matmul", "histogram", "dot", "collatz", "corpus"):
            continue
        if spec.ptx not in modules:
            modules[spec.ptx] = Module(spec.ptx.read_text(encoding="utf-8", errors="replace"), str(spec.ptx), Device())
        program = modules[spec.ptx].kernel(spec.kernel).program
        generated = generate(program, uniform_registers(program))
        covered += sum(unit.end - unit.start for unit in generated.units)
        total += sum(1 for instr in program.instrs if instr.control == 0)
    assert covered > 0.5 * total


# ---- one instruction form at a time, on edge values, against Python's arithmetic ------------------------------

def _f32(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _f64(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pout)
{{
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<4>;
    .reg .f64 %fd<4>;
    .reg .pred %p<3>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, {width};
    add.s64 %rd5, %rd1, %rd4;
    add.s64 %rd6, %rd2, %rd4;
    add.s64 %rd7, %rd3, %rd4;
    ld.global.{ty} {a}, [%rd5];
    ld.global.{ty} {b}, [%rd6];
    {body}
    st.global.{out_ty} [%rd7], {d};
    ret;
}}
"""

REGISTERS = {"b32": ("%r2", "%r3", "%r4"), "s32": ("%r2", "%r3", "%r4"), "u32": ("%r2", "%r3", "%r4"),
             "s64": ("%rd8", "%rd9", "%rd10"), "u64": ("%rd8", "%rd9", "%rd10"), "f32": ("%f1", "%f2", "%f3"),
             "f64": ("%fd1", "%fd2", "%fd3")}


def _compiled_and_interpreted(body_template, ty, a, b, out_ty=None):
    """Run `d = body(a, b)` for each lane in both engines; (compiled outputs, interpreted outputs) as raw words."""
    out_ty = out_ty or ty
    ra, rb, rd = REGISTERS[ty]
    rd = REGISTERS[out_ty][2]
    width = np.dtype(a.dtype).itemsize
    text = KERNEL.format(width=width, ty=ty, out_ty=out_ty, a=ra, b=rb, d=rd,
                         body=body_template.format(d=rd, a=ra, b=rb))
    results = []
    for engine in ("compiled", "interpreter"):
        module = Module(text, "edge.ptx", Device())
        out = np.zeros(len(a), dtype=np.dtype(f"u{np.dtype(a.dtype).itemsize}") if out_ty == ty else np.uint32)
        if out_ty in ("s64", "u64", "f64"):
            out = np.zeros(len(a), dtype=np.uint64)
        module.kernel("k").launch(1, len(a), [a.copy(), b.copy(), out], engine=engine)
        results.append(out)
    return results


def _check(body, ty, a, b, expected, out_ty=None):
    compiled, interpreted = _compiled_and_interpreted(body, ty, a, b, out_ty)
    assert compiled.tolist() == expected, f"compiled {body}"
    assert interpreted.tolist() == expected, f"interpreted {body}"


INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def test_div_rem_s32_int_min_by_minus_one_and_by_zero():
    a = np.array([INT_MIN, INT_MIN, 7, -7, 7, -7, 5], dtype=np.int32)
    b = np.array([-1, 1, 2, 2, -2, 0, 0], dtype=np.int32)
    quotient = [INT_MIN, INT_MIN, 3, -3, -3, -1, -1]
    remainder = [0, 0, 1, -1, 1, -1, -1]
    _check("div.s32 {d}, {a}, {b};", "s32", a, b, [q & 0xFFFFFFFF for q in quotient])
    _check("rem.s32 {d}, {a}, {b};", "s32", a, b, [r & 0xFFFFFFFF for r in remainder])


def test_shifts_of_the_width_and_more_give_zero_or_the_sign():
    a = np.array([0x80000001, 0x80000001, 0x80000001, 0x7FFFFFFF, 1], dtype=np.uint32)
    b = np.array([31, 32, 33, 0xFFFFFFFF, 0], dtype=np.uint32)
    _check("shl.b32 {d}, {a}, {b};", "b32", a, b, [(x << s) & 0xFFFFFFFF if s < 32 else 0
                                                   for x, s in zip(a.tolist(), b.tolist())])
    _check("shr.u32 {d}, {a}, {b};", "u32", a, b, [x >> s if s < 32 else 0 for x, s in zip(a.tolist(), b.tolist())])
    signed = [x - (1 << 32) if x >> 31 else x for x in a.tolist()]
    _check("shr.s32 {d}, {a}, {b};", "s32", a.view(np.int32), b.view(np.int32),
           [(x >> min(s, 31)) & 0xFFFFFFFF for x, s in zip(signed, b.tolist())])


def test_mul_hi_and_wide_of_extreme_signed_values():
    a = np.array([INT_MIN, INT_MIN, INT_MAX, -1], dtype=np.int32)
    b = np.array([INT_MIN, -1, INT_MAX, -1], dtype=np.int32)
    products = [x * y for x, y in zip(a.tolist(), b.tolist())]
    _check("mul.hi.s32 {d}, {a}, {b};", "s32", a, b, [(p >> 32) & 0xFFFFFFFF for p in products])
    _check("mul.lo.s32 {d}, {a}, {b};", "s32", a, b, [p & 0xFFFFFFFF for p in products])


def test_f32_nan_results_are_canonical_and_negative_zero_survives():
    inf, nan = float("inf"), float("nan")
    a = np.array([inf, 1.0, -0.0, -0.0, 3.0], dtype=np.float32)
    b = np.array([-inf, nan, -0.0, 0.0, 0.1], dtype=np.float32)
    a.view(np.uint32)[1] = 0x3F800000
    b.view(np.uint32)[1] = 0xFFC00001  # a negative NaN with a payload
    expected_add = [0x7FFFFFFF, 0x7FFFFFFF, _f32(-0.0), _f32(0.0), _f32(float(np.float32(3.0) + np.float32(0.1)))]
    _check("add.f32 {d}, {a}, {b};", "f32", a, b, expected_add)
    expected_mul = [_f32(-inf), 0x7FFFFFFF, _f32(0.0), _f32(-0.0), _f32(float(np.float32(3.0) * np.float32(0.1)))]
    _check("mul.rn.f32 {d}, {a}, {b};", "f32", a, b, expected_mul)


def test_f32_min_max_prefer_the_number_and_order_the_zeros():
    nan = float("nan")
    a = np.array([nan, 2.0, -0.0, 0.0, nan], dtype=np.float32)
    b = np.array([1.0, nan, 0.0, -0.0, nan], dtype=np.float32)
    _check("min.f32 {d}, {a}, {b};", "f32", a, b, [_f32(1.0), _f32(2.0), _f32(-0.0), _f32(-0.0), 0x7FFFFFFF])
    _check("max.f32 {d}, {a}, {b};", "f32", a, b, [_f32(1.0), _f32(2.0), _f32(0.0), _f32(0.0), 0x7FFFFFFF])


def test_f64_nan_result_is_the_second_operand_quieted_before_the_first():
    a = np.array([0.0, 1.0, 0.0], dtype=np.float64)
    b = np.array([0.0, 2.0, 0.0], dtype=np.float64)
    a.view(np.uint64)[:] = [0x7FF0000000000001, 0x7FF8000000000002, 0x7FF0000000000000]
    b.view(np.uint64)[:] = [0xFFF0000000000005, 0x4000000000000000, 0xFFF0000000000000]
    # NaN + NaN: b's NaN quieted; NaN + 2: a's; inf + -inf: the default NaN
    _check("add.f64 {d}, {a}, {b};", "f64", a, b, [0xFFF8000000000005, 0x7FF8000000000002, 0xFFF8000000000000])


def test_fma_f32_rounds_once():
    a = np.array([1.0 + 2 ** -23, 0.1], dtype=np.float32)
    b = np.array([1.0 - 2 ** -23, 10.0], dtype=np.float32)
    # c = -1: a*b - 1 is -2**-46 exactly with one rounding, 0 with two
    body = "mov.f32 %f3, 0fBF800000;\n    fma.rn.f32 {d}, {a}, {b}, %f3;"
    exact = [float(np.float64(x) * np.float64(y) - 1.0) for x, y in zip(a.tolist(), b.tolist())]
    _check(body, "f32", a, b, [_f32(float(np.float32(value))) for value in exact])


def test_cvt_float_to_int_saturates_and_maps_nan_to_zero():
    a = np.array([3e9, -3e9, float("nan"), 2.5, -2.5, 3.5], dtype=np.float32)
    b = np.zeros_like(a)
    _check("cvt.rzi.s32.f32 {d}, {a};", "f32", a, b,
           [INT_MAX, INT_MIN & 0xFFFFFFFF, 0, 2, (-2) & 0xFFFFFFFF, 3], out_ty="s32")
    _check("cvt.rni.s32.f32 {d}, {a};", "f32", a, b,
           [INT_MAX, INT_MIN & 0xFFFFFFFF, 0, 2, (-2) & 0xFFFFFFFF, 4], out_ty="s32")
    _check("cvt.rni.u32.f32 {d}, {a};", "f32", a, b, [3000000000, 0, 0, 2, 0, 4], out_ty="u32")
    big = np.array([5e9, 4294967040.0, -0.5, 0.5, 1.5, -1e-30], dtype=np.float32)
    _check("cvt.rni.u32.f32 {d}, {a};", "f32", big, b, [0xFFFFFFFF, 4294967040, 0, 0, 2, 0], out_ty="u32")


def test_cvt_int_to_float_rounds_to_nearest_even():
    a = np.array([2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 31), 16777217], dtype=np.int32)
    _check("cvt.rn.f32.s32 {d}, {a};", "s32", a, np.zeros_like(a),
           [_f32(float(np.float32(x))) for x in a.tolist()], out_ty="f32")


def test_setp_unordered_and_ordered_comparisons_with_nan():
    nan = float("nan")
    a = np.array([nan, 1.0, 1.0, -0.0], dtype=np.float32)
    b = np.array([1.0, nan, 2.0, 0.0], dtype=np.float32)
    select = "setp.{cmp}.f32 %p1, {a}, {b};\n    selp.u32 {d}, 1, 0, %p1;"
    for cmp, expect in (("lt", [0, 0, 1, 0]), ("ltu", [1, 1, 1, 0]), ("eq", [0, 0, 0, 1]), ("neu", [1, 1, 1, 0]),
                        ("nan", [1, 1, 0, 0]), ("num", [0, 0, 1, 1])):
        _check(select.replace("{cmp}", cmp), "f32", a, b, expect, out_ty="u32")


def test_ftz_flushes_subnormal_operands_and_results_tiny_after_rounding():
    tiny = 2.0 ** -130
    a = np.array([tiny, 1.0, -tiny, 0.0, 0.0], dtype=np.float32)
    b = np.array([1.0, tiny, 0.0, 0.0, 0.0], dtype=np.float32)
    a.view(np.uint32)[3:] = [0x3F7FFFFF, 0x3F7FFFFE]
    b.view(np.uint32)[3:] = [0x00800000, 0x00800001]
    # the last two from the H100: 0x3F7FFFFF * 0x00800000 flushes, 0x3F7FFFFE * 0x00800001 keeps the smallest normal
    _check("mul.rn.ftz.f32 {d}, {a}, {b};", "f32", a, b, [0, 0, 0x80000000, 0, 0x00800000])
    _check("add.ftz.f32 {d}, {a}, {b};", "f32", a, b, [_f32(1.0), _f32(1.0), 0,
                                                        _f32(float(np.float32(a[3]) + np.float32(b[3]))),
                                                        _f32(float(np.float32(a[4]) + np.float32(b[4])))])
    _check("min.ftz.f32 {d}, {a}, {b};", "f32", a, b, [0, 0, 0x80000000, 0x00800000, 0x00800001])


def test_contended_atomics_apply_in_lane_order_and_return_each_lanes_old_value():
    a = np.array([5, 0xFFFFFFFF, 7, 0x80000000, 3], dtype=np.uint32)
    for body, combine in (("atom.global.add.u32 {d}, [%rd2], {a};", lambda old, x: (old + x) & 0xFFFFFFFF),
                          ("atom.global.max.s32 {d}, [%rd2], {a};",
                           lambda old, x: old if _signed32(old) >= _signed32(x) else x),
                          ("atom.global.exch.b32 {d}, [%rd2], {a};", lambda old, x: x)):
        start = np.array([10, 0, 0, 0, 0], dtype=np.uint32)
        olds, value = [], 10
        for x in a.tolist():
            olds.append(value)
            value = combine(value, x)
        for engine in ("compiled", "interpreter"):
            b = start.copy()
            out = np.zeros(5, dtype=np.uint32)
            text = KERNEL.format(width=4, ty="u32", out_ty="u32", a="%r2", b="%r3", d="%r4",
                                 body=body.format(d="%r4", a="%r2"))
            Module(text, "atom.ptx", Device()).kernel("k").launch(1, 5, [a.copy(), b, out], engine=engine)
            assert out.tolist() == olds, (engine, body)
            assert b[0] == value, (engine, body)


def _signed32(value):
    return value - (1 << 32) if value >> 31 else value


def test_compiled_engine_is_refused_clearly_without_the_c_memory_core():
    module = Module(KERNEL.format(width=4, ty="u32", out_ty="u32", a="%r2", b="%r3", d="%r4",
                                  body="add.u32 %r4, %r2, %r3;"), "k.ptx", Device(backend="numpy"))
    values = np.ones(4, dtype=np.uint32)
    with pytest.raises(UsageError, match="C memory core"):
        module.kernel("k").launch(1, 4, [values, values.copy(), np.zeros(4, dtype=np.uint32)], engine="compiled")


def test_an_unknown_engine_name_is_a_usage_error():
    module = Module(KERNEL.format(width=4, ty="u32", out_ty="u32", a="%r2", b="%r3", d="%r4",
                                  body="add.u32 %r4, %r2, %r3;"), "k.ptx", Device())
    values = np.ones(4, dtype=np.uint32)
    with pytest.raises(UsageError, match="engine='fast'"):
        module.kernel("k").launch(1, 4, [values, values.copy(), np.zeros(4, dtype=np.uint32)], engine="fast")


def test_a_second_launch_compiles_nothing():
    text = KERNEL.format(width=4, ty="u32", out_ty="u32", a="%r2", b="%r3", d="%r4", body="xor.b32 %r4, %r2, %r3;")
    module = Module(text, "k.ptx", Device())
    kernel = module.kernel("k")
    values = np.arange(64, dtype=np.uint32)
    out = np.zeros(64, dtype=np.uint32)
    kernel.launch(1, 64, [values, values[::-1].copy(), out], engine="compiled")
    code = kernel.program.__dict__["_gpuemu_code"]
    assert code.ready
    before = code.compile_seconds
    lib = code.lib
    kernel.launch(1, 64, [values, values[::-1].copy(), out], engine="compiled")
    assert code.lib is lib and code.compile_seconds == before
    assert out.tolist() == (values ^ values[::-1]).tolist()
    assert math.isfinite(before)


# ---- loops run in C ------------------------------------------------------------------------------------------

SERIAL = (ROOT / "bench" / "serial_loop.ptx").read_text()

DIVERGENT_LOOP = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry countdown(.param .u64 out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 7;
    mul.lo.u32 %r2, %r2, 5;
    mov.u32 %r3, 0;
$L_loop:
    add.u32 %r3, %r3, %r1;
    sub.u32 %r2, %r2, 1;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_loop;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r3;
    ret;
}
"""


def _launch(text, name, grid, block, args, engine, **options):
    kernel = Module(text, "loop.ptx", Device()).kernel(name)
    try:
        stats = kernel.launch(grid, block, args, engine=engine, **options)
    except DeviceError as error:
        return str(error)
    return stats.warp_instructions, stats.thread_instructions, stats.steps


def test_serial_loop_matches_python_and_counts_every_instruction():
    x = 12345
    for _ in range(1000):
        y = (x * 1103515245 + 12345) & 0xFFFFFFFF
        x = y ^ (y >> 7)
    out = np.zeros(1, dtype=np.uint32)
    counters = _launch(SERIAL, "serial_loop", 1, 1, [out, np.uint32(1000)], "compiled")
    assert out[0] == x
    assert counters == (4 + 6 * 1000 + 3, 4 + 6 * 1000 + 3, 4 + 6 * 1000 + 3)


def test_auto_compiles_a_long_serial_loop_partway_and_keeps_its_counters():
    text = SERIAL.replace("mov.u32 %r3, 12345;", "mov.u32 %r3, 4242;")  # a program no other test compiled
    kernel = Module(text, "serial.ptx", Device()).kernel("serial_loop")
    out = np.zeros(1, dtype=np.uint32)
    stats = kernel.launch(1, 1, [out, np.uint32(100_000)], engine="auto")
    code = kernel.program.__dict__["_gpuemu_code"]
    assert code.ready and code.compile_seconds > 0
    assert stats.thread_instructions == 4 + 6 * 100_000 + 3
    x = 4242
    for _ in range(100_000):
        y = (x * 1103515245 + 12345) & 0xFFFFFFFF
        x = y ^ (y >> 7)
    assert out[0] == x


def test_divergent_loop_parks_lanes_as_the_interpreter_does():
    """Lanes go round 5 * (tid % 8) times (lanes with 0 go round 2**32 - 1 times: the step limit ends the launch)."""
    results = {}
    for engine in ("interpreter", "compiled"):
        out = np.zeros(64, dtype=np.uint32)
        results[engine] = _launch(DIVERGENT_LOOP.replace("and.b32 %r2, %r1, 7;", "and.b32 %r2, %r1, 7;\n    "
                                                         "add.u32 %r2, %r2, 1;"), "countdown", 1, 64, [out], engine)
        results[engine + " out"] = out.tolist()
    assert results["compiled"] == results["interpreter"]
    assert results["compiled out"] == results["interpreter out"]
    assert results["compiled out"][9] == 9 * 5 * 2


@pytest.mark.parametrize("max_steps", [50, 333, 1000])
def test_step_limit_stops_a_compiled_loop_at_the_interpreters_step(max_steps):
    reports = [_launch(DIVERGENT_LOOP, "countdown", 1, 64, [np.zeros(64, dtype=np.uint32)], engine,
                       max_steps=max_steps) for engine in ("interpreter", "compiled")]
    assert reports[0] == reports[1]
    assert "step" in reports[0]


# ---- the compiled module's cache ------------------------------------------------------------------------------

def _small_generated():
    text = KERNEL.format(width=4, ty="u32", out_ty="u32", a="%r2", b="%r3", d="%r4", body="sub.u32 %r4, %r2, %r3;")
    program = Module(text, "k.ptx", Device()).kernel("k").program
    generated = generate(program, uniform_registers(program))
    return generated.source + f"\n/* {os.getpid()} {id(program)} */\n", [unit.name for unit in generated.units]


def test_a_tampered_cache_entry_is_compiled_again_never_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUEMU_NO_CACHE", raising=False)
    monkeypatch.setattr(codegen_build, "_LOADED", {})
    source, names = _small_generated()
    assert codegen_build.build_module(source, names)[2] > 0
    (entry,) = (tmp_path / "cache" / "codegen").glob("*.bin")
    blob = bytearray(entry.read_bytes())
    blob[-100] ^= 0xFF
    entry.write_bytes(bytes(blob))
    monkeypatch.setattr(codegen_build, "_LOADED", {})
    assert codegen_build.build_module(source, names)[2] > 0, "a module whose signature fails was loaded"
    monkeypatch.setattr(codegen_build, "_LOADED", {})
    assert codegen_build.build_module(source, names)[2] == 0.0, "the re-signed module was not taken from the cache"


def test_no_cache_compiles_in_a_private_directory_and_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUEMU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPUEMU_NO_CACHE", "1")
    monkeypatch.setattr(codegen_build, "_LOADED", {})
    source, names = _small_generated()
    ffi, lib, seconds = codegen_build.build_module(source, names)
    assert seconds > 0 and hasattr(lib, names[0])
    assert not (tmp_path / "cache").exists()


FAULT_IN_LOOP = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry gather(.param .u64 data, .param .u64 out, .param .u32 bad)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .pred %p<3>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd5, [out];
    ld.param.u32 %r6, [bad];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
$L_loop:
    setp.eq.u32 %p2, %r1, %r6;
    selp.u32 %r4, 4096, %r1, %p2;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r5, [%rd3];
    add.u32 %r2, %r2, %r5;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 3;
    @%p1 bra $L_loop;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd5, %rd6;
    st.global.u32 [%rd7], %r2;
    ret;
}
"""


@pytest.mark.parametrize("bad", [0, 77, 127, 1000])
def test_a_load_faulting_in_a_middle_lane_of_a_compiled_loop_reports_what_the_interpreter_reports(bad):
    """Lane `bad` reads past the end of data; the lanes before it have already run the region when the compiled code
    hands the rest to the interpreter, and the lanes' sums (read before written) must not be counted twice."""
    reports = {}
    for engine in ("interpreter", "compiled"):
        out = np.zeros(128, dtype=np.uint32)
        data = np.arange(128, dtype=np.uint32) * 3
        reports[engine] = (_launch(FAULT_IN_LOOP, "gather", 1, 128, [data, out, np.uint32(bad)], engine),
                           out.tolist())
    assert reports["compiled"] == reports["interpreter"]
    if bad < 128:
        assert f"thread ({bad},0,0)" in reports["compiled"][0]
    else:
        assert reports["compiled"][1] == [3 * 3 * lane for lane in range(128)]


# ---- turns that start or end inside a region ----------------------------------------------------------------

CHAIN = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry chain(.param .u64 data, .param .u64 out, .param .u32 bad)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd5, [out];
    ld.param.u32 %r6, [bad];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, %r6;
    selp.u32 %r4, 1048576, %r1, %p1;
    mul.wide.u32 %rd4, %r4, 4;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    add.s64 %rd4, %rd4, 1;
    ld.global.u32 %r2, [%rd3];
    add.s64 %rd4, %rd4, 1;
    add.u32 %r2, %r2, %r1;
    add.s64 %rd4, %rd4, 1;
    mul.lo.u32 %r2, %r2, 3;
    add.s64 %rd4, %rd4, 1;
    xor.b32 %r3, %r2, 0x5a5a;
    add.s64 %rd4, %rd4, -4;
    add.s64 %rd4, %rd1, %rd4;
    ld.global.u32 %r5, [%rd4];
    add.u32 %r2, %r2, %r5;
    shl.b32 %r7, %r2, 3;
    sub.u32 %r2, %r7, %r3;
    ld.global.u32 %r8, [%rd3];
    mad.lo.u32 %r2, %r8, %r2, %r1;
    add.u32 %r2, %r2, 7;
    xor.b32 %r2, %r2, %r3;
    mul.lo.u32 %r2, %r2, 2654435761;
    shr.u32 %r9, %r2, 13;
    xor.b32 %r2, %r2, %r9;
    add.s64 %rd6, %rd5, %rd2;
    st.global.u32 [%rd6], %r2;
    ret;
}
"""


def _chain_reference(data: np.ndarray) -> list:
    mask = 0xFFFFFFFF
    out = []
    for lane in range(len(data)):
        r2 = ((int(data[lane]) + lane) * 3) & mask
        r3 = r2 ^ 0x5A5A
        r2 = (r2 + int(data[lane])) & mask
        r2 = ((r2 << 3) - r3) & mask
        r2 = (int(data[lane]) * r2 + lane) & mask
        r2 = ((r2 + 7) & mask) ^ r3
        r2 = (r2 * 2654435761) & mask
        out.append(r2 ^ (r2 >> 13))
    return out


def _chain(seed: int, bad: int, engine: str):
    data = (np.arange(256, dtype=np.uint32) * 2654435761 % 1000).astype(np.uint32)
    out = np.zeros(256, dtype=np.uint32)
    report = _launch(CHAIN, "chain", 1, 256, [data, out, np.uint32(bad)], engine, policy=make_policy("random", seed))
    return report, out.tolist(), data


def _partial_lookups(monkeypatch) -> list:
    """A list that gets, for each part of a region about to run, whether compiled code was there for it."""
    from emulator.machine import codegen
    calls = []
    original = codegen.ProgramCode.partial

    def counted(self, *args):
        function = original(self, *args)
        calls.append(function is not None)
        return function
    monkeypatch.setattr(codegen.ProgramCode, "partial", counted)
    return calls


def test_random_turns_that_cut_a_region_run_its_partial_code_and_match_numpy(monkeypatch):
    """Turns end after a random number of instructions, so many start or stop inside the kernel's one long region;
    those parts run as gx_part code, reading registers an earlier part of the region wrote."""
    calls = _partial_lookups(monkeypatch)
    for seed in range(6):
        report, out, data = _chain(seed, 1 << 20, "compiled")
        assert out == _chain_reference(data)
        assert _chain(seed, 1 << 20, "interpreter")[:2] == (report, out)
    assert len(calls) >= 6 and all(calls), "parts of regions ran in the interpreter"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bad", [0, 45, 255])
def test_a_load_faulting_inside_a_partly_run_region_reports_what_the_interpreter_reports(seed, bad):
    """Lane `bad` reads 4 MiB past data; the turn that reaches that load may have started inside the region, and the
    lanes before it have run their part when the compiled code hands the rest to the interpreter."""
    compiled = _chain(seed, bad, "compiled")[:2]
    assert compiled == _chain(seed, bad, "interpreter")[:2]
    assert f"thread ({bad},0,0)" in compiled[0]


def test_auto_compiles_the_partial_module_once_partial_runs_have_cost_about_a_compile(monkeypatch):
    """Under "auto" the interpreter runs the parts of regions until they have cost about what compiling gx_part takes;
    from then on they run compiled (a kernel text of its own, so that no earlier test's module is in the process)."""
    from emulator.machine import codegen
    monkeypatch.setattr(codegen, "AUTO_THRESHOLD", 1_000_000)
    monkeypatch.setattr(codegen, "AUTO_THRESHOLD_PER_INSTRUCTION", 0)
    monkeypatch.setenv("GPUEMU_NO_CACHE", "1")
    text = CHAIN.replace("0x5a5a", "0x3c3c")
    calls = _partial_lookups(monkeypatch)
    kernel = Module(text, "chain.ptx", Device()).kernel("chain")
    data = np.arange(256, dtype=np.uint32)
    for seed in range(8):
        out = np.zeros(256, dtype=np.uint32)
        kernel.launch(1, 256, [data, out, np.uint32(1 << 20)], engine="auto", policy=make_policy("random", seed))
        reference = np.zeros(256, dtype=np.uint32)
        Module(text, "chain.ptx", Device()).kernel("chain").launch(
            1, 256, [data, reference, np.uint32(1 << 20)], engine="interpreter", policy=make_policy("random", seed))
        assert out.tolist() == reference.tolist()
    assert calls[0] is False and calls[-1] is True
    assert calls.index(True) > 1 and all(calls[calls.index(True):])


def test_a_compiled_launch_after_auto_ones_compiles_the_partial_module(monkeypatch):
    """An "auto" launch leaves the partial module to be earned by interpreted parts; a later launch of the program
    under "compiled" compiles it at its first part (the main module is in this process already)."""
    monkeypatch.setenv("GPUEMU_NO_CACHE", "1")
    text = CHAIN.replace("0x5a5a", "0x6b6b")
    data = np.arange(256, dtype=np.uint32)
    args = lambda: [data, np.zeros(256, dtype=np.uint32), np.uint32(1 << 20)]
    Module(text, "chain.ptx", Device()).kernel("chain").launch(1, 256, args(), engine="compiled")
    calls = _partial_lookups(monkeypatch)
    kernel = Module(text, "chain.ptx", Device()).kernel("chain")
    kernel.launch(1, 256, args(), engine="auto", policy=make_policy("random", 0))
    assert calls and not any(calls)
    del calls[:]
    kernel.launch(1, 256, args(), engine="compiled", policy=make_policy("random", 0))
    assert calls and all(calls)


# ---- turns that start or end inside a compiled loop's body ---------------------------------------------------

WALK = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry walk(.param .u64 data, .param .u64 out, .param .u64 last, .param .u32 bad)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<10>;
    .reg .pred %p<3>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd5, [out];
    ld.param.u64 %rd7, [last];
    ld.param.u32 %r6, [bad];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd8, %rd7, %rd6;
    and.b32 %r3, %r1, 15;
    add.u32 %r3, %r3, 3;
    mov.u32 %r2, %r1;
$L_walk:
    mul.lo.u32 %r2, %r2, 1664525;
    add.u32 %r2, %r2, 1013904223;
    shr.u32 %r4, %r2, 24;
    mul.lo.u32 %r7, %r3, 1024;
    add.u32 %r7, %r7, %r1;
    setp.eq.u32 %p2, %r7, %r6;
    selp.u32 %r4, 1048576, %r4, %p2;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r5, [%rd3];
    xor.b32 %r2, %r2, %r5;
    st.global.u32 [%rd8], %r2;
    add.u32 %r8, %r2, %r3;
    shr.u32 %r9, %r8, 3;
    xor.b32 %r2, %r2, %r9;
    sub.u32 %r3, %r3, 1;
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra $L_walk;
    add.s64 %rd9, %rd5, %rd6;
    st.global.u32 [%rd9], %r2;
    ret;
}
"""


def _walk_reference(data: np.ndarray, threads: int) -> tuple:
    mask = 0xFFFFFFFF
    out, last = [], []
    for lane in range(threads):
        x, rounds = lane, (lane & 15) + 3
        while rounds:
            x = (x * 1664525 + 1013904223) & mask
            x ^= int(data[x >> 24])
            last_value = x
            x ^= ((x + rounds) & mask) >> 3
            rounds -= 1
        out.append(x)
        last.append(last_value)
    return out, last


def _walk(seed: int, bad: int, engine: str):
    data = (np.arange(256, dtype=np.uint32) * 2654435761).astype(np.uint32)
    out, last = np.zeros(192, dtype=np.uint32), np.zeros(192, dtype=np.uint32)
    report = _launch(WALK, "walk", 1, 192, [data, out, last, np.uint32(bad)], engine,
                     policy=make_policy("random", seed))
    return report, out.tolist(), last.tolist(), data


def _loop_cuts(monkeypatch) -> list:
    """A list that gets, for each compiled loop run, (whether it started inside the body, where the turn ended in
    it: the head when it ran whole rounds only)."""
    from emulator.machine import codegen
    runs = []
    original_end = codegen.BatchCode._turn_end

    def turn_end(self, unit, head, skip, *args):
        ends = original_end(self, unit, head, skip, *args)
        runs.append((skip > 0, ends[0] - head))
        return ends
    monkeypatch.setattr(codegen.BatchCode, "_turn_end", turn_end)
    return runs


def test_random_turns_run_loops_from_and_to_the_middle_of_their_body_and_match_python(monkeypatch):
    """The loop's body is two regions around a store; random turns enter it at any instruction and end at any, and
    its compiled function runs the first round's rest and the last round's start with the regions' gx_part code."""
    runs = _loop_cuts(monkeypatch)
    for seed in range(6):
        report, out, last, data = _walk(seed, 1 << 30, "compiled")
        assert (out, last) == _walk_reference(data, 192)
        assert _walk(seed, 1 << 30, "interpreter")[:3] == (report, out, last)
    starts = {start for start, _ in runs}
    ends = {end for _, end in runs}
    assert starts == {False, True} and 0 in ends and len(ends - {0}) >= 5, runs


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("bad", [2 * 1024 + 0, 3 * 1024 + 77, 5 * 1024 + 191])
def test_a_load_faulting_in_a_loop_entered_or_left_mid_body_reports_what_the_interpreter_reports(seed, bad):
    """Lane bad % 1024 reads 4 MiB past data in the round where bad // 1024 rounds are left."""
    compiled = _walk(seed, bad, "compiled")[:3]
    assert compiled == _walk(seed, bad, "interpreter")[:3]
    assert f"thread ({bad % 1024},0,0)" in compiled[0]


def _refused_inline(monkeypatch) -> list:
    """Give the compiled code a copy of the memory core's struct with no allocations: every inline check refuses, so
    regions and stores hand their lanes to the interpreter, which serves them from the real memory without a fault.
    Returns a list that gets each loop run's result (what the interpreter took over)."""
    from emulator.machine import codegen
    from emulator.memory._gpuemu_core import ffi
    refresh, loop = codegen.BatchCode._refresh_memory, codegen.BatchCode.loop
    copies, handbacks = [], []

    def refresh_with_no_allocations(self):
        refresh(self)
        empty = ffi.new("gm_memory *", ffi.cast("gm_memory *", self.batch.memory.core_state()[0])[0])
        empty.n_allocs = 0
        copies.append(empty)
        self.context.memory = self.code.ffi.cast("void *", int(ffi.cast("uintptr_t", empty)))
        self._memory_state = None

    def counted_loop(self, *args):
        ran = loop(self, *args)
        handbacks.append(ran is not None and self.info[3] != -1)
        return ran
    monkeypatch.setattr(codegen.BatchCode, "_refresh_memory", refresh_with_no_allocations)
    monkeypatch.setattr(codegen.BatchCode, "loop", counted_loop)
    return handbacks


def test_loop_runs_handed_to_the_interpreter_without_a_fault_keep_the_interpreters_counters(monkeypatch):
    """Loads and stores the compiled code refuses but the memory core serves: each loop run the interpreter finishes
    (from the body's start, mid-body or before a turn's end) leaves the outputs and counters the interpreter gives."""
    expected = [_walk(seed, 1 << 30, "interpreter")[:3] for seed in range(4)]
    handbacks = _refused_inline(monkeypatch)
    for seed in range(4):
        assert _walk(seed, 1 << 30, "compiled")[:3] == expected[seed]
    assert sum(handbacks) >= 20, handbacks

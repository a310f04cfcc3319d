"""ptxas's constant folding of .approx instructions (isa.fold, emulator/ir/fold.py) and div.approx/div.full quotients
fused into the add that reads them (isa.fp.fdiv_add), pinned against the H100's recorded outputs of the corpus
(examples/corpus/expected, the evidence of commit 385d96c) and against references built from isa.sfu's units
(exhaustively compared with the H100, docs/sfu.md) and exact rational arithmetic."""
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from emulator.api import load
from emulator.runtime.spec import read_launches
from isa import sfu

ROOT = Path(__file__).resolve().parents[1]
CORPUS = {spec.name: spec for spec in read_launches(ROOT / "examples" / "corpus" / "launches.json")}
THIRTY_TWO = np.array([0x42000000], np.uint32)
#: 1/sqrt(32) rounded once to f32 (float64 holds it to 53 bits, far from an f32 tie): ptxas's fold of rsqrt(32)
RSQRT_32_ROUNDED = int(np.float32(1 / math.sqrt(32.0)).view(np.uint32))


def f32_code(value: float) -> str:
    return f"0f{int(np.float32(value).view(np.uint32)):08X}"


def rounded_f32(value: Fraction) -> np.float32:
    """value rounded once to f32, nearest and ties to even (normal range only, as the inputs here are)."""
    candidate = np.float32(float(value))
    neighbours = (np.nextafter(candidate, np.float32(-np.inf)), candidate, np.nextafter(candidate, np.float32(np.inf)))
    distances = [abs(Fraction(float(n)) - value) for n in neighbours]
    best = min(distances)
    ties = [n for n, d in zip(neighbours, distances) if d == best]
    return min(ties, key=lambda n: int(np.float32(n).view(np.uint32)) & 1)


def run_corpus_launch(name: str, ptx: str, **options) -> np.ndarray:
    spec = CORPUS[name]
    args = spec.arguments()
    load(ptx, **options).kernel(spec.kernel).launch(spec.grid, spec.block, args, spec.shared)
    return args[0]


def h100_output(name: str) -> np.ndarray:
    return np.load(CORPUS[name].expected_dir / "arg0.npy")


# ---- rsqrt.approx.f32 of a constant ----

def test_the_h100_ran_attention_online_with_rsqrt_of_32_folded_to_the_correctly_rounded_value():
    # attention_online's scale is rsqrtf(32.0f): `mov.f32 %f20, 0f42000000; rsqrt.approx.f32 %f21, %f20;`.
    # The unit gives 1 ulp below 1/sqrt(32) rounded; writing either value as a literal shows which one the
    # H100's bytes came from, without gpuemu's folding pass taking part
    unit = int(sfu.rsq(THIRTY_TWO)[0])
    assert unit != RSQRT_32_ROUNDED
    ptx = CORPUS["attention_online"].ptx.read_text()
    folding = re.compile(r"mov\.f32 \t(%f\d+), 0f42000000;\n\trsqrt\.approx\.f32 \t(%f\d+), \1;")
    assert len(folding.findall(ptx)) == 1
    h100 = h100_output("attention_online")
    for code, matches in ((RSQRT_32_ROUNDED, True), (unit, False)):
        literal = folding.sub(lambda m: f"mov.b32 \t{m.group(2)}, 0f{code:08X};", ptx)
        out = run_corpus_launch("attention_online", literal)
        assert (out.tobytes() == h100.tobytes()) == matches, hex(code)


RSQRT_OF_A_CONSTANT = """.version 8.0
.target sm_90{debug}
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .f32 %f<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    rsqrt.approx.f32 %f1, 0f42000000;
    mov.f32 %f2, 0f42000000;
    mov.f32 %f3, %f2;
    rsqrt.approx.f32 %f3, %f3;
    st.global.v2.f32 [%rd1], {{%f1, %f3}};
    ret;
}}
"""


def test_rsqrt_approx_of_an_immediate_or_a_constant_register_folds_to_the_correctly_rounded_value():
    # %f3 is written twice (a mov of a constant register, then the rsqrt itself): not a constant, so the unit
    out = np.zeros(2, np.uint32)
    load(RSQRT_OF_A_CONSTANT.format(debug="")).kernel("k").launch(1, 1, [out])
    assert [hex(v) for v in out] == [hex(RSQRT_32_ROUNDED), hex(int(sfu.rsq(THIRTY_TWO)[0]))]


@pytest.mark.parametrize("how", ["no_contract", "debug_target"])
def test_contract_false_and_a_debug_target_leave_rsqrt_of_a_constant_to_the_unit(how):
    out = np.zeros(2, np.uint32)
    ptx = RSQRT_OF_A_CONSTANT.format(debug=", debug" if how == "debug_target" else "")
    load(ptx, contract=how != "no_contract").kernel("k").launch(1, 1, [out])
    assert out.tolist() == [int(sfu.rsq(THIRTY_TWO)[0])] * 2


# ---- div.approx / div.full feeding an add ----

DIVIDE_THEN_ADD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 a, .param .u64 b, .param .u64 c)
{{
    .reg .f32 %f<6>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<10>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    ld.param.u64 %rd2, [a];
    add.s64 %rd2, %rd2, %rd1;
    ld.global.f32 %f1, [%rd2];
    ld.param.u64 %rd3, [b];
    add.s64 %rd3, %rd3, %rd1;
    ld.global.f32 %f2, [%rd3];
    ld.param.u64 %rd4, [c];
    add.s64 %rd4, %rd4, %rd1;
    ld.global.f32 %f3, [%rd4];
    div.{mode}.f32 %f4, %f1, {divisor};
    add.f32 %f5, %f4, %f3;
    ld.param.u64 %rd5, [out];
    add.s64 %rd5, %rd5, %rd1;
    st.global.f32 [%rd5], %f5;
    ret;
}}
"""


def divide_then_add(mode: str, divisor: str, a, b, c, **options) -> np.ndarray:
    out = np.zeros_like(a)
    load(DIVIDE_THEN_ADD.format(mode=mode, divisor=divisor), **options).kernel("k").launch(1, a.size, [out, a, b, c])
    return out


def operands(n=256):
    rng = np.random.default_rng(385)
    a = (rng.standard_normal(n) * 100).astype(np.float32)
    b = rng.uniform(0.5, 300, n).astype(np.float32)
    c = (rng.standard_normal(n) * 3).astype(np.float32)
    return a, b, c


@pytest.mark.parametrize("mode", ["approx", "full"])
def test_a_quotient_read_by_an_add_is_one_fma_of_the_units_reciprocal(mode):
    # ptxas 13.0 emits MUFU.RCP of b and fuses the FMUL a * rcp(b) into the add: FFMA(rcp(b), a, c), one rounding;
    # the reference takes rcp from isa.sfu (the unit, compared with the H100 on all 2^32 inputs) and rounds the
    # exact a * rcp(b) + c once
    a, b, c = operands()
    reciprocal = sfu.rcp(b.view(np.uint32)).view(np.float32)
    fused = np.array([rounded_f32(Fraction(float(r)) * Fraction(float(x)) + Fraction(float(z)))
                      for r, x, z in zip(reciprocal, a, c)], np.float32)
    two_roundings = (reciprocal * a) + c
    assert np.count_nonzero(fused != two_roundings) > 5
    assert divide_then_add(mode, "%f2", a, b, c).tobytes() == fused.tobytes()
    assert divide_then_add(mode, "%f2", a, b, c, contract=False).tobytes() == two_roundings.tobytes()


def test_a_quotient_by_a_constant_read_by_an_add_fuses_the_folded_reciprocal():
    # x / 33.0f: ptxas folds the divisor's reciprocal to 1/33 correctly rounded (the unit is 1 ulp off there)
    # and fuses the product into the add: FFMA(RN(1/33), a, c)
    a, b, c = operands()
    folded = rounded_f32(Fraction(1, 33))
    assert folded != sfu.rcp(np.array([0x42040000], np.uint32)).view(np.float32)[0]
    fused = np.array([rounded_f32(Fraction(float(folded)) * Fraction(float(x)) + Fraction(float(z)))
                      for x, z in zip(a, c)], np.float32)
    assert divide_then_add("approx", f32_code(33.0), a, b, c).tobytes() == fused.tobytes()


def test_the_h100_ran_the_fast_welford_layernorm_with_each_quotient_fused_into_its_add():
    # layernorm_welford (--use_fast_math) has `div.approx.ftz.f32 q, d, n; add.ftz.f32 m, m, q`; written out as
    # rcp + fma (one rounding) gpuemu gives the H100's bytes, as rcp + mul + add (two roundings) it does not. The
    # PTX runs literally (contract=False) so that only the rewriting decides
    ptx = CORPUS["layernorm_welford_fast"].ptx.read_text()
    quotient_then_add = re.compile(r"div\.approx\.ftz\.f32 \t(%f\d+), (%f\d+), (%f\d+);\n"
                                   r"\tadd\.ftz\.f32 \t(%f\d+), (?:(%f\d+), \1|\1, (0f[0-9A-F]{8}|%f\d+));")

    def rewritten(fused: bool) -> str:
        def one(m):
            quotient, dividend, divisor, total = m.group(1), m.group(2), m.group(3), m.group(4)
            addend = m.group(5) or m.group(6)
            reciprocal = f"rcp.approx.ftz.f32 \t{quotient}, {divisor};\n\t"
            if fused:
                return reciprocal + f"fma.rn.ftz.f32 \t{total}, {dividend}, {quotient}, {addend};"
            return reciprocal + (f"mul.ftz.f32 \t{quotient}, {dividend}, {quotient};\n\t"
                                 f"add.ftz.f32 \t{total}, {addend}, {quotient};")
        text, count = quotient_then_add.subn(one, ptx)
        assert count >= 6
        return text

    h100 = h100_output("layernorm_welford_fast")
    assert run_corpus_launch("layernorm_welford_fast", rewritten(True), contract=False).tobytes() == h100.tobytes()
    assert run_corpus_launch("layernorm_welford_fast", rewritten(False), contract=False).tobytes() != h100.tobytes()

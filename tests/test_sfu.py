"""isa.sfu and the approximate PTX instructions built on it, against results read off an H100 (held-out test
points, never used to build the tables) and the special-value tables of the PTX ISA."""
import json
from pathlib import Path

import numpy as np
import pytest

from isa import fp, sfu

HELD_OUT = Path(__file__).parent / "sfu_h100" / "held_out.npz"
U32 = np.uint32


@pytest.fixture(scope="module")
def h100():
    with np.load(HELD_OUT, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def f32(codes):
    return np.asarray(codes, dtype=U32).view(np.float32)


def codes32(values):
    return np.asarray(values).astype(np.float32).view(U32)


def c32(*values):
    return np.array(values, dtype=np.float32)


UNARY = {
    "rcp": lambda x: fp.frcp(x, ty="f32", mode="approx"),
    "rcp_ftz": lambda x: fp.frcp(x, ty="f32", mode="approx", ftz=True),
    "rsqrt": lambda x: fp.frsqrt(x, ty="f32"),
    "rsqrt_ftz": lambda x: fp.frsqrt(x, ty="f32", ftz=True),
    "sqrt": lambda x: fp.fsqrt(x, ty="f32", mode="approx"),
    "sqrt_ftz": lambda x: fp.fsqrt(x, ty="f32", mode="approx", ftz=True),
    "ex2": lambda x: fp.fex2(x, ty="f32"),
    "ex2_ftz": lambda x: fp.fex2(x, ty="f32", ftz=True),
    "lg2": lambda x: fp.flg2(x, ty="f32"),
    "lg2_ftz": lambda x: fp.flg2(x, ty="f32", ftz=True),
    "sin": lambda x: fp.fsin(x, ty="f32"),
    "sin_ftz": lambda x: fp.fsin(x, ty="f32", ftz=True),
    "cos": lambda x: fp.fcos(x, ty="f32"),
    "cos_ftz": lambda x: fp.fcos(x, ty="f32", ftz=True),
    "tanh": lambda x: fp.ftanh(x, ty="f32"),
}


@pytest.mark.parametrize("op", list(UNARY))
def test_f32_approx_instruction_gives_the_h100_bits_on_held_out_inputs(h100, op):
    x, want = h100[f"{op}_in"], h100[f"{op}_out"]
    got = codes32(UNARY[op](f32(x)))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(x[i]), hex(want[i]), hex(got[i])) for i in bad[:5]]


@pytest.mark.parametrize("op, function", [
    ("rcp_ftz_f64", lambda x: fp.frcp(x, ty="f64", mode="approx", ftz=True)),
    ("rsqrt_ftz_f64", lambda x: fp.frsqrt(x, ty="f64", ftz=True)),
    ("rsqrt_f64", lambda x: fp.frsqrt(x, ty="f64")),
])
def test_f64_approx_instruction_gives_the_h100_bits_on_held_out_inputs(h100, op, function):
    x, want = h100[f"{op}_in"], h100[f"{op}_out"]
    got = np.asarray(function(x.view(np.float64))).view(np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(x[i]), hex(want[i]), hex(got[i])) for i in bad[:5]]


@pytest.mark.parametrize("op, function, ty, ftz", [
    ("ex2_f16x2", fp.fex2, "f16x2", False), ("ex2_bf16x2", fp.fex2, "bf16x2", True),
    ("tanh_f16x2", fp.ftanh, "f16x2", False), ("tanh_bf16x2", fp.ftanh, "bf16x2", False),
])
def test_packed_half_approx_gives_the_h100_bits_in_both_lanes(h100, op, function, ty, ftz):
    x, want = h100[f"{op}_in"], h100[f"{op}_out"]
    got = np.asarray(function(x, ty=ty, ftz=ftz)).astype(U32)
    assert np.array_equal(got, want)
    scalar = ty[:-2]
    low = np.asarray(function((x & U32(0xFFFF)).astype(np.uint16), ty=scalar, ftz=ftz))
    assert np.array_equal(low, (want & U32(0xFFFF)).astype(np.uint16))


@pytest.mark.parametrize("op, mode, ftz", [("div_approx", "approx", False), ("div_approx_ftz", "approx", True),
                                           ("div_full", "full", False), ("div_full_ftz", "full", True)])
def test_div_approx_and_full_give_the_h100_bits_on_held_out_pairs(h100, op, mode, ftz):
    a, b, want = h100[f"{op}_a"], h100[f"{op}_b"], h100[f"{op}_out"]
    got = codes32(fp.fdiv(f32(a), f32(b), ty="f32", mode=mode, ftz=ftz))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(want[i]), hex(got[i])) for i in bad[:5]]


# ---- the PTX ISA's special values --------------------------------------------------------------------

NAN = 0x7FFFFFFF
INF, NINF, ZERO, NZERO, ONE, NONE = 0x7F800000, 0xFF800000, 0, 0x80000000, 0x3F800000, 0xBF800000
SPECIALS = c32(-np.inf, -1.5, -0.0, 0.0, 1.5, np.inf, np.nan)


@pytest.mark.parametrize("op, expected", [
    ("rcp", [NZERO, None, NINF, INF, None, ZERO, NAN]),
    ("rsqrt", [NAN, NAN, NINF, INF, None, ZERO, NAN]),
    ("sqrt", [NAN, NAN, NZERO, ZERO, None, INF, NAN]),
    ("ex2", [ZERO, None, ONE, ONE, None, INF, NAN]),
    ("lg2", [NAN, NAN, NINF, NINF, None, INF, NAN]),
    ("sin", [NAN, None, NZERO, ZERO, None, NAN, NAN]),
    ("cos", [NAN, None, ONE, ONE, None, NAN, NAN]),
    ("tanh", [NONE, None, NZERO, ZERO, None, ONE, NAN]),
])
@pytest.mark.parametrize("ftz", [False, True])
def test_f32_approx_special_values_follow_the_ptx_isa(op, expected, ftz):
    name = op + ("_ftz" if ftz and op != "tanh" else "")
    got = codes32(UNARY[name](SPECIALS)).tolist()
    assert [g for g, e in zip(got, expected) if e is not None] == [e for e in expected if e is not None]


def test_ftz_flushes_subnormal_operands_to_zeros_of_their_sign():
    subnormal = f32([0x00000001, 0x807FFFFF])
    assert codes32(fp.frcp(subnormal, ty="f32", mode="approx", ftz=True)).tolist() == [INF, NINF]
    assert codes32(fp.frsqrt(subnormal, ty="f32", ftz=True)).tolist() == [INF, NINF]
    assert codes32(fp.fsqrt(subnormal, ty="f32", mode="approx", ftz=True)).tolist() == [ZERO, NZERO]
    assert codes32(fp.flg2(subnormal, ty="f32", ftz=True)).tolist() == [NINF, NINF]
    assert codes32(fp.fex2(subnormal, ty="f32", ftz=True)).tolist() == [ONE, ONE]
    assert fp.flg2(c32(2.0 ** -140), ty="f32")[0] == np.float32(-140.0)
    assert fp.fex2(c32(-140.0), ty="f32")[0] == np.float32(2.0 ** -140)
    assert fp.fex2(c32(-140.0), ty="f32", ftz=True)[0] == 0


def test_div_approx_by_a_divisor_above_two_pow_126_is_a_signed_zero_or_nan():
    # PTX ISA: for 2**126 < |b| < 2**128, div.approx.f32 gives 0 (NaN if a is infinite); div.full scales b.
    b = c32(2.0 ** 127, -1.5 * 2.0 ** 126)
    assert codes32(fp.fdiv(c32(3.0, 3.0), b, ty="f32", mode="approx")).tolist() == [ZERO, NZERO]
    assert np.isnan(fp.fdiv(c32(np.inf), c32(2.0 ** 127), ty="f32", mode="approx")).all()
    assert fp.fdiv(c32(3.0), c32(2.0 ** 127), ty="f32", mode="full")[0] == np.float32(3.0 * 2.0 ** -127)


@pytest.mark.parametrize("function, ty, expected", [
    (fp.fex2, "f16", [0x0000, 0x3C00, 0x3C00, 0x7C00]), (fp.fex2, "bf16", [0x0000, 0x3F80, 0x3F80, 0x7F80]),
    (fp.ftanh, "f16", [0xBC00, 0x8000, 0x0000, 0x3C00]), (fp.ftanh, "bf16", [0xBF80, 0x8000, 0x0000, 0x3F80]),
])
def test_half_approx_special_values_follow_the_ptx_isa(function, ty, expected):
    codes = {"f16": [0xFC00, 0x8000, 0x0000, 0x7C00], "bf16": [0xFF80, 0x8000, 0x0000, 0x7F80]}[ty]
    got = function(np.array(codes, np.uint16), ty=ty, ftz=ty == "bf16" and function is fp.fex2)
    assert np.asarray(got).tolist() == expected


# ---- the unit itself and its data ----------------------------------------------------------------------

def test_rcp64h_reads_only_the_upper_word():
    upper = np.full(3, 0x402A33FA, np.uint64) << np.uint64(32)
    doubles = (upper | np.array([0, 1, 0xFFFFFFFF], np.uint64)).view(np.float64)
    results = fp.frcp(doubles, ty="f64", mode="approx", ftz=True).view(np.uint64)
    assert len(set(results.tolist())) == 1 and results[0] & np.uint64(0xFFFFFFFF) == 0


def test_half_unit_names_an_unknown_table():
    with pytest.raises(ValueError, match="no MUFU half table 'ex2_f32'"):
        sfu.half("ex2_f32", np.zeros(1, np.uint16))


def test_tables_are_small_and_say_which_card_and_driver_they_came_from():
    assert sfu.TABLES.stat().st_size < 10 * 2 ** 20
    with np.load(sfu.TABLES, allow_pickle=False) as data:
        assert len(data.files) == 3 * 14
    meta = json.loads((sfu.DATA / "meta.json").read_text())
    assert meta["machine"]["card"] == "NVIDIA H100 80GB HBM3"
    assert "580.159.04" in meta["machine"]["nvidia_smi"]


#: sin of tinygrad's large-argument test values, from `DEV=CUDA:PTX python tools/tinygrad_sin_check.py` on the
#: device machine's H200 (sm_90; tinygrad renders sin as sin.approx.f32)
TINYGRAD_SIN_ARGUMENTS = c32(1e1, 1e2, 1e3, 1e4, 1e5, 1e6, -1e1, -1e2, -1e3, -1e4, -1e5, -1e6)
TINYGRAD_SIN_ON_THE_GPU = [0xbf0b44ea, 0xbf01a1a1, 0x3f53a99a, 0xbe9c1fac, 0x3d2fdfc6, 0xbef15ae7,
                           0x3f0b44ea, 0x3f01a1a1, 0xbf53a99a, 0x3e9c1fac, 0xbd2fdfc6, 0x3ef15ae7]


def test_sin_approx_of_tinygrads_large_arguments_is_the_gpus_and_misses_its_tolerance_as_the_gpu_does():
    values = UNARY["sin"](TINYGRAD_SIN_ARGUMENTS)
    assert values.view(U32).tolist() == TINYGRAD_SIN_ON_THE_GPU
    exact = np.sin(TINYGRAD_SIN_ARGUMENTS.astype(np.float64))
    outside = ~np.isclose(values, exact, atol=3e-3, rtol=3e-3)
    assert TINYGRAD_SIN_ARGUMENTS[outside].tolist() == [1e5, 1e6, -1e5, -1e6]

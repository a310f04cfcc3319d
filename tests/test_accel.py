"""The C fused multiply-add agrees bit for bit with the exact numpy definition in isa.fp, NaN rule included."""
import numpy as np
import pytest

from emulator import accel
from isa import fp

pytestmark = pytest.mark.skipif(accel.fma_f32 is None, reason="C accelerators not built (no compiler)")


def special_operands(rng, dtype, bits, n):
    raw = rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(np.dtype(f"u{bits // 8}"))
    values = raw.view(dtype)
    values[:16] = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, 1e-30, -1e30, 3.0, 7.0,
                            np.finfo(dtype).tiny, -np.finfo(dtype).tiny / 4, np.finfo(dtype).max, 2.0], dtype)
    return values


@pytest.mark.parametrize("ty, dtype, bits", [("f32", np.float32, 32), ("f64", np.float64, 64)])
def test_native_fma_matches_the_exact_definition_on_random_and_special_bits(ty, dtype, bits):
    rng = np.random.default_rng(17)
    a, b, c = (special_operands(rng, dtype, bits, 20000) for _ in range(3))
    a[16:4000] = rng.uniform(-2, 2, 3984).astype(dtype)
    b[16:4000] = rng.uniform(-2, 2, 3984).astype(dtype)
    c[16:4000] = -(a[16:4000].astype(np.float64) * b[16:4000]).astype(dtype)
    native = fp._native_fma(ty, a, b, c)
    exact = fp.ffma(a, b, c, ty=ty, _exact=True)
    assert native.view(f"u{bits // 8}").tobytes() == exact.view(f"u{bits // 8}").tobytes()


def test_loading_the_emulator_wires_the_native_fma_into_the_semantics():
    assert fp._NATIVE_FMA == {"f32": accel.fma_f32, "f64": accel.fma_f64}


def test_native_fma_broadcasts_immediates():
    a = np.arange(5, dtype=np.float32)
    assert np.array_equal(fp._native_fma("f32", a, np.float32(3), np.float32(0.5)), a * 3 + 0.5)

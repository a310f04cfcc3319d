"""The C fused multiply-add agrees bit for bit with the exact numpy definition in isa.fp, NaN rule included; the C lane
scans agree with their numpy definitions."""
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


INF = np.iinfo(np.int32).max


def _pcs(rng, warps: int) -> np.ndarray:
    """Per-thread pcs with whole warps at one pc, warps split over a few pcs, exited threads and exited warps."""
    pcs = rng.integers(0, 6, warps * 32).astype(np.int32)
    pcs[rng.random(warps * 32) < 0.1] = INF
    for warp in rng.choice(warps, warps // 2, replace=False):
        pcs[warp * 32:warp * 32 + 32] = rng.choice([3, INF])
    return pcs


def _numpy_twin(monkeypatch):
    monkeypatch.setattr(accel, "_lib", None)


@pytest.mark.parametrize("seed", range(5))
def test_lane_scans_match_their_numpy_definitions(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    pcs = _pcs(rng, 61)
    warps = np.flatnonzero(rng.random(61) < 0.6)
    lanes = np.flatnonzero(rng.random(61 * 32) < 0.3).astype(np.int64)
    native = (accel.warp_lowest(pcs), accel.lanes_at(pcs, warps, 3, INF), accel.warps_in(lanes))
    starts = accel.warp_starts(pcs, accel.WarpScan(61, 7), INF)
    native_starts = [np.copy(starts[0]), np.copy(starts[1]), *starts[2:5], np.copy(starts[5])]
    native_assigned = pcs.copy()
    accel.assign(native_assigned, lanes, 17)
    _numpy_twin(monkeypatch)
    assert np.array_equal(native[0], pcs.reshape(-1, 32).min(axis=1))
    at = [lane for warp in warps for lane in range(warp * 32, warp * 32 + 32) if pcs[lane] == 3]
    rest = [int(pcs[lane]) for warp in warps for lane in range(warp * 32, warp * 32 + 32) if pcs[lane] != 3]
    assert native[1][0].tolist() == at and native[1][1] == min(rest, default=INF)
    assert native[2] == len(set((lanes >> 5).tolist()))
    expected = pcs.copy()
    expected[lanes] = 17
    assert np.array_equal(native_assigned, expected)
    lowest = pcs.reshape(-1, 32).min(axis=1)
    ready = np.flatnonzero(lowest != INF)
    distinct = sorted(set(lowest[ready].tolist()))
    assert np.array_equal(native_starts[0], lowest) and native_starts[1].tolist() == ready.tolist()
    assert native_starts[2:5] == [len(distinct), distinct[0], distinct[1] if len(distinct) > 1 else INF]
    assert native_starts[5].tolist() == [warp for warp in ready if lowest[warp] == distinct[0]]
    twin_starts = accel.warp_starts(pcs, accel.WarpScan(61, 7), INF)
    assert [np.asarray(part).tolist() for part in twin_starts] == [np.asarray(part).tolist() for part in native_starts]
    twin = (accel.warp_lowest(pcs), accel.lanes_at(pcs, warps, 3, INF), accel.warps_in(lanes))
    assert np.array_equal(twin[0], native[0]) and twin[1][0].tolist() == at and twin[1][1] == native[1][1]
    assert twin[2] == native[2]


def test_lanes_at_no_warps_and_all_threads_at_the_pc():
    pcs = np.full(64, 9, dtype=np.int32)
    lanes, others = accel.lanes_at(pcs, np.arange(2), 9, INF)
    assert lanes.tolist() == list(range(64)) and others == INF
    lanes, others = accel.lanes_at(pcs, np.empty(0, dtype=np.int64), 9, INF)
    assert len(lanes) == 0 and others == INF


def test_warp_starts_refuses_a_pc_past_its_limit_and_reports_no_running_warp():
    pcs = np.full(64, INF, dtype=np.int32)
    assert accel.warp_starts(pcs, accel.WarpScan(2, 4), INF) is None
    pcs[5] = 9
    with pytest.raises(ValueError, match="outside 0..3"):
        accel.warp_starts(pcs, accel.WarpScan(2, 4), INF)


def _turn_sequence(pcs_states, seed: int, rules) -> list:
    """Every turn random_turn draws over pcs_states, one after the other from one seeded stream, with where the
    stream stood after each."""
    uniforms = accel.Uniforms(np.random.default_rng(seed))
    drawn = []
    for pcs in pcs_states:
        turns = accel.RandomTurns(pcs, 7, rules, INF)
        turn = accel.random_turn(turns, uniforms)
        lanes = None if turn is None or turn[2] is None else turn[2].tolist()
        drawn.append((None if turn is None else (*turn[:2], lanes, *turn[3:]), int(uniforms.cursor[0]),
                      len(uniforms.values)))
    return drawn


@pytest.mark.parametrize("seed", range(4))
def test_random_turns_match_their_numpy_definition_draw_for_draw(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    rules = accel.TurnRules([0.9 ** k for k in range(1, 12)], [3, 2, 1, 0, 0, 4, 2], (1.0, 0.3, 0.5))
    states = [_pcs(rng, warps) for warps in rng.integers(1, 40, 300)]
    states.append(np.full(64, INF, dtype=np.int32))
    native = _turn_sequence(states, seed, rules)
    kinds = {turn[0] for turn, _, _ in native if turn is not None}
    assert kinds == {accel.TURN, accel.WARP_TURN, accel.SPLIT_TURN} and native[-1][0] is None
    _numpy_twin(monkeypatch)
    assert _turn_sequence(states, seed, rules) == native


def test_random_turn_lengths_are_geometric_and_capped():
    chance = 1 / 16
    rules = accel.TurnRules([(1 - chance) ** k for k in range(1, 32)], [5] * 7, (1.0, 0.0, 0.0))
    uniforms = accel.Uniforms(np.random.default_rng(3))
    turns = accel.RandomTurns(np.zeros(64, dtype=np.int32), 7, rules, INF)
    lengths = np.array([accel.random_turn(turns, uniforms)[4] for _ in range(20000)])
    assert lengths.min() == 1 and lengths.max() == 32
    for k in (1, 8, 16, 31):
        assert abs(np.mean(lengths > k) - (1 - chance) ** k) < 0.015

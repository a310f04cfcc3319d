"""Optional C accelerators: semantics numpy lacks (fused multiply-add; None when not built), and the schedulers' lane
scans over a batch's per-thread pcs and the random schedule's turns (numpy when not built, with the same results)."""
from __future__ import annotations

import numpy as np

try:
    from emulator.accel._gpuemu_arith import ffi as _ffi, lib as _lib
except ImportError:
    _ffi = _lib = None


def _fma(dtype, function, ctype):
    def fused(a, b, c):
        shape = np.broadcast(a, b, c).shape
        a, b, c = (np.ascontiguousarray(x, dtype=dtype).reshape(-1) for x in (a, b, c))
        n = max(a.size, b.size, c.size)
        out = np.empty(n, dtype=dtype)
        strides = [0 if x.size == 1 else 1 for x in (a, b, c)]
        if any(x.size not in (1, n) for x in (a, b, c)):
            raise ValueError("fma operands must be scalars or of one length")
        pointer = lambda x: _ffi.from_buffer(f"{ctype}[]", x)
        function(pointer(a), strides[0], pointer(b), strides[1], pointer(c), strides[2],
                 _ffi.from_buffer(f"{ctype}[]", out), n)
        return out[0] if shape == () else out.reshape(shape)
    return fused


fma_f32 = _fma(np.float32, _lib.ga_fma_f32, "float") if _lib is not None else None
fma_f64 = _fma(np.float64, _lib.ga_fma_f64, "double") if _lib is not None else None


def warp_lowest(pcs: np.ndarray) -> np.ndarray:
    """Per warp of 32 threads, the lowest of their pcs (int32)."""
    if _lib is None:
        return pcs.reshape(-1, 32).min(axis=1)
    lowest = np.empty(len(pcs) // 32, dtype=np.int32)
    _lib.gl_warp_lowest(_ffi.from_buffer("int32_t[]", pcs), len(lowest), _ffi.from_buffer("int32_t[]", lowest))
    return lowest


class WarpScan:
    """Buffers for warp_starts over a batch of `warps` warps whose pcs are below `limit`, kept by the scheduler that
    asks (what warp_starts returns lives in them until its next call)."""

    def __init__(self, warps: int, limit: int):
        self.lowest = np.empty(warps, dtype=np.int32)
        self.ready = np.empty(warps, dtype=np.int64)
        self.behind = np.empty(warps, dtype=np.int64)
        self.summary = np.empty(4, dtype=np.int64)
        self.seen = np.zeros(limit, dtype=np.uint8)
        if _lib is not None:
            self.pointers = (_ffi.from_buffer("int32_t[]", self.lowest), _ffi.from_buffer("int64_t[]", self.ready),
                             _ffi.from_buffer("uint8_t[]", self.seen), limit,
                             _ffi.from_buffer("int64_t[]", self.summary), _ffi.from_buffer("int64_t[]", self.behind))


def warp_starts(pcs: np.ndarray, scan: WarpScan, none: int):
    """What a scheduler asks first of a batch's per-thread pcs (each below the scan's limit, or none for a thread that
    runs no more): (per warp its lowest pc, the warps that still run (ascending), how many distinct lowest pcs those
    have, the lowest two of them (none for a missing second), the warps whose lowest pc is the lowest); None when no
    warp runs."""
    if _lib is None:
        lowest = pcs.reshape(-1, 32).min(axis=1)
        ready = np.flatnonzero(lowest != none)
        if len(ready) == 0:
            return None
        ready_pcs = lowest[ready]
        starts = np.flatnonzero(np.bincount(ready_pcs))
        return (lowest, ready, len(starts), int(starts[0]), int(starts[1]) if len(starts) > 1 else none,
                ready[ready_pcs == starts[0]])
    count = _lib.gl_warp_starts(_ffi.from_buffer("int32_t[]", pcs), len(scan.lowest), *scan.pointers)
    if count < 0:
        raise ValueError(f"a pc outside 0..{len(scan.seen) - 1} and not {none}")
    if count == 0:
        return None
    distinct, first, second, n_behind = scan.summary.tolist()
    return scan.lowest, scan.ready[:count], distinct, first, min(second, none), scan.behind[:n_behind]


def lanes_at(pcs: np.ndarray, warps: np.ndarray, pc: int, none: int) -> tuple:
    """(the threads of warps, ascending int64 indices, whose pc is pc; the lowest pc of their other threads, none when
    there is no other). warps: ascending warp indices."""
    if _lib is None:
        lanes = (warps[:, None] * 32 + np.arange(32, dtype=np.int64)).reshape(-1)
        at_pc = pcs[lanes]
        at = at_pc == pc
        return lanes[at], int(np.min(at_pc, where=~at, initial=none))
    warps = np.ascontiguousarray(warps, dtype=np.int64)
    room = len(warps) * 32
    lanes = np.empty(room + 1, dtype=np.int64)
    count = _lib.gl_lanes_at(_ffi.from_buffer("int32_t[]", pcs), _ffi.from_buffer("int64_t[]", warps), len(warps),
                             pc, _ffi.from_buffer("int64_t[]", lanes))
    return lanes[:count], min(int(lanes[room]), none)


def warps_in(lanes: np.ndarray) -> int:
    """How many warps the ascending int64 thread indices lanes touch."""
    if _lib is None or len(lanes) < 64:
        if len(lanes) == 0:
            return 0
        warps = lanes >> 5
        return int(np.count_nonzero(warps[1:] != warps[:-1])) + 1
    return int(_lib.gl_warps_in(_ffi.from_buffer("int64_t[]", lanes), len(lanes)))


def assign(values: np.ndarray, lanes: np.ndarray, value: int) -> None:
    """values[lanes] = value, for int32 values and int64 lanes (as every lane selection is)."""
    if _lib is None or len(lanes) < 64:
        values[lanes] = value
        return
    _lib.gl_assign(_ffi.from_buffer("int32_t[]", values), _ffi.from_buffer("int64_t[]", lanes), len(lanes), value)


#: what random_turn drew: a turn of the lanes it returns; one warp's turn, which the schedule chooses a group of; a
#: turn of several warps that starts at a store or an atomic, which the schedule splits by warp
TURN, WARP_TURN, SPLIT_TURN = 1, 2, 3


class Uniforms:
    """A seeded numpy Generator's stream of uniform doubles in [0, 1), drawn in blocks and taken in order, by
    random_turn (C or numpy) and by the schedule itself: the same seed gives the same stream whoever takes from it."""

    BLOCK = 4096

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.values = np.empty(0, dtype=np.float64)
        self.cursor = np.zeros(1, dtype=np.int64)
        self.pointers = None

    def reserve(self, count: int) -> None:
        """At least count values ahead of the cursor."""
        at = int(self.cursor[0])
        if len(self.values) - at >= count:
            return
        self.values = np.concatenate([self.values[at:], self.rng.random(max(self.BLOCK, count))])
        self.cursor[0] = 0
        if _lib is not None:
            self.pointers = (_ffi.from_buffer("double[]", self.values), _ffi.from_buffer("int64_t[]", self.cursor))

    def take(self) -> float:
        self.reserve(1)
        at = int(self.cursor[0])
        self.cursor[0] = at + 1
        return float(self.values[at])

    def take_many(self, count: int) -> np.ndarray:
        self.reserve(count)
        at = int(self.cursor[0])
        self.cursor[0] = at + count
        return self.values[at:at + count].copy()


def index_below(u: float, count: int) -> int:
    """A draw u in [0, 1) made an index below count (as the C turn makes it)."""
    return min(int(u * count), count - 1)


class TurnRules:
    """What a random turn follows, fixed per program. longer: P(a turn runs more than k instructions) for k = 1 ..
    the longest turn - 1, decreasing; until_sensitive: per pc, how many instructions on from it the next store or
    atomic is (0 at one); chances: (catch-up weight, chance of one warp's turn, chance of stopping before a store)."""

    def __init__(self, longer, until_sensitive, chances):
        self.longer = np.asarray(longer, dtype=np.float64)
        self.max_turn = len(self.longer) + 1
        self.until_sensitive = np.asarray(until_sensitive, dtype=np.int64)
        self.catch_up_weight, self.single_warp, self.stop_before = (float(chance) for chance in chances)
        self.chances = np.array(chances, dtype=np.float64)


class RandomTurns:
    """random_turn's state over one batch's per-thread pcs (an array the batch updates in place; its pcs are below
    limit or none): the warp scan's buffers and the rules, bound to the C code once."""

    def __init__(self, pcs: np.ndarray, limit: int, rules: TurnRules, none: int):
        self.pcs = pcs
        self.scan = WarpScan(len(pcs) // 32, limit)
        self.rules = rules
        self.none = none
        #: draws one turn can take at most, the schedule's own included
        self.reserve = 2 * len(self.scan.lowest) + 16
        self.result = np.zeros(6, dtype=np.int64)
        if _lib is not None:
            self.state = _ffi.new("gl_turns *")
            state = self.state
            state.pcs = _ffi.from_buffer("int32_t[]", pcs)
            state.warps = len(self.scan.lowest)
            state.lowest, state.ready, state.seen, state.limit, state.summary, state.behind = self.scan.pointers
            state.longer = _ffi.from_buffer("double[]", rules.longer)
            state.max_turn = rules.max_turn
            state.until_sensitive = _ffi.from_buffer("int64_t[]", rules.until_sensitive)
            state.chances = _ffi.from_buffer("double[]", rules.chances)
            state.result = _ffi.from_buffer("int64_t[]", self.result)
            #: the uniforms' pointers the state holds (bound again when the stream draws a new block)
            self.uniforms = None


def random_turn(turns: RandomTurns, uniforms: Uniforms):
    """One turn of a random schedule over turns.pcs (those warp_starts takes), drawn from uniforms: (kind, pc, lanes
    (ascending int64), pc at which the turn stops for the other lanes of its warps, its length, its warps, the warp of
    a WARP_TURN); None when no warp runs. In the order of its draws:
    - its length: 1 + how many of rules.longer a draw is below (geometric, capped);
    - with D distinct lowest pcs among the warps, a draw times (D + catch-up weight) at or above that weight makes a
      catch-up turn: every lane of the warps whose lowest pc is the batch's lowest, at it;
    - otherwise a ready warp (index_below of a draw); a draw below the single-warp chance makes it a WARP_TURN; or
      else a share s is drawn, and each other warp whose lowest pc is the drawn warp's joins it when its own draw
      (in warp order) is below s: the lanes of those warps at that pc;
    - at a store or an atomic (until_sensitive 0) a turn of several warps is a SPLIT_TURN; elsewhere a draw below the
      stop chance shortens the turn to end before the next one."""
    if len(uniforms.values) - uniforms.cursor[0] < turns.reserve:
        uniforms.reserve(turns.reserve)
    if _lib is None:
        return _random_turn_numpy(turns.pcs, turns.scan, uniforms, turns.rules, turns.none)
    lanes = np.empty(len(turns.pcs) + 1, dtype=np.int64)
    if turns.uniforms is not uniforms.pointers:
        turns.uniforms = uniforms.pointers
        turns.state.uniforms, turns.state.cursor = uniforms.pointers
    kind = _lib.gl_random_turn(turns.state, _ffi.from_buffer("int64_t[]", lanes))
    if kind <= 0:
        if kind < 0:
            raise ValueError(f"a pc outside 0..{len(turns.scan.seen) - 1} and not {turns.none}")
        return None
    pc, count, others, length, warps, warp = turns.result.tolist()
    if kind == WARP_TURN:
        return kind, -1, None, turns.none, length, 1, warp
    return kind, pc, lanes[:count], min(others, turns.none), length, warps, -1


def _random_turn_numpy(pcs, scan, uniforms, rules, none):
    starts = warp_starts(pcs, scan, none)
    if starts is None:
        return None
    lowest, ready, distinct, first, second, behind = starts
    draw = uniforms.take()
    length = 1
    while length < rules.max_turn and draw < rules.longer[length - 1]:
        length += 1
    if uniforms.take() * (distinct + rules.catch_up_weight) >= rules.catch_up_weight:
        pc, warps = first, behind
        lanes, others = lanes_at(pcs, warps, pc, none)
        others = min(others, second)
    else:
        warp = int(ready[index_below(uniforms.take(), len(ready))])
        if uniforms.take() < rules.single_warp:
            return WARP_TURN, -1, None, none, length, 1, warp
        pc = int(lowest[warp])
        share = uniforms.take()
        peers = ready[lowest[ready] == pc]
        joins = peers != warp
        keep = np.ones(len(peers), dtype=bool)
        keep[joins] = uniforms.take_many(int(np.count_nonzero(joins))) < share
        warps = peers[keep]
        lanes, others = lanes_at(pcs, warps, pc, none)
    kind = TURN
    ahead = int(rules.until_sensitive[pc])
    if ahead == 0:
        kind = SPLIT_TURN if len(warps) > 1 else TURN
    elif uniforms.take() < rules.stop_before and ahead < length:
        length = ahead
    return kind, int(pc), lanes, int(others), length, len(warps), -1


def install() -> None:
    """Give isa's round-to-nearest f32/f64 fma the native fused multiply-add, when the helper was built."""
    from isa import fp
    if fma_f32 is not None:
        fp.use_native_fma("f32", fma_f32)
        fp.use_native_fma("f64", fma_f64)

"""The C core and its numpy twin, fed the same seeded random operations, end in identical states."""
import numpy as np
import pytest

from emulator.memory import (LOCAL_WINDOW, SHARED_WINDOW, DeviceFault, Memory, RequestTotals, c_core_available,
    distinct_addresses, global_sectors, local_sectors, max_same_address, request_totals, shared_wavefronts)
from emulator.memory.spaces import ATOMIC_DTYPES, ATOMIC_OPS_BY_TYPE
from isa import atomic

pytestmark = pytest.mark.skipif(not c_core_available(),
                                reason="C core not built (python -m emulator.memory.build_core)")

N_CTAS, THREADS_PER_CTA, SHARED_BYTES, LOCAL_BYTES = 3, 64, 512, 64


def _twins():
    twins = (Memory(backend="c"), Memory(backend="numpy"))
    allocations = []
    for memory in twins:
        allocations = [memory.alloc(1024), memory.alloc(40, align=8), memory.alloc(64, kind="const"),
                       memory.alloc(256)]
        memory.free(allocations[3])
        memory.set_windows(n_ctas=N_CTAS, threads_per_cta=THREADS_PER_CTA, shared_bytes=SHARED_BYTES,
                           local_bytes=LOCAL_BYTES)
    return twins, allocations


def _random_addresses(rng, allocations, n, width, space):
    """Mostly valid, aligned addresses, with a sprinkling of every kind of bad one."""
    base = np.array(allocations, dtype=np.uint64)
    pick = rng.integers(0, 4, size=n)
    within = rng.integers(0, 1024 // width, size=n).astype(np.uint64) * np.uint64(width)
    span = np.array([1024, 40, 64, 256], dtype=np.uint64)[pick]
    global_addr = base[pick] + within % span
    shared_off = rng.integers(0, SHARED_BYTES // width, size=n).astype(np.uint64) * np.uint64(width)
    local_off = rng.integers(0, LOCAL_BYTES // width, size=n).astype(np.uint64) * np.uint64(width)
    if space == "global":
        addr = global_addr
    elif space == "shared":
        addr = shared_off
    elif space == "local":
        addr = local_off
    else:
        which = rng.integers(0, 3, size=n)
        addr = np.where(which == 0, global_addr, np.where(which == 1, shared_off + np.uint64(SHARED_WINDOW),
                                                          local_off + np.uint64(LOCAL_WINDOW)))
    if n and rng.random() < 0.3:
        bad = rng.integers(0, n)
        addr = addr.copy()
        addr[bad] = rng.choice(np.array([0, 8, 2**64 - 8, int(addr[bad]) + 1, int(addr[bad]) + 4096,
                                         SHARED_WINDOW + 2**31, LOCAL_WINDOW - 16], dtype=np.uint64))
    return addr


def _outcome(call):
    try:
        return ("ok", call())
    except DeviceFault as fault:
        return ("fault", (fault.kind, fault.space, fault.op, fault.width, fault.address, fault.lane, fault.detail))


def _state(memory, allocations):
    live = [memory.read(a, size) for a, size in zip(allocations[:3], (1024, 40, 64))]
    shared = [memory.shared_bytes(c).copy() for c in range(N_CTAS)]
    local = [memory.local_bytes(t).copy() for t in range(N_CTAS * THREADS_PER_CTA)]
    return np.concatenate(live + shared + local)


def _assert_same(outcomes):
    (kind_c, value_c), (kind_np, value_np) = outcomes
    assert kind_c == kind_np
    if kind_c == "fault":
        assert value_c == value_np
    else:
        assert value_c.dtype == value_np.dtype
        np.testing.assert_array_equal(value_c.view(np.uint8), value_np.view(np.uint8))


@pytest.mark.parametrize("seed", range(6))
def test_random_loads_stores_and_atomics_agree_between_backends(seed):
    rng = np.random.default_rng(seed)
    twins, allocations = _twins()
    n_threads = N_CTAS * THREADS_PER_CTA
    faults = 0
    for step in range(60):
        n = int(rng.integers(0, 80))
        space = rng.choice(["global", "shared", "local", "generic"])
        threads = rng.integers(0, n_threads, size=n) if rng.random() < 0.7 else None
        if threads is None and space in ("shared", "local", "generic"):
            n = min(n, n_threads)
        action = rng.choice(["load", "store", "atomic"], p=[0.3, 0.3, 0.4])
        if action == "atomic":
            ty = rng.choice(["b32", "u32", "s32", "b64", "u64", "s64", "f32", "f64", "f16x2", "bf16x2",
                             "f16", "bf16", "b16"])
            op = rng.choice(ATOMIC_OPS_BY_TYPE[ty])
            width = 8 if ty.endswith("64") else 2 if ty in ("f16", "bf16", "b16") else 4
            addr = _random_addresses(rng, allocations, n, width, space)
            if rng.random() < 0.5 and n:
                addr[rng.random(n) < 0.6] = addr[0]
            bits = rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(rng.integers(1, 3))
            a = bits.astype({8: np.uint64, 4: np.uint32, 2: np.uint16}[width])
            if ty in ("f32", "f64") and rng.random() < 0.7:
                # small values too, so that global adds meet subnormals to flush
                scale = 2.0 ** -140 if ty == "f32" and rng.random() < 0.3 else 1.0
                a = (rng.standard_normal(n) * scale).astype(np.float32 if ty == "f32" else np.float64)
            b = a[::-1].copy()
            outcomes = [_outcome(lambda m=m: m.atomic(space, op, ty, addr, threads[:n] if threads is not None else None,
                                                      a, b if op == "cas" else None)) for m in twins]
        else:
            width = int(rng.choice([1, 2, 4, 8, 16]))
            addr = _random_addresses(rng, allocations, n, width, space)
            lanes = threads[:n] if threads is not None else None
            if action == "load":
                outcomes = [_outcome(lambda m=m: m.load(space, addr, lanes, width)) for m in twins]
            else:
                data = rng.integers(0, 256, size=n * width, dtype=np.uint8)
                outcomes = [_outcome(lambda m=m: (m.store(space, addr, lanes, width, data), np.zeros(0))[1])
                            for m in twins]
        _assert_same(outcomes)
        faults += outcomes[0][0] == "fault"
        np.testing.assert_array_equal(_state(twins[0], allocations), _state(twins[1], allocations))
    assert 0 < faults < 60


def _python_counts(kind, addr, threads, width, bank_bytes=4):
    """Slow, obvious per-warp reference built from sets."""
    per_warp = {}
    for a, t in zip(addr.tolist(), threads.tolist()):
        per_warp.setdefault(t // 32, []).append((a, t))
    result = {}
    for warp, lanes in per_warp.items():
        if kind == "distinct":
            result[warp] = len({a for a, _ in lanes})
        elif kind == "max_same":
            result[warp] = max([a for a, _ in lanes].count(a) for a, _ in lanes)
        elif kind == "sectors":
            result[warp] = len({s for a, _ in lanes for s in range(a // 32, (a + width - 1) // 32 + 1)})
        else:
            lanes_per_phase = min(32, 64 * bank_bytes // width)
            phases = {}
            for a, t in lanes:
                words = range(a // bank_bytes, (a + width - 1) // bank_bytes + 1)
                banks = phases.setdefault((t % 32) // lanes_per_phase, {})
                for word in words:
                    banks.setdefault(word % 32, set()).add(word)
            result[warp] = sum(max(len(words) for words in banks.values()) for banks in phases.values())
    warps = sorted(result)
    return warps, [result[w] for w in warps]


@pytest.mark.parametrize("seed", range(8))
def test_random_counts_agree_with_each_other_and_a_python_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 400))
    width = int(rng.choice([1, 2, 4, 8, 16]))
    bank_bytes = int(rng.choice([4, 4, 8]))
    threads = rng.integers(0, 300, size=n) if seed % 2 else np.arange(n) + int(rng.integers(0, 64))
    if seed % 3 == 0:
        addr = rng.integers(0, 2048, size=n).astype(np.uint64) * np.uint64(width)
    else:
        addr = (np.uint64(0x7F4368000000) + rng.integers(0, 64, size=n).astype(np.uint64)
                * np.uint64(int(rng.choice([1, 4, 32, 33, 128]))))
    for kind, counter, args in [
        ("waves", shared_wavefronts, (width, bank_bytes)), ("sectors", global_sectors, (width,)),
        ("distinct", distinct_addresses, ()), ("max_same", max_same_address, ()),
    ]:
        got = [counter(addr, threads, *args, backend=backend) for backend in ("c", "numpy")]
        warps, counts = _python_counts(kind, addr, threads, width, bank_bytes)
        for warps_got, counts_got in got:
            assert warps_got.tolist() == warps
            assert counts_got.tolist() == counts


MASK64 = (1 << 64) - 1


def _reference_warp(kind, lanes, width, bank_bytes):
    """(count, ideal) of one warp's (address, thread) lanes, from sets of Python integers."""
    addresses = [a for a, _ in lanes]
    if kind == "distinct_addresses":
        return len(set(addresses)), 1
    if kind == "max_same_address":
        return max(addresses.count(a) for a in addresses), 1
    if kind == "global_sectors":
        sectors = {s for a in addresses for s in range(a // 32, (a + width - 1) // 32 + 1)}
        return len(sectors), (len(lanes) * width + 31) // 32
    if kind == "local_sectors":
        words, piece = max(width // 4, 1), min(width, 4)
        sectors = set()
        for a, t in lanes:
            for j in range(words):
                physical = (((a // 4 + j) * 32 + t % 32) * 4 + a % 4) & MASK64
                sectors.update(range(physical // 32, (physical + piece - 1) // 32 + 1))
        return len(sectors), words * ((len(lanes) * piece + 31) // 32)
    # the H100 serves a warp's 8-byte accesses in one phase and 16-byte ones in two (tests/stats_patterns)
    lanes_per_phase = min(32, 64 * bank_bytes // width)
    lanes_per_wavefront = min(32, 32 * bank_bytes // width)
    phases = {}
    for a, t in lanes:
        banks = phases.setdefault((t % 32) // lanes_per_phase, {})
        for j in range((a % bank_bytes + width - 1) // bank_bytes + 1):
            word = (a // bank_bytes + j) & MASK64
            banks.setdefault(word % 32, set()).add(word)
    count = sum(max(len(words) for words in banks.values()) for banks in phases.values())
    return count, min(count, len({(t % 32) // lanes_per_wavefront for _, t in lanes}))


def _reference_totals(kind, addr, threads, width, bank_bytes, contention):
    per_warp = {}
    for a, t in zip(addr.tolist(), threads.tolist()):
        per_warp.setdefault(t // 32, []).append((a, t))
    count = ideal = most_total = most_max = 0
    for lanes in per_warp.values():
        warp_count, warp_ideal = _reference_warp(kind, lanes, width, bank_bytes)
        count += warp_count
        ideal += warp_ideal
        if contention:
            most = _reference_warp("max_same_address", lanes, width, bank_bytes)[0]
            most_total += most
            most_max = max(most_max, most)
    return RequestTotals(len(per_warp), count, ideal, most_total, most_max)


def _address_family(rng, family, n, width):
    """Lane addresses of one shape: each shape steers the cores to a different way of counting."""
    lane = np.arange(n, dtype=np.uint64)
    w = np.uint64(width)
    base = np.uint64(int(rng.integers(0, 1 << 40)) * 64)
    if family == "contiguous":
        return base + lane * w
    if family == "one address":
        return np.full(n, base + np.uint64(int(rng.integers(0, 64))), dtype=np.uint64)
    if family == "strided":
        return base + lane * np.uint64(int(rng.choice([2, 32, 33, 128, 132, 4096]))) * w
    if family == "small range":
        return base + rng.integers(0, 256, n).astype(np.uint64) * w
    if family == "unaligned":
        return base + rng.integers(0, 300, n).astype(np.uint64)
    if family == "wide":
        return rng.integers(0, 1 << 48, n).astype(np.uint64) * w
    if family == "top of memory":
        return np.uint64(MASK64) - rng.integers(0, 200, n).astype(np.uint64)
    if family == "few local offsets":
        return rng.integers(0, 16, n).astype(np.uint64) * w
    # a few hot addresses among many lanes
    return base + rng.choice(rng.integers(0, 5000, 6), n).astype(np.uint64) * w


FAMILIES = ["contiguous", "one address", "strided", "small range", "unaligned", "wide", "top of memory",
            "few local offsets", "hot"]
KINDS = ["shared_wavefronts", "global_sectors", "local_sectors", "distinct_addresses", "max_same_address"]


def _thread_layout(rng, layout, n):
    if layout == "whole warps":
        return None
    if layout == "partial warps":
        return np.sort(rng.choice(np.arange(64, 64 + 2 * n), n, replace=False)).astype(np.int64)
    if layout == "shuffled":
        return rng.permutation(np.arange(n, dtype=np.int64) + 96)
    return np.sort(rng.integers(0, 4 * n // 3 + 1, n)).astype(np.int64)   # repeated threads


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("layout", ["whole warps", "partial warps", "shuffled", "repeated"])
def test_request_totals_agree_with_each_other_and_a_python_reference(family, layout):
    rng = np.random.default_rng(sum(map(ord, family + layout)))
    for _ in range(4):
        n = 32 * int(rng.integers(1, 7)) if layout == "whole warps" else int(rng.integers(1, 200))
        width = int(rng.choice([1, 2, 4, 8, 16]))
        bank_bytes = int(rng.choice([1, 2, 4, 4, 8, 16]))
        addr = _address_family(rng, family, n, width)
        threads = _thread_layout(rng, layout, n)
        reference_threads = np.arange(n) if threads is None else threads
        for kind in KINDS:
            contention = bool(rng.integers(0, 2))
            want = _reference_totals(kind, addr, reference_threads, width, bank_bytes, contention)
            for backend in ("c", "numpy"):
                got = request_totals(kind, addr, threads, width, bank_bytes, contention=contention, backend=backend)
                assert got == want, (kind, backend, width, bank_bytes)


@pytest.mark.parametrize("seed", range(6))
def test_one_word_atomics_in_and_out_of_the_tally_window_agree(seed):
    """Shared atomics on random words: bins within reach of the first lane's word, and bins so far
    apart that the cores count them another way."""
    rng = np.random.default_rng(200 + seed)
    spread = [256, 4096, 1 << 20][seed % 3]
    n = 32 * 8
    addr = rng.integers(0, spread, n).astype(np.uint64) * np.uint64(4) + np.uint64(seed % 2 * 2)
    threads = None if seed < 3 else np.sort(rng.choice(512, n, replace=False)).astype(np.int64)
    reference_threads = np.arange(n) if threads is None else threads
    for width in (2, 4, 8):
        want = _reference_totals("shared_wavefronts", addr, reference_threads, width, 4, True)
        for backend in ("c", "numpy"):
            assert request_totals("shared_wavefronts", addr, threads, width, 4, contention=True,
                                  backend=backend) == want


@pytest.mark.parametrize("layout", ["whole warps", "partial warps", "shuffled", "repeated"])
def test_local_sectors_per_warp_agree_with_a_python_reference(layout):
    rng = np.random.default_rng(len(layout))
    for family in FAMILIES:
        n = 96 if layout == "whole warps" else int(rng.integers(1, 150))
        width = int(rng.choice([1, 2, 4, 8, 16]))
        addr = _address_family(rng, family, n, width)
        threads = _thread_layout(rng, layout, n)
        reference_threads = np.arange(n) if threads is None else threads
        per_warp = {}
        for a, t in zip(addr.tolist(), reference_threads.tolist()):
            per_warp.setdefault(t // 32, []).append((a, t))
        want = [_reference_warp("local_sectors", per_warp[w], width, 4)[0] for w in sorted(per_warp)]
        for backend in ("c", "numpy"):
            warps, counts = local_sectors(addr, threads, width, backend=backend)
            assert warps.tolist() == sorted(per_warp) and counts.tolist() == want


@pytest.mark.parametrize("thread", [-1, 1 << 48])
def test_one_address_with_a_thread_out_of_range_is_refused_by_both_backends(thread):
    threads = np.array([0, 1, 5, thread] if thread > 0 else [thread, 0, 1, 5], dtype=np.int64)
    addr = np.full(4, 64, dtype=np.uint64)
    for kind in KINDS:
        for backend in ("c", "numpy"):
            with pytest.raises(ValueError):
                request_totals(kind, addr, threads, 4, backend=backend)


_SPECIAL_F32 = [0x00000001, 0x80000001, 0x00400000, 0x007FFFFF, 0x00800000, 0x7F800000, 0xFF800000,
                0x7F800001, 0x7FC00000, 0xFFC00005, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x00000000, 0x80000000]
_SPECIAL_F64 = [0x0000000000000001, 0x8000000000000001, 0x000FFFFFFFFFFFFF, 0x7FF0000000000000,
                0xFFF0000000000000, 0x7FF0000000000001, 0x7FF8000000000000, 0xFFF8000000000005,
                0x3FF0000000000000, 0xBFF0000000000000, 0x7FEFFFFFFFFFFFFF, 0x0000000000000000]
_SPECIAL_HALF = [0x0001, 0x8001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFE05, 0x3C00, 0xBC00,
                 0x7BFF, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0x3F80, 0x0000, 0x8000]


@pytest.mark.parametrize("space", ["global", "shared", "generic"])
@pytest.mark.parametrize("ty", ["f32", "f64", "f16", "bf16", "f16x2", "bf16x2"])
def test_float_atomic_adds_with_special_values_agree_in_every_space(ty, space):
    """Subnormals, NaNs and infinities, in short lane rounds and in long contended chains."""
    rng = np.random.default_rng(sum(map(ord, ty + space)))
    twins, allocations = _twins()
    width = {"f64": 8, "f16": 2, "bf16": 2}.get(ty, 4)
    dtype = {8: np.uint64, 4: np.uint32, 2: np.uint16}[width]
    special = {"f32": _SPECIAL_F32, "f64": _SPECIAL_F64}.get(ty, _SPECIAL_HALF)
    for step in range(6):
        n = 120
        hot = rng.integers(0, 3, size=n) if step % 2 else rng.integers(0, 40, size=n)
        shared_offsets = (hot * width).astype(np.uint64)
        global_addr = np.uint64(allocations[0]) + shared_offsets
        if space == "global":
            addr = global_addr
        elif space == "shared":
            addr = shared_offsets
        else:
            addr = np.where(rng.random(n) < 0.5, global_addr, shared_offsets + np.uint64(SHARED_WINDOW))
        threads = np.sort(rng.integers(0, THREADS_PER_CTA, size=n))
        values = np.array(special, dtype=np.uint64)[rng.integers(0, len(special), size=n)].astype(dtype)
        if ty in ("f16x2", "bf16x2"):
            values = values | (values[::-1].astype(np.uint32) << np.uint32(16))
        start = np.array(special, dtype=np.uint64)[rng.integers(0, len(special), size=64)].astype(dtype)
        for memory in twins:
            memory.write(allocations[0], np.resize(start, 1024 // width))
            memory.shared_bytes(0)[:] = np.resize(start, SHARED_BYTES // width).view(np.uint8)
        outcomes = [_outcome(lambda m=m: m.atomic(space, "add", ty, addr, threads, values)) for m in twins]
        _assert_same(outcomes)
        assert outcomes[0][0] == "ok"
        np.testing.assert_array_equal(_state(twins[0], allocations), _state(twins[1], allocations))


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("delta", [-33, -32, -31, 28, 29, 30, 31, 32, 33])
def test_local_sectors_of_lanes_words_apart_at_the_edges_of_the_group_span(width, delta):
    """A group of 8 lanes whose words lie `delta` words from its first lane's: the C core counts words within
    32 either side of the first as bits and the rest another way; both must give the reference's sectors."""
    first = 1000 * 4
    addr = np.array([first, first + delta * 4, first + 4, first] * 4, dtype=np.uint64)
    threads = np.array([0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27], dtype=np.int64)
    want = _reference_totals("local_sectors", addr, threads, width, 4, False)
    for backend in ("c", "numpy"):
        assert request_totals("local_sectors", addr, threads, width, backend=backend) == want
        assert request_totals("local_sectors", addr, None, width, backend=backend) == \
            _reference_totals("local_sectors", addr, np.arange(16), width, 4, False)


@pytest.mark.parametrize("kind", ["local_sectors", "shared_wavefronts"])
@pytest.mark.parametrize("density", [0.05, 0.3, 0.7, 0.97, 1.0])
def test_one_address_on_ascending_lanes_agrees_with_the_reference_at_every_width(kind, density):
    """Lanes of a divergent branch all at one address: the C core sums these over the call; each warp's lanes
    sit just under and over the 8-, 16- and 24-lane marks that set its ideal."""
    rng = np.random.default_rng(int(density * 100) + len(kind))
    threads = np.flatnonzero(rng.random(32 * 40) < density).astype(np.int64) + 64
    for width in (1, 2, 4, 8, 16):
        for bank_bytes in (4, 8):
            addr = np.full(len(threads), 4096 + 16 * int(rng.integers(0, 8)), dtype=np.uint64)
            want = _reference_totals(kind, addr, threads, width, bank_bytes, False)
            for backend in ("c", "numpy"):
                assert request_totals(kind, addr, threads, width, bank_bytes, backend=backend) == want, \
                    (width, bank_bytes, backend)


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("ty,op", [(ty, op) for ty, ops in ATOMIC_OPS_BY_TYPE.items() for op in ops])
def test_c_core_atomic_arithmetic_is_isa_atomic_combine(ty, op, space):
    """One lane per word, so each lane's result is isa.atomic.combine(op, ty, old, a, b) of its own word."""
    rng = np.random.default_rng(sum(map(ord, ty + op + space)))
    memory = Memory(backend="c")
    base = memory.alloc(1024)
    memory.set_windows(n_ctas=1, threads_per_cta=64, shared_bytes=1024, local_bytes=16)
    width = np.dtype(ATOMIC_DTYPES[ty]).itemsize
    dtype = {8: np.uint64, 4: np.uint32, 2: np.uint16}[width]
    special = {"f32": _SPECIAL_F32, "f64": _SPECIAL_F64, "f16": _SPECIAL_HALF, "bf16": _SPECIAL_HALF}.get(ty)
    n = 64

    def draw():
        if special is not None and rng.random() < 0.5:
            return np.array(special, dtype=np.uint64)[rng.integers(0, len(special), size=n)].astype(dtype)
        return rng.integers(0, np.iinfo(dtype).max, size=n, dtype=dtype, endpoint=True)

    old, a, b = draw(), draw(), draw()
    if op == "cas":
        a[::2] = old[::2]
    offsets = np.arange(n, dtype=np.uint64) * np.uint64(width)
    if space == "global":
        memory.write(base, old.view(np.uint8))
        addresses = np.uint64(base) + offsets
    else:
        memory.shared_bytes(0)[:old.nbytes] = old.view(np.uint8)
        addresses = offsets
    returned = memory.atomic(space, op, ty, addresses, np.arange(n), a, b if op == "cas" else None)
    after = memory.read(base, old.nbytes) if space == "global" else memory.shared_bytes(0)[:old.nbytes]
    expected = atomic.combine(op, ty, old, a, b if op == "cas" else None, space=space)
    np.testing.assert_array_equal(returned.view(dtype), old)
    np.testing.assert_array_equal(after.view(dtype), np.asarray(expected).astype(dtype))

"""Pure-numpy twin of the C core: the same resolution, faults, bytes, atomics and counts, vectorised."""
from __future__ import annotations

import numpy as np

from isa import atomic
from isa.memory import generic_region
from isa.table import TableError, decode, semantics

from emulator.memory.spaces import (ATOMIC_DTYPES, ATOMIC_OPS, ATOMIC_TYPES, COUNT_CODES, FAULT_BAD_LAYOUT, FAULT_BAD_THREAD,
    FLAG_FREED, FLAG_READ_ONLY, LOCAL_WINDOW, NULL_LIMIT, SHARED_WINDOW, SPACE_CODES, WINDOW_SIZE, Layout,
    RequestTotals, SPACE_NAMES, check_thread_range)

GENERIC, GLOBAL, SHARED, LOCAL = (SPACE_CODES[name] for name in ("generic", "global", "shared", "local"))
OUT_OF_BOUNDS, MISALIGNED, READ_ONLY, FREED, NULL = 1, 2, 3, 4, 5

OP_NAMES = {code: name for name, code in ATOMIC_OPS.items()}
TYPE_NAMES = {code: name for name, code in ATOMIC_TYPES.items()}
# Contended groups longer than this take the per-group chain path for float adds.
ROUNDS_LIMIT = 32

_WORD_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _check_atomic_semantics() -> None:
    """What one lane's atom/red does to its word is the table's semantics for those families: isa.atomic.combine,
    which this core (and the C core, tested against it) applies lane by lane."""
    for mnemonic, modifiers in (("atom", ("global", "add", "u32")), ("red", ("shared", "add", "f32"))):
        function = semantics(decode(mnemonic, modifiers))
        if getattr(function, "func", function) is not atomic.combine:
            raise TableError(f"isa.table's {mnemonic} semantics is {function!r}, not isa.atomic.combine, "
                             "which the memory core applies")


_check_atomic_semantics()


def _words(arena: np.ndarray, width: int) -> np.ndarray:
    """The arena as one element per aligned `width` bytes (16-byte words as rows of two uint64)."""
    if width == 16:
        return arena.view(np.uint64).reshape(-1, 2)
    return arena.view(_WORD_DTYPES[width])


def _lane_words(data: np.ndarray, width: int) -> np.ndarray:
    """(n, width) uint8 lane data seen as one word per lane, matching _words."""
    if width == 16:
        return data.view(np.uint64).reshape(-1, 2)
    return data.view(_WORD_DTYPES[width]).reshape(-1)


class _Resolved:
    """Per-lane resolution: which arena (a space code), the byte offset there, and the first fault."""

    __slots__ = ("space", "offset", "fault")

    def __init__(self, space, offset, fault):
        self.space, self.offset, self.fault = space, offset, fault


def _lanes_of(lane_space: np.ndarray | None, requested: int, wanted: int):
    """Lanes of the call that resolve to `wanted`: a slice when the call named that space."""
    if requested == wanted:
        return slice(None)
    if requested != GENERIC:
        return None
    lanes = np.flatnonzero(lane_space == wanted)
    return lanes if lanes.size else None


def resolve(layout: Layout, space: int, addr: np.ndarray, threads: np.ndarray | None, width: int,
            writes: bool) -> _Resolved:
    """Resolves every lane; `fault` is (lane, kind, space) of the lowest faulting lane, or None."""
    n = addr.size
    offset = addr
    lane_space = None
    if space == GENERIC:
        in_shared, in_local, offset = generic_region(addr, SHARED_WINDOW, LOCAL_WINDOW, WINDOW_SIZE)
        lane_space = np.full(n, GLOBAL, dtype=np.uint8)
        lane_space[in_shared] = SHARED
        lane_space[in_local] = LOCAL
    aligned = (addr & np.uint64(width - 1)) == 0
    ok = np.zeros(n, dtype=bool)
    arena_offset = np.zeros(n, dtype=np.int64)

    for window_space in (SHARED, LOCAL):
        lanes = _lanes_of(lane_space, space, window_space)
        if lanes is None:
            continue
        thread = threads[lanes] if threads is not None else np.arange(n, dtype=np.int64)[lanes]
        off = offset[lanes]
        shared = window_space == SHARED
        limit = layout.shared_limit if shared else layout.local_limit
        stride = layout.shared_stride if shared else layout.local_stride
        if limit < width:
            continue
        good = (thread >= 0) & (thread < layout.n_threads) & aligned[lanes] & (off <= np.uint64(limit - width))
        unit = thread // max(layout.threads_per_cta, 1) if shared else thread
        ok[lanes] = good
        arena_offset[lanes] = np.where(good, unit * stride + off.astype(np.int64), 0)

    lanes = _lanes_of(lane_space, space, GLOBAL)
    if lanes is not None and layout.alloc_start.size:
        lane_addr = addr[lanes]
        index = np.searchsorted(layout.alloc_start, lane_addr, side="right").astype(np.int64) - 1
        found = index >= 0
        index[~found] = 0
        inside = lane_addr - layout.alloc_start[index]
        forbidden = FLAG_FREED | (FLAG_READ_ONLY if writes else 0)
        good = (found & aligned[lanes] & (lane_addr >= np.uint64(NULL_LIMIT))
                & (inside + np.uint64(width) <= layout.alloc_size[index])
                & ((layout.alloc_flags[index] & forbidden) == 0))
        ok[lanes] = good
        arena_offset[lanes] = np.where(good, (layout.alloc_offset[index] + inside).astype(np.int64), 0)

    fault = None
    if n and not ok.all():
        first = int(np.argmin(ok))
        thread = int(threads[first]) if threads is not None else first
        fault = (first,) + _classify(layout, space, int(addr[first]), thread, width, writes)
    return _Resolved(lane_space, arena_offset, fault)


def _classify(layout: Layout, space: int, address: int, thread: int, width: int, writes: bool):
    """(fault kind, resolved space) of one lane, checked in the C core's order."""
    offset = address
    if space == GENERIC:
        if 0 <= address - SHARED_WINDOW < WINDOW_SIZE:
            space, offset = SHARED, address - SHARED_WINDOW
        elif 0 <= address - LOCAL_WINDOW < WINDOW_SIZE:
            space, offset = LOCAL, address - LOCAL_WINDOW
        else:
            space = GLOBAL
    if space in (SHARED, LOCAL):
        limit = layout.shared_limit if space == SHARED else layout.local_limit
        if not 0 <= thread < layout.n_threads:
            return FAULT_BAD_THREAD, space
        if address % width:
            return MISALIGNED, space
        if offset >= limit or width > limit - offset:
            return OUT_OF_BOUNDS, space
        return FAULT_BAD_LAYOUT, space
    if address % width:
        return MISALIGNED, space
    if address < NULL_LIMIT:
        return NULL, space
    index = int(np.searchsorted(layout.alloc_start, np.uint64(address), side="right")) - 1
    if index < 0 or address - int(layout.alloc_start[index]) >= int(layout.alloc_size[index]):
        return OUT_OF_BOUNDS, space
    flags = int(layout.alloc_flags[index])
    if flags & FLAG_FREED:
        return FREED, space
    if width > int(layout.alloc_size[index]) - (address - int(layout.alloc_start[index])):
        return OUT_OF_BOUNDS, space
    if writes and flags & FLAG_READ_ONLY:
        return READ_ONLY, space
    return FAULT_BAD_LAYOUT, space


def _arenas(layout: Layout):
    return ((GLOBAL, layout.global_bytes), (SHARED, layout.shared_bytes), (LOCAL, layout.local_bytes))


def _lanes_in(resolved: _Resolved, space: int, requested: int) -> np.ndarray | slice | None:
    """Lanes served by one arena: every lane when the call named that space, else a selection."""
    return _lanes_of(resolved.space, requested, space)


def _last_writer(offsets: np.ndarray) -> np.ndarray:
    """Indices that keep, for every distinct offset, only its highest lane."""
    if offsets.size < 2 or bool(np.all(offsets[1:] > offsets[:-1])):
        return np.arange(offsets.size)
    _, first_in_reversed = np.unique(offsets[::-1], return_index=True)
    return offsets.size - 1 - first_in_reversed


# ---- floating point: exact decoding and one correctly rounded narrowing, as in _core.c ----


class _Groups:
    """Lanes sorted by the word they hit; groups of lanes on one word keep lane order."""

    def __init__(self, word_index: np.ndarray):
        self.order = np.argsort(word_index, kind="stable")
        sorted_index = word_index[self.order]
        m = sorted_index.size
        new_group = np.ones(m, dtype=bool)
        new_group[1:] = sorted_index[1:] != sorted_index[:-1]
        self.starts = np.flatnonzero(new_group)
        self.ends = np.append(self.starts[1:], m) if m else np.zeros(0, dtype=np.int64)
        self.group_of = np.cumsum(new_group) - 1
        self.rank = np.arange(m) - self.starts[self.group_of]
        self.words = sorted_index[self.starts]


def _segmented_scan(values: np.ndarray, groups: _Groups, combine) -> np.ndarray:
    """Inclusive scan inside each group (Hillis-Steele, log2 of the longest group passes)."""
    scanned = values.copy()
    lane_start = groups.starts[groups.group_of]
    positions = np.arange(values.size)
    distance = 1
    longest = int((groups.ends - groups.starts).max()) if groups.starts.size else 0
    while distance < longest:
        targets = np.flatnonzero(positions - distance >= lane_start)
        updated = scanned.copy()
        updated[targets] = combine(scanned[targets - distance], scanned[targets])
        scanned = updated
        distance *= 2
    return scanned


def sequential_atomic(words: np.ndarray, word_index: np.ndarray, op: int, ty: int, a: np.ndarray,
                      b: np.ndarray | None, space: int) -> np.ndarray:
    """Applies the lanes' atomics to `words` (of one space) in lane order; returns each lane's old value.
    What one lane does to its word is isa.atomic's; this only orders and serialises the lanes."""
    op, ty, space = OP_NAMES[op], TYPE_NAMES[ty], SPACE_NAMES[space]
    groups = _Groups(word_index)
    order = groups.order
    a_sorted = a[order]
    b_sorted = b[order] if b is not None else None
    initial = words[groups.words].copy()
    old_sorted = np.empty(a.size, dtype=words.dtype)
    first_lane = groups.rank == 0
    integer = ty not in atomic.FLOAT_TYPES

    if op == "exch":
        old_sorted[first_lane] = initial
        old_sorted[~first_lane] = a_sorted[np.flatnonzero(~first_lane) - 1]
        final = a_sorted[groups.ends - 1]
    elif integer and op in atomic.ASSOCIATIVE_INTEGER_OPS:
        combine = atomic.integer_combine(op, ty)
        scanned = _segmented_scan(a_sorted, groups, combine)
        later = np.flatnonzero(~first_lane)
        old_sorted[first_lane] = initial
        old_sorted[later] = combine(initial[groups.group_of[later]], scanned[later - 1])
        final = combine(initial, scanned[groups.ends - 1])
    else:
        final = initial.copy()
        lengths = groups.ends - groups.starts
        chained = op == "add" and ty in ("f32", "f64")
        long_groups = np.flatnonzero(lengths > ROUNDS_LIMIT) if chained else []
        in_rounds = np.ones(a.size, dtype=bool)
        for group in long_groups:
            span = slice(groups.starts[group], groups.ends[group])
            olds, final[group] = atomic.add_chain(ty, initial[group], a_sorted[span], space)
            old_sorted[span] = olds
            in_rounds[span] = False
        candidates = np.flatnonzero(in_rounds)
        by_rank = candidates[np.argsort(groups.rank[candidates], kind="stable")]
        rank_counts = np.bincount(groups.rank[candidates]) if candidates.size else np.zeros(0, dtype=np.int64)
        position = 0
        for count in rank_counts:
            lanes = by_rank[position:position + count]
            position += count
            group = groups.group_of[lanes]
            current = final[group]
            old_sorted[lanes] = current
            final[group] = atomic.combine(op, ty, current, a_sorted[lanes],
                                          b_sorted[lanes] if b_sorted is not None else None, space=space)
    words[groups.words] = final
    old = np.empty_like(old_sorted)
    old[order] = old_sorted
    return old


# ---- counting ----

def _warp_reduce(keys_warp: np.ndarray, values: np.ndarray, reduce) -> tuple[np.ndarray, np.ndarray]:
    """One reduced value per warp of a warp-sorted array."""
    starts = np.flatnonzero(np.r_[True, keys_warp[1:] != keys_warp[:-1]])
    return keys_warp[starts].astype(np.int64), reduce.reduceat(values, starts).astype(np.int64)


def _sorted_keys(major: np.ndarray, minor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(major, minor) pairs sorted lexicographically; major is int64 >= 0, minor uint64."""
    major_span = int(major.max()) + 1
    minor_low = int(minor.min())
    minor_span = int(minor.max()) - minor_low + 1
    minor_bits = max(minor_span - 1, 1).bit_length()
    if (major_span - 1).bit_length() + minor_bits <= 63:
        packed = (major.astype(np.uint64) << np.uint64(minor_bits)) | (minor - np.uint64(minor_low))
        packed.sort()
        return ((packed >> np.uint64(minor_bits)).astype(np.int64),
                (packed & np.uint64((1 << minor_bits) - 1)) + np.uint64(minor_low))
    order = np.lexsort((minor, major))
    return major[order], minor[order]


WARP = 32
SECTOR = 32
BANKS = 32
SHARED_WAVEFRONTS, GLOBAL_SECTORS, DISTINCT_ADDRESSES, MAX_SAME_ADDRESS, LOCAL_SECTORS = (
    COUNT_CODES[name] for name in ("shared_wavefronts", "global_sectors", "distinct_addresses",
                                   "max_same_address", "local_sectors"))
_LANE_IN_WARP = np.int64(WARP - 1)


def phase_lanes(width: int, bank_bytes: int) -> int:
    """Lanes served together (measured on the H100, tests/stats_patterns): the whole warp for accesses up
    to two bank words wide, half-warps for four."""
    return min(WARP, 2 * WARP * bank_bytes // width)


def wavefront_lanes(width: int, bank_bytes: int) -> int:
    """Lanes whose accesses fill one wavefront's 32 bank words."""
    return min(WARP, WARP * bank_bytes // width)


def interleaved_local(addresses: np.ndarray, threads: np.ndarray | None, width: int):
    """Addresses as the hardware lays local memory out (consecutive lanes own consecutive 32-bit
    words), one entry per 32-bit word a lane touches; returns (addresses, threads, width per entry)."""
    n = len(addresses)
    thread_ids = np.arange(n, dtype=np.int64) if threads is None else threads
    lanes = thread_ids & _LANE_IN_WARP
    words = max(width // 4, 1)
    word = addresses >> np.uint64(2)
    byte = addresses & np.uint64(3)
    if words > 1:
        word = (word[:, None] + np.arange(words, dtype=np.uint64)[None, :]).reshape(-1)
        byte = np.repeat(byte, words)
        lanes = np.repeat(lanes, words)
        thread_ids = np.repeat(thread_ids, words)
    physical = (word * np.uint64(WARP) + lanes.astype(np.uint64)) * np.uint64(4) + byte
    return physical, thread_ids, min(width, 4)


def count(what: int, addr: np.ndarray, threads: np.ndarray | None, width: int,
          bank_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    n = addr.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if what == LOCAL_SECTORS:
        return count(GLOBAL_SECTORS, *interleaved_local(addr, threads, width), bank_bytes)
    thread = threads if threads is not None else np.arange(n, dtype=np.int64)
    warp = thread // 32
    if what in (COUNT_CODES["shared_wavefronts"], COUNT_CODES["global_sectors"]):
        unit = bank_bytes if what == COUNT_CODES["shared_wavefronts"] else 32
        unit_u = np.uint64(unit)
        first = addr // unit_u
        pieces = ((addr % unit_u) + np.uint64(width - 1)) // unit_u + np.uint64(1)
        lane = np.repeat(np.arange(n), pieces.astype(np.int64))
        step = np.arange(lane.size) - np.repeat(np.cumsum(pieces.astype(np.int64)) - pieces.astype(np.int64),
                                                 pieces.astype(np.int64))
        value = first[lane] + step.astype(np.uint64)
        if what == COUNT_CODES["shared_wavefronts"]:
            phase = (thread[lane] % 32) // phase_lanes(width, bank_bytes)
            group = phase * 32 + (value % np.uint64(32)).astype(np.int64)
        else:
            group = np.zeros(lane.size, dtype=np.int64)
        major = (warp[lane] << 9) | group
    else:
        value = addr
        major = warp << 9
    major, value = _sorted_keys(major, value)
    warp_of = major >> 9
    same_major = np.r_[False, major[1:] == major[:-1]]
    repeated = same_major & np.r_[False, value[1:] == value[:-1]]
    distinct = (~repeated).astype(np.int64)

    if what == COUNT_CODES["max_same_address"]:
        run_starts = np.flatnonzero(~repeated)
        run_lengths = np.diff(np.append(run_starts, value.size))
        return _warp_reduce(warp_of[run_starts], run_lengths, np.maximum)
    if what != COUNT_CODES["shared_wavefronts"]:
        return _warp_reduce(warp_of, distinct, np.add)
    group_starts = np.flatnonzero(~same_major)
    words_per_bank = np.add.reduceat(distinct, group_starts)
    bank_major = major[group_starts]
    phase_key = bank_major >> 5
    phase_starts = np.flatnonzero(np.r_[True, phase_key[1:] != phase_key[:-1]])
    worst_bank = np.maximum.reduceat(words_per_bank, phase_starts)
    return _warp_reduce(bank_major[phase_starts] >> 9, worst_bank, np.add)


# ---- totals: whole warps take vectorised shortcuts where the answer follows from each warp's
# ---- address range or order; every other warp goes through count()

def _whole_warps(threads: np.ndarray | None, n: int) -> bool:
    """Whether the lanes are complete warps in order (the convergent case)."""
    if n == 0 or n % WARP:
        return False
    if threads is None:
        return True
    first = threads[::WARP]
    return bool(np.all(first & _LANE_IN_WARP == 0) and np.all(threads[WARP - 1::WARP] - first == WARP - 1))


def _rows_of(addresses: np.ndarray, threads: np.ndarray | None, rows: np.ndarray):
    """(addresses, threads) of the warps (rows of 32 lanes) where rows holds."""
    thread_ids = np.arange(len(addresses), dtype=np.int64) if threads is None else threads
    return (addresses.reshape(-1, WARP)[rows].reshape(-1), thread_ids.reshape(-1, WARP)[rows].reshape(-1))


_ROW_ENDS: dict[tuple[int, int], np.ndarray] = {}


def _row_ends(n: int, row: int) -> np.ndarray:
    """Flags over the n - 1 neighbour pairs of a flat array of rows: True where a row ends."""
    key = (n, row)
    if key not in _ROW_ENDS:
        if len(_ROW_ENDS) > 64:
            _ROW_ENDS.clear()
        _ROW_ENDS[key] = (np.arange(n - 1) % row) == row - 1
    return _ROW_ENDS[key]


def _rows_ascend(values: np.ndarray, row: int) -> bool:
    """Whether every row of the flat array is non-decreasing (one pass, no per-row reduction)."""
    return bool(np.all((values[1:] >= values[:-1]) | _row_ends(len(values), row)))


def _distinct_in_sorted_rows(values: np.ndarray):
    """Per row of a 2-D array: whether it is non-decreasing, and then its number of distinct values."""
    rows, row = values.shape
    flat = values.reshape(-1)
    if _rows_ascend(flat, row):
        changes = (flat[1:] != flat[:-1]) & ~_row_ends(len(flat), row)
        return None, rows + int(np.count_nonzero(changes))
    ordered = np.all(values[:, 1:] >= values[:, :-1], axis=1)
    distinct = 1 + np.count_nonzero(values[:, 1:] != values[:, :-1], axis=1)
    return ordered, int(distinct[ordered].sum())


def _whole_warp_wavefronts(addresses, threads, width: int, bank_bytes: int) -> int:
    lanes_per_phase = phase_lanes(width, bank_bytes)
    phases_per_warp = WARP // lanes_per_phase
    shift = np.uint64(bank_bytes.bit_length() - 1)
    phases = addresses.reshape(-1, lanes_per_phase)
    if _rows_ascend(addresses, lanes_per_phase):
        lowest, highest = phases[:, 0], phases[:, -1]
    else:
        lowest, highest = phases.min(axis=1), phases.max(axis=1)
    first_word = lowest >> shift
    last_word = (highest >> shift) + (((highest & np.uint64(bank_bytes - 1)) + np.uint64(width - 1)) >> shift)
    # a phase whose words lie within 32 consecutive words has at most one word per bank
    simple = ((last_word - first_word) < np.uint64(BANKS)).reshape(-1, phases_per_warp).all(axis=1)
    wavefronts = int(np.count_nonzero(simple)) * phases_per_warp
    if not simple.all():
        _, counts = count(SHARED_WAVEFRONTS, *_rows_of(addresses, threads, ~simple), width, bank_bytes)
        wavefronts += int(counts.sum())
    return wavefronts


def _whole_warp_sectors(addresses, threads, width: int, local: bool) -> int:
    what = LOCAL_SECTORS if local else GLOBAL_SECTORS
    if width > SECTOR or np.any(addresses & np.uint64(width - 1)):
        return int(count(what, addresses, threads, width, 4)[1].sum())
    rows = addresses.reshape(-1, WARP)
    if local:
        words = max(width // 4, 1)
        lanes = np.arange(WARP, dtype=np.uint64) * np.uint64(4)
        first = (rows >> np.uint64(2)) * np.uint64(WARP * 4) + lanes + (rows & np.uint64(3))
        physical = first[:, None, :] + (np.arange(words, dtype=np.uint64) * np.uint64(WARP * 4))[None, :, None]
        rows = physical.reshape(len(rows), -1)
    ordered, sectors = _distinct_in_sorted_rows(rows >> np.uint64(5))
    if ordered is not None and not ordered.all():
        _, counts = count(what, *_rows_of(addresses, threads, ~ordered), width, 4)
        sectors += int(counts.sum())
    return sectors


def _whole_warp_distinct(addresses, threads) -> int:
    ordered, total = _distinct_in_sorted_rows(addresses.reshape(-1, WARP))
    if ordered is not None and not ordered.all():
        _, counts = count(DISTINCT_ADDRESSES, *_rows_of(addresses, threads, ~ordered), 1, 4)
        total += int(counts.sum())
    return total


def _whole_warp_contention(addresses, threads) -> tuple[int, int]:
    """(sum over warps, maximum) of the most lanes of a warp on one address."""
    n = len(addresses)
    ends = _row_ends(n, WARP)
    if np.all((addresses[1:] > addresses[:-1]) | ends):
        return n // WARP, 1
    if np.all((addresses[1:] == addresses[:-1]) | ends):
        return n, WARP
    rows = addresses.reshape(-1, WARP)
    spread = np.all(rows[:, 1:] > rows[:, :-1], axis=1)
    one_address = np.all(rows[:, 1:] == rows[:, :-1], axis=1)
    easy = spread | one_address
    total = int(np.count_nonzero(spread)) + WARP * int(np.count_nonzero(one_address))
    most = WARP if one_address.any() else 1
    if not easy.all():
        _, same = count(MAX_SAME_ADDRESS, *_rows_of(addresses, threads, ~easy), 1, 4)
        total += int(same.sum())
        most = max(most, int(same.max()))
    return total, most


def _run_lengths(keys: np.ndarray) -> np.ndarray:
    """How many times each distinct key occurs."""
    if np.any(keys[1:] < keys[:-1]):
        keys = np.sort(keys)
    return np.diff(np.append(np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]), keys.size))


def _ideal(what: int, threads: np.ndarray | None, n: int, width: int, bank_bytes: int) -> int:
    """What the lanes would cost at best (see RequestTotals)."""
    thread = np.arange(n, dtype=np.int64) if threads is None else threads
    if what == SHARED_WAVEFRONTS:
        # groups split warps evenly, so thread >> shift names a (warp, group) pair
        shift = wavefront_lanes(width, bank_bytes).bit_length() - 1
        return len(_run_lengths(thread >> shift))
    lanes = _run_lengths(thread >> 5)
    if what == GLOBAL_SECTORS:
        return int(((lanes * width + SECTOR - 1) // SECTOR).sum())
    if what == LOCAL_SECTORS:
        words, piece = max(width // 4, 1), min(width, 4)
        return words * int(((lanes * piece + SECTOR - 1) // SECTOR).sum())
    return len(lanes)


def _whole_warp_ideal(what: int, n: int, width: int, bank_bytes: int) -> int:
    warps = n // WARP
    if what == SHARED_WAVEFRONTS:
        return warps * (WARP // wavefront_lanes(width, bank_bytes))
    if what == GLOBAL_SECTORS:
        return warps * ((WARP * width + SECTOR - 1) // SECTOR)
    if what == LOCAL_SECTORS:
        return warps * max(width // 4, 1) * ((WARP * min(width, 4) + SECTOR - 1) // SECTOR)
    return warps


def totals(what: int, addr: np.ndarray, threads: np.ndarray | None, width: int, bank_bytes: int,
           contention: bool) -> RequestTotals:
    n = addr.size
    if n == 0:
        return RequestTotals(0, 0, 0, 0, 0)
    if what == SHARED_WAVEFRONTS and width > bank_bytes:
        return _wide_shared_totals(addr, threads, width, bank_bytes, contention)
    if not _whole_warps(threads, n):
        warps, counts = count(what, addr, threads, width, bank_bytes)
        most_total = most_max = 0
        if contention:
            _, same = count(MAX_SAME_ADDRESS, addr, threads, 1, 4)
            most_total, most_max = int(same.sum()), int(same.max())
        return RequestTotals(len(warps), int(counts.sum()), _ideal(what, threads, n, width, bank_bytes),
                             most_total, most_max)
    most_total, most_max = _whole_warp_contention(addr, threads) if contention or what == MAX_SAME_ADDRESS \
        else (0, 0)
    if what == SHARED_WAVEFRONTS:
        total = _whole_warp_wavefronts(addr, threads, width, bank_bytes)
    elif what in (GLOBAL_SECTORS, LOCAL_SECTORS):
        total = _whole_warp_sectors(addr, threads, width, what == LOCAL_SECTORS)
    elif what == DISTINCT_ADDRESSES:
        total = _whole_warp_distinct(addr, threads)
    else:
        total = most_total
    if not contention:
        most_total = most_max = 0
    return RequestTotals(n // WARP, total, _whole_warp_ideal(what, n, width, bank_bytes), most_total, most_max)


def _wide_shared_totals(addr, threads, width: int, bank_bytes: int, contention: bool) -> RequestTotals:
    """Accesses wider than a bank word: broadcasts can make a warp cheaper than its bytes' worth of
    wavefronts, so each warp's ideal is capped by its count."""
    warps, counts = count(SHARED_WAVEFRONTS, addr, threads, width, bank_bytes)
    thread = np.arange(addr.size, dtype=np.int64) if threads is None else threads
    shift = wavefront_lanes(width, bank_bytes).bit_length() - 1
    _, groups = np.unique(np.unique(thread >> shift) >> (5 - shift), return_counts=True)
    most_total = most_max = 0
    if contention:
        _, same = count(MAX_SAME_ADDRESS, addr, threads, 1, 4)
        most_total, most_max = int(same.sum()), int(same.max())
    return RequestTotals(len(warps), int(counts.sum()), int(np.minimum(groups, counts).sum()), most_total, most_max)


class NumpyCore:
    """The numpy backend; the same methods and results as core.CCore."""

    name = "numpy"

    def load(self, layout: Layout, space: int, addr, threads, width: int):
        resolved = resolve(layout, space, addr, threads, width, writes=False)
        if resolved.fault:
            return None, resolved.fault
        out = np.empty((addr.size, width), dtype=np.uint8)
        out_words = _lane_words(out, width)
        for arena_space, arena in _arenas(layout):
            lanes = _lanes_in(resolved, arena_space, space)
            if lanes is None:
                continue
            out_words[lanes] = _words(arena, width)[resolved.offset[lanes] // width]
        return out, None

    def store(self, layout: Layout, space: int, addr, threads, width: int, data: np.ndarray):
        resolved = resolve(layout, space, addr, threads, width, writes=True)
        if resolved.fault:
            return resolved.fault
        data_words = _lane_words(data.reshape(addr.size, width), width)
        for arena_space, arena in _arenas(layout):
            lanes = _lanes_in(resolved, arena_space, space)
            if lanes is None:
                continue
            offsets = resolved.offset[lanes] // width
            values = data_words[lanes]
            keep = _last_writer(offsets)
            _words(arena, width)[offsets[keep]] = values[keep]
        return None

    def atomic(self, layout: Layout, space: int, op: int, ty: int, addr, threads, a: np.ndarray,
               b: np.ndarray | None):
        width = np.dtype(ATOMIC_DTYPES[TYPE_NAMES[ty]]).itemsize
        resolved = resolve(layout, space, addr, threads, width, writes=True)
        if resolved.fault:
            return None, resolved.fault
        word_dtype = _WORD_DTYPES[width]
        a_words = a.view(word_dtype)
        b_words = b.view(word_dtype) if b is not None else None
        old = np.empty(addr.size, dtype=word_dtype)
        for arena_space, arena in _arenas(layout):
            lanes = _lanes_in(resolved, arena_space, space)
            if lanes is None:
                continue
            old[lanes] = sequential_atomic(
                _words(arena, width), resolved.offset[lanes] // width, op, ty, a_words[lanes],
                b_words[lanes] if b_words is not None else None, arena_space)
        return old, None

    def count(self, what: int, addr, threads, width: int, bank_bytes: int):
        check_thread_range(threads)
        return count(what, addr, threads, width, bank_bytes)

    def totals(self, what: int, addr, threads, width: int, bank_bytes: int, contention: bool) -> RequestTotals:
        check_thread_range(threads)
        return totals(what, addr, threads, width, bank_bytes, contention)

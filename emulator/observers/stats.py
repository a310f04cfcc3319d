"""`gpuemu run --stats`: exact memory-system counters (bank conflicts, sectors, atomics, divergence) per kernel and per PTX line."""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import numpy as np

from emulator import ir
from emulator.machine.lanes import lanes_of
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE, interleaved_local, phase_lanes
from emulator.machine.observe import Observer
from emulator.runtime.faults import source_text

__all__ = ["MemoryStats", "KINDS", "REQUESTS", "TRANSACTIONS", "IDEAL", "BYTES", "CONTENTION", "MAX_CONTENTION",
           "count_wavefronts", "count_sectors", "count_distinct", "count_contention", "interleaved_local",
           "format_table", "launch_title"]

WARP = 32
SECTOR = 32
#: access kinds, in the order tables list them
KINDS = ("shared_load", "shared_store", "shared_atomic", "global_load", "global_store", "global_atomic",
         "local_load", "local_store", "constant_load", "param_load")
#: per (instruction, kind) accumulator slots; IDEAL is what the same lanes would need at best
#: (conflict-free wavefronts, contiguous sectors, one constant address per request)
REQUESTS, TRANSACTIONS, IDEAL, BYTES, CONTENTION, MAX_CONTENTION = range(6)
_EFFICIENCY_NAMES = {"global_load": "gld_efficiency", "global_store": "gst_efficiency",
                     "local_load": "local_load_efficiency", "local_store": "local_store_efficiency"}
_TABLE_LABELS = {"shared_load": "shared load", "shared_store": "shared store", "shared_atomic": "shared atomic",
                 "global_load": "global load", "global_store": "global store", "global_atomic": "global atomic",
                 "local_load": "local load", "local_store": "local store", "constant_load": "constant load",
                 "param_load": "param load"}
_LANE_IN_WARP = np.int64(WARP - 1)
_KIND_OF = {tuple(kind.split("_")): kind for kind in KINDS}


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> Optional[float]:
    return scale * numerator / denominator if denominator else None


def _run_starts(groups: np.ndarray) -> np.ndarray:
    """Indices where a new run of equal values begins."""
    return np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))


def _warp_starts(threads: np.ndarray) -> np.ndarray:
    """Indices where a new warp begins in a warp-grouped thread array."""
    return _run_starts(threads >> 5)


def _lanes_per_warp(threads: Optional[np.ndarray], n: int) -> np.ndarray:
    if threads is None:
        return np.full(n // WARP, WARP, dtype=np.int64)
    return np.diff(np.append(_warp_starts(threads), len(threads)))


def _registers_in(ref):
    """Indices of the registers an operand names."""
    if isinstance(ref, ir.RegRef):
        yield ref.reg.index
    elif isinstance(ref, ir.NotRef):
        yield ref.reg.reg.index
    elif isinstance(ref, ir.AddrRef) and ref.base is not None:
        yield ref.base.reg.index
    elif isinstance(ref, ir.PredPairRef):
        yield ref.first.reg.index
        if ref.second is not None:
            yield ref.second.reg.index
    elif isinstance(ref, ir.VecRef):
        for item in ref.items:
            yield from _registers_in(item)


def returning_atomics(program: ir.Program) -> List[bool]:
    """Per pc: an atom whose old value some other instruction names. ptxas keeps those as ATOMS with a
    destination, which the H100 serialises lane by lane; atoms whose result goes unused become
    ATOMS.POPC.INC or aggregated ATOMS with RZ, where lanes on one word share a wavefront."""
    destinations = {instr.pc: instr.operands[0].reg.index for instr in program.instrs
                    if instr.op_class == "atom" and instr.operands and isinstance(instr.operands[0], ir.RegRef)}
    returning = [False] * len(program.instrs)
    if not destinations:
        return returning
    wanted = set(destinations.values())
    mentions = dict.fromkeys(wanted, 0)
    for instr in program.instrs:
        if instr.guard is not None and instr.guard[0].index in wanted:
            mentions[instr.guard[0].index] += 1
        for operand in instr.operands:
            for index in _registers_in(operand):
                if index in wanted:
                    mentions[index] += 1
    for pc, index in destinations.items():
        returning[pc] = mentions[index] > 1
    return returning


def _same_address_for_every_lane(instr: ir.Instr, uniform: Set[int]) -> bool:
    """A load or store whose address is the same for every lane: a symbol, a constant, or a launch-uniform
    register plus an offset."""
    for operand in instr.operands:
        if isinstance(operand, ir.AddrRef):
            return operand.base is None or operand.base.reg.index in uniform
    return False


def serialised_atomic_wavefronts(addresses, threads, width: int, bank_bytes: int) -> int:
    """Shared atomics that return the old value: per warp and phase, the most lanes on one bank (unlike
    loads, lanes on one word do not share a wavefront: tests/stats_patterns shared_atom_one_word)."""
    thread = np.arange(len(addresses), dtype=np.int64) if threads is None else np.asarray(threads, np.int64)
    words = max(width // bank_bytes, 1)
    word = addresses // np.uint64(bank_bytes)
    if words > 1:
        word = (word[:, None] + np.arange(words, dtype=np.uint64)[None, :]).reshape(-1)
        thread = np.repeat(thread, words)
    phase = thread >> (phase_lanes(width, bank_bytes).bit_length() - 1)
    keys, lanes_on_bank = np.unique(phase * WARP + (word % np.uint64(WARP)).astype(np.int64), return_counts=True)
    return int(np.maximum.reduceat(lanes_on_bank, _run_starts(keys // WARP)).sum())


# ---- exact totals per call, each from one call of the memory core

def count_wavefronts(memory, addresses, threads, width: int, bank_bytes: int) -> Tuple[int, int]:
    """(requests, shared-memory wavefronts) of one call."""
    totals = memory.request_totals("shared_wavefronts", addresses, threads, width, bank_bytes)
    return totals.requests, totals.count


def count_sectors(memory, addresses, threads, width: int, local: bool = False) -> Tuple[int, int]:
    """(requests, 32-byte sectors) of one call; local addresses are laid out interleaved first."""
    totals = memory.request_totals("local_sectors" if local else "global_sectors", addresses, threads, width)
    return totals.requests, totals.count


def count_distinct(memory, addresses, threads) -> Tuple[int, int]:
    """(requests, distinct addresses summed over requests) of one call."""
    totals = memory.request_totals("distinct_addresses", addresses, threads, 1)
    return totals.requests, totals.count


def count_contention(memory, addresses, threads) -> Tuple[int, int]:
    """(sum over requests, maximum) of the most lanes of a request on one address."""
    totals = memory.request_totals("max_same_address", addresses, threads, 1, contention=True)
    return totals.contention, totals.max_contention


class MemoryStats(Observer):
    """Counts every warp-level request of a kernel, exactly, per instruction (see docs/metrics.md).

    bank_bytes: 4 (sm_5x and newer) or 8 (Kepler's 8-byte bank mode). capture_shared keeps, for the
    first CTA, the first request of each warp at each shared-memory instruction (for heat maps).
    """

    def __init__(self, bank_bytes: int = 4, *, capture_shared: bool = False):
        if bank_bytes not in (4, 8):
            raise ValueError(f"bank_bytes must be 4 or 8, not {bank_bytes}")
        self.bank_bytes = bank_bytes
        self.capture_shared = capture_shared
        self.program: Optional[ir.Program] = None

    # ---- setup ----
    def begin_launch(self, launch) -> None:
        program = launch.program
        if self.program is None:
            self._bind(program, launch.uniform_registers())
        elif program is not self.program:
            raise ValueError("a MemoryStats counts one kernel; attach a new one for another kernel")

    def _bind(self, program: ir.Program, uniform: Set[int]) -> None:
        self.program = program
        n = len(program.instrs)
        self.warp_count = [0] * n
        self.lane_count = [0] * n
        self.divergent = [0] * n
        self.access: Dict[Tuple[int, str], List[int]] = {}
        self.shared_samples: Dict[int, Dict[int, Tuple[np.ndarray, np.ndarray, int]]] = {}
        self._uniform_address = [False] * n
        self._last_local = None
        self._whole_batch_local: Dict[tuple, object] = {}
        self._returning = returning_atomics(program)
        # SASS lowering adds synthetic instructions (lock arbitration, reconvergence branches): they
        # run, but the hardware executes no such instruction, so the counters leave them out
        self._synthetic = set()
        self._lock_pcs = []
        #: (block, warp in block) → times the warp executed an LDSLK (went round its lock loop)
        self.lock_rounds: Dict[Tuple[int, int], int] = {}
        self._declared = [None] * n
        for instr in program.instrs:
            if instr.info:
                if instr.info.get("synthetic"):
                    self._synthetic.add(instr.pc)
                if instr.info.get("lock") == "acquire":
                    self._lock_pcs.append(instr.pc)
            decoded = instr.decoded
            if decoded is None:
                continue
            space = decoded.get("space") if decoded.mods else None
            if space:
                self._declared[instr.pc] = "constant" if space.startswith("const") else \
                    "param" if space.startswith("param") else None
            if decoded.family.op_class in ("ld", "st"):
                self._uniform_address[instr.pc] = _same_address_for_every_lane(instr, uniform)

    # ---- events ----
    def step(self, batch, instr, sel, warps: int, lanes: int) -> None:
        pc = instr.pc
        self.warp_count[pc] += warps
        self.lane_count[pc] += lanes
        if self._lock_pcs and pc in self._lock_pcs:
            self._count_lock_round(batch, sel)

    per_instruction = False

    def steps(self, batch, first_pc: int, end_pc: int, sel, warps: int, lanes: int) -> None:
        warp_count, lane_count = self.warp_count, self.lane_count
        for pc in range(first_pc, end_pc):
            warp_count[pc] += warps
            lane_count[pc] += lanes
        if self._lock_pcs:
            for pc in self._lock_pcs:
                if first_pc <= pc < end_pc:
                    self._count_lock_round(batch, sel)

    def _count_lock_round(self, batch, sel) -> None:
        warps_per_cta = batch.tpc_pad // WARP
        for warp in np.unique(lanes_of(sel, batch.n) >> 5).tolist():
            key = (batch.cta_start + warp // warps_per_cta, warp % warps_per_cta)
            self.lock_rounds[key] = self.lock_rounds.get(key, 0) + 1

    def branch(self, batch, instr, sel, taken: int, lanes: int, split_warps: int) -> None:
        self.divergent[instr.pc] += split_warps

    def memory(self, batch, instr, op: str, space: str, addresses, threads, width: int) -> None:
        pc = instr.pc
        declared = self._declared[pc]
        addresses = np.asarray(addresses, dtype=np.uint64)
        if declared is not None:
            self._count(batch, pc, declared, op, addresses, threads, width)
        elif space != "generic":
            self._count(batch, pc, space, op, addresses, threads, width)
        else:
            self._count_generic(batch, pc, op, addresses, threads, width)

    def _count_generic(self, batch, pc, op, addresses, threads, width) -> None:
        in_shared = (addresses >= np.uint64(SHARED_WINDOW)) & (addresses < np.uint64(SHARED_WINDOW + WINDOW_SIZE))
        in_local = (addresses >= np.uint64(LOCAL_WINDOW)) & (addresses < np.uint64(LOCAL_WINDOW + WINDOW_SIZE))
        all_threads = np.arange(len(addresses), dtype=np.int64) if threads is None else threads
        for space, mask, base in (("shared", in_shared, SHARED_WINDOW), ("local", in_local, LOCAL_WINDOW),
                                  ("global", ~(in_shared | in_local), 0)):
            if mask.all():
                self._count(batch, pc, space, op, addresses - np.uint64(base), threads, width)
                return
            if mask.any():
                self._count(batch, pc, space, op, addresses[mask] - np.uint64(base), all_threads[mask], width)

    def _slot(self, pc: int, kind: str) -> List[int]:
        slot = self.access.get((pc, kind))
        if slot is None:
            slot = self.access[(pc, kind)] = [0, 0, 0, 0, 0, 0]
        return slot

    def _count(self, batch, pc, space, op, addresses, threads, width) -> None:
        memory = batch.memory
        n = len(addresses)
        if n == 0:
            return
        if space == "constant":
            totals = memory.request_totals("distinct_addresses", addresses, threads, 1)
            slot = self._slot(pc, "constant_load")
            slot[REQUESTS] += totals.requests
            slot[TRANSACTIONS] += totals.count
            slot[IDEAL] += totals.ideal
            slot[BYTES] += n * width
            return
        if space == "param":
            slot = self._slot(pc, "param_load")
            slot[REQUESTS] += len(_lanes_per_warp(threads, n))
            slot[BYTES] += n * width
            return
        kind = _KIND_OF.get((space, op))
        if kind is None:
            return
        slot = self._slot(pc, kind)
        atomic = op == "atomic"
        if space == "shared":
            totals = memory.request_totals("shared_wavefronts", addresses, threads, width, self.bank_bytes,
                                           contention=atomic)
            if atomic and self._returning[pc]:
                totals = totals._replace(count=serialised_atomic_wavefronts(addresses, threads, width,
                                                                             self.bank_bytes))
            requests = totals.requests
            if self.capture_shared and batch.cta_start == 0:
                self._capture(pc, addresses, threads, width, batch.tpc_pad)
        elif space == "local" and not atomic and self._uniform_address[pc]:
            totals = self._uniform_local_totals(memory, addresses, threads, width)
            requests = totals.requests * max(width // 4, 1)
        else:
            totals = memory.request_totals("local_sectors" if space == "local" else "global_sectors", addresses,
                                           threads, width, contention=atomic)
            requests = totals.requests
            if space == "local":
                # one request per interleaved 32-bit row: the H100 counts an LDL.64 as two (localarray)
                requests *= max(width // 4, 1)
        slot[TRANSACTIONS] += totals.count
        slot[IDEAL] += totals.ideal
        slot[REQUESTS] += requests
        slot[BYTES] += n * width
        if atomic:
            slot[CONTENTION] += totals.contention
            slot[MAX_CONTENTION] = max(slot[MAX_CONTENTION], totals.max_contention)

    def _uniform_local_totals(self, memory, addresses, threads, width):
        """Local sectors of lanes that all use one address: for an address aligned to its 4-byte pieces they
        depend only on the lanes and the width. So every whole-batch access of a width shares one count, and a
        loop's divergent lanes, which often repeat from one access to the next, reuse the previous such count
        (the machine never changes a lane selection in place, so the same array is the same lanes)."""
        address = int(addresses[0])
        key = (width, address if address % min(width, 4) else None)
        if threads is None:
            key += (len(addresses),)
            totals = self._whole_batch_local.get(key)
            if totals is None:
                totals = self._whole_batch_local[key] = memory.request_totals("local_sectors", addresses, None, width)
            return totals
        last = self._last_local
        if last is not None and last[1] == key and (last[0] is threads or (
                len(last[0]) == len(threads) and last[0][0] == threads[0] and last[0][-1] == threads[-1]
                and np.array_equal(last[0], threads))):
            return last[2]
        totals = memory.request_totals("local_sectors", addresses, threads, width)
        self._last_local = (threads, key, totals)
        return totals

    def _capture(self, pc, addresses, threads, width, tpc_pad) -> None:
        samples = self.shared_samples.setdefault(pc, {})
        if len(samples) * WARP >= tpc_pad:
            return
        thread_ids = np.arange(len(addresses), dtype=np.int64) if threads is None else threads
        inside = thread_ids < tpc_pad
        thread_ids, addresses = thread_ids[inside], addresses[inside]
        if len(thread_ids) == 0:
            return
        starts = _warp_starts(thread_ids)
        ends = np.append(starts[1:], len(thread_ids))
        for start, end in zip(starts, ends):
            warp = int(thread_ids[start]) >> 5
            if warp not in samples:
                samples[warp] = ((thread_ids[start:end] & _LANE_IN_WARP).copy(), addresses[start:end].copy(), width)

    # ---- results ----
    def instruction_counters(self, pcs) -> Dict[str, object]:
        """The counters of a set of instructions (a line, a function, the whole kernel) under ncu/nvprof names."""
        pcs = [pc for pc in pcs if pc not in self._synthetic]
        result = self._execution_counters(pcs)
        chosen = set(pcs)
        totals = {kind: [0] * 6 for kind in KINDS}
        for (pc, kind), slot in self.access.items():
            if pc in chosen:
                _add_slot(totals[kind], slot)
        for kind in KINDS:
            _add_kind_counters(result, kind, totals[kind])
        return result

    def _execution_counters(self, pcs) -> Dict[str, object]:
        """Executions, lanes, branches and barriers of these instructions."""
        instrs = self.program.instrs
        executed = self.warp_count.__getitem__
        warps = sum(map(executed, pcs))
        lanes = sum(map(self.lane_count.__getitem__, pcs))
        branch_pcs = [pc for pc in pcs if instrs[pc].control == ir.BRANCH]
        branches = sum(map(executed, branch_pcs))
        divergent = sum(map(self.divergent.__getitem__, branch_pcs))
        return {"warp_instructions": warps, "thread_instructions": lanes,
                "warp_execution_efficiency": _ratio(lanes, warps * WARP, 100.0),
                "branches": branches, "divergent_branches": divergent,
                "branch_efficiency": _ratio(branches - divergent, branches, 100.0),
                "barriers": sum(map(executed, [pc for pc in pcs if instrs[pc].control == ir.BARRIER]))}

    def kernel_counters(self) -> Dict[str, object]:
        """Whole-kernel counters (every launch this observer saw)."""
        counters = self.instruction_counters(range(len(self.program.instrs)))
        counters["bank_mode"] = self.bank_bytes
        if self._lock_pcs:
            rounds = list(self.lock_rounds.values())
            counters["ldslk_rounds_per_warp"] = {f"{block},{warp}": count
                                                 for (block, warp), count in sorted(self.lock_rounds.items())}
            counters["ldslk_rounds_max"] = max(rounds, default=0)
            counters["ldslk_rounds_mean"] = _ratio(sum(rounds), len(rounds))
        return counters

    def kinds_of(self, pcs) -> List[str]:
        """The access kinds these instructions made, in table order."""
        return [kind for kind in KINDS if any((pc, kind) in self.access for pc in pcs)]

    def lines(self) -> Dict[int, List[int]]:
        """PTX line → the pcs on it (every instruction of the kernel and the functions it calls)."""
        by_line: Dict[int, List[int]] = {}
        for instr in self.program.instrs:
            by_line.setdefault(instr.line, []).append(instr.pc)
        return by_line

    def line_counters(self) -> Dict[int, Dict[str, object]]:
        """Per PTX line: executions, lanes, and the counters of the access kinds the line made."""
        instrs = self.program.instrs
        by_line = sorted(self.lines().items())
        line_of = [0] * len(instrs)
        for index, (_, pcs) in enumerate(by_line):
            for pc in pcs:
                line_of[pc] = index
        counted = np.ones(len(instrs), dtype=bool)
        counted[list(self._synthetic)] = False
        branch = np.array([instr.control == ir.BRANCH for instr in instrs], dtype=bool)
        barrier = np.array([instr.control == ir.BARRIER for instr in instrs], dtype=bool)
        warp_count = np.array(self.warp_count, dtype=np.int64) * counted

        def per_line(values) -> List[int]:
            return np.bincount(line_of, weights=values, minlength=len(by_line)).astype(np.int64).tolist()

        warps = per_line(warp_count)
        lanes = per_line(np.array(self.lane_count, dtype=np.int64) * counted)
        branches = per_line(warp_count * branch)
        divergent = per_line(np.array(self.divergent, dtype=np.int64) * counted * branch)
        barriers = per_line(warp_count * barrier)
        has_branch = per_line(branch)
        has_barrier = per_line(barrier)
        made: Dict[int, Dict[str, List[int]]] = {}
        for (pc, kind), slot in self.access.items():
            _add_slot(made.setdefault(line_of[pc], {}).setdefault(kind, [0] * 6), slot)
        result = {}
        for index, ((line, pcs), warp_total, lane_total) in enumerate(zip(by_line, warps, lanes)):
            entry = {"ptx": instrs[pcs[0]].text if len(pcs) == 1 else " ".join([instrs[pc].text for pc in pcs]),
                     "warp_instructions": warp_total, "thread_instructions": lane_total,
                     "warp_execution_efficiency": 100.0 * lane_total / (warp_total * WARP) if warp_total else None}
            source = instrs[pcs[0]].user_source
            if source is not None:
                entry["source"] = f"{source[0]}:{source[1]}"
                if instrs[pcs[0]].inlined:
                    entry["inlined"] = source_text(instrs[pcs[0]])
            if has_branch[index]:
                entry["branches"] = branches[index]
                entry["divergent_branches"] = divergent[index]
                entry["branch_efficiency"] = _ratio(branches[index] - divergent[index], branches[index], 100.0)
            if has_barrier[index]:
                entry["barriers"] = barriers[index]
            kinds = made.get(index)
            if kinds:
                for kind in (kinds if len(kinds) == 1 else [kind for kind in KINDS if kind in kinds]):
                    _add_kind_counters(entry, kind, kinds[kind])
            result[line] = entry
        return result

    def _totals(self, pcs, kind: str) -> List[int]:
        total = [0] * 6
        for pc in pcs:
            slot = self.access.get((pc, kind))
            if slot is not None:
                _add_slot(total, slot)
        return total

    def excess(self, pcs) -> int:
        """Transactions beyond the ideal for these instructions: bank conflicts, extra sectors,
        constant-cache serialisation (what the profile ranks its worst lines by)."""
        total = 0
        for pc in pcs:
            for kind in KINDS:
                slot = self.access.get((pc, kind))
                if slot is not None:
                    total += max(slot[TRANSACTIONS] - slot[IDEAL], 0)
        return total


def _add_slot(total: List[int], slot: List[int]) -> None:
    """Add one instruction's counts of an access kind into a running total (the maximum contention is a maximum)."""
    for index in range(MAX_CONTENTION):
        total[index] += slot[index]
    total[MAX_CONTENTION] = max(total[MAX_CONTENTION], slot[MAX_CONTENTION])


def _kind_names(kind: str) -> Tuple[str, ...]:
    """The counter names of one access kind: requests, transactions or sectors, per request, conflicts or
    efficiency (None where the kind has none), contention, maximum contention."""
    space, _, op = kind.partition("_")
    unit = "transactions" if space in ("shared", "constant") else "sectors"
    third = f"{kind}_bank_conflicts" if space == "shared" else _EFFICIENCY_NAMES.get(kind)
    return (f"{kind}_requests", f"{kind}_{unit}", f"{kind}_{unit}_per_request", third,
            f"{kind}_contention", f"{kind}_max_contention")


_KIND_NAMES = {kind: _kind_names(kind) for kind in KINDS}


def _add_kind_counters(into: Dict[str, object], kind: str, slot: List[int]) -> None:
    """Put one access kind's counters, under their ncu/nvprof names, into a counter dict."""
    requests, transactions, ideal, requested, contention, max_contention = slot
    names = _KIND_NAMES[kind]
    into[names[0]] = requests
    if kind == "param_load":
        return
    into[names[1]] = transactions
    into[names[2]] = _ratio(transactions, requests)
    if names[3] is not None:
        into[names[3]] = transactions - ideal if kind.startswith("shared") else \
            _ratio(requested, transactions * SECTOR, 100.0)
    if kind.endswith("_atomic"):
        into[names[4]] = _ratio(contention, requests)
        into[names[5]] = max_contention


def format_number(value, digits: int = 2, missing: str = "-") -> str:
    """A counter as the tables print it: floats to `digits` places, integers with thousands separators."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}"


def format_table(counters: Dict[str, object], title: str) -> str:
    """The compact `--stats` table: one row per access kind that happened, then instruction counters."""
    rows = [("", "requests", "transactions", "per request", "conflicts", "efficiency", "contention")]
    for kind in KINDS:
        requests = counters.get(f"{kind}_requests", 0)
        if not requests:
            continue
        if kind == "param_load":
            rows.append((_TABLE_LABELS[kind], format_number(requests), "-", "-", "-", "-", "-"))
            continue
        unit = "transactions" if kind.startswith(("shared", "constant")) else "sectors"
        efficiency = counters.get(_EFFICIENCY_NAMES.get(kind, ""), None)
        contention = counters.get(f"{kind}_contention")
        rows.append((_TABLE_LABELS[kind], format_number(requests), format_number(counters[f"{kind}_{unit}"]),
                     format_number(counters[f"{kind}_{unit}_per_request"]),
                     format_number(counters.get(f"{kind}_bank_conflicts")),
                     "-" if efficiency is None else f"{efficiency:.1f}%",
                     "-" if contention is None else f"{contention:.2f} (max {counters[f'{kind}_max_contention']})"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [title]
    if len(rows) > 1:
        for row in rows:
            lines.append("  " + row[0].ljust(widths[0]) + "".join(
                "  " + cell.rjust(width) for cell, width in zip(row[1:], widths[1:])))
        lines.append("  (shared/constant: transactions = wavefronts / distinct addresses; "
                     "global/local: 32-byte sectors)")
    else:
        lines.append("  no memory requests")
    efficiency = counters["warp_execution_efficiency"]
    branch_efficiency = counters["branch_efficiency"]
    lines.append(f"  instructions: {counters['warp_instructions']:,} warp, {counters['thread_instructions']:,} "
                 f"thread; warp execution efficiency "
                 f"{'-' if efficiency is None else f'{efficiency:.1f}%'}")
    lines.append(f"  branches: {counters['branches']:,} ({counters['divergent_branches']:,} divergent, efficiency "
                 f"{'-' if branch_efficiency is None else f'{branch_efficiency:.1f}%'}); "
                 f"barriers: {counters['barriers']:,}")
    if counters.get("ldslk_rounds_per_warp"):
        rounds = list(counters["ldslk_rounds_per_warp"].values())
        lines.append(f"  LDSLK lock loop: rounds per warp min {min(rounds)}, mean {counters['ldslk_rounds_mean']:.1f}, "
                     f"max {max(rounds)} ({len(rounds)} warps)")
    return "\n".join(lines)


def launch_title(name: str, grid, block, bank_bytes: int) -> str:
    grid_text = ",".join(str(v) for v in grid)
    block_text = ",".join(str(v) for v in block)
    return f"gpuemu stats: {name}  grid ({grid_text})  block ({block_text})  {bank_bytes}-byte banks"

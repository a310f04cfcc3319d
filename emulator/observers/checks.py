"""`gpuemu run --check race,sync,init,mem`: compute-sanitizer-style checkers, seeded schedules and repeated runs.

race: shared-memory (and, within a CTA, global) hazards between threads with no barrier between them;
sync: barriers reached by part of a warp or CTA, bad thread counts, warp-sync masks; init: reads of
memory nothing wrote; mem: every faulting access, up to --max-errors, instead of stopping at the first.
Every checker is an emulator.observe.Observer; CheckSession bundles them and writes the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from isa.warp import lane_mask

from emulator import ir
from emulator.base.errors import DeviceError, GpuemuError, UsageError
from emulator.machine.executors import lanes_of, reader
from emulator.runtime.faults import ranges
from emulator.runtime.names import plain_name
from emulator.machine.batch import AT_BARRIER, EXITED, INF
from emulator.memory import LOCAL_WINDOW, NULL_LIMIT, SHARED_WINDOW, WINDOW_SIZE
from emulator.machine.observe import Observer, Observers

CHECKS = ("race", "sync", "init", "mem")
DEFAULT_MAX_ERRORS = 100
PREFIX = "========= "
GLOBAL, SHARED, LOCAL = 0, 1, 2
SPACE_NAMES = {GLOBAL: "global", SHARED: "shared", LOCAL: "local"}
#: warp-level instructions whose last operand (bar.warp.sync: only operand) is a member mask
MASKED_CLASSES = frozenset({"shfl", "vote", "match", "redux", "elect"})
ACCESS_WORDS = {"load": "Read", "store": "Write", "atomic": "Atomic"}
#: qualifiers that make a load or store morally strong in the PTX memory model (volatile = relaxed.sys)
STRONG_QUALIFIERS = frozenset({"volatile", "relaxed", "acquire", "release", "mmio"})
#: SASS atomics and the Fermi shared-memory lock pair (load-and-lock, store-and-unlock)
STRONG_SASS = frozenset({"ATOM", "ATOMS", "ATOMG", "RED", "LDSLK", "STSUL", "STSCUL"})


def is_strong(instr: ir.Instr) -> bool:
    """Atomics and volatile/relaxed/acquire/release accesses: two of them never form a data race."""
    parts = instr.opcode.split(".")
    return instr.op_class in ("atom", "red") or parts[0] in STRONG_SASS or not STRONG_QUALIFIERS.isdisjoint(parts)


def is_fence(instr: ir.Instr) -> bool:
    return instr.opcode.split(".")[0] in ("membar", "fence")


class CheckFailed(GpuemuError):
    """The checkers found errors (the report above says which); the exit status is --error-exitcode."""

    def __init__(self, message: str, exit_status: int):
        self.exit_status = exit_status
        super().__init__(message)


# ---- where and who ----------------------------------------------------------------------------------

def location(launch, instr: ir.Instr) -> str:
    """`kernel+0x140 in file.ptx:12 (file.cu:4)`, as compute-sanitizer names an instruction."""
    return f"{plain_name(launch.program.name)}+0x{instr.pc * 16:x} in {launch.where(instr)}"


def coords(values) -> str:
    return "(" + ",".join(str(int(v)) for v in values) + ")"


def who(batch, thread: int) -> Tuple[str, str]:
    """(thread (x,y,z), block (x,y,z)) of a batch thread index."""
    block, thread_xyz = batch.thread_coordinates(int(thread))
    return f"thread {coords(thread_xyz)}", f"block {coords(block)}"


@dataclass
class Finding:
    """One kind of error at one place, with how often it happened and one example.

    compute-sanitizer prints one record per thread for synccheck, initcheck and memcheck and counts
    each in its ERROR SUMMARY; gpuemu prints one record with the count, and `per_thread` findings
    count that many errors, so both summaries give the same number."""
    severity: str
    lines: List[str]
    count: int = 1
    unit: str = "times"
    per_thread: bool = False

    def render(self) -> List[str]:
        lines = list(self.lines)
        if self.count > 1:
            lines[-1] += f" [{self.count:,} {self.unit}]"
        return [PREFIX + lines[0]] + [PREFIX + "    " + line for line in lines[1:]] + [PREFIX]

    def errors(self) -> int:
        return self.count if self.per_thread else 1


SEVERITY_RANK = {"warning": 0, "error": 1}


class Findings:
    """Findings keyed by what and where, in the order they were first seen."""

    def __init__(self):
        self.items: Dict[tuple, Finding] = {}

    def add(self, key: tuple, severity: str, make_lines, count: int = 1, unit: str = "times",
            per_thread: bool = False) -> None:
        finding = self.items.get(key)
        if finding is None:
            self.items[key] = Finding(severity, make_lines(), count, unit, per_thread)
        else:
            finding.count += count
            if SEVERITY_RANK[severity] > SEVERITY_RANK[finding.severity]:
                finding.severity = severity

    def __len__(self) -> int:
        return len(self.items)

    def errors(self) -> int:
        return sum(f.errors() for f in self.items.values() if f.severity == "error")

    def warnings(self) -> int:
        return sum(f.errors() for f in self.items.values() if f.severity == "warning")


# ---- resolving the lanes of an access ---------------------------------------------------------------

#: the space a SASS LDC/ULDC reads: constant banks outside device memory, which no checker has anything to say about
CONSTANT_BANKS = "constant"


def resolve(space: str, addresses: np.ndarray):
    """(region per lane: GLOBAL/SHARED/LOCAL, address within the region) of an access's lanes."""
    n = len(addresses)
    if space == "shared":
        return np.full(n, SHARED, dtype=np.int8), addresses
    if space == "local":
        return np.full(n, LOCAL, dtype=np.int8), addresses
    if space != "generic":
        return np.full(n, GLOBAL, dtype=np.int8), addresses
    from_shared = addresses - np.uint64(SHARED_WINDOW)
    from_local = addresses - np.uint64(LOCAL_WINDOW)
    in_shared = from_shared < np.uint64(WINDOW_SIZE)
    in_local = ~in_shared & (from_local < np.uint64(WINDOW_SIZE))
    region = np.full(n, GLOBAL, dtype=np.int8)
    region[in_shared] = SHARED
    region[in_local] = LOCAL
    return region, np.where(in_shared, from_shared, np.where(in_local, from_local, addresses))


def thread_array(batch, threads) -> np.ndarray:
    return np.arange(batch.n, dtype=np.int64) if threads is None else threads


class GlobalTable:
    """The live user allocations of a launch as sorted arrays, to find the allocation of each lane."""

    def __init__(self, memory, skip: Sequence[int] = ()):
        allocations = sorted((a for a in memory.allocations() if not a.freed and a.address not in skip),
                             key=lambda a: a.address)
        self.allocations = allocations
        self.start = np.array([a.address for a in allocations], dtype=np.uint64)
        self.size = np.array([a.size for a in allocations], dtype=np.uint64)
        self.writable = np.array([a.kind == "global" for a in allocations], dtype=bool)

    def find(self, addresses: np.ndarray, width: int):
        """(allocation index, inside) per lane; inside is False where [a, a + width) leaves every allocation."""
        if len(self.start) == 0:
            return np.zeros(len(addresses), dtype=np.int64), np.zeros(len(addresses), dtype=bool)
        index = np.searchsorted(self.start, addresses, side="right").astype(np.int64) - 1
        found = index >= 0
        index[~found] = 0
        inside = found & (addresses - self.start[index] + np.uint64(width) <= self.size[index])
        return index, inside


def _expand_bytes(offsets: np.ndarray, width: int) -> np.ndarray:
    """Every byte offset of each lane's [offset, offset + width), lane-major."""
    return (offsets.astype(np.int64)[:, None] + np.arange(width, dtype=np.int64)[None, :]).reshape(-1)


# ---- race -------------------------------------------------------------------------------------------

class _Shadow:
    """Per 4-byte granule: the last write and the last reads (with a second reader) since the epochs."""

    FIELDS = ("w_thread", "w_pc", "w_epoch", "w_wepoch", "r_thread", "r_pc", "r_other", "r_other_pc",
              "r_epoch", "r_wepoch")

    def __init__(self, granules: int):
        for name in self.FIELDS:
            setattr(self, name, np.full(granules, -1, dtype=np.int32))
        self.w_step = np.zeros(granules, dtype=np.int64)
        self.r_step = np.zeros(granules, dtype=np.int64)
        self.w_mask = np.zeros(granules, dtype=np.uint8)
        self.r_mask = np.zeros(granules, dtype=np.uint8)
        self.w_atomic = np.zeros(granules, dtype=bool)
        self.w_strong = np.zeros(granules, dtype=bool)
        self.r_strong = np.zeros(granules, dtype=bool)


def _last_of_each(keys: np.ndarray) -> np.ndarray:
    """Indices of the last occurrence of every distinct key."""
    _, first_reversed = np.unique(keys[::-1], return_index=True)
    return len(keys) - 1 - first_reversed


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    return np.unique(keys, return_index=True)[1]


class RaceChecker(Observer):
    """racecheck: hazards on shared memory, and on global memory between threads of one CTA, between
    accesses of different threads (of different warps; on sm_70+ also of one warp) that no barrier
    (bar.sync; __syncwarp within a warp) orders. As in the PTX memory model, two strong accesses
    (atomics, volatile, relaxed, acquire, release) do not race; an access counts as ordered before a
    later one when both threads executed a fence (membar/fence, __threadfence) after the first."""

    def __init__(self):
        self.findings = Findings()
        self.hazards = 0

    def begin_launch(self, launch) -> None:
        self.launch = launch
        self.intra_warp = launch.arch >= 70
        self.shared_size = launch.shared_bytes

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self.cta_epoch = np.zeros(batch.n_ctas, dtype=np.int32)
        self.warp_epoch = np.zeros(batch.n // 32, dtype=np.int32)
        self.fence_step = np.full(batch.n, -1, dtype=np.int64)
        self.shared_granules = (self.shared_size + 3) // 4
        self.shared = None
        self.global_shadow = None
        self.table = GlobalTable(batch.memory, skip=getattr(self, "skip_allocations", ()))
        writable = self.table.writable
        sizes = (self.table.size.astype(np.int64) + 3) // 4
        self.global_base = np.concatenate(([0], np.cumsum(np.where(writable, sizes, 0))))[:-1]

    # synchronisation
    def barrier(self, batch, instr, sel, barrier_id, released) -> None:
        if released is not None and len(released):
            self.cta_epoch[np.unique(batch.cta_of[released])] += 1

    def step(self, batch, instr, sel, warps, lanes) -> None:
        if instr.control != ir.STRAIGHT:
            return
        if instr.op_class == "bar":
            self.warp_epoch[np.unique(lanes_of(sel, batch.n) >> 5)] += 1
        elif is_fence(instr):
            self.fence_step[sel] = batch.steps

    # accesses
    def memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if width not in (1, 2, 4, 8, 16) or space == CONSTANT_BANKS:
            return
        threads = thread_array(batch, threads)
        region, offsets = resolve(space, addresses)
        aligned = (offsets & np.uint64(width - 1)) == 0
        shared = (region == SHARED) & aligned & (offsets + np.uint64(width) <= np.uint64(self.shared_size))
        if shared.any():
            if self.shared is None:
                self.shared = _Shadow(batch.n_ctas * self.shared_granules)
            lanes = np.flatnonzero(shared)
            cta = batch.cta_of[threads[lanes]]
            base = cta * self.shared_granules
            self._check(batch, instr, op, self.shared, lanes, base, offsets[lanes], threads[lanes], width,
                        "shared", np.zeros(len(lanes), dtype=np.int64))
        on_global = (region == GLOBAL) & aligned
        if on_global.any():
            lanes = np.flatnonzero(on_global)
            index, inside = self.table.find(offsets[lanes], width)
            keep = inside & self.table.writable[index]
            if keep.any():
                lanes, index = lanes[keep], index[keep]
                if self.global_shadow is None:
                    total = int(self.global_base[-1] + (self.table.size[-1] + 3) // 4) if len(self.global_base) else 0
                    self.global_shadow = _Shadow(max(total, 1))
                inside_offsets = offsets[lanes] - self.table.start[index]
                base = self.global_base[index]
                self._check(batch, instr, op, self.global_shadow, lanes, base, inside_offsets, threads[lanes],
                            width, "global", self.table.start[index])

    def _check(self, batch, instr, op, shadow: _Shadow, lanes, base, offsets, threads, width, space, origin):
        per_lane = max(width // 4, 1)
        granule_in = (offsets.astype(np.int64) >> 2)
        if per_lane > 1:
            granule = (base + granule_in)[:, None] + np.arange(per_lane, dtype=np.int64)[None, :]
            granule = granule.reshape(-1)
            mask = np.full(len(granule), 0xF, dtype=np.uint8)
            thread = np.repeat(threads, per_lane)
            byte0 = ((granule_in[:, None] + np.arange(per_lane)[None, :]) * 4).reshape(-1)
            origin = np.repeat(np.broadcast_to(origin, (len(lanes),)), per_lane)
        else:
            granule = base + granule_in
            shift = (offsets & np.uint64(3)).astype(np.uint8)
            mask = (np.uint8((1 << width) - 1) << shift).astype(np.uint8)
            thread = threads
            byte0 = granule_in * 4
            origin = np.broadcast_to(origin, (len(lanes),))
        cta = batch.cta_of[thread]
        warp = thread >> 5
        epoch = self.cta_epoch[cta]
        wepoch = self.warp_epoch[warp]
        atomic = op == "atomic"
        strong = is_strong(instr)
        fenced = self.fence_step[thread]

        def ordered_against(other_thread, other_epoch, other_wepoch, other_step, other_strong):
            """Entries whose access races with the recorded access of other_thread."""
            valid = (other_thread >= 0) & (other_thread != thread)
            safe_other = np.where(valid, other_thread, 0)
            same_cta = batch.cta_of[safe_other] == cta
            other_warp = safe_other >> 5
            unordered = other_epoch == epoch
            if self.intra_warp:
                unordered &= (other_warp != warp) | (other_wepoch == wepoch)
            else:
                unordered &= other_warp != warp
            unordered &= ~((self.fence_step[safe_other] > other_step) & (fenced > other_step))
            if strong:
                unordered &= ~other_strong
            return valid & same_cta & unordered

        w_thread = shadow.w_thread[granule]
        racing_write = ordered_against(w_thread, shadow.w_epoch[granule], shadow.w_wepoch[granule],
                                       shadow.w_step[granule], shadow.w_strong[granule])
        racing_write &= (shadow.w_mask[granule] & mask) != 0
        if atomic:
            racing_write &= ~shadow.w_atomic[granule]
        if racing_write.any():
            hits = np.flatnonzero(racing_write)
            first_kind = np.where(shadow.w_atomic[granule[hits]], "Atomic", "Write")
            self._report(batch, instr, op, space, hits, w_thread[hits], shadow.w_pc[granule[hits]], first_kind,
                         thread, byte0, mask & shadow.w_mask[granule], origin)
        if op != "load":
            r_thread = shadow.r_thread[granule]
            partner = np.where(r_thread != thread, r_thread, shadow.r_other[granule])
            partner_pc = np.where(r_thread != thread, shadow.r_pc[granule], shadow.r_other_pc[granule])
            racing_read = ordered_against(partner, shadow.r_epoch[granule], shadow.r_wepoch[granule],
                                          shadow.r_step[granule], shadow.r_strong[granule])
            racing_read &= (shadow.r_mask[granule] & mask) != 0
            if racing_read.any():
                hits = np.flatnonzero(racing_read)
                self._report(batch, instr, op, space, hits, partner[hits], partner_pc[hits],
                             np.full(len(hits), "Read"), thread, byte0, mask & shadow.r_mask[granule], origin)
            if not atomic and not strong and len(granule) > 1:
                self._same_instruction(batch, instr, op, space, granule, thread, warp, mask, byte0, origin)
            last = _last_of_each(granule)
            g = granule[last]
            shadow.w_thread[g] = thread[last]
            shadow.w_pc[g] = instr.pc
            shadow.w_epoch[g] = epoch[last]
            shadow.w_wepoch[g] = wepoch[last]
            shadow.w_mask[g] = mask[last]
            shadow.w_atomic[g] = atomic
            shadow.w_strong[g] = strong
            shadow.w_step[g] = batch.steps
        else:
            self._record_reads(shadow, instr, granule, thread, mask, epoch, wepoch)
            shadow.r_strong[granule] = strong
            shadow.r_step[granule] = batch.steps

    def _same_instruction(self, batch, instr, op, space, granule, thread, warp, mask, byte0, origin):
        """Lanes of different warps of one CTA that one store instruction sends to the same bytes."""
        order = np.argsort(granule, kind="stable")
        g = granule[order]
        cta = batch.cta_of[thread[order]]
        same = (g[1:] == g[:-1]) & (warp[order][1:] != warp[order][:-1]) & (cta[1:] == cta[:-1]) & \
            ((mask[order][1:] & mask[order][:-1]) != 0)
        if same.any():
            pairs = np.flatnonzero(same)
            second = order[pairs + 1]
            first = order[pairs]
            self._report(batch, instr, op, space, second, thread[first], np.full(len(first), instr.pc),
                         np.full(len(first), "Write"), thread, byte0, mask, origin)

    def _record_reads(self, shadow: _Shadow, instr, granule, thread, mask, epoch, wepoch):
        first = _first_of_each(granule)
        last = _last_of_each(granule)
        g = granule[first]
        first_thread, last_thread = thread[first], thread[last]
        event_mask = np.zeros(len(g), dtype=np.uint8)
        position = np.searchsorted(g, granule)
        np.bitwise_or.at(event_mask, position, mask)
        recorded_warp = shadow.r_thread[g] >> 5
        stale = (shadow.r_thread[g] < 0) | (shadow.r_epoch[g] != epoch[first]) | \
            ((recorded_warp == first_thread >> 5) & (shadow.r_wepoch[g] != wepoch[first]))
        fresh_g = g[stale]
        if len(fresh_g):
            shadow.r_thread[fresh_g] = first_thread[stale]
            shadow.r_pc[fresh_g] = instr.pc
            other = last_thread[stale] != first_thread[stale]
            shadow.r_other[fresh_g] = np.where(other, last_thread[stale], -1)
            shadow.r_other_pc[fresh_g] = np.where(other, instr.pc, -1)
            shadow.r_epoch[fresh_g] = epoch[first][stale]
            shadow.r_wepoch[fresh_g] = wepoch[first][stale]
            shadow.r_mask[fresh_g] = event_mask[stale]
        kept = ~stale
        if kept.any():
            gk = g[kept]
            recorded = shadow.r_thread[gk]
            newcomer = np.where(first_thread[kept] != recorded, first_thread[kept], last_thread[kept])
            add_other = (shadow.r_other[gk] < 0) & (newcomer != recorded)
            shadow.r_other[gk[add_other]] = newcomer[add_other]
            shadow.r_other_pc[gk[add_other]] = instr.pc
            shadow.r_mask[gk] |= event_mask[kept]

    def _report(self, batch, instr, op, space, hits, other_threads, other_pcs, other_kinds, thread, byte0,
                overlap, origin):
        """Hazards of this access (entries `hits`) against earlier accesses, one finding per pair of
        instructions. As racecheck counts them, a hazard is one byte of one warp-level access (lanes of
        a warp on the same byte count once); a pair is an error when any hazard is between warps and a
        warning when all are between lanes of one warp (racecheck: warp-synchronous programming)."""
        launch = self.launch
        second_kind = ACCESS_WORDS[op]
        granule_address = np.broadcast_to(origin, thread.shape).astype(np.int64) + byte0.astype(np.int64)
        for kind in np.unique(other_kinds):
            of_kind = hits[other_kinds == kind]
            kind_threads = other_threads[other_kinds == kind]
            kind_pcs = other_pcs[other_kinds == kind]
            for pc in np.unique(kind_pcs):
                chosen = kind_pcs == pc
                entries = of_kind[chosen]
                partners = kind_threads[chosen]
                example = int(entries[0])
                first_thread = int(partners[0])
                low_byte = int(np.flatnonzero(np.unpackbits(np.array([overlap[example]], np.uint8),
                                                            bitorder="little"))[0])
                address = int(granule_address[example]) + low_byte
                hazards = _hazard_bytes(thread[entries] >> 5, granule_address[entries], overlap[entries])
                self.hazards += hazards
                between_warps = bool(np.any((partners >> 5) != (thread[entries] >> 5)))

                def lines(pc=int(pc), kind=str(kind), first_thread=first_thread, example=example, address=address):
                    first_instr = launch.program.instrs[pc]
                    t1, block = who(batch, first_thread)
                    t2, _ = who(batch, int(thread[example]))
                    return [f"Race reported between {kind} access at {location(launch, first_instr)}",
                            f"and {second_kind} access at {location(launch, instr)}",
                            f"for example {t1} ({kind.lower()}) and {t2} ({second_kind.lower()}) of {block} "
                            f"on __{space}__ address 0x{address:x}"]
                self.findings.add(("race", str(kind), int(pc), second_kind, instr.pc, space),
                                  "error" if between_warps else "warning", lines, hazards, "hazards")

    def report_lines(self) -> List[str]:
        out = []
        for finding in self.findings.items.values():
            head = f"{finding.severity.capitalize()}: {finding.lines[0]}"
            second = finding.lines[1] + (f" [{finding.count} hazards]" if finding.count > 1 else "")
            out += Finding(finding.severity, [head, second] + finding.lines[2:]).render()
        errors, warnings = self.findings.errors(), self.findings.warnings()
        shown = len(self.findings)
        out.append(f"{PREFIX}RACECHECK SUMMARY: {shown} hazard{'s' if shown != 1 else ''} displayed "
                   f"({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''})")
        return out


def _hazard_bytes(warps: np.ndarray, granule_addresses: np.ndarray, overlap: np.ndarray) -> int:
    """Bytes in the overlap masks, each byte of a granule counted once per warp."""
    keys = np.stack([warps.astype(np.int64), granule_addresses.astype(np.int64)], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    merged = np.zeros(len(unique), dtype=np.uint8)
    np.bitwise_or.at(merged, inverse.reshape(-1), overlap.astype(np.uint8))
    return int(np.unpackbits(merged).sum())


# ---- init -------------------------------------------------------------------------------------------

class InitChecker(Observer):
    """initcheck: loads (and atomics) of shared, local and tracked global bytes that nothing wrote.

    Shared and local memory start uninitialised; global memory is initialised (gpuemu copies every
    argument from the host) except the allocations named in `uninitialized` (start addresses) and
    the buffers that the kernel parameters numbered in `uninitialized_params` point to."""

    def __init__(self, uninitialized: Sequence[int] = (), uninitialized_params: Sequence[int] = ()):
        self.uninitialized = set(int(a) for a in uninitialized)
        self.uninitialized_params = list(uninitialized_params)
        self.findings = Findings()

    def begin_launch(self, launch) -> None:
        self.launch = launch
        params = launch.program.params
        raw = launch.memory.read(launch.param_base, max(launch.program.param_bytes, 1))
        for index in self.uninitialized_params:
            if params[index].size == 8:
                offset = params[index].offset
                self.uninitialized.add(int(raw[offset:offset + 8].view(np.uint64)[0]))
        allocations = [a for a in launch.memory.allocations() if a.address in self.uninitialized and not a.freed]
        self.tracked = {a.address: np.zeros(a.size, dtype=bool) for a in allocations}
        self.tracked_start = np.array(sorted(self.tracked), dtype=np.uint64)
        self.param_bytes = self._call_parameter_bytes(launch.program)

    @staticmethod
    def _call_parameter_bytes(program: ir.Program) -> np.ndarray:
        """Local-window bytes of .func parameters, which call sequences fill without a traced store."""
        marks = np.zeros(program.local_bytes, dtype=bool)
        symbols = []
        for function in program.functions.values():
            symbols += list(function.params) + list(function.returns)
        for instr in program.instrs:
            for operand in instr.operands:
                if isinstance(operand, ir.CallSite):
                    symbols += list(operand.arguments) + list(operand.returns)
        for symbol in symbols:
            start = symbol.address - ir.FUNC_PARAM_BASE
            marks[max(start, 0):max(start + symbol.size, 0)] = True
        return marks

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self.shared = None
        self.local = None

    def memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if space == CONSTANT_BANKS:
            return
        threads = thread_array(batch, threads)
        region, offsets = resolve(space, addresses)
        aligned = (offsets & np.uint64(width - 1)) == 0
        launch = self.launch
        shared = (region == SHARED) & aligned & (offsets + np.uint64(width) <= np.uint64(launch.shared_bytes))
        if shared.any():
            if self.shared is None:
                self.shared = np.zeros(batch.n_ctas * launch.shared_bytes, dtype=bool)
            lanes = np.flatnonzero(shared)
            base = batch.cta_of[threads[lanes]] * launch.shared_bytes
            self._access(batch, instr, op, "shared", self.shared, lanes, base, offsets[lanes], threads, width)
        local_size = launch.program.local_bytes
        local = (region == LOCAL) & aligned & (offsets + np.uint64(width) <= np.uint64(local_size))
        if local.any():
            if self.local is None:
                self.local = np.tile(self.param_bytes, batch.n)
            lanes = np.flatnonzero(local)
            base = threads[lanes] * local_size
            self._access(batch, instr, op, "local", self.local, lanes, base, offsets[lanes], threads, width)
        if len(self.tracked_start):
            on_global = np.flatnonzero((region == GLOBAL) & aligned)
            if len(on_global):
                index = np.searchsorted(self.tracked_start, offsets[on_global], side="right").astype(np.int64) - 1
                for slot in np.unique(index[index >= 0]):
                    start = int(self.tracked_start[slot])
                    marks = self.tracked[start]
                    lanes = on_global[index == slot]
                    inside = offsets[lanes] - np.uint64(start) + np.uint64(width) <= np.uint64(len(marks))
                    lanes = lanes[inside]
                    if len(lanes):
                        self._access(batch, instr, op, "global", marks, lanes, np.zeros(len(lanes), np.int64),
                                     offsets[lanes] - np.uint64(start), threads, width, origin=start)

    def _access(self, batch, instr, op, space, marks, lanes, base, offsets, threads, width, origin=0):
        positions = _expand_bytes(offsets.astype(np.int64) + base, width)
        if op != "store":
            written = marks[positions].reshape(-1, width).all(axis=1)
            if not written.all():
                bad = lanes[~written]
                example = int(bad[0])
                address = int(offsets[~written][0]) + origin

                def lines(example=example, address=address):
                    thread, block = who(batch, int(threads[example]))
                    where = f"0x{address:x}" + (" (shared window offset)" if space == "shared" else
                                                " (local window offset)" if space == "local" else "")
                    return [f"Uninitialized __{space}__ memory read of size {width} bytes",
                            f"at {location(self.launch, instr)}",
                            f"by {thread} in {block}",
                            f"Address {where}"]
                self.findings.add(("init", instr.pc, space), "error", lines, len(bad), "accesses", per_thread=True)
        if op != "load":
            marks[positions] = True

    def report_lines(self) -> List[str]:
        return [line for finding in self.findings.items.values() for line in finding.render()]


# ---- sync -------------------------------------------------------------------------------------------

class SyncChecker(Observer):
    """synccheck: aligned barriers (bar.sync, __syncthreads) that only part of a warp or CTA reaches,
    barrier thread counts that are not a multiple of 32 (the GPU stops the launch with an illegal
    instruction) or are never reached, and member masks of warp-synchronous instructions
    (shfl/vote/match/redux/elect .sync, bar.warp.sync) that leave out the calling lane (or name a lane
    that does), name lanes that are not there with it, or (before sm_70) name exited lanes."""

    def __init__(self):
        self.findings = Findings()
        self._readers = {}

    def begin_launch(self, launch) -> None:
        self.launch = launch
        self.about_to_exit = np.array([instr.control == ir.EXIT and instr.guard is None
                                       for instr in launch.program.instrs] + [False], dtype=bool)

    def begin_batch(self, batch) -> None:
        self.batch = batch
        self._readers = {}
        self.open_phase = {}
        self.suspects = {}

    def _read(self, batch, instr, ref, sel):
        key = (instr.pc, id(ref))
        if key not in self._readers:
            self._readers[key] = reader(batch, ref, "u32")
        return np.broadcast_to(np.asarray(self._readers[key](sel)), (len(lanes_of(sel, batch.n)),))

    # member masks
    def step(self, batch, instr, sel, warps, lanes) -> None:
        if instr.control != ir.STRAIGHT or "sync" not in instr.opcode.split("."):
            return
        op_class = instr.op_class
        if op_class in MASKED_CLASSES:
            mask_ref = instr.operands[-1]
        elif op_class == "bar":
            mask_ref = instr.operands[0] if instr.operands else None
        else:
            return
        if mask_ref is None or isinstance(mask_ref, (ir.AddrRef, ir.VecRef, ir.PredPairRef)):
            return
        threads = lanes_of(sel, batch.n)
        if instr.guard is not None:
            reg, negated = instr.guard
            active = batch.regs[reg.index][sel] != negated
            threads = threads[active]
            sel = threads
            if len(threads) == 0:
                return
        masks = self._read(batch, instr, mask_ref, sel).astype(np.uint32)
        lane = (threads & 31).astype(np.uint32)
        warp = threads >> 5
        present = np.zeros(batch.n, dtype=bool)
        present[threads] = True
        present_bits = lane_mask(present)
        rpc = np.minimum(batch.rpc, len(self.about_to_exit) - 1)
        gone = (batch.status == EXITED) | ((batch.rpc != INF) & self.about_to_exit[rpc] & ~present)
        gone_bits = lane_mask(gone)
        own = np.uint32(1) << lane
        leaves_out = (masks & own) == 0
        without_caller = np.zeros(batch.n, dtype=bool)
        without_caller[threads[leaves_out]] = True
        without_caller_bits = lane_mask(without_caller)

        def invalid_arguments(m, t):
            if not m >> (t & 31) & 1:
                return f"membermask 0x{m:08x} does not include lane {t & 31}"
            return (f"lanes {_lane_list(int(without_caller_bits[t >> 5]))} execute it with lane {t & 31} but leave "
                    f"themselves out of their membermask")
        self._mask_finding(batch, instr, threads, masks, without_caller_bits[warp] != 0, "Invalid arguments",
                           invalid_arguments)
        if self.launch.arch < 70:
            self._mask_finding(batch, instr, threads, masks, (masks & gone_bits[warp]) != 0, "Invalid arguments",
                               lambda m, t: f"membermask 0x{m:08x} names lanes "
                                            f"{_lane_list(int(gone_bits[t >> 5]) & m)}, which have exited (before "
                                            f"sm_70 every lane of the mask must execute it)", "exited")
        absent = masks & ~present_bits[warp] & ~gone_bits[warp]
        self._mask_finding(batch, instr, threads, masks, absent != 0, "Divergent thread(s) in warp",
                           lambda m, t: f"membermask 0x{m:08x} names lanes "
                                        f"{_lane_list(m & ~int(present_bits[t >> 5]) & ~int(gone_bits[t >> 5]))} "
                                        f"that do not execute this instruction with lane {t & 31}")

    def _mask_finding(self, batch, instr, threads, masks, bad, what, describe, variant=""):
        if not bad.any():
            return
        example = int(np.flatnonzero(bad)[0])
        thread_index, mask = int(threads[example]), int(masks[example])

        def lines():
            thread, block = who(batch, thread_index)
            return [f"Barrier error detected. {what}.",
                    f"at {location(self.launch, instr)}",
                    f"by {thread} in {block}",
                    describe(mask, thread_index)]
        self.findings.add(("mask", instr.pc, what, variant), "error", lines, int(bad.sum()), "threads",
                          per_thread=True)

    # barriers
    @staticmethod
    def _barrier_operands(instr):
        """(barrier id and thread count operands, whether it is an aligned barrier for the whole CTA)."""
        parts = instr.opcode.split(".")
        operands = instr.operands
        if parts[0] in ("bar", "barrier") and "red" in parts:
            operands = operands[1:-1]
        counted = parts[0] in ("bar", "barrier") and len(operands) > 1
        aligned = parts[0] in ("bar", "BAR") or "aligned" in parts
        return operands, aligned and not counted

    def barrier(self, batch, instr, sel, barrier_id, released) -> None:
        operands, whole_cta = self._barrier_operands(instr)
        arriving = lanes_of(sel, batch.n)
        if len(arriving) and instr.opcode.split(".")[0] in ("bar", "barrier") and len(operands) > 1:
            count = int(self._read(batch, instr, operands[1], sel)[0])
            self._check_count(batch, instr, arriving, count)
        elif len(arriving) and whole_cta:
            self._open_phases(batch, instr, barrier_id, arriving)
        if released is not None and len(released):
            self._close_phases(batch, barrier_id, released)
            self._check_same_instruction(batch, released)

    def _check_same_instruction(self, batch, released):
        """Threads that one aligned barrier released must all have waited at the same instruction."""
        pcs = batch.resume_pc[released] - 1
        if np.all(pcs == pcs[0]):
            return
        instrs = self.launch.program.instrs
        for cta in np.unique(batch.cta_of[released]):
            mine = released[batch.cta_of[released] == cta]
            where = np.unique(batch.resume_pc[mine] - 1)
            if len(where) < 2 or not all(self._barrier_operands(instrs[pc])[1] for pc in where):
                continue
            first = int(mine[0])
            at_first = batch.resume_pc[mine] - 1 == where[0]
            other = int(mine[~at_first][0])

            def lines(first=first, other=other, where=where):
                thread, block = who(batch, first)
                second, _ = who(batch, other)
                places = "; ".join(f"pc {pc} {self.launch.where(instrs[pc])} `{' '.join(instrs[pc].text.split())}`"
                                   for pc in where)
                return ["Barrier error detected. Divergent thread(s) in block.",
                        f"at {location(self.launch, instrs[where[0]])}",
                        f"by {thread} in {block}",
                        f"one barrier released threads waiting at different instructions, e.g. {thread} and "
                        f"{second}: {places}"]
            self.findings.add(("different barriers", tuple(int(pc) for pc in where)), "error", lines,
                              int(at_first.sum()), "threads", per_thread=True)

    def _check_count(self, batch, instr, arriving, count):
        if count % 32 == 0 and 0 < count <= batch.tpc_pad:
            return
        thread_index = int(arriving[0])
        problem = (f"thread count {count} is not a multiple of the warp size (32)" if count % 32 else
                   f"thread count {count} is more than the {batch.tpc} threads of the block: it can never be reached")
        thread, block = who(batch, thread_index)
        text = " ".join(instr.text.split())
        self.findings.add(("count", instr.pc, count), "error",
                          lambda: ["Barrier error detected. Invalid arguments.", f"at {location(self.launch, instr)}",
                                   f"by {thread} in {block}", f"`{text}`: {problem}"])
        if count % 32:
            raise DeviceError("CUDA_ERROR_ILLEGAL_INSTRUCTION", "\n".join(self.report_lines()),
                              f"CUDA_ERROR_ILLEGAL_INSTRUCTION: `{text}` with {problem} in kernel "
                              f"{plain_name(self.launch.program.name)}, pc {instr.pc}, {self.launch.where(instr)}, "
                              f"{block}, {thread} (a GPU stops the launch here)")

    def _open_phases(self, batch, instr, bar, arriving):
        """At the first arrival of a barrier phase in a CTA, note the threads that are neither here,
        nor waiting, nor exited, nor about to exit: they must arrive before the phase completes."""
        ctas = np.unique(batch.cta_of[arriving])
        opened = self.open_phase.setdefault(bar, {})
        new = [int(c) for c in ctas if int(c) not in opened]
        if not new:
            return
        suspects = self.suspects.setdefault(bar, np.zeros(batch.n, dtype=bool))
        in_cta = np.isin(batch.cta_of, new)
        here = np.zeros(batch.n, dtype=bool)
        here[arriving] = True
        rpc = np.minimum(batch.rpc, len(self.about_to_exit) - 1)
        elsewhere = (batch.status != EXITED) & (batch.status != AT_BARRIER) & ~here & (batch.rpc != INF)
        suspects[in_cta] = (elsewhere & ~self.about_to_exit[rpc])[in_cta]
        for cta in new:
            opened[cta] = (instr, int(arriving[0]))

    def _close_phases(self, batch, bar, released):
        opened = self.open_phase.get(bar, {})
        suspects = self.suspects.get(bar)
        released_ctas = batch.cta_of[released]
        for cta in np.unique(released_ctas):
            phase = opened.pop(int(cta), None)
            if phase is None or suspects is None:
                continue
            self._divergence(batch, bar, int(cta), phase, suspects, int(np.count_nonzero(released_ctas == cta)))

    def _divergence(self, batch, bar, cta, phase, suspects, waited):
        """The phase of barrier bar in cta is over (waited threads arrived): report the suspects that
        exited instead of arriving, once per waiting thread as synccheck counts."""
        instr, first = phase
        start, stop = cta * batch.tpc_pad, (cta + 1) * batch.tpc_pad
        missing = np.flatnonzero(suspects[start:stop] & (batch.status[start:stop] == EXITED)) + start
        suspects[start:stop] = False
        if len(missing) == 0:
            return
        missing_per_warp = np.bincount(missing >> 5, minlength=batch.n // 32)
        lanes_per_warp = np.bincount(np.flatnonzero(batch.local_index < batch.tpc) >> 5, minlength=batch.n // 32)
        partial = (missing_per_warp > 0) & (missing_per_warp < lanes_per_warp)
        kind = "warp" if partial.any() else "block"
        example = int(missing[partial[missing >> 5]][0]) if partial.any() else int(missing[0])

        def lines():
            thread, block = who(batch, first)
            absent, _ = who(batch, example)
            return [f"Barrier error detected. Divergent thread(s) in {kind}.",
                    f"at {location(self.launch, instr)}",
                    f"by {thread} in {block}",
                    f"{len(missing)} thread(s) of the block exited without reaching `{' '.join(instr.text.split())}` "
                    f"while {thread} waited, e.g. {absent} (warp {example % batch.tpc_pad // 32}); "
                    f"sm_70+ lets the barrier complete because exited threads count as arrived, "
                    f"earlier GPUs hang here"]
        self.findings.add(("divergent", instr.pc, kind), "error", lines, waited, "threads", per_thread=True)

    def launch_failed(self, launch, error) -> None:
        """A deadlock: explain the phases that can never complete."""
        batch = getattr(self, "batch", None)
        if batch is None:
            return
        for bar, opened in self.open_phase.items():
            suspects = self.suspects.get(bar)
            for cta, phase in list(opened.items()):
                if suspects is not None:
                    waiting_here = (batch.status == AT_BARRIER) & (batch.bar_wait == bar) & (batch.cta_of == cta)
                    self._divergence(batch, bar, cta, phase, suspects, int(np.count_nonzero(waiting_here)))
        waiting = np.flatnonzero(batch.status == AT_BARRIER)
        if error.cuda_error == "GPUEMU_DEADLOCK" and len(waiting):
            for bar in np.unique(batch.bar_wait[waiting]):
                at_bar = waiting[batch.bar_wait[waiting] == bar]
                pc = int(batch.resume_pc[at_bar[0]]) - 1
                instr = launch.program.instrs[pc]
                example = int(at_bar[0])
                expected = int(batch.bar_expected[bar][batch.cta_of[example]])

                def lines(instr=instr, example=example, count=len(at_bar), expected=expected):
                    thread, block = who(batch, example)
                    need = f"{expected} {'warps' if batch.per_warp_barriers else 'threads'}" if expected else \
                        ("every warp of the block" if batch.per_warp_barriers else "every thread of the block")
                    return ["Barrier error detected. Barrier can never complete (deadlock).",
                            f"at {location(launch, instr)}",
                            f"by {thread} in {block}",
                            f"{count} thread(s) wait at `{' '.join(instr.text.split())}`, which needs {need}"]
                self.findings.add(("deadlock", pc), "error", lines)

    def report_lines(self) -> List[str]:
        return [line for finding in self.findings.items.values() for line in finding.render()]


def _lane_list(mask: int) -> str:
    return ranges([lane for lane in range(32) if mask >> lane & 1]) or "none"


# ---- mem --------------------------------------------------------------------------------------------

@dataclass
class InvalidAccess:
    kind: str
    space: str
    op: str
    width: int
    address: int
    instr: ir.Instr
    thread: str
    block: str
    detail: List[str] = field(default_factory=list)


class MemChecker(Observer):
    """memcheck that keeps going: every faulting lane is recorded (the first max_errors in full) and
    sent to a sink instead, so the launch runs to the end and then fails with the first fault's error."""

    def __init__(self, max_errors: int = DEFAULT_MAX_ERRORS):
        self.max_errors = max_errors
        self.errors: List[InvalidAccess] = []
        self.total = 0

    def begin_launch(self, launch) -> None:
        self.launch = launch
        launch.fault_sink = True
        self.sink = launch.memory.alloc(16, align=16, name="gpuemu fault sink")
        self.table = GlobalTable(launch.memory, skip=(self.sink,))

    def end_launch(self, launch, stats) -> None:
        self._release()

    def launch_failed(self, launch, error) -> None:
        self._release()

    def _release(self) -> None:
        if getattr(self, "sink", None) is not None:
            self.launch.memory.free(self.sink)
            self.sink = None

    def memory(self, batch, instr, op, space, addresses, threads, width) -> None:
        if self.sink is None or width not in (1, 2, 4, 8, 16) or space == CONSTANT_BANKS:
            return
        region, offsets = resolve(space, addresses)
        kind = np.zeros(len(addresses), dtype=np.int8)
        misaligned = (addresses & np.uint64(width - 1)) != 0
        launch = self.launch
        shared = region == SHARED
        local = region == LOCAL
        on_global = region == GLOBAL
        kind[shared & (offsets + np.uint64(width) > np.uint64(launch.shared_bytes))] = 1
        kind[local & (offsets + np.uint64(width) > np.uint64(launch.program.local_bytes))] = 1
        if on_global.any():
            lanes = np.flatnonzero(on_global)
            lane_addresses = addresses[lanes]
            index, inside = self.table.find(lane_addresses, width)
            global_kind = np.where(inside, 0, 1).astype(np.int8)
            if op != "load":
                global_kind[inside & ~self.table.writable[index]] = 3
            global_kind[lane_addresses < np.uint64(NULL_LIMIT)] = 4
            kind[lanes] = global_kind
        kind[misaligned] = 2
        bad = np.flatnonzero(kind)
        if len(bad) == 0:
            return
        thread_ids = thread_array(batch, threads)
        for lane in bad:
            self.total += 1
            if len(self.errors) < self.max_errors:
                self.errors.append(self._describe(batch, instr, op, int(region[lane]), int(kind[lane]),
                                                  int(addresses[lane]), int(thread_ids[lane]), width))
        targets = {"shared": launch.shared_sink, "local": launch.local_sink}
        addresses[bad] = np.uint64(targets.get(space, self.sink))

    def _describe(self, batch, instr, op, region, kind, address, thread, width) -> InvalidAccess:
        thread_text, block = who(batch, thread)
        space = SPACE_NAMES[region]
        kind_name = {1: "out_of_bounds", 2: "misaligned", 3: "read_only", 4: "null"}[kind]
        problem = {2: "misaligned", 3: "read-only"}.get(kind, "out of bounds")
        detail = [f"Access to 0x{address:x} is {problem}"]
        if region == GLOBAL:
            detail += self._nearest(address)
        return InvalidAccess(kind_name, space, op, width, address, instr, thread_text, block, detail)

    def _nearest(self, address: int) -> List[str]:
        best = None
        for allocation in self.table.allocations:
            if allocation.kind != "global":
                continue
            start, size = allocation.address, allocation.size
            if start <= address < start + size:
                return [f"and is inside the allocation at 0x{start:x} of size {size:,} bytes"]
            distance = address - (start + size - 1) if address >= start else start - address
            relation = "after" if address >= start else "before"
            if best is None or distance < best[0]:
                best = (distance, f"and is {distance:,} bytes {relation} the nearest allocation at 0x{start:x} "
                                  f"of size {size:,} bytes")
        return [best[1]] if best else []

    def report_lines(self) -> List[str]:
        out = []
        for error in self.errors:
            access = {"load": "read", "store": "write", "atomic": "atomic"}[error.op]
            out += [f"{PREFIX}Invalid __{error.space}__ {access} of size {error.width} bytes",
                    f"{PREFIX}    at {location(self.launch, error.instr)}",
                    f"{PREFIX}    by {error.thread} in {error.block}"] + \
                   [f"{PREFIX}    {line}" for line in error.detail] + [PREFIX]
        return out

    def not_printed(self) -> int:
        return self.total - len(self.errors)

    def device_error(self) -> Optional[DeviceError]:
        if not self.errors:
            return None
        first = self.errors[0]
        cuda_error = "CUDA_ERROR_MISALIGNED_ADDRESS" if first.kind == "misaligned" else "CUDA_ERROR_ILLEGAL_ADDRESS"
        access = {"load": "read", "store": "write", "atomic": "atomic"}[first.op]
        summary = (f"{cuda_error}: {self.total:,} invalid memory access{'es' if self.total != 1 else ''}; the first: "
                   f"invalid __{first.space}__ {access} of {first.width} bytes at 0x{first.address:x} "
                   f"({'; '.join(first.detail)}) in kernel {plain_name(self.launch.program.name)}, pc {first.instr.pc}, "
                   f"{self.launch.where(first.instr)} `{' '.join(first.instr.text.split())}`, {first.block}, "
                   f"{first.thread}")
        return DeviceError(cuda_error, "\n".join(self.report_lines()), summary)


# ---- the session ------------------------------------------------------------------------------------

class CheckSession(Observer):
    """The checkers of one run: `CheckSession({"race", "sync"})` as the launch's observer.

    After the launch (or when it fails) the report is written to `stream` (None: kept for report());
    with "mem", a launch with invalid accesses runs to the end and then raises the first fault's error."""

    def __init__(self, checks, *, max_errors: int = DEFAULT_MAX_ERRORS, uninitialized: Sequence[int] = (),
                 uninitialized_params: Sequence[int] = (), stream=None):
        self.checks = set(checks)
        unknown = self.checks - set(CHECKS)
        if unknown:
            raise UsageError(f"unknown check {', '.join(sorted(unknown))} (choose from {', '.join(CHECKS)})")
        self.stream = stream
        self.init = InitChecker(uninitialized, uninitialized_params) if "init" in self.checks else None
        self.race = RaceChecker() if "race" in self.checks else None
        self.sync = SyncChecker() if "sync" in self.checks else None
        self.mem = MemChecker(max_errors) if "mem" in self.checks else None
        self.fan = Observers([self.init, self.race, self.sync, self.mem])
        for name in ("begin_batch", "end_batch", "step", "retire", "memory", "branch", "barrier", "exited"):
            setattr(self, name, getattr(self.fan, name))
        self.reported = False

    def begin_launch(self, launch) -> None:
        self.reported = False
        if self.mem is not None:
            self.mem.begin_launch(launch)
        if self.race is not None and self.mem is not None:
            self.race.skip_allocations = (self.mem.sink,)
        for checker in (self.init, self.race, self.sync):
            if checker is not None:
                checker.begin_launch(launch)

    def end_launch(self, launch, stats) -> None:
        self.fan.end_launch(launch, stats)
        self._write_report()
        error = self.mem.device_error() if self.mem is not None else None
        if error is not None:
            raise error

    def launch_failed(self, launch, error) -> None:
        for checker in self.fan.observers:
            failed = getattr(checker, "launch_failed", None)
            if failed is not None:
                failed(launch, error)
        self._write_report()

    def errors(self) -> int:
        """Errors found: race hazards, sync and init findings, invalid accesses."""
        count = 0
        for checker in (self.race, self.sync, self.init):
            if checker is not None:
                count += checker.findings.errors()
        if self.mem is not None:
            count += self.mem.total
        return count

    def warnings(self) -> int:
        return sum(c.findings.warnings() for c in (self.race, self.sync, self.init) if c is not None)

    def report(self) -> str:
        lines = []
        for checker in (self.mem, self.race, self.sync, self.init):
            if checker is not None:
                lines += checker.report_lines()
        errors = self.errors()
        lines.append(f"{PREFIX}ERROR SUMMARY: {errors} error{'s' if errors != 1 else ''}"
                     + (f", {self.warnings()} warning{'s' if self.warnings() != 1 else ''}" if self.warnings() else ""))
        hidden = self.mem.not_printed() if self.mem is not None else 0
        if hidden:
            lines.append(f"{PREFIX}ERROR SUMMARY: {hidden} error{'s were' if hidden != 1 else ' was'} not printed. "
                         f"Use --max-errors option to adjust the number of printed errors")
        return "\n".join(lines)

    def summary(self) -> Dict[str, object]:
        data = {"checks": sorted(self.checks), "errors": self.errors(), "warnings": self.warnings()}
        if self.race is not None:
            data["race_hazards"] = self.race.hazards
        if self.mem is not None:
            data["invalid_accesses"] = self.mem.total
        return data

    def _write_report(self) -> None:
        if self.reported:
            return
        self.reported = True
        if self.stream is not None and self.checks:
            self.stream.write(self.report() + "\n")
            self.stream.flush()


def compare_outputs(results) -> Dict[str, object]:
    """results: (seed, [(argument index, array)], error or None) per run."""
    seeds = [seed for seed, _, _ in results]
    span = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
    base_seed, base_arrays, base_error = results[0]
    differences = []
    distinct = {(_fingerprint(arrays), error) for _, arrays, error in results}
    for seed, arrays, error in results[1:]:
        if error != base_error:
            differences.append(f"seed {seed} ended with {error or 'success'}, seed {base_seed} with "
                               f"{base_error or 'success'}")
            continue
        for (index, want), (_, got) in zip(base_arrays, arrays):
            if want.tobytes() != got.tobytes():
                flat_want, flat_got = want.reshape(-1), got.reshape(-1)
                bits_want = flat_want.view(np.uint8).reshape(flat_want.size, -1)
                bits_got = flat_got.view(np.uint8).reshape(flat_got.size, -1)
                differ = np.flatnonzero(np.any(bits_want != bits_got, axis=1))
                first = int(differ[0])
                differences.append(f"arg{index} differs between seed {base_seed} and seed {seed} in {len(differ)} of "
                                   f"{flat_want.size} elements, first [{first}]: {flat_want[first].item()!r} vs "
                                   f"{flat_got[first].item()!r}")
    identical = not differences
    if identical:
        message = f"gpuemu: --repeat {len(seeds)}: outputs identical under {len(seeds)} random schedules ({span})"
    else:
        message = (f"gpuemu: --repeat {len(seeds)}: outputs differ between schedules ({len(distinct)} distinct "
                   f"results over {span}): " + "; ".join(differences[:3])
                   + (f"; +{len(differences) - 3} more" if len(differences) > 3 else ""))
    return {"runs": len(seeds), "identical": identical, "distinct_results": len(distinct), "message": message}


def _fingerprint(arrays) -> bytes:
    return b"".join(a.tobytes() for _, a in arrays)

"""What the checkers share: findings and their report lines, address resolution, thread names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from isa.memory import generic_region

from emulator import ir
from emulator.base.errors import GpuemuError, UsageError
from emulator.memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from emulator.runtime.faults import ranges
from emulator.runtime.names import plain_name

CHECKS = ("race", "sync", "init", "mem")
DEFAULT_MAX_ERRORS = 100


def chosen_checks(text: str, source: str) -> List[str]:
    """The checkers a comma-separated list names ("all": every one); an unknown name is a usage error naming source
    (the flag or the environment variable the list came from)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if "all" in names:
        return list(CHECKS)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise UsageError(f"{source}: unknown checker '{unknown[0]}' (choose from {', '.join(CHECKS)}, all)")
    return names
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


def is_warp_sync(instr: ir.Instr) -> bool:
    """bar.warp.sync (__syncwarp): a barrier the scheduler runs, for the lanes of one warp."""
    return instr.op_class == "bar" and instr.decoded is not None and instr.decoded.has("barwarp")


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
    in_shared, in_local, within = generic_region(addresses, SHARED_WINDOW, LOCAL_WINDOW, WINDOW_SIZE)
    region = np.full(n, GLOBAL, dtype=np.int8)
    region[in_shared] = SHARED
    region[in_local] = LOCAL
    return region, within


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


def lane_list(mask: int) -> str:
    return ranges([lane for lane in range(32) if mask >> lane & 1]) or "none"

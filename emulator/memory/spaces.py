"""Address-space layout, fault and operation codes, DeviceFault, and the global-memory allocator."""
from __future__ import annotations

import ctypes
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from isa import atomic

from emulator.memory.pages import release_pages

# Global allocations start here; addresses below NULL_LIMIT fault as "null". The generic windows
# sit above every global address, where an H100 puts them (local 0x7f6d..., shared 0x7f6e...).
GLOBAL_BASE = 0x7F43_6800_0000
LOCAL_WINDOW = 0x7F6D_0000_0000
SHARED_WINDOW = 0x7F6E_0000_0000
WINDOW_SIZE = 1 << 32
GLOBAL_LIMIT = LOCAL_WINDOW
NULL_LIMIT = 1 << 16
GUARD_BYTES = 512
ARENA_ALIGN = 16

SPACE_CODES = {"generic": 0, "global": 1, "shared": 2, "local": 3}
SPACE_NAMES = {code: name for name, code in SPACE_CODES.items()}

FAULT_KINDS = (None, "out_of_bounds", "misaligned", "read_only", "freed", "null")
FAULT_BAD_THREAD = 6
FAULT_BAD_LAYOUT = 7

FLAG_READ_ONLY = 1
FLAG_FREED = 2
#: the allocation's bytes are process memory at its storage address (GlobalHeap.attach_host), not in the arena
FLAG_HOST = 4

ACCESS_WIDTHS = (1, 2, 4, 8, 16)

ATOMIC_OPS = {"add": 0, "exch": 1, "cas": 2, "min": 3, "max": 4, "inc": 5, "dec": 6,
              "and": 7, "or": 8, "xor": 9}
ATOMIC_TYPES = {"b32": 0, "u32": 1, "s32": 2, "b64": 3, "u64": 4, "s64": 5,
                "f32": 6, "f64": 7, "f16x2": 8, "bf16x2": 9, "f16": 10, "bf16": 11, "b16": 12}
ATOMIC_DTYPES = {"b32": np.uint32, "u32": np.uint32, "s32": np.int32, "b64": np.uint64,
                 "u64": np.uint64, "s64": np.int64, "f32": np.float32, "f64": np.float64,
                 "f16x2": np.uint32, "bf16x2": np.uint32, "f16": np.uint16, "bf16": np.uint16,
                 "b16": np.uint16}
ATOMIC_OPS_BY_TYPE = atomic.OPS_BY_TYPE

COUNT_CODES = {"shared_wavefronts": 0, "global_sectors": 1, "distinct_addresses": 2,
               "max_same_address": 3, "local_sectors": 4}
#: counting functions take thread indices in [0, MAX_THREAD_INDEX)
MAX_THREAD_INDEX = 1 << 48


class RequestTotals(NamedTuple):
    """One counting call summed over its warps: requests (warps with a lane), the counts summed, what
    the same lanes would cost at best (a wavefront per 128 bytes' worth of lanes, at most the count; the sectors of
    lanes * width contiguous bytes, local: of each 32-bit piece; one address), and the most lanes
    on one address summed over warps and at most (zero unless contention was asked)."""
    requests: int
    count: int
    ideal: int
    contention: int
    max_contention: int


def check_thread_range(threads: np.ndarray | None) -> None:
    if threads is not None and threads.size and (threads.min() < 0 or threads.max() >= MAX_THREAD_INDEX):
        raise ValueError("thread indices must lie in [0, 2**48)")


_OP_WORDS = {"load": "read", "store": "write", "atomic": "atomic"}


class DeviceFault(Exception):
    """A kernel's memory access that a real GPU would stop with an illegal/misaligned address error."""

    def __init__(self, kind: str, space: str, op: str, width: int, address: int, lane: int,
                 detail: str):
        self.kind = kind
        self.space = space
        self.op = op
        self.width = width
        self.address = address
        self.lane = lane
        self.detail = detail
        super().__init__(f"Invalid __{space}__ {_OP_WORDS.get(op, op)} of size {width} bytes "
                         f"(lane {lane})\n{detail}")


@dataclass(frozen=True)
class Allocation:
    """One global allocation; const and param kinds are read-only to kernels."""

    address: int
    size: int
    kind: str = "global"
    name: str | None = None
    freed: bool = False


ALLOCATION_KINDS = ("global", "const", "param")
HOST_KINDS = ("host", "host_read_only")


def align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


class GlobalHeap:
    """Global allocations: program addresses never reused, storage in one growable byte arena."""

    def __init__(self) -> None:
        self.arena = np.zeros(0, dtype=np.uint8)
        self._allocations: list[Allocation] = []
        self._starts: list[int] = []
        self._storage: list[int] = []
        self._next_address = GLOBAL_BASE
        self._arena_top = 0
        self._used_top = 0  # the arena above this has never held an allocation, so it is still zero
        self._holes: list[tuple[int, int]] = []
        self._tables: tuple[np.ndarray, ...] | None = None
        self._attached: dict[int, Allocation] = {}
        self.version = 0

    # ---- allocation ----
    def alloc(self, nbytes: int, align: int = 256, kind: str = "global", name: str | None = None,
              unwritten=None) -> int:
        nbytes, align = int(nbytes), int(align)
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if align < 1 or align & (align - 1):
            raise ValueError(f"alignment must be a power of two, not {align}")
        if kind not in ALLOCATION_KINDS:
            raise ValueError(f"allocation kind must be one of {ALLOCATION_KINDS}, not {kind!r}")
        address = align_up(self._next_address, align)
        while (host := self._attached_overlap(address, max(nbytes, 1) + GUARD_BYTES)) is not None:
            address = align_up(host.address + host.size + GUARD_BYTES, align)
        if address + nbytes > GLOBAL_LIMIT:
            raise MemoryError(f"global address space exhausted allocating {nbytes:,} bytes")
        offset = self._take_storage(address, nbytes, unwritten)
        self._next_address = address + max(nbytes, 1) + GUARD_BYTES
        index = bisect_right(self._starts, address)  # the end, unless attached host memory lies above
        self._allocations.insert(index, Allocation(address, nbytes, kind, name))
        self._starts.insert(index, address)
        self._storage.insert(index, offset)
        self._changed()
        return address

    def reserve(self, nbytes: int) -> None:
        """Grow the arena once for allocations of about nbytes in all that are coming."""
        self._grow_to(self._arena_top + int(nbytes) + 64 * ARENA_ALIGN)

    def _grow_to(self, top: int) -> None:
        if top > self.arena.size:
            grown = np.zeros(max(top, 2 * self.arena.size, 1 << 20), dtype=np.uint8)
            grown[:self.arena.size] = self.arena
            self.arena = grown

    def free(self, address: int) -> None:
        index = self._index_of_start(int(address))
        if index is None or self._allocations[index].freed or self._allocations[index].kind in HOST_KINDS:
            raise ValueError(f"free of {int(address):#x}, which is not the start of a live allocation")
        allocation = self._allocations[index]
        self._allocations[index] = replace(allocation, freed=True)
        self._give_back_storage(allocation.address, self._storage[index], allocation.size)
        self._changed()

    def allocations(self) -> list[Allocation]:
        return list(self._allocations)

    # ---- process memory seen by kernels in place ----
    def attach_host(self, address: int, nbytes: int, *, read_only: bool = False, name: str | None = None) -> None:
        """Process memory [address, address + nbytes) as a global allocation at that same address, which kernels
        read and write in place (it is never copied). The caller keeps it mapped (and, unless read_only,
        writable) until detach_host; it may not overlap a device allocation or the shared/local windows."""
        address, nbytes = int(address), int(nbytes)
        if nbytes <= 0 or address < NULL_LIMIT:
            raise ValueError(f"cannot attach {nbytes:,} bytes of host memory at {address:#x}")
        end = address + nbytes
        if address < SHARED_WINDOW + WINDOW_SIZE and end > LOCAL_WINDOW:
            raise ValueError(f"host memory {address:#x}..{end:#x} lies in the generic shared/local address windows")
        index = bisect_right(self._starts, address)
        for neighbour in self._allocations[max(index - 1, 0):index + 1]:
            if neighbour.address < end and address < neighbour.address + max(neighbour.size, 1):
                raise ValueError(f"host memory {address:#x}..{end:#x} overlaps the device allocation at "
                                 f"{neighbour.address:#x} of {neighbour.size:,} bytes")
        allocation = Allocation(address, nbytes, "host_read_only" if read_only else "host", name)
        self._allocations.insert(index, allocation)
        self._attached[address] = allocation
        self._starts.insert(index, address)
        self._storage.insert(index, address)
        self._changed()

    def detach_host(self, address: int) -> None:
        index = self._index_of_start(int(address))
        if index is None or self._allocations[index].kind not in HOST_KINDS:
            raise ValueError(f"{int(address):#x} is not the start of attached host memory")
        del self._allocations[index], self._starts[index], self._storage[index]
        del self._attached[int(address)]
        self._changed()

    def _attached_overlap(self, address: int, nbytes: int) -> Allocation | None:
        for allocation in self._attached.values():
            if allocation.address < address + nbytes and address < allocation.address + allocation.size:
                return allocation
        return None

    # ---- host copies ----
    def write(self, address: int, data) -> None:
        raw = _as_bytes(data)
        attached = self._attached_span(int(address), raw.size, "write")
        if attached is not None:
            ctypes.memmove(attached, raw.ctypes.data, raw.size)
            return
        start = self._host_span(int(address), raw.size, "write")
        self.arena[start:start + raw.size] = raw

    def read(self, address: int, nbytes: int) -> np.ndarray:
        return self.view(address, nbytes).copy()

    def view(self, address: int, nbytes: int) -> np.ndarray:
        """The bytes in place, read-only; valid until the next allocation (which may move the arena)."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot read {nbytes} bytes")
        attached = self._attached_span(int(address), nbytes, "read")
        if attached is not None:
            return np.frombuffer(ctypes.string_at(attached, nbytes), dtype=np.uint8).copy()
        start = self._host_span(int(address), nbytes, "read")
        view = self.arena[start:start + nbytes]
        view.flags.writeable = False
        return view

    def release(self, address: int, nbytes: int) -> int:
        """Give the host pages under these bytes back to the system; they read as zeros afterwards."""
        start = self._host_span(int(address), int(nbytes), "release")
        return release_pages(self.arena[start:start + int(nbytes)])

    @property
    def bytes_in_use(self) -> int:
        """Arena bytes below the highest live allocation (holes included): host memory device data occupies."""
        return self._arena_top

    def growth_for(self, nbytes: int) -> int:
        """Host bytes that allocations of nbytes in all would add to the arena (0 when they fit)."""
        top = self._arena_top + int(nbytes) + 64 * ARENA_ALIGN
        if top <= self.arena.size:
            return 0
        return max(top, 2 * self.arena.size, 1 << 20) - self.arena.size

    def _attached_span(self, address: int, nbytes: int, verb: str) -> int | None:
        """address itself when [address, address + nbytes) lies in attached host memory, else None."""
        index = bisect_right(self._starts, address) - 1
        if index < 0 or self._allocations[index].kind not in HOST_KINDS:
            return None
        allocation = self._allocations[index]
        if address + nbytes > allocation.address + allocation.size:
            return None
        if verb == "write" and allocation.kind == "host_read_only":
            raise ValueError(f"host write of {nbytes:,} bytes at {address:#x}: that host memory is read-only")
        return address

    # ---- tables for the cores ----
    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(start, size, arena offset, flags) arrays, sorted by start address."""
        if self._tables is None:
            allocations = self._allocations
            self._tables = (
                np.array([a.address for a in allocations], dtype=np.uint64),
                np.array([a.size for a in allocations], dtype=np.uint64),
                np.array(self._storage, dtype=np.uint64),
                np.array([(FLAG_READ_ONLY if a.kind not in ("global", "host") else 0) | (FLAG_FREED if a.freed else 0)
                          | (FLAG_HOST if a.kind in HOST_KINDS else 0) for a in allocations], dtype=np.uint8),
            )
        return self._tables

    # ---- compute-sanitizer style description ----
    def describe(self, address: int, problem: str = "out of bounds") -> str:
        """'Access to 0x... is <problem>' and where the address lies from the nearest live allocation."""
        address = int(address)
        head = f"Access to {address:#x} is {problem}"
        nearest = self._nearest_live(address)
        if nearest is None:
            return head
        allocation, relation = nearest
        where = f"the nearest allocation at {allocation.address:#x} of size {allocation.size:,} bytes"
        return f"{head}\nand is {relation} {where}"

    def _nearest_live(self, address: int) -> tuple[Allocation, str] | None:
        """The live allocation holding the address, else the nearest user allocation.

        compute-sanitizer knows only user allocations: the kernel-parameter buffer ("param") and
        the __constant__ banks ("const") are reported when an access hits them, never as the
        nearest allocation of an access outside them.
        """
        best = None
        for allocation in self._allocations:
            if allocation.freed:
                continue
            start, size = allocation.address, allocation.size
            if start <= address < start + size:
                return allocation, "inside"
            if allocation.kind != "global" and allocation.kind not in HOST_KINDS:
                continue
            if address >= start:
                distance = address - (start + size - 1)
                relation = f"{distance:,} bytes after"
            else:
                distance = start - address
                relation = f"{distance:,} bytes before"
            if best is None or distance < best[0]:
                best = (distance, allocation, relation)
        return None if best is None else (best[1], best[2])

    # ---- internals ----
    def _changed(self) -> None:
        self._tables = None
        self.version += 1

    def _index_of_start(self, address: int) -> int | None:
        index = bisect_right(self._starts, address) - 1
        return index if index >= 0 and self._starts[index] == address else None

    def _host_span(self, address: int, nbytes: int, verb: str) -> int:
        """Arena offset of [address, address + nbytes) inside one live allocation, else ValueError."""
        index = bisect_right(self._starts, address) - 1
        if index >= 0 and not self._allocations[index].freed:
            inside = address - self._starts[index]
            if inside + nbytes <= self._allocations[index].size:
                return self._storage[index] + inside
        raise ValueError(f"host {verb} of {nbytes:,} bytes at {address:#x} does not fit in a live allocation\n"
                         + self.describe(address))

    def _take_storage(self, address: int, nbytes: int, unwritten=None) -> int:
        """Arena offset for an allocation's first byte, congruent to its address modulo ARENA_ALIGN
        so that aligned program addresses are aligned arena offsets too; storage that held an earlier allocation is
        zero-filled (only the unwritten (offset, length) parts of the allocation, when they are given)."""
        needed = _storage_span(address, nbytes)
        for position, (offset, size) in enumerate(self._holes):
            if size >= needed:
                if size == needed:
                    del self._holes[position]
                else:
                    self._holes[position] = (offset + needed, size - needed)
                self._zero_reused(offset, needed, address % ARENA_ALIGN, nbytes, unwritten, offset + needed)
                return offset + address % ARENA_ALIGN
        base = self._arena_top
        self._arena_top += needed
        self._grow_to(self._arena_top)
        if base < self._used_top:
            self._zero_reused(base, needed, address % ARENA_ALIGN, nbytes, unwritten, self._used_top)
        self._used_top = max(self._used_top, self._arena_top)
        return base + address % ARENA_ALIGN

    def _zero_reused(self, offset: int, span: int, skew: int, nbytes: int, unwritten, used_top: int) -> None:
        """Zero what an earlier allocation may have left in [offset, offset + span) below used_top: all of it, or,
        given unwritten, all but the parts of the allocation (at offset + skew, nbytes long) its caller writes."""
        end = min(offset + span, used_top)
        if unwritten is None:
            self.arena[offset:end] = 0
            return
        start = offset + skew
        pieces = [(offset, start), (start + nbytes, offset + span)]
        pieces += [(start + part, start + part + length) for part, length in unwritten]
        for low, high in pieces:
            if low < min(high, end):
                self.arena[low:min(high, end)] = 0

    def _give_back_storage(self, address: int, offset: int, nbytes: int) -> None:
        holes = sorted(self._holes + [(offset - address % ARENA_ALIGN, _storage_span(address, nbytes))])
        merged: list[tuple[int, int]] = []
        for start, length in holes:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        if merged and merged[-1][0] + merged[-1][1] == self._arena_top:
            self._arena_top = merged.pop()[0]
        self._holes = merged


def _storage_span(address: int, nbytes: int) -> int:
    return align_up(address % ARENA_ALIGN + max(nbytes, 1), ARENA_ALIGN)


def _as_bytes(data) -> np.ndarray:
    """A flat uint8 view (or copy) of bytes-like or ndarray data, in C order."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(bytes(data), dtype=np.uint8)


@dataclass(frozen=True, eq=False)
class Layout:
    """Everything a core needs to resolve lanes: the arenas and the global allocation table."""

    global_bytes: np.ndarray
    alloc_start: np.ndarray
    alloc_size: np.ndarray
    alloc_offset: np.ndarray
    alloc_flags: np.ndarray
    shared_bytes: np.ndarray
    shared_limit: int
    shared_stride: int
    threads_per_cta: int
    local_bytes: np.ndarray
    local_limit: int
    local_stride: int
    n_threads: int

"""memcheck: every faulting access, up to --max-errors, instead of stopping at the first."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from emulator import ir
from emulator.base.errors import DeviceError
from emulator.machine.observe import Observer
from emulator.memory import NULL_LIMIT
from emulator.observers.checks.common import (CONSTANT_BANKS, DEFAULT_MAX_ERRORS, GLOBAL, LOCAL, PREFIX, SHARED,
                                              SPACE_NAMES, GlobalTable, location, resolve, thread_array, who)
from emulator.runtime.names import plain_name


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

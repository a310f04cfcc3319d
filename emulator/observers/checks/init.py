"""initcheck: reads of device memory that nothing wrote."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from emulator import ir
from emulator.machine.observe import Observer
from emulator.observers.checks.common import (CONSTANT_BANKS, GLOBAL, LOCAL, SHARED, Findings, _expand_bytes, location,
                                              resolve, thread_array, who)


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

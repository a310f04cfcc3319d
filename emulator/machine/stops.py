"""How a batch ends early: each stop carries a snapshot of what a report needs; the runtime renders it.

The machine never formats user-facing errors and never calls back into the launch that started it: it
raises one of these, and emulator.runtime.faults turns it into the DeviceError people see."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from emulator import ir
from emulator.memory import DeviceFault

Coordinates = Tuple[int, int, int]


@dataclass(frozen=True)
class ThreadPlace:
    """Where a thread sits in the grid: its block's and its own (x, y, z)."""
    block: Coordinates
    thread: Coordinates


@dataclass(frozen=True)
class WarpState:
    """One warp's lanes grouped by what they do: (state, pc, lanes) with state running/barrier/exited."""
    block: Coordinates
    warp: int
    parts: Tuple[Tuple[str, int, Tuple[int, ...]], ...]


class MachineStop(Exception):
    """A batch cannot go on."""


class MemoryFault(MachineStop):
    def __init__(self, instr: ir.Instr, fault: DeviceFault, thread: Optional[ThreadPlace]):
        super().__init__(fault.kind)
        self.instr, self.fault, self.thread = instr, fault, thread


class Deadlock(MachineStop):
    def __init__(self, per_warp_barriers: bool, warps: List[WarpState]):
        super().__init__("deadlock")
        self.per_warp_barriers, self.warps = per_warp_barriers, warps


class Livelock(MachineStop):
    """The batch's whole state came back unchanged after spin_limit loop iterations."""

    def __init__(self, backward_branches: int, spin_limit: int, warps: List[WarpState]):
        super().__init__("livelock")
        self.backward_branches, self.spin_limit, self.warps = backward_branches, spin_limit, warps


class StepLimit(MachineStop):
    def __init__(self, instr: ir.Instr, max_steps: int):
        super().__init__("step limit")
        self.instr, self.max_steps = instr, max_steps


class IllegalInstruction(MachineStop):
    """An instruction the H100 refuses at run time; problem says why."""

    def __init__(self, instr: ir.Instr, problem: str, thread: ThreadPlace):
        super().__init__(problem)
        self.instr, self.problem, self.thread = instr, problem, thread


class Trap(MachineStop):
    def __init__(self, instr: ir.Instr, thread: ThreadPlace):
        super().__init__("trap")
        self.instr, self.thread = instr, thread


class AssertFailure(MachineStop):
    """A device-side assert() that failed: its message, file and line as the program passed them."""

    def __init__(self, message: str, source: str, line: int, thread: ThreadPlace):
        super().__init__(message)
        self.message, self.source, self.line, self.thread = message, source, line, thread

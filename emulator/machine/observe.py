"""The one event hook of the machine: statistics, traces, checkers and the debugger all subscribe to it.

The machine calls these methods only when an observer is attached (`Kernel.launch(observer=...)`),
so a plain run pays nothing. Every method has a do-nothing default: a subscriber overrides the events
it needs. `sel` is a lane selection (lanes.ALL or a sorted int64 array of batch thread indices);
`threads` in memory events is None (all threads of the batch, in order) or that array.
"""
from __future__ import annotations

from typing import Iterable, List

from emulator.base.errors import DeviceError


class Observer:
    """Base of every subscriber."""

    #: False: step() and retire() are not needed one instruction at a time; the machine runs
    #: straight-line code in its fast loop and reports each run through steps() instead
    per_instruction = True

    def begin_launch(self, launch) -> None:
        """A launch is about to run its first batch (its parameter buffer is in memory)."""

    def end_launch(self, launch, stats) -> None:
        """The launch finished normally; stats is its LaunchStats."""

    def begin_batch(self, batch) -> None:
        """A batch of CTAs has been set up and is about to run."""

    def end_batch(self, batch) -> None:
        """Every thread of the batch has exited."""

    def step(self, batch, instr, sel, warps: int, lanes: int) -> None:
        """instr is about to run for the lanes of sel (warps / lanes: how many). May block (debugger)."""

    def retire(self, batch, instr, sel) -> None:
        """A straight-line instruction has run for sel; its destination registers hold the new values."""

    def steps(self, batch, first_pc: int, end_pc: int, sel, warps: int, lanes: int) -> None:
        """Only for observers with per_instruction False: the straight-line instructions first_pc up to
        end_pc have run for sel (in place of their step and retire events)."""

    def memory(self, batch, instr, op: str, space: str, addresses, threads, width: int) -> None:
        """A memory access is about to happen: op is load/store/atomic, space the resolved space
        (global, shared, local, generic), addresses one uint64 per lane of threads. A SASS LDC/ULDC reads
        space "constant" at bank * 64 KiB + offset: its banks are not in device memory."""

    def branch(self, batch, instr, sel, taken: int, lanes: int, split_warps: int) -> None:
        """A branch ran for sel: taken lanes of lanes went to the target (divergent when 0 < taken < lanes), and
        split_warps warps had lanes on both sides."""

    def barrier(self, batch, instr, sel, barrier_id: int, released) -> None:
        """The lanes of sel arrived at a barrier; released is the array of threads it let go (or None)."""

    def exited(self, batch, instr, threads) -> None:
        """These threads executed exit/ret from the kernel."""

    def launch_failed(self, launch, error) -> None:
        """The launch stops with a DeviceError (a fault, deadlock, livelock, trap); end_launch will not come."""


class Observers(Observer):
    """Fan one event out to several subscribers, in order."""

    def __init__(self, observers: Iterable[Observer]):
        self.observers: List[Observer] = [o for o in observers if o is not None]
        self.per_instruction = any(o.per_instruction for o in self.observers)

    def _fan(name):
        def method(self, *args, **kwargs):
            for observer in self.observers:
                getattr(observer, name)(*args, **kwargs)
        method.__name__ = name
        return method

    begin_launch = _fan("begin_launch")
    begin_batch = _fan("begin_batch")
    end_batch = _fan("end_batch")
    step = _fan("step")
    retire = _fan("retire")
    steps = _fan("steps")
    memory = _fan("memory")
    branch = _fan("branch")
    barrier = _fan("barrier")
    exited = _fan("exited")
    launch_failed = _fan("launch_failed")
    del _fan

    def end_launch(self, launch, stats) -> None:
        """An observer may turn a finished launch into a failed one (the checkers' invalid accesses raise their
        DeviceError here): the observers after it hear launch_failed instead, so none is left unfinished."""
        for index, observer in enumerate(self.observers):
            try:
                observer.end_launch(launch, stats)
            except DeviceError as error:
                for later in self.observers[index + 1:]:
                    later.launch_failed(launch, error)
                raise


def combine(*observers) -> Observer:
    """None, the only observer given, or an Observers fanning out to all of them."""
    present = [o for o in observers if o is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else Observers(present)

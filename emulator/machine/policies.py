"""Scheduling policies for `Kernel.launch(policy=...)`: which ready warp, and which of its divergent groups, runs next.

The machine's own choice (no policy, `lockstep`) runs every thread that sits at the lowest pc of the
batch at once. The policies here run one warp at a time for one instruction (`turn_limit = 1`):
`RoundRobin` takes the warps in turn, `RandomSchedule` draws the warp (and, under independent thread
scheduling, the divergent group) from a seeded generator, so that the same seed gives the same run.
`select(batch)` returns what `Batch._select` returns: (pc, lane selection, pc at which the group must
stop to let sibling lanes catch up, whether it is a rotation turn), or None when nothing can run.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from emulator import ir
from emulator.machine.batch import SPIN_ROTATE
from emulator.machine.states import INF

SCHEDULES = ("lockstep", "round-robin", "random")
#: op classes that wait for the lanes of their member mask: the lowest group runs first to let lanes join
WARP_COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "elect", "bar", "activemask"})


class _WarpPolicy:
    """Shared plumbing: per-warp lowest pcs, one group per turn, rotation away from a spinning group."""

    turn_limit = 1

    def __init__(self):
        self._batch_id = None

    def _reset(self, batch) -> None:
        self._batch_id = id(batch)
        self.cursor = -1
        self.last_pc = {}
        self.backward = {}

    def select(self, batch):
        if self._batch_id != id(batch):
            self._reset(batch)
        lowest = batch.rpc.reshape(-1, 32).min(axis=1)
        ready = np.flatnonzero(lowest != INF)
        if len(ready) == 0:
            return None
        warp = self.next_warp(ready)
        lanes = batch.rpc[warp * 32:warp * 32 + 32]
        pcs = np.unique(lanes[lanes != INF])
        pc = self.group_pc(batch, pcs)
        if len(pcs) > 1:
            pc = self._rotate_if_spinning(batch, warp, pcs, pc)
        self.last_pc[warp] = pc
        sel = np.flatnonzero(lanes == pc).astype(np.int64) + warp * 32
        others = int(np.min(lanes, where=lanes != pc, initial=INF))
        return pc, sel, others, False

    def _rotate_if_spinning(self, batch, warp: int, pcs: np.ndarray, pc: int) -> int:
        """A group that keeps looping while sibling lanes wait (an intra-warp lock) lets the next
        group up run one instruction every SPIN_ROTATE iterations, as the machine's own rotation does.
        Independent thread scheduling only: a pre-Volta warp runs its lowest group until the others
        rejoin it (a rotated group could reach a barrier, which counts the warp once, without them)."""
        if batch.per_warp_barriers:
            return pc
        if pc <= self.last_pc.get(warp, -1):
            self.backward[warp] = self.backward.get(warp, 0) + 1
            if self.backward[warp] >= SPIN_ROTATE:
                self.backward[warp] = 0
                higher = pcs[pcs > pc]
                return int(higher[0]) if len(higher) else int(pcs[0])
        return pc

    def next_warp(self, ready: np.ndarray) -> int:
        raise NotImplementedError

    def group_pc(self, batch, pcs: np.ndarray) -> int:
        return int(pcs[0])


class RoundRobin(_WarpPolicy):
    """Each ready warp in turn runs one instruction; within a warp the lowest-pc group (reconvergence)."""

    def next_warp(self, ready: np.ndarray) -> int:
        after = ready[ready > self.cursor]
        self.cursor = int(after[0]) if len(after) else int(ready[0])
        return self.cursor


class RandomSchedule(_WarpPolicy):
    """A seeded random ready warp runs one instruction; under independent thread scheduling (sm_70+)
    a random divergent group of it, except that a warp-collective waits for the lanes below it."""

    def __init__(self, seed: int, *, independent_groups: bool = True):
        super().__init__()
        self.seed = int(seed)
        self.independent_groups = independent_groups
        self.rng = np.random.default_rng(self.seed)

    def next_warp(self, ready: np.ndarray) -> int:
        return int(ready[self.rng.integers(len(ready))])

    def group_pc(self, batch, pcs: np.ndarray) -> int:
        # a pre-Volta batch has no independent groups to choose among: its warps run their lowest group
        if not self.independent_groups or batch.per_warp_barriers or len(pcs) == 1:
            return int(pcs[0])
        pc = int(pcs[self.rng.integers(len(pcs))])
        instr = batch.program.instrs[pc]
        if instr.control == ir.STRAIGHT and instr.op_class in WARP_COLLECTIVES:
            return int(pcs[0])
        return pc


def make_policy(schedule: str, seed: int = 0, *, arch: int = 90) -> Optional[object]:
    """The policy object for a --schedule name (None for lockstep, the machine's own choice)."""
    if schedule == "lockstep":
        return None
    if schedule == "round-robin":
        return RoundRobin()
    if schedule == "random":
        return RandomSchedule(seed, independent_groups=arch >= 70)
    raise ValueError(f"unknown schedule '{schedule}' (choose one of {', '.join(SCHEDULES)})")

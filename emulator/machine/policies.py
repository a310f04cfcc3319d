"""Scheduling policies for `Kernel.launch(policy=...)`: which ready warps, and which of their divergent groups, run next.

The machine's own choice (no policy, `lockstep`) runs every thread that sits at the lowest pc of the
batch at once. `RoundRobin` takes the warps in turn, one instruction each (`turn_limit = 1`).
`RandomSchedule` draws every turn from a seeded generator, so that the same seed gives the same run. A turn
runs a random number of instructions (`turn_limit`, set per turn) for one random warp (under independent
thread scheduling, one random divergent group of it), for a random share of the warps whose lowest group
sits at one pc, or for the threads at the batch's lowest pc, which catch up with those ahead of them. Warps
at one pc run as one numpy step, which is the run of those warps one after the other in index order; so that
the order in which they reach memory is drawn too, a group of several warps stops before a store or an atomic,
and a random share of its warps runs that instruction first (often, not always: each split costs a turn).
Warps seldom spread over more than a few pcs, so a launch takes about as many turns however large its grid.
`select(batch)` returns what machine/lockstep.py's `lockstep_select` returns: (pc, lane selection, pc at which the
group must stop to let sibling lanes catch up, whether it is a rotation turn), or None when nothing can run; a random
turn adds how many warps it has. A random schedule takes every draw in order from one stream of seeded uniform
doubles, and emulator/accel draws its turns (in C, or numpy with the same results).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from emulator import ir
from emulator.accel import (SPLIT_TURN, WARP_TURN, RandomTurns, TurnRules,
                            Uniforms, index_below, random_turn, warp_lowest)
from emulator.machine.batch import SPIN_ROTATE
from emulator.machine.lanes import ALL
from emulator.machine.states import INF

SCHEDULES = ("lockstep", "round-robin", "random")
#: op classes that wait for the lanes of their member mask: the lowest group runs first to let lanes join
WARP_COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "elect", "bar", "activemask"})
#: a random schedule's turns: at most MAX_TURN instructions (below SPIN_ROTATE, so that a turn never ends in the
#: machine's own rotation), MEAN_TURN on average before that cap
MAX_TURN = 32
MEAN_TURN = 16
#: with the warps' lowest groups at D distinct pcs, a turn is a catch-up turn with chance D / (D + CATCH_UP_WEIGHT):
#: the further the warps have spread, the sooner the ones behind join the others
CATCH_UP_WEIGHT = 1
#: the chance that a turn that is not a catch-up turn is one warp's alone
SINGLE_WARP_TURNS = 0.15
#: op classes whose order between warps can show in memory: a turn of several warps that starts at one splits,
#: up to SPLITS_PER_STORE times in a row at one pc (each split costs a turn; the last remainder runs whole), and
#: a turn of several warps stops before the next one with chance STOP_BEFORE_STORES (each stop costs a turn too;
#: docs/performance.md measures both)
ORDER_SENSITIVE = frozenset({"atom", "red", "st"})
SPLITS_PER_STORE = 3
STOP_BEFORE_STORES = 0.25


class _WarpPolicy:
    """Shared plumbing: per-warp lowest pcs, one group per turn, rotation away from a spinning group."""

    turn_limit = 1

    def __init__(self):
        #: the batch the per-warp state belongs to (held, so that a later batch cannot take its id and its state)
        self._batch = None

    def _reset(self, batch) -> None:
        self._batch = batch
        self.cursor = -1
        self.last_pc = {}
        self.backward = {}

    def select(self, batch):
        if self._batch is not batch:
            self._reset(batch)
        lowest = warp_lowest(batch.rpc)
        ready = np.flatnonzero(lowest != INF)
        if len(ready) == 0:
            return None
        return self._warp_turn(batch, self.next_warp(ready))

    def _warp_turn(self, batch, warp: int):
        """One group of one warp: the group policy's choice among its pcs, rotated away from a spinning group."""
        lanes = batch.rpc[warp * 32:warp * 32 + 32].tolist()
        pcs = sorted(set(lanes) - {INF})
        pc = self.group_pc(batch, pcs)
        if len(pcs) > 1:
            pc = self._rotate_if_spinning(batch, warp, pcs, pc)
        self.last_pc[warp] = pc
        sel = np.array([warp * 32 + lane for lane, at in enumerate(lanes) if at == pc], dtype=np.int64)
        others = min((at for at in lanes if at != pc), default=INF)
        return pc, sel, others, False

    def _rotate_if_spinning(self, batch, warp: int, pcs: list, pc: int) -> int:
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
                higher = [start for start in pcs if start > pc]
                return higher[0] if higher else pcs[0]
        return pc

    def next_warp(self, ready: np.ndarray) -> int:
        raise NotImplementedError

    def group_pc(self, batch, pcs: list) -> int:
        """The pc whose group runs, of a warp's distinct pcs (ascending)."""
        return pcs[0]


class RoundRobin(_WarpPolicy):
    """Each ready warp in turn runs one instruction; within a warp the lowest-pc group (reconvergence)."""

    def next_warp(self, ready: np.ndarray) -> int:
        after = ready[ready > self.cursor]
        self.cursor = int(after[0]) if len(after) else int(ready[0])
        return self.cursor


class RandomSchedule(_WarpPolicy):
    """Seeded random turns of a geometric number of instructions (1 to MAX_TURN; a turn ends sooner at a barrier,
    at an exit or where lanes of its warps wait to reconverge). A turn is a catch-up turn (every thread at the
    batch's lowest pc, until it reaches the next group) more often the further the warps have spread; otherwise
    it draws a ready warp, and SINGLE_WARP_TURNS of those turns are that warp's alone: under independent thread
    scheduling (sm_70+) a random divergent group of it, except that a warp-collective waits for the lanes below
    it. The rest take a random share of the warps whose lowest group sits at the drawn warp's lowest pc, the
    drawn warp included. A turn of several warps may end before a store or an atomic (STOP_BEFORE_STORES); a turn
    that starts at one runs it for a random share of its warps."""

    #: its turns run on the compiled engine as well (a turn is a run of instructions like any other)
    compiled_turns = True

    def __init__(self, seed: int, *, independent_groups: bool = True):
        super().__init__()
        self.seed = int(seed)
        self.independent_groups = independent_groups
        #: every draw of the schedule, in order, from the seeded generator
        self.uniforms = Uniforms(np.random.default_rng(self.seed))

    def _reset(self, batch) -> None:
        super()._reset(batch)
        rules = TurnRules([(1 - 1 / MEAN_TURN) ** k for k in range(1, MAX_TURN)],
                          _until_sensitive(batch.program.instrs),
                          (CATCH_UP_WEIGHT, SINGLE_WARP_TURNS, STOP_BEFORE_STORES))
        #: the turns' state: every pc of the program and the one after the last can start a turn
        self.turns = RandomTurns(batch.rpc, len(batch.program.instrs) + 1, rules, INF)
        #: the store or atomic where a group was split last, and how many times in a row
        self.split_pc = None
        self.splits = 0

    def select(self, batch):
        if self._batch is not batch:
            self._reset(batch)
        turn = random_turn(self.turns, self.uniforms)
        if turn is None:
            return None
        kind, pc, lanes, others, self.turn_limit, warps, warp = turn
        if kind == WARP_TURN:
            return self._warp_turn(batch, warp)
        sel = ALL if len(lanes) == batch.n else lanes
        if kind == SPLIT_TURN:
            return self._split_by_warp(batch, pc, sel, others, False)
        return pc, sel, others, False, warps

    def _split_by_warp(self, batch, pc: int, sel, others: int, rotating: bool):
        """At a store or an atomic, the group's warps would run in index order: a random share of them (one at
        least) runs that one instruction now, the others later, so that the order the warps reach memory in is
        drawn too. After SPLITS_PER_STORE splits in a row at one pc the next group to start there runs whole
        (splitting every remainder again would take about log2(warps) turns for each store)."""
        lanes = np.arange(batch.n, dtype=np.int64) if sel is ALL else sel
        first = np.flatnonzero(np.diff(lanes >> 5, prepend=-1))
        if self.split_pc == pc:
            self.splits += 1
            if self.splits > SPLITS_PER_STORE:
                self.split_pc = None
                return pc, sel, others, rotating
        else:
            self.split_pc, self.splits = pc, 1
        uniforms = self.uniforms
        share = uniforms.take()
        keep = uniforms.take_many(len(first)) < share
        keep[index_below(uniforms.take(), len(first))] = True
        chosen = np.repeat(keep, np.diff(first, append=len(lanes)))
        self.turn_limit = 1
        return pc, lanes[chosen], others, rotating

    def group_pc(self, batch, pcs: list) -> int:
        # a pre-Volta batch has no independent groups to choose among: its warps run their lowest group
        if not self.independent_groups or batch.per_warp_barriers or len(pcs) == 1:
            return pcs[0]
        pc = pcs[index_below(self.uniforms.take(), len(pcs))]
        instr = batch.program.instrs[pc]
        if instr.control == ir.STRAIGHT and instr.op_class in WARP_COLLECTIVES:
            return pcs[0]
        return pc


def _until_sensitive(instrs) -> list:
    """Per pc, the distance in pcs to the next ORDER_SENSITIVE instruction (0 at one), at most MAX_TURN."""
    ahead = [MAX_TURN] * (len(instrs) + 1)
    for pc in range(len(instrs) - 1, -1, -1):
        ahead[pc] = 0 if instrs[pc].op_class in ORDER_SENSITIVE else min(MAX_TURN, ahead[pc + 1] + 1)
    return ahead


def make_policy(schedule: str, seed: int = 0, *, arch: int = 90) -> Optional[object]:
    """The policy object for a --schedule name (None for lockstep, the machine's own choice)."""
    if schedule == "lockstep":
        return None
    if schedule == "round-robin":
        return RoundRobin()
    if schedule == "random":
        return RandomSchedule(seed, independent_groups=arch >= 70)
    raise ValueError(f"unknown schedule '{schedule}' (choose one of {', '.join(SCHEDULES)})")

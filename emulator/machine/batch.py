"""The SIMT machine: a batch of CTAs, per-thread pcs, lowest-pc-first warp grouping, barriers, calls.

One step runs one instruction for every thread of the batch that sits at the chosen pc, as one numpy
operation. In the common convergent case that is every thread, with no masking at all.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from emulator import ir
from emulator.accel import assign, warps_in
from emulator.base.errors import PTXSemanticError
from emulator.machine import executors
from emulator.machine.addressing import Addressing
from emulator.machine.barriers import Barriers
from emulator.machine.calls import Calls
from emulator.machine.codegen import BatchCode
from emulator.machine.config import LaunchConfig
from emulator.machine.lanes import ALL, count_of, lanes_of, subselect
from emulator.machine.lockstep import lockstep_select
from emulator.machine.specials import special_value
from emulator.machine.spin import SpinWatch
from emulator.machine.states import AT_BARRIER, EXITED, INF, NUM_BARRIERS, RUNNING
from emulator.machine.stops import Deadlock, IllegalInstruction, MemoryFault, StepLimit, ThreadPlace, Trap, WarpState
from emulator.memory import DeviceFault, Memory

_NONE = np.empty(0, dtype=np.int64)
#: backward branches a group may take while other groups wait before the scheduler lets another group run
SPIN_ROTATE = 64
#: the first architecture whose barriers count threads (independent thread scheduling); older ones count warps
PER_THREAD_BARRIERS_FROM = 70


class BatchLayout:
    """Per-thread indices that every batch of the same number of CTAs in a launch shares (read-only)."""

    def __init__(self, config: LaunchConfig, n_ctas: int):
        bx, by, bz = config.block
        self.tpc = config.threads_per_cta
        self.tpc_pad = tpc_pad = config.padded_threads_per_cta
        in_cta = np.arange(tpc_pad, dtype=np.int64)
        self.local_index = np.tile(in_cta, n_ctas)
        self.cta_of = np.repeat(np.arange(n_ctas, dtype=np.int64), tpc_pad)
        self.lane_ids = np.tile(np.arange(32, dtype=np.uint32), n_ctas * tpc_pad // 32)
        valid = self.local_index < self.tpc
        self.initial_rpc = np.where(valid, 0, INF).astype(np.int32)
        self.initial_status = np.where(valid, RUNNING, EXITED).astype(np.int8)
        tid = (in_cta % bx, (in_cta // bx) % by, in_cta // (bx * by))
        self.specials = {f"tid.{axis}": np.tile(values.astype(np.uint32), n_ctas) for axis, values in zip("xyz", tid)}
        self.specials["tid"] = self.specials["tid.x"]
        self.specials["warpid"] = np.tile((in_cta // 32).astype(np.uint32), n_ctas)
        self.cta_of_u32 = self.cta_of.astype(np.uint32)
        for array in (self.local_index, self.cta_of, self.lane_ids, self.cta_of_u32, *self.specials.values()):
            array.flags.writeable = False


class LazyExecutors:
    """Each instruction's executor bound to a batch the first time it is asked for."""

    __slots__ = ("batch", "instrs", "bound")

    def __init__(self, batch: "Batch", instrs):
        self.batch = batch
        self.instrs = instrs
        self.bound = [_UNBOUND] * len(instrs)

    def __getitem__(self, pc: int):
        executor = self.bound[pc]
        if executor is _UNBOUND:
            executor = self.bound[pc] = self.batch._bind(self.instrs[pc])
        return executor


_UNBOUND = object()


class Batch:
    """Architectural state of a batch of CTAs and the scheduler that runs it to completion."""

    def __init__(self, config: LaunchConfig, program: ir.Program, memory: Memory, cta_start: int, n_ctas: int, *,
                 layout: BatchLayout, uniform, observer=None, policy=None, code=None, bind_all: bool = True):
        """layout: the thread indices of n_ctas CTAs (shared by the launch's batches of that size); uniform: the
        program's launch-uniform registers (emulator.ir.uniform); code: the program's compiled straight-line code
        (emulator.machine.codegen.ProgramCode), which then runs the fast path's stretches; bind_all: bind every
        instruction's executor now, so that one the program cannot run is an error before anything runs (a launch's
        later batches bind each when it first runs: the first batch has checked them all)."""
        self.config = config
        self.program = program
        self.memory = memory
        self.observer = observer
        self.cta_start = cta_start
        self.n_ctas = n_ctas
        self.layout = layout
        self.tpc = layout.tpc
        self.tpc_pad = layout.tpc_pad
        self.n = n = n_ctas * self.tpc_pad
        self.regs = self._registers(program, n, code if observer is None else None)
        self.cc = np.zeros(n, dtype=bool)
        self.local_index = layout.local_index
        self.cta_of = layout.cta_of
        self.lane_ids = layout.lane_ids
        self.rpc = layout.initial_rpc.copy()
        self.status = layout.initial_status.copy()
        self.live = np.full(n_ctas, self.tpc, dtype=np.int64)
        self.resume_pc = np.zeros(n, dtype=np.int32)
        self.bar_wait = np.full(n, -1, dtype=np.int8)
        self.warp_sync_arrived = np.zeros(n // 32, dtype=np.uint32)
        self.warp_sync_mask = np.zeros(n // 32, dtype=np.uint32)
        self.bar_arrived = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.bar_expected = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.bar_votes = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.per_warp_barriers = config.arch < PER_THREAD_BARRIERS_FROM
        if self.per_warp_barriers:
            # pre-Volta: a barrier counts warps, a warp counts once whatever lanes reach it, and the
            # quota is every warp the CTA was launched with (exits do not make up for missing warps)
            self.warps_per_cta = self.tpc_pad // 32
            self.bar_warp_arrived = np.zeros((NUM_BARRIERS, n // 32), dtype=bool)
            self.barrier_quota = np.full(n_ctas, self.warps_per_cta, dtype=np.int64)
        else:
            self.barrier_quota = self.live
        self.spin_limit = config.spin_limit
        self.backward_branches = 0
        self.depth = None
        self.steps = 0
        self.warp_instructions = 0
        self.thread_instructions = 0
        self._specials = {}
        self.rotation_cursor = -1
        self.policy = policy
        self.uniform = uniform
        self.uniform_values = {index: self.regs[index].dtype.type(0) for index in self.uniform}
        self.addressing = Addressing(config)
        self.barriers = Barriers(self)
        self.calls = Calls(self)
        self.spin = SpinWatch(self)
        self.executors = [self._bind(instr) for instr in program.instrs] if bind_all else \
            LazyExecutors(self, program.instrs)
        self.straight_run = self._straight_runs(program.instrs)
        self.compiled = BatchCode(code, self) if code is not None else None

    @staticmethod
    def _registers(program: ir.Program, n: int, code) -> List[np.ndarray]:
        """Each register's array, zeros where a thread may read it before writing it; the others are left as
        allocated (compiled programs, where the generated code's liveness says which those are, and only without an
        observer, which may look at any register)."""
        generated = code.generated_source if code is not None else None
        live = generated.entry_live if generated is not None else None
        return [np.zeros(n, dtype=reg.storage) if live is None or index in live else np.empty(n, dtype=reg.storage)
                for index, reg in enumerate(program.registers)]

    # ---- services the executors use ----
    def release(self) -> None:
        """Drop the per-thread state now: executors and the batch refer to each other, so without this the
        arrays live until the cycle collector runs and every later batch faults in fresh pages."""
        self.executors = None
        self.compiled = None
        self.regs = []
        self._specials = {}
        self.rpc = self.status = self.resume_pc = self.bar_wait = self.cc = None

    def lowering_error(self, instr: ir.Instr, message: str) -> PTXSemanticError:
        return PTXSemanticError(self.program.source_name, instr.line, instr.col, message)

    def special(self, name: str):
        if name not in self._specials:
            self._specials[name] = special_value(self, name)
        return self._specials[name]

    def thread_coordinates(self, thread: int):
        """(block (x,y,z), thread (x,y,z)) of a batch thread index."""
        bx, by, _ = self.config.block
        gx, gy, _ = self.config.grid
        cta = self.cta_start + thread // self.tpc_pad
        local = thread % self.tpc_pad
        return ((cta % gx, (cta // gx) % gy, cta // (gx * gy)),
                (local % bx, (local // bx) % by, local // (bx * by)))

    def place(self, thread: int) -> ThreadPlace:
        return ThreadPlace(*self.thread_coordinates(int(thread)))

    def memory_fault(self, instr: ir.Instr, fault: DeviceFault, thread: Optional[int]) -> MemoryFault:
        """The stop for a fault of instr's memory access by a batch thread (None: no single thread to blame)."""
        return MemoryFault(instr, fault, None if thread is None else self.place(thread))

    def illegal_instruction(self, instr: ir.Instr, problem: str, thread: int) -> IllegalInstruction:
        return IllegalInstruction(instr, problem, self.place(thread))

    @staticmethod
    def _straight_runs(instrs) -> List[int]:
        """For each pc, how many straight-line instructions of the same function start there."""
        runs = [0] * (len(instrs) + 1)
        for pc in range(len(instrs) - 1, -1, -1):
            if instrs[pc].control == ir.STRAIGHT:
                same = pc + 1 < len(instrs) and instrs[pc + 1].function == instrs[pc].function
                runs[pc] = 1 + (runs[pc + 1] if same else 0)
        return runs

    # ---- binding ----
    def _bind(self, instr: ir.Instr):
        try:
            return self._bind_checked(instr)
        except (ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError) as error:
            raise self.lowering_error(instr, f"cannot run `{instr.text}`: malformed operands ({error})") from None

    def _bind_checked(self, instr: ir.Instr):
        if instr.control == ir.STRAIGHT:
            return executors.build(self, instr)
        if instr.control in (ir.BRANCH, ir.EXIT, ir.RETURN, ir.TRAP):
            return self.guard_reader(instr)
        if instr.control == ir.BARRIER:
            return self.barriers.bind(instr)
        if instr.control == ir.CALL:
            return self.calls.bind(instr)
        raise self.lowering_error(instr, f"'{instr.opcode}' is not supported")

    def guarded(self, guard, pc: int, sel):
        """The lanes of sel whose guard holds (all when guard is None); the others move on to pc + 1. None when no
        lane's guard holds."""
        if guard is None:
            return sel
        active = guard(sel)
        if np.all(active):
            return sel
        self.rpc[lanes_of(subselect(sel, ~active), self.n)] = pc + 1
        sel = subselect(sel, active)
        return sel if count_of(sel, self.n) else None

    def guard_reader(self, instr: ir.Instr):
        """A function sel -> whether each lane's guard predicate holds, or None for an unguarded instruction."""
        if instr.guard is None:
            return None
        reg, negated = instr.guard
        pred = self.regs[reg.index]
        if negated:
            return lambda sel: ~pred[sel]
        return lambda sel: pred[sel]

    # ---- the scheduler ----
    def run(self, max_steps: int) -> None:
        self.max_steps = max_steps
        with np.errstate(all="ignore"):
            while True:
                group = self.policy.select(self) if self.policy is not None else lockstep_select(self)
                if group is None:
                    break
                self._run_group(*group)
        if np.any(self.status == AT_BARRIER):
            raise Deadlock(self.per_warp_barriers, self.warp_snapshot())

    rotate_pending = False
    _current_pc = 0

    def _warps_in(self, sel) -> int:
        return self.n // 32 if sel is ALL else warps_in(sel)

    def _leave_at(self, sel, pc: int) -> None:
        """The lanes of sel wait at pc."""
        if sel is ALL:
            self.rpc[:] = pc
        else:
            assign(self.rpc, sel, pc)

    def _run_group(self, pc: int, sel, others: int, rotating: bool, warps: Optional[int] = None) -> None:
        """The group sel (of warps warps: counted here when None) from pc on, until the scheduler stops it."""
        instrs = self.program.instrs
        execs = self.executors
        observer = self.observer
        lanes = count_of(sel, self.n)
        warps = self._warps_in(sel) if warps is None else warps
        backward = 0
        max_steps = self.max_steps
        turn = 0
        turn_limit = getattr(self.policy, "turn_limit", None)
        spin_limit = self.spin_limit
        fast = observer is None or not observer.per_instruction
        straight_run = self.straight_run
        compiled = self.compiled
        while True:
            reach = straight_run[pc]
            if (compiled is not None and not rotating and fast and pc in compiled.code.loop_of and pc + reach < others
                    and (turn_limit is None or turn_limit - turn > reach)):
                steps = self.steps
                looped = compiled.loop(pc, sel, others, backward, SPIN_ROTATE,
                                       None if turn_limit is None else turn_limit - turn)
                if looped is not None:
                    pc, sel, others, backward, warps = looped
                    lanes = count_of(sel, self.n)
                    turn += self.steps - steps
                    if pc >= others or (turn_limit is not None and turn >= turn_limit):
                        self._leave_at(sel, pc)
                        return
            if fast and straight_run[pc] > (0 if compiled is not None else 1):
                end = min(pc + straight_run[pc], others)
                if turn_limit is not None:
                    end = min(end, pc + turn_limit - turn)
                if end > pc and self.steps + (end - pc) <= max_steps:
                    if compiled is not None:
                        compiled.run(pc, end, sel)
                    else:
                        for index in range(pc, end):
                            self.steps += 1
                            execs[index](sel)
                    count = end - pc
                    self.warp_instructions += warps * count
                    self.thread_instructions += lanes * count
                    if observer is not None:
                        observer.steps(self, pc, end, sel, warps, lanes)
                    pc = end
                    turn += count
                    if pc >= others or (turn_limit is not None and turn >= turn_limit):
                        self._leave_at(sel, pc)
                        return
            instr = instrs[pc]
            control = instr.control
            self.steps += 1
            self.warp_instructions += warps
            self.thread_instructions += lanes
            if observer is not None:
                observer.step(self, instr, sel, warps, lanes)
            if self.steps > max_steps:
                self._leave_at(sel, pc)
                raise StepLimit(instr, max_steps)
            if control == ir.STRAIGHT:
                execs[pc](sel)
                if observer is not None:
                    observer.retire(self, instr, sel)
                pc += 1
            elif control == ir.BRANCH:
                cond = execs[pc]
                target = instr.target
                if cond is None:
                    new_pc = target
                else:
                    taken = cond(sel)
                    n_taken = int(np.count_nonzero(taken))
                    if n_taken == lanes or n_taken == 0:
                        if observer is not None:
                            observer.branch(self, instr, sel, n_taken, lanes, 0)
                        new_pc = target if n_taken else pc + 1
                    else:
                        taken_sel = subselect(sel, taken)
                        fallthrough_sel = subselect(sel, ~taken)
                        if target < pc + 1:
                            run_sel, park_sel, new_pc, park_pc = taken_sel, fallthrough_sel, target, pc + 1
                        else:
                            run_sel, park_sel, new_pc, park_pc = fallthrough_sel, taken_sel, pc + 1, target
                        run_warps = self._warps_in(run_sel)
                        if observer is not None:
                            split = run_warps + self._warps_in(park_sel) - warps
                            observer.branch(self, instr, sel, n_taken, lanes, split)
                        self.rpc[park_sel] = park_pc
                        others = min(others, park_pc) if not rotating else others
                        sel = run_sel
                        lanes = len(sel)
                        warps = run_warps
                if new_pc <= pc:
                    if spin_limit:
                        self.backward_branches += 1
                        if self.backward_branches >= self.spin.next_check:
                            self.spin.check(new_pc, sel)
                    if rotating:
                        self._leave_at(sel, new_pc)
                        return
                    if others != INF:
                        backward += 1
                        if backward >= SPIN_ROTATE:
                            self._leave_at(sel, new_pc)
                            self.rotate_pending = True
                            return
                pc = new_pc
            elif control == ir.EXIT:
                self._current_pc = pc
                sel, lanes = self.exit_threads(sel, execs[pc])
                if lanes == 0:
                    return
                warps = self._warps_in(sel)
                pc += 1
            elif control == ir.BARRIER:
                outcome = execs[pc](pc, sel)
                if outcome is None:
                    return
                pc += 1
            elif control == ir.CALL:
                pc = execs[pc](pc, sel)
                if pc is None:
                    return
            elif control == ir.RETURN:
                self._current_pc = pc
                result = self.calls.return_from(pc, sel, execs[pc])
                if result is None:
                    return
                pc, sel = result
                lanes = count_of(sel, self.n)
                warps = self._warps_in(sel)
            elif control == ir.TRAP:
                guard = execs[pc]
                if guard is None or np.any(guard(sel)):
                    raise Trap(instr, self.place(lanes_of(sel, self.n)[0]))
                pc += 1
            if pc >= others:
                self._leave_at(sel, pc)
                return
            if turn_limit is not None:
                turn += 1
                if turn >= turn_limit:
                    self._leave_at(sel, pc)
                    return

    # ---- exit ----
    def exit_threads(self, sel, guard):
        """End the lanes of sel whose guard holds (all when guard is None); (the lanes that stay, their count)."""
        if guard is not None:
            leaving = guard(sel)
            exiting = subselect(sel, leaving)
            staying = subselect(sel, ~leaving)
        else:
            exiting, staying = sel, np.empty(0, dtype=np.int64)
        if count_of(exiting, self.n) == 0:
            return sel, count_of(sel, self.n)
        if self.observer is not None:
            self.observer.exited(self, self.program.instrs[self._current_pc], exiting)
        self.status[exiting] = EXITED
        self.rpc[exiting] = INF
        ctas = self.cta_of[exiting] if exiting is not ALL else self.cta_of
        gone = np.bincount(ctas, minlength=self.n_ctas)
        self.live -= gone
        self.barriers.complete(np.flatnonzero(gone))
        if self.barriers.warp_syncs_pending:
            self.barriers.complete_warp_syncs(np.unique(lanes_of(exiting, self.n) >> 5))
        if self.observer is not None:
            for bar, released in self.barriers.released_by_barrier:
                self.observer.barrier(self, self.program.instrs[self._current_pc], _NONE, bar, released)
        return staying, len(staying)

    # ---- inspection ----
    def warp_states(self) -> List[tuple]:
        """(cta, warp, [(state, pc or barrier id, lanes)]) of every warp: its lanes grouped by what they do.

        state is "running" (pc: where it continues), "barrier" (pc of the barrier it waits at) or "exited"."""
        result = []
        for warp in range(self.n // 32):
            lanes = np.arange(warp * 32, warp * 32 + 32)
            valid = self.local_index[lanes] < self.tpc
            groups = {}
            for thread in lanes[valid]:
                status = int(self.status[thread])
                if status == EXITED:
                    key = ("exited", -1)
                elif status == AT_BARRIER:
                    key = ("barrier", int(self.resume_pc[thread]) - 1)
                else:
                    key = ("running", int(self.rpc[thread]))
                groups.setdefault(key, []).append(int(thread) % 32)
            parts = [(state, pc, lanes_in) for (state, pc), lanes_in in sorted(groups.items(), key=lambda g: g[1][0])]
            result.append((warp // (self.tpc_pad // 32), warp % (self.tpc_pad // 32), parts))
        return result

    def warp_snapshot(self) -> List[WarpState]:
        """Every warp's state with its block's coordinates, for a report."""
        return [WarpState(self.thread_coordinates(cta * self.tpc_pad)[0], warp,
                          tuple((state, pc, tuple(lanes)) for state, pc, lanes in parts))
                for cta, warp, parts in self.warp_states()]

    def waiting_warps(self) -> List[tuple]:
        """(cta, warp, pc, state) of every warp with a thread blocked at a barrier."""
        result = []
        blocked = np.flatnonzero(self.status == AT_BARRIER)
        seen = set()
        for thread in blocked:
            key = (int(self.cta_of[thread]), int(self.local_index[thread] // 32))
            if key in seen:
                continue
            seen.add(key)
            result.append((key[0], key[1], int(self.resume_pc[thread]) - 1))
        return result

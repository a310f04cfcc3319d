"""The SIMT machine: a batch of CTAs, per-thread pcs, lowest-pc-first warp grouping, barriers, calls.

One step runs one instruction for every thread of the batch that sits at the chosen pc, as one numpy
operation. In the common convergent case that is every thread, with no masking at all.
"""
from __future__ import annotations

import hashlib
from typing import List, Optional

import numpy as np

from . import executors, ir
from .errors import DeviceError, PTXSemanticError
from .executors import ALL, count_of, lanes_of, reader, subselect, writer
from .lower import FUNC_PARAM_BASE, SHARED_RESERVED_BYTES

#: the reserved shared region on sm_90: ptxas compiles begin, cap and offset_0 to these constants; end and
#: offset_1 come from the driver's constant bank (c[0x0][0x68], c[0x0][0x6c]) and are not yet read on an H100
#: (tools/probes_names): these are the RTX 3060's layout moved to the region's sm_90 start
RESERVED_SHARED_REGISTERS = {"reserved_smem_offset_begin": 0, "reserved_smem_offset_cap": SHARED_RESERVED_BYTES,
                             "reserved_smem_offset_0": 0, "reserved_smem_offset_1": 0,
                             "reserved_smem_offset_end": 288}
from .memory import LOCAL_WINDOW, SHARED_WINDOW, DeviceFault
from .printf import format_printf

INF = np.iinfo(np.int32).max
_NONE = np.empty(0, dtype=np.int64)
RUNNING, AT_BARRIER, EXITED = 0, 1, 2
#: backward branches a group may take while other groups wait before the scheduler lets another group run
SPIN_ROTATE = 64
NUM_BARRIERS = 16
#: the first architecture whose barriers count threads (independent thread scheduling); older ones count warps
PER_THREAD_BARRIERS_FROM = 70
#: spin checks in a row with every thread at the same pc and no memory byte changed that make a livelock
#: even while registers change (a counter in a loop that never ends); kernels with local memory excepted
QUIET_SPIN_CHECKS = 100


class BatchLayout:
    """Per-thread indices that every batch of the same number of CTAs in a launch shares (read-only)."""

    def __init__(self, block, n_ctas: int):
        bx, by, bz = block
        self.tpc = bx * by * bz
        self.tpc_pad = tpc_pad = (self.tpc + 31) // 32 * 32
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


class Batch:
    """Architectural state of a batch of CTAs and the scheduler that runs it to completion."""

    def __init__(self, launch, program: ir.Program, cta_start: int, n_ctas: int):
        self.launch = launch
        self.program = program
        self.memory = launch.memory
        self.observer = launch.observer
        self.cta_start = cta_start
        self.n_ctas = n_ctas
        self.layout = layout = launch.batch_layout(n_ctas)
        self.tpc = layout.tpc
        self.tpc_pad = layout.tpc_pad
        self.n = n = n_ctas * self.tpc_pad
        self.regs = [np.zeros(n, dtype=reg.storage) for reg in program.registers]
        self.cc = np.zeros(n, dtype=bool)
        self.local_index = layout.local_index
        self.cta_of = layout.cta_of
        self.lane_ids = layout.lane_ids
        self.rpc = layout.initial_rpc.copy()
        self.status = layout.initial_status.copy()
        self.live = np.full(n_ctas, self.tpc, dtype=np.int64)
        self.resume_pc = np.zeros(n, dtype=np.int32)
        self.bar_wait = np.full(n, -1, dtype=np.int8)
        self.bar_arrived = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.bar_expected = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.bar_votes = np.zeros((NUM_BARRIERS, n_ctas), dtype=np.int64)
        self.per_warp_barriers = getattr(launch, "arch", 90) < PER_THREAD_BARRIERS_FROM
        if self.per_warp_barriers:
            # pre-Volta: a barrier counts warps, a warp counts once whatever lanes reach it, and the
            # quota is every warp the CTA was launched with (exits do not make up for missing warps)
            self.warps_per_cta = self.tpc_pad // 32
            self.bar_warp_arrived = np.zeros((NUM_BARRIERS, n // 32), dtype=bool)
            self.barrier_quota = np.full(n_ctas, self.warps_per_cta, dtype=np.int64)
        else:
            self.barrier_quota = self.live
        self.spin_limit = getattr(launch, "spin_limit", None) or 0
        self.backward_branches = 0
        self._next_spin_check = self.spin_limit
        self._spin_pcs = None
        self._spin_digest = None
        self._quiet_checks = 0
        self.depth = None
        self.steps = 0
        self.warp_instructions = 0
        self.thread_instructions = 0
        self._specials = {}
        self._rotation_cursor = -1
        self.policy = launch.policy
        self.turn_limit = getattr(self.policy, "turn_limit", None)
        self.uniform = launch.uniform_registers()
        self.uniform_values = {index: self.regs[index].dtype.type(0) for index in self.uniform}
        self.executors = [self._bind(instr) for instr in program.instrs]
        self.straight_run = self._straight_runs(program.instrs)

    # ---- services the executors use ----
    def release(self) -> None:
        """Drop the per-thread state now: executors and the batch refer to each other, so without this the
        arrays live until the cycle collector runs and every later batch faults in fresh pages."""
        self.executors = []
        self.regs = []
        self._specials = {}
        self.rpc = self.status = self.resume_pc = self.bar_wait = self.cc = None

    def lowering_error(self, instr: ir.Instr, message: str) -> PTXSemanticError:
        return PTXSemanticError(self.program.source_name, instr.line, instr.col, message)

    def special(self, name: str):
        if name not in self._specials:
            self._specials[name] = self._make_special(name)
        return self._specials[name]

    def _make_special(self, name: str):
        launch = self.launch
        base, _, component = name.partition(".")
        if component == "w":
            return np.uint32(0)
        axis = "xyz".index(component) if component else 0
        gx, gy, gz = launch.grid
        if name in self.layout.specials:
            return self.layout.specials[name]
        if base in ("ctaid", "clusterid") and (axis, gy, gz) == (0, 1, 1):
            return self.layout.cta_of_u32 + np.uint32(self.cta_start)
        cta = self.cta_of + self.cta_start
        if base == "ntid":
            return np.uint32(launch.block[axis])
        if base in ("ctaid", "clusterid"):
            return ((cta % gx, (cta // gx) % gy, cta // (gx * gy))[axis]).astype(np.uint32)
        if base in ("nctaid", "nclusterid"):
            return np.uint32(launch.grid[axis])
        if base == "laneid":
            return self.lane_ids
        if base == "nwarpid":
            return np.uint32(64)
        if base == "smid":
            return (cta % 132).astype(np.uint32)
        if base == "nsmid":
            return np.uint32(132)
        if base.startswith("lanemask_"):
            lane = self.lane_ids.astype(np.uint64)
            below = (np.uint64(1) << lane) - np.uint64(1)
            bit = np.uint64(1) << lane
            full = np.uint64(0xFFFFFFFF)
            value = {"lanemask_eq": bit, "lanemask_lt": below, "lanemask_le": below | bit,
                     "lanemask_gt": full & ~(below | bit), "lanemask_ge": full & ~below}[base]
            return value.astype(np.uint32)
        if base in ("clock", "clock_hi", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi"):
            def counter(sel, base=base):
                value = self.steps * (1000 if base.startswith("globaltimer") else 1)
                if base.endswith("_hi"):
                    value >>= 32
                return np.uint64(value) if base in ("clock64", "globaltimer") else np.uint32(value & 0xFFFFFFFF)
            return counter
        if base == "dynamic_smem_size":
            return np.uint32(launch.dynamic_shared)
        if base in ("total_smem_size", "aggr_smem_size"):
            user = (launch.program.static_shared + launch.dynamic_shared + 127) // 128 * 128
            return np.uint32(user + (SHARED_RESERVED_BYTES if base == "aggr_smem_size" else 0))
        if base in RESERVED_SHARED_REGISTERS:
            return np.uint32(RESERVED_SHARED_REGISTERS[base])
        if base in ("cluster_nctaid",):
            return np.uint32(1)
        if base in ("cluster_nctarank",):
            return np.uint32(1)
        if base == "gridid":
            return np.uint64(launch.grid_id)
        return np.uint32(0)

    def symbol_address(self, symbol: ir.SymbolInfo) -> int:
        return symbol.address

    def space_base(self, space: Optional[str]) -> int:
        return {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "const": self.launch.const_base,
                "param": self.launch.param_base}.get(space, 0)

    def symbol_access(self, symbol: ir.SymbolInfo, space: str, offset: int):
        """(address, space for the memory core) of [symbol+offset]."""
        address = symbol.address + offset
        if symbol.space == "const":
            return self.launch.const_base + address, "global"
        if symbol.space == "param":
            return self.launch.param_base + address, "global"
        if symbol.space == "fparam":
            return address - FUNC_PARAM_BASE, "local"
        if symbol.space in ("shared", "local", "global"):
            return address, symbol.space
        return address, space

    def absolute_access(self, address: int, space: str):
        if space == "const":
            return self.launch.const_base + address, "global"
        if space == "param":
            return self.launch.param_base + address, "global"
        return address, space

    def register_access(self, space: str):
        """(space, translate) for [reg+offset] addresses in a state space."""
        if space == "const":
            base = np.uint64(self.launch.const_base)
            return "global", lambda addresses, sel: ("global", addresses + base, executors.threads_of(sel))
        if space == "param":
            base = np.uint64(self.launch.param_base)
            func_base = np.uint64(FUNC_PARAM_BASE)

            def translate(addresses, sel):
                if np.all(addresses >= func_base):
                    return "local", addresses - func_base, executors.threads_of(sel)
                return "global", addresses + base, executors.threads_of(sel)
            return "param", translate
        return space, None

    def in_const(self, addresses):
        start, size = self.launch.const_base, self.launch.const_size
        return (addresses >= np.uint64(start)) & (addresses < np.uint64(start + size))

    def in_param(self, addresses):
        start, size = self.launch.param_base, max(self.program.param_bytes, 1)
        return (addresses >= np.uint64(start)) & (addresses < np.uint64(start + size))

    def thread_coordinates(self, thread: int):
        """(block (x,y,z), thread (x,y,z)) of a batch thread index."""
        bx, by, _ = self.launch.block
        gx, gy, _ = self.launch.grid
        cta = self.cta_start + thread // self.tpc_pad
        local = thread % self.tpc_pad
        return ((cta % gx, (cta // gx) % gy, cta // (gx * gy)),
                (local % bx, (local // bx) % by, local // (bx * by)))

    def fault_error(self, instr: ir.Instr, fault: DeviceFault, thread: Optional[int]) -> DeviceError:
        return self.launch.fault_error(self, instr, fault, thread)

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
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as error:
            raise self.lowering_error(instr, f"cannot run `{instr.text}`: malformed operands ({error})") from None

    def _bind_checked(self, instr: ir.Instr):
        if instr.control == ir.STRAIGHT:
            return executors.build(self, instr)
        if instr.control in (ir.BRANCH, ir.EXIT, ir.RETURN, ir.TRAP):
            return self._guard_reader(instr)
        if instr.control == ir.BARRIER:
            return self._bind_barrier(instr)
        if instr.control == ir.CALL:
            return self._bind_call(instr)
        raise self.lowering_error(instr, f"'{instr.opcode}' is not supported")

    def _guard_reader(self, instr: ir.Instr):
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
                group = self._select()
                if group is None:
                    break
                self._run_group(*group)
        if np.any(self.status == AT_BARRIER):
            raise self.launch.deadlock_error(self)

    def _select(self):
        if self.policy is not None:
            return self.policy.select(self)
        rpc = self.rpc
        rotating = False
        if self._rotate_pending:
            self._rotate_pending = False
            runnable = rpc != INF
            if self.per_warp_barriers:
                runnable &= self._at_lowest_pc_of_warp()
            candidates = rpc[(rpc > self._rotation_cursor) & runnable]
            if len(candidates) == 0:
                candidates = rpc[runnable]
            if len(candidates):
                pc = int(candidates.min())
                self._rotation_cursor = pc
                rotating = True
            else:
                return None
            mask = (rpc == pc) & runnable
        else:
            pc = int(rpc.min())
            if pc == INF:
                return None
            mask = rpc == pc
        count = int(np.count_nonzero(mask))
        if count == self.n:
            sel = ALL
            others = INF
        else:
            sel = np.flatnonzero(mask)
            others = int(np.min(rpc, where=~mask, initial=INF))
            if rotating:
                others = self._sibling_pc(sel, mask) if self.per_warp_barriers else INF
        return pc, sel, others, rotating

    def _at_lowest_pc_of_warp(self) -> np.ndarray:
        """Per thread, whether it sits at the lowest pc of its warp: the only group a pre-Volta warp runs
        (its SIMT stack runs one path until the others rejoin it)."""
        lowest = self.rpc.reshape(-1, 32).min(axis=1)
        return self.rpc == np.repeat(lowest, 32)

    def _sibling_pc(self, sel: np.ndarray, mask: np.ndarray) -> int:
        """The lowest pc of the other lanes of sel's warps: where a rotated pre-Volta group stops so that
        those lanes rejoin it before it goes on (to a barrier that counts the warp once, for one)."""
        warps = np.unique(sel >> 5)
        lanes = (warps[:, None] * 32 + np.arange(32)).reshape(-1)
        return int(np.min(self.rpc[lanes], where=~mask[lanes], initial=INF))

    _rotate_pending = False
    _current_pc = 0

    def _warps_in(self, sel) -> int:
        if sel is ALL:
            return self.n // 32
        if len(sel) == 0:
            return 0
        warps = sel >> 5
        return int(np.count_nonzero(warps[1:] != warps[:-1])) + 1

    def _run_group(self, pc: int, sel, others: int, rotating: bool) -> None:
        instrs = self.program.instrs
        execs = self.executors
        observer = self.observer
        lanes = count_of(sel, self.n)
        warps = self._warps_in(sel)
        backward = 0
        max_steps = self.max_steps
        turn = 0
        turn_limit = self.turn_limit
        spin_limit = self.spin_limit
        fast = (observer is None or not observer.per_instruction) and turn_limit is None
        straight_run = self.straight_run
        while True:
            if fast and straight_run[pc] > 1:
                end = min(pc + straight_run[pc], others)
                if self.steps + (end - pc) <= max_steps:
                    for index in range(pc, end):
                        self.steps += 1
                        execs[index](sel)
                    count = end - pc
                    self.warp_instructions += warps * count
                    self.thread_instructions += lanes * count
                    if observer is not None:
                        observer.steps(self, pc, end, sel, warps, lanes)
                    pc = end
                    if pc >= others:
                        self.rpc[sel] = pc
                        return
            instr = instrs[pc]
            control = instr.control
            self.steps += 1
            self.warp_instructions += warps
            self.thread_instructions += lanes
            if observer is not None:
                observer.step(self, instr, sel, warps, lanes)
            if self.steps > max_steps:
                self.rpc[sel] = pc
                raise self.launch.step_limit_error(self, instr)
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
                        if self.backward_branches >= self._next_spin_check:
                            self._check_spin(new_pc, sel)
                    if rotating:
                        self.rpc[sel] = new_pc
                        return
                    if others != INF:
                        backward += 1
                        if backward >= SPIN_ROTATE:
                            self.rpc[sel] = new_pc
                            self._rotate_pending = True
                            return
                pc = new_pc
            elif control == ir.EXIT:
                self._current_pc = pc
                sel, lanes = self._exit(sel, execs[pc])
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
            elif control == ir.RETURN:
                self._current_pc = pc
                result = self._return(pc, sel, execs[pc])
                if result is None:
                    return
                pc, sel = result
                lanes = count_of(sel, self.n)
                warps = self._warps_in(sel)
            elif control == ir.TRAP:
                guard = execs[pc]
                if guard is None or np.any(guard(sel)):
                    raise self.launch.trap_error(self, instr, lanes_of(sel, self.n)[0])
                pc += 1
            if pc >= others:
                self.rpc[sel] = pc
                return
            if turn_limit is not None:
                turn += 1
                if turn >= turn_limit:
                    self.rpc[sel] = pc
                    return

    # ---- exit, barriers, calls ----
    def _exit(self, sel, guard):
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
        self._complete_barriers(np.flatnonzero(gone))
        if self.observer is not None:
            for bar, released in self._released_by_barrier:
                self.observer.barrier(self, self.program.instrs[self._current_pc], _NONE, bar, released)
        return staying, len(staying)

    def _bind_barrier(self, instr: ir.Instr):
        decoded = instr.decoded
        if decoded.has("barwarp"):
            return lambda pc, sel: True
        mode = decoded.get("barmode", "sync")
        operands = instr.operands
        dest = None
        if mode == "red":
            dest, operands = operands[0], operands[1:]
            pred_ref = operands[-1]
            operands = operands[:-1]
            read_pred = reader(self, pred_ref, "pred")
            write_dest = writer(self, dest, decoded.type if decoded.types else "u32")
            reduction = decoded.get("barredop")
        read_id = reader(self, operands[0], "u32") if operands else (lambda sel: np.uint32(0))
        read_count = reader(self, operands[1], "u32") if len(operands) > 1 else None
        guard = self._guard_reader(instr)

        def execute(pc, sel):
            if guard is not None:
                active = guard(sel)
                if not np.all(active):
                    self.rpc[subselect(sel, ~active)] = pc + 1
                    sel = subselect(sel, active)
                    if len(sel) == 0:
                        return None
            ids = np.asarray(read_id(sel)).reshape(-1)
            bar = int(ids[0]) % NUM_BARRIERS
            ctas = self.cta_of[sel] if sel is not ALL else self.cta_of
            if self.per_warp_barriers:
                arrivals = self._warp_arrivals(bar, sel)
            else:
                arrivals = np.bincount(ctas, minlength=self.n_ctas)
            touched = np.flatnonzero(arrivals)
            self.bar_arrived[bar] += arrivals
            illegal = None
            if read_count is not None:
                counts = np.asarray(read_count(sel)).reshape(-1)
                count = int(counts[0])
                if count % 32:
                    illegal = count
                self.bar_expected[bar][touched] = (count + 31) // 32 if self.per_warp_barriers else count
            if mode == "red":
                votes = np.asarray(read_pred(sel), dtype=bool)
                votes = np.broadcast_to(votes, (count_of(sel, self.n),))
                if reduction == "popc" or reduction == "or":
                    add = np.bincount(ctas, weights=votes, minlength=self.n_ctas).astype(np.int64)
                else:
                    add = np.bincount(ctas, weights=~votes, minlength=self.n_ctas).astype(np.int64)
                self.bar_votes[bar] += add
            if mode == "arrive":
                released = self._complete_barriers(touched)
                if self.observer is not None:
                    self.observer.barrier(self, instr, sel, bar, released)
                if illegal is not None:
                    raise self._illegal_barrier(instr, illegal, sel)
                return True
            self.status[sel] = AT_BARRIER
            self.bar_wait[sel] = bar
            self.resume_pc[sel] = pc + 1
            self.rpc[sel] = INF
            released = self._complete_barriers(touched, bar)
            if self.observer is not None:
                self.observer.barrier(self, instr, sel, bar, released)
            if illegal is not None:
                raise self._illegal_barrier(instr, illegal, sel)
            if mode == "red" and released is not None:
                self._write_reduction(released, bar, write_dest, reduction)
            if sel is ALL and released is not None and len(released) == self.n - int(np.count_nonzero(self.status == EXITED)):
                self.rpc[released] = INF
                return True
            return None
        return execute

    def _illegal_barrier(self, instr: ir.Instr, count: int, sel):
        return self.launch.illegal_instruction_error(
            self, instr, f"waits for {count} threads (a barrier's thread count must be a multiple of the warp "
                         f"size, 32)", lanes_of(sel, self.n)[0])

    def _write_reduction(self, released, bar, write_dest, reduction):
        votes = self._released_votes
        per_thread = votes[self.cta_of[released]]
        if reduction == "popc":
            write_dest(released, per_thread.astype(np.uint32))
        elif reduction == "and":
            write_dest(released, (per_thread == 0).astype(np.uint32))
        else:
            write_dest(released, (per_thread != 0).astype(np.uint32))

    def _warp_arrivals(self, bar: int, sel) -> np.ndarray:
        """Per CTA, the warps of sel that had not yet arrived at this barrier (pre-Volta counting)."""
        warps = np.unique(lanes_of(sel, self.n) >> 5)
        new = warps[~self.bar_warp_arrived[bar][warps]]
        self.bar_warp_arrived[bar][new] = True
        return np.bincount(new // self.warps_per_cta, minlength=self.n_ctas)

    def _complete_barriers(self, ctas: np.ndarray, only: Optional[int] = None):
        """Release every barrier of these CTAs that has all its threads (pre-Volta: warps); return the
        released threads. (barrier, threads) of each release is left in _released_by_barrier."""
        released_all = []
        self._released_by_barrier = []
        bars = range(NUM_BARRIERS) if only is None else (only,)
        for bar in bars:
            arrived = self.bar_arrived[bar][ctas]
            if not np.any(arrived):
                continue
            expected = self.bar_expected[bar][ctas]
            expected = np.where(expected > 0, expected, self.barrier_quota[ctas])
            done = ctas[arrived >= expected]
            if len(done) == 0:
                continue
            done_mask = np.zeros(self.n_ctas, dtype=bool)
            done_mask[done] = True
            waiting = np.flatnonzero((self.status == AT_BARRIER) & (self.bar_wait == bar) & done_mask[self.cta_of])
            self._released_votes = self.bar_votes[bar].copy()
            self.bar_arrived[bar][done] = 0
            self.bar_expected[bar][done] = 0
            self.bar_votes[bar][done] = 0
            if self.per_warp_barriers:
                self.bar_warp_arrived[bar].reshape(self.n_ctas, -1)[done] = False
            self.status[waiting] = RUNNING
            self.bar_wait[waiting] = -1
            self.rpc[waiting] = self.resume_pc[waiting]
            released_all.append(waiting)
            self._released_by_barrier.append((bar, waiting))
        if not released_all:
            return None
        return np.concatenate(released_all) if len(released_all) > 1 else released_all[0]

    def _bind_call(self, instr: ir.Instr):
        site: ir.CallSite = instr.operands[0]
        guard = self._guard_reader(instr)
        if site.callee in ("vprintf", "__assertfail", "malloc", "free"):
            builtin = {"vprintf": self._vprintf, "__assertfail": self._assertfail,
                       "malloc": self._malloc, "free": self._free}[site.callee]

            def call_builtin(pc, sel):
                active = sel if guard is None else subselect(sel, guard(sel))
                if count_of(active, self.n):
                    builtin(instr, site, active)
                return pc + 1
            return call_builtin
        callee = self.program.functions[site.callee]
        max_depth = len(self.program.functions) + 1
        site_id = id(site)
        self._sites = getattr(self, "_sites", {})
        self._sites[site_id] = site

        def call_function(pc, sel):
            if guard is not None and not np.all(guard(sel)):
                raise self.lowering_error(instr, "predicated calls are not supported")
            if self.depth is None:
                self.depth = np.zeros(self.n, dtype=np.int32)
                self.stack_pc = np.zeros((max_depth, self.n), dtype=np.int32)
                self.stack_site = np.zeros((max_depth, self.n), dtype=np.int64)
            depth = self.depth[sel]
            if np.any(depth >= max_depth):
                raise self.lowering_error(instr, "call stack overflow")
            lanes = lanes_of(sel, self.n)
            self.stack_pc[depth, lanes] = pc + 1
            self.stack_site[depth, lanes] = site_id
            self.depth[sel] = depth + 1
            for source, target in zip(site.arguments, callee.params):
                self._copy_param(source, target, sel)
            return callee.entry_pc
        return call_function

    def _copy_param(self, source: ir.SymbolInfo, target: ir.SymbolInfo, sel) -> None:
        size = min(source.size, target.size)
        threads = executors.threads_of(sel)
        n = count_of(sel, self.n)
        offset = 0
        while offset < size:
            width = 8 if size - offset >= 8 and (source.address + offset) % 8 == 0 and (target.address + offset) % 8 == 0 \
                else 4 if size - offset >= 4 and (source.address + offset) % 4 == 0 and (target.address + offset) % 4 == 0 \
                else 1
            src = np.full(n, source.address - FUNC_PARAM_BASE + offset, dtype=np.uint64)
            dst = np.full(n, target.address - FUNC_PARAM_BASE + offset, dtype=np.uint64)
            data = self.memory.load("local", src, threads, width)
            self.memory.store("local", dst, threads, width, data)
            offset += width

    def _return(self, pc: int, sel, guard):
        if guard is not None:
            leaving = guard(sel)
            if not np.all(leaving):
                raise self.lowering_error(self.program.instrs[pc], "predicated ret is not supported")
        if self.depth is None or np.any(self.depth[sel] == 0):
            self._exit(sel, None)
            return None
        lanes = lanes_of(sel, self.n)
        depth = self.depth[sel] - 1
        self.depth[sel] = depth
        targets = self.stack_pc[depth, lanes]
        sites = self.stack_site[depth, lanes]
        callee = self.program.functions[self.program.instrs[pc].function]
        for site_id in np.unique(sites):
            site = self._sites[int(site_id)]
            group = lanes[sites == site_id]
            for source, target in zip(callee.returns, site.returns):
                self._copy_param(source, target, group)
        if np.all(targets == targets[0]):
            return int(targets[0]), sel
        self.rpc[lanes] = targets
        return None

    # ---- builtins ----
    def _vprintf(self, instr: ir.Instr, site: ir.CallSite, sel) -> None:
        lanes = lanes_of(sel, self.n)
        n = len(lanes)
        args = []
        for symbol in site.arguments[:2]:
            raw = self.memory.load("local", np.full(n, symbol.address - FUNC_PARAM_BASE, dtype=np.uint64),
                                   lanes, 8)
            args.append(raw.view(np.uint64).reshape(n))
        for i, thread in enumerate(lanes):
            text = format_printf(self.memory, int(args[0][i]), int(args[1][i]), int(thread))
            self.launch.write_stdout(text)
        for symbol in site.returns[:1]:
            self.memory.store("local", np.full(n, symbol.address - FUNC_PARAM_BASE, dtype=np.uint64), lanes, 4,
                              np.zeros(n, dtype=np.int32))

    def _assertfail(self, instr: ir.Instr, site: ir.CallSite, sel) -> None:
        raise self.launch.assert_error(self, instr, site, int(lanes_of(sel, self.n)[0]))

    def _malloc(self, instr, site, sel) -> None:
        raise self.lowering_error(instr, "device-side malloc is not supported")

    def _free(self, instr, site, sel) -> None:
        raise self.lowering_error(instr, "device-side free is not supported")

    # ---- livelock detection ----
    def _check_spin(self, pc: int, sel) -> None:
        """Every spin_limit backward branches: when no thread's pc, register or memory byte changed
        since the last check, or when for QUIET_SPIN_CHECKS checks every thread stayed at its pc and no
        memory byte changed, the batch can never finish: report a livelock."""
        self._next_spin_check = self.backward_branches + self.spin_limit
        pcs = self.rpc.copy()
        pcs[sel] = pc
        if self._spin_pcs is not None and np.array_equal(pcs, self._spin_pcs):
            digest = (self._memory_digest(), self._register_digest())
            if self._spin_digest is not None and digest[0] == self._spin_digest[0]:
                self._quiet_checks += 1
                quiet = self._quiet_checks >= QUIET_SPIN_CHECKS and self.program.local_bytes == 0
                if digest[1] == self._spin_digest[1] or quiet:
                    self.rpc[sel] = pc
                    raise self.launch.livelock_error(self, registers_change=digest[1] != self._spin_digest[1])
            else:
                self._quiet_checks = 0
            self._spin_digest = digest
        else:
            self._spin_digest = None
            self._quiet_checks = 0
        self._spin_pcs = pcs

    def _register_digest(self) -> bytes:
        digest = hashlib.blake2b(digest_size=32)
        for array in (*self.regs, self.cc, self.status, self.bar_wait):
            digest.update(np.ascontiguousarray(array).view(np.uint8).data)
        return digest.digest()

    def _memory_digest(self) -> bytes:
        """A hash of the global allocations and shared windows of the batch."""
        digest = hashlib.blake2b(digest_size=32)
        for allocation in self.memory.allocations():
            if not allocation.freed and allocation.size:
                digest.update(self.memory.read(allocation.address, allocation.size).data)
        if self.launch.shared_bytes:
            for cta in range(self.n_ctas):
                digest.update(np.ascontiguousarray(self.memory.shared_bytes(cta)).data)
        return digest.digest()

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

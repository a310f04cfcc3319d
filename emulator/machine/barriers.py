"""Barriers: CTA-wide bar.sync/arrive/red as a batch counts them, released when every thread (or warp) arrived."""
from __future__ import annotations

from typing import Optional

import numpy as np

from isa.warp import lane_mask

from emulator import ir
from emulator.machine.lanes import ALL, count_of, lanes_of
from emulator.machine.operands import reader, writer
from emulator.machine.states import AT_BARRIER, EXITED, INF, NUM_BARRIERS, RUNNING, WARP_SYNC


class Barriers:
    """bar/barrier.{sync,arrive,red} for a batch: arrivals counted per CTA (per thread from sm_70, per warp
    before), releases, reductions; the counters live on the batch, which the debugger and checkers read."""

    def __init__(self, batch):
        self.batch = batch
        #: (barrier, released threads) of each release the last complete() made
        self.released_by_barrier = []
        #: whether some warp has lanes waiting at bar.warp.sync (an exit may then complete it)
        self.warp_syncs_pending = False

    def bind(self, instr: ir.Instr):
        batch = self.batch
        decoded = instr.decoded
        if decoded.has("barwarp"):
            return self._bind_warp_sync(instr)
        mode = decoded.get("barmode", "sync")
        operands = instr.operands
        dest = None
        if mode == "red":
            dest, operands = operands[0], operands[1:]
            pred_ref = operands[-1]
            operands = operands[:-1]
            read_pred = reader(batch, pred_ref, "pred")
            write_dest = writer(batch, dest, decoded.type if decoded.types else "u32")
            reduction = decoded.get("barredop")
        read_id = reader(batch, operands[0], "u32") if operands else (lambda sel: np.uint32(0))
        read_count = reader(batch, operands[1], "u32") if len(operands) > 1 else None
        guard = batch.guard_reader(instr)

        whole_ctas = mode == "sync" and read_count is None and not batch.per_warp_barriers and batch.tpc == batch.tpc_pad

        def execute(pc, sel):
            sel = batch.guarded(guard, pc, sel)
            if sel is None:
                return None
            ids = np.asarray(read_id(sel)).reshape(-1)
            bar = int(ids[0]) % NUM_BARRIERS
            if whole_ctas and sel is ALL and batch.observer is None and not batch.bar_arrived[bar].any() and \
                    np.all(batch.live == batch.tpc):
                # every thread of every CTA arrives at once: the barrier is complete as it is reached
                return True
            ctas = batch.cta_of[sel] if sel is not ALL else batch.cta_of
            if batch.per_warp_barriers:
                arrivals = self._warp_arrivals(bar, sel)
            else:
                arrivals = np.bincount(ctas, minlength=batch.n_ctas)
            touched = np.flatnonzero(arrivals)
            batch.bar_arrived[bar] += arrivals
            illegal = None
            if read_count is not None:
                counts = np.asarray(read_count(sel)).reshape(-1)
                count = int(counts[0])
                if count % 32:
                    illegal = count
                batch.bar_expected[bar][touched] = (count + 31) // 32 if batch.per_warp_barriers else count
            if mode == "red":
                votes = np.asarray(read_pred(sel), dtype=bool)
                votes = np.broadcast_to(votes, (count_of(sel, batch.n),))
                if reduction == "popc" or reduction == "or":
                    add = np.bincount(ctas, weights=votes, minlength=batch.n_ctas).astype(np.int64)
                else:
                    add = np.bincount(ctas, weights=~votes, minlength=batch.n_ctas).astype(np.int64)
                batch.bar_votes[bar] += add
            if mode == "arrive":
                released = self.complete(touched)
                if batch.observer is not None:
                    batch.observer.barrier(batch, instr, sel, bar, released)
                if illegal is not None:
                    raise self._illegal(instr, illegal, sel)
                return True
            batch.status[sel] = AT_BARRIER
            batch.bar_wait[sel] = bar
            batch.resume_pc[sel] = pc + 1
            batch.rpc[sel] = INF
            released = self.complete(touched, bar)
            if batch.observer is not None:
                batch.observer.barrier(batch, instr, sel, bar, released)
            if illegal is not None:
                raise self._illegal(instr, illegal, sel)
            if mode == "red" and released is not None:
                self._write_reduction(released, bar, write_dest, reduction)
            if sel is ALL and released is not None and len(released) == batch.n - int(np.count_nonzero(batch.status == EXITED)):
                batch.rpc[released] = INF
                return True
            return None
        return execute

    def _bind_warp_sync(self, instr: ir.Instr):
        """bar.warp.sync membermask (__syncwarp): from sm_70 each lane waits until every non-exited lane of its
        mask has executed one (lanes of a warp may arrive at different times, as under independent thread
        scheduling); before sm_70 the warp runs in lockstep and it is a no-op."""
        batch = self.batch
        if batch.per_warp_barriers:
            return lambda pc, sel: True
        read_mask = reader(batch, instr.operands[0], "u32") if instr.operands else (lambda sel: np.uint32(0xFFFFFFFF))
        guard = batch.guard_reader(instr)

        def execute(pc, sel):
            sel = batch.guarded(guard, pc, sel)
            if sel is None:
                return None
            lanes = lanes_of(sel, batch.n)
            masks = np.broadcast_to(np.asarray(read_mask(sel)).astype(np.uint32), lanes.shape)
            own = np.uint32(1) << (lanes & 31).astype(np.uint32)
            warps = lanes >> 5
            np.bitwise_or.at(batch.warp_sync_arrived, warps, own)
            np.bitwise_or.at(batch.warp_sync_mask, warps, masks | own)
            self.warp_syncs_pending = True
            batch.status[sel] = AT_BARRIER
            batch.bar_wait[sel] = WARP_SYNC
            batch.resume_pc[sel] = pc + 1
            batch.rpc[sel] = INF
            released = self.complete_warp_syncs(np.unique(warps))
            if released is not None and len(released) == count_of(sel, batch.n):
                batch.rpc[released] = INF
                return True
            return None
        return execute

    def complete_warp_syncs(self, warps: np.ndarray):
        """Release the lanes waiting at bar.warp.sync in those warps whose every named, non-exited lane has
        arrived; return the released threads (None when none)."""
        batch = self.batch
        if len(warps) == 0:
            return None
        lanes = (warps[:, None] * 32 + np.arange(32)[None, :])
        exited = lane_mask(batch.status[lanes] == EXITED)
        wanted = batch.warp_sync_mask[warps]
        done = warps[(wanted != 0) & ((wanted & ~(batch.warp_sync_arrived[warps] | exited)) == 0)]
        if len(done) == 0:
            return None
        done_lanes = (done[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        waiting = done_lanes[(batch.status[done_lanes] == AT_BARRIER) & (batch.bar_wait[done_lanes] == WARP_SYNC)]
        batch.warp_sync_arrived[done] = 0
        batch.warp_sync_mask[done] = 0
        self.warp_syncs_pending = bool(batch.warp_sync_mask.any())
        batch.status[waiting] = RUNNING
        batch.bar_wait[waiting] = -1
        batch.rpc[waiting] = batch.resume_pc[waiting]
        return waiting

    def _illegal(self, instr: ir.Instr, count: int, sel):
        batch = self.batch
        return batch.illegal_instruction(
            instr, f"waits for {count} threads (a barrier's thread count must be a multiple of the warp "
                         f"size, 32)", lanes_of(sel, batch.n)[0])

    def _write_reduction(self, released, bar, write_dest, reduction):
        batch = self.batch
        votes = self.released_votes
        per_thread = votes[batch.cta_of[released]]
        if reduction == "popc":
            write_dest(released, per_thread.astype(np.uint32))
        elif reduction == "and":
            write_dest(released, (per_thread == 0).astype(np.uint32))
        else:
            write_dest(released, (per_thread != 0).astype(np.uint32))

    def _warp_arrivals(self, bar: int, sel) -> np.ndarray:
        """Per CTA, the warps of sel that had not yet arrived at this barrier (pre-Volta counting)."""
        batch = self.batch
        warps = np.unique(lanes_of(sel, batch.n) >> 5)
        new = warps[~batch.bar_warp_arrived[bar][warps]]
        batch.bar_warp_arrived[bar][new] = True
        return np.bincount(new // batch.warps_per_cta, minlength=batch.n_ctas)

    def complete(self, ctas: np.ndarray, only: Optional[int] = None):
        """Release every barrier of these CTAs that has all its threads (pre-Volta: warps); return the
        released threads. (barrier, threads) of each release is left in _released_by_barrier."""
        batch = self.batch
        released_all = []
        self.released_by_barrier = []
        if not batch.bar_arrived.any():
            return None
        bars = range(NUM_BARRIERS) if only is None else (only,)
        for bar in bars:
            arrived = batch.bar_arrived[bar][ctas]
            if not np.any(arrived):
                continue
            expected = batch.bar_expected[bar][ctas]
            expected = np.where(expected > 0, expected, batch.barrier_quota[ctas])
            done = ctas[arrived >= expected]
            if len(done) == 0:
                continue
            done_mask = np.zeros(batch.n_ctas, dtype=bool)
            done_mask[done] = True
            waiting = np.flatnonzero((batch.status == AT_BARRIER) & (batch.bar_wait == bar) & done_mask[batch.cta_of])
            self.released_votes = batch.bar_votes[bar].copy()
            batch.bar_arrived[bar][done] = 0
            batch.bar_expected[bar][done] = 0
            batch.bar_votes[bar][done] = 0
            if batch.per_warp_barriers:
                batch.bar_warp_arrived[bar].reshape(batch.n_ctas, -1)[done] = False
            batch.status[waiting] = RUNNING
            batch.bar_wait[waiting] = -1
            batch.rpc[waiting] = batch.resume_pc[waiting]
            released_all.append(waiting)
            self.released_by_barrier.append((bar, waiting))
        if not released_all:
            return None
        return np.concatenate(released_all) if len(released_all) > 1 else released_all[0]

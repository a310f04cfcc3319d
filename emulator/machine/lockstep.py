"""The machine's own schedule (no policy, `lockstep`): every thread at the batch's lowest pc runs next."""
from __future__ import annotations

import numpy as np

from emulator.machine.lanes import ALL
from emulator.machine.states import INF


def lockstep_select(batch):
    """(pc, lane selection, pc at which the group must stop, whether it is a rotation turn) of the threads that run
    next, or None when none can: every thread at the batch's lowest pc; after a spin, the next pc above the last
    rotation's."""
    rpc = batch.rpc
    rotating = False
    if batch.rotate_pending:
        batch.rotate_pending = False
        runnable = rpc != INF
        if batch.per_warp_barriers:
            runnable &= at_lowest_pc_of_warp(batch)
        candidates = rpc[(rpc > batch.rotation_cursor) & runnable]
        if len(candidates) == 0:
            candidates = rpc[runnable]
        if len(candidates):
            pc = int(candidates.min())
            batch.rotation_cursor = pc
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
    if count == batch.n:
        sel = ALL
        others = INF
    else:
        sel = np.flatnonzero(mask)
        others = int(np.min(rpc, where=~mask, initial=INF))
        if rotating:
            others = sibling_pc(batch, sel, mask) if batch.per_warp_barriers else INF
    return pc, sel, others, rotating


def at_lowest_pc_of_warp(batch) -> np.ndarray:
    """Per thread, whether it sits at the lowest pc of its warp: the only group a pre-Volta warp runs
    (its SIMT stack runs one path until the others rejoin it)."""
    lowest = batch.rpc.reshape(-1, 32).min(axis=1)
    return batch.rpc == np.repeat(lowest, 32)


def sibling_pc(batch, sel: np.ndarray, mask: np.ndarray) -> int:
    """The lowest pc of the other lanes of sel's warps: where a rotated pre-Volta group stops so that
    those lanes rejoin it before it goes on (to a barrier that counts the warp once, for one)."""
    warps = np.unique(sel >> 5)
    lanes = (warps[:, None] * 32 + np.arange(32)).reshape(-1)
    return int(np.min(batch.rpc[lanes], where=~mask[lanes], initial=INF))

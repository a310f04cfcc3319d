"""Livelocks: a batch whose whole state - pcs, registers, thread states, scheduler and memory (global, shared and local) - comes back
exactly as it was can never finish. That is a proof for a deterministic schedule; a loop that still changes
a register is never called a livelock (it may end: it runs until --max-steps instead)."""
from __future__ import annotations

import hashlib

import numpy as np

from emulator.machine.stops import Livelock


class SpinWatch:
    """Livelock detection: every spin_limit backward branches, a look at whether the batch can still change."""

    def __init__(self, batch):
        self.batch = batch
        self.next_check = batch.spin_limit
        self.pcs = None
        self.digest = None

    def check(self, pc: int, sel) -> None:
        """Every spin_limit backward branches: when every thread's pc and every register, thread state,
        scheduler choice and memory byte are what they were at the last check, report a livelock."""
        batch = self.batch
        self.next_check = batch.backward_branches + batch.spin_limit
        pcs = batch.rpc.copy()
        pcs[sel] = pc
        if self.pcs is not None and np.array_equal(pcs, self.pcs):
            digest = (self._memory_digest(), self._register_digest())
            if digest == self.digest:
                batch.rpc[sel] = pc
                raise Livelock(batch.backward_branches, batch.spin_limit, batch.warp_snapshot())
            self.digest = digest
        else:
            self.digest = None
        self.pcs = pcs

    def _register_digest(self) -> bytes:
        """A hash of every thread's registers and state and of the scheduler's own choices."""
        batch = self.batch
        digest = hashlib.blake2b(digest_size=32)
        for array in (*batch.regs, batch.cc, batch.status, batch.bar_wait, batch.resume_pc, batch.bar_arrived):
            digest.update(np.ascontiguousarray(array).view(np.uint8).data)
        if batch.depth is not None:
            for array in (batch.depth, batch.stack_pc, batch.stack_site):
                digest.update(np.ascontiguousarray(array).view(np.uint8).data)
        digest.update(repr((batch.rotation_cursor, batch.rotate_pending)).encode())
        return digest.digest()

    def _memory_digest(self) -> bytes:
        """A hash of the global allocations and the shared and local windows of the batch (the local windows - local
        variables, call frames - only where the launch gave its threads any)."""
        batch = self.batch
        digest = hashlib.blake2b(digest_size=32)
        for allocation in batch.memory.allocations():
            if not allocation.freed and allocation.size:
                digest.update(batch.memory.read(allocation.address, allocation.size).data)
        if batch.config.shared_bytes:
            for cta in range(batch.n_ctas):
                digest.update(np.ascontiguousarray(batch.memory.shared_bytes(cta)).data)
        local = batch.memory.local_windows()
        if local.size:
            digest.update(local.data)
        return digest.digest()

"""Livelocks: a batch whose pcs, registers and memory stop changing, or whose loops only count, can never finish."""
from __future__ import annotations

import hashlib

import numpy as np

from emulator.machine.stops import Livelock

#: spin checks in a row with every thread at the same pc and no memory byte changed that make a livelock
#: even while registers change (a counter in a loop that never ends); kernels with local memory excepted
QUIET_SPIN_CHECKS = 100


class SpinWatch:
    """Livelock detection: every spin_limit backward branches, a look at whether the batch can still change."""

    def __init__(self, batch):
        self.batch = batch
        self.next_check = batch.spin_limit
        self.pcs = None
        self.digest = None
        self.quiet_checks = 0

    def check(self, pc: int, sel) -> None:
        """Every spin_limit backward branches: when no thread's pc, register or memory byte changed
        since the last check, or when for QUIET_SPIN_CHECKS checks every thread stayed at its pc and no
        memory byte changed, the batch can never finish: report a livelock."""
        batch = self.batch
        self.next_check = batch.backward_branches + batch.spin_limit
        pcs = batch.rpc.copy()
        pcs[sel] = pc
        if self.pcs is not None and np.array_equal(pcs, self.pcs):
            digest = (self._memory_digest(), self._register_digest())
            if self.digest is not None and digest[0] == self.digest[0]:
                self.quiet_checks += 1
                quiet = self.quiet_checks >= QUIET_SPIN_CHECKS and batch.program.local_bytes == 0
                if digest[1] == self.digest[1] or quiet:
                    batch.rpc[sel] = pc
                    raise Livelock(digest[1] != self.digest[1], batch.backward_branches, batch.spin_limit,
                                   batch.warp_snapshot())
            else:
                self.quiet_checks = 0
            self.digest = digest
        else:
            self.digest = None
            self.quiet_checks = 0
        self.pcs = pcs

    def _register_digest(self) -> bytes:
        batch = self.batch
        digest = hashlib.blake2b(digest_size=32)
        for array in (*batch.regs, batch.cc, batch.status, batch.bar_wait):
            digest.update(np.ascontiguousarray(array).view(np.uint8).data)
        return digest.digest()

    def _memory_digest(self) -> bytes:
        """A hash of the global allocations and shared windows of the batch."""
        batch = self.batch
        digest = hashlib.blake2b(digest_size=32)
        for allocation in batch.memory.allocations():
            if not allocation.freed and allocation.size:
                digest.update(batch.memory.read(allocation.address, allocation.size).data)
        if batch.config.shared_bytes:
            for cta in range(batch.n_ctas):
                digest.update(np.ascontiguousarray(batch.memory.shared_bytes(cta)).data)
        return digest.digest()

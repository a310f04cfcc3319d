"""What a launch hands the machine: its shape and where its parameter and constant data sit, computed once."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

import numpy as np

Dim3 = Tuple[int, int, int]


def padded_threads(block: Dim3) -> int:
    """Threads per CTA rounded up to whole warps: how the machine lays CTAs out."""
    return (block[0] * block[1] * block[2] + 31) // 32 * 32


@dataclass(frozen=True)
class LaunchConfig:
    grid: Dim3
    block: Dim3
    dynamic_shared: int
    #: static + dynamic shared memory of one CTA
    shared_bytes: int
    #: the architecture's number (70 for sm_70): barriers count threads from sm_70 on, warps before
    arch: int
    #: loop iterations between looks for a batch that no longer changes (0: never look)
    spin_limit: int
    const_base: int
    const_size: int
    param_base: int
    param_bytes: int
    #: this launch's number on its device (%gridid)
    grid_id: int
    #: where device printf writes
    write_stdout: Callable[[str], None] = field(compare=False, default=print)
    #: constant banks by number, for SASS listings (bank 0: the launch's own words)
    constant_banks: Dict[int, np.ndarray] = field(compare=False, default_factory=dict)
    #: %envreg0..31 as a driver sets them (a cooperative launch's grid-sync workspace is %envreg1:%envreg2)
    environment: Dict[int, int] = field(compare=False, default_factory=dict)
    #: the per-thread stack recursive functions' frames take from (cudaLimitStackSize; CUDA's default 1 KiB)
    stack_bytes: int = 1024

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def padded_threads_per_cta(self) -> int:
        return padded_threads(self.block)

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

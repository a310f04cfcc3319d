"""Lane selections: which threads of a batch an instruction runs for - ALL (every thread, no masking at all)
or a sorted int64 array of thread indices - and the few operations on them."""
from __future__ import annotations

import numpy as np

ALL = slice(None)


def lanes_of(sel, n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) if sel is ALL else sel


def count_of(sel, n: int) -> int:
    return n if sel is ALL else len(sel)


def threads_of(sel):
    return None if sel is ALL else sel


def subselect(sel, mask: np.ndarray):
    """The lanes of sel where mask (aligned with sel) holds."""
    if sel is ALL:
        return np.flatnonzero(mask)
    return sel[mask]

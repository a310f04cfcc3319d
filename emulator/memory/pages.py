"""Giving host pages back: the whole pages of a numpy array's bytes read as zeros afterwards and no longer count
towards the process's resident memory (madvise MADV_DONTNEED on Linux; elsewhere nothing happens)."""
from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np

MADV_DONTNEED = 4
PAGE = mmap.PAGESIZE
#: smaller ranges are not worth a system call
SMALLEST_RELEASE = 1 << 20

_madvise = None
if sys.platform.startswith("linux"):
    try:
        _madvise = ctypes.CDLL(None, use_errno=True).madvise
        _madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        _madvise.restype = ctypes.c_int
    except (OSError, AttributeError):
        _madvise = None


def release_pages(data: np.ndarray) -> int:
    """Give back the whole pages inside data's bytes (a C-contiguous array the caller owns and will not read
    again before writing it); returns the bytes released (0 where the system cannot)."""
    if _madvise is None or data.nbytes < SMALLEST_RELEASE or not data.flags.c_contiguous:
        return 0
    start = data.__array_interface__["data"][0]
    first = (start + PAGE - 1) // PAGE * PAGE
    last = (start + data.nbytes) // PAGE * PAGE
    if last <= first:
        return 0
    if _madvise(first, last - first, MADV_DONTNEED) != 0:
        return 0
    return last - first

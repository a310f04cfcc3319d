"""Tell glibc's malloc to keep and reuse freed memory, so that batch-sized numpy arrays do not fault in fresh pages.

glibc serves a request at or above its mmap threshold with a new mapping and returns it to the kernel on
free; its dynamic threshold only rises to the size of the last freed mapping, so a run of same-sized
arrays (a batch's registers, one temporary per instruction) maps and faults fresh pages every time. A
fixed 32 MB threshold (glibc's largest) and no trimming keep those arrays on the heap, where the next
batch reuses them. Without glibc this does nothing.
"""
import ctypes
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
LARGEST_MMAP_THRESHOLD = 32 << 20
NEVER_TRIM = (1 << 31) - 1


def keep_freed_memory() -> bool:
    """Set the thresholds once for this process; True when glibc took them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))

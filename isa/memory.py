"""Memory instructions as pure functions: address arithmetic, generic-address windows, and how the bytes of
ld/st move into and out of (vector) registers. Where the bytes live is the memory core's business."""
from __future__ import annotations

import numpy as np

ADDRESS_MASK = (1 << 64) - 1


def effective_address(base, offset: int) -> np.ndarray:
    """[base+offset]: the 64-bit sum, wrapping as the hardware's address adder does."""
    return np.asarray(base, dtype=np.uint64) + np.uint64(offset & ADDRESS_MASK)


def misaligned(addresses: np.ndarray, width: int) -> np.ndarray:
    """Lanes whose access of `width` bytes is not aligned to its size (ld/st/atom fault on those)."""
    return (np.asarray(addresses, dtype=np.uint64) & np.uint64(width - 1)) != 0


def to_generic(addresses, window_base: int) -> np.ndarray:
    """cvta.{shared,local,...}: a state-space address seen through its window of the generic space."""
    return np.asarray(addresses, dtype=np.uint64) + np.uint64(window_base)


def from_generic(addresses, window_base: int) -> np.ndarray:
    """cvta.to.{shared,local,...}: a generic address as an offset into its state space."""
    return np.asarray(addresses, dtype=np.uint64) - np.uint64(window_base)


def in_window(addresses, window_base: int, window_size: int) -> np.ndarray:
    """isspacep.{shared,local}: whether generic addresses fall inside a state space's window."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    return (addresses >= np.uint64(window_base)) & (addresses < np.uint64(window_base + window_size))


def generic_region(addresses: np.ndarray, shared_window: int, local_window: int, window_size: int):
    """Where generic addresses (uint64) point: (in the shared window, in the local window, each address within its
    state space: the offset into its window, else the address itself, a global one)."""
    from_shared = addresses - np.uint64(shared_window)
    from_local = addresses - np.uint64(local_window)
    in_shared = from_shared < np.uint64(window_size)
    in_local = ~in_shared & (from_local < np.uint64(window_size))
    return in_shared, in_local, np.where(in_shared, from_shared, np.where(in_local, from_local, addresses))


def unpack_elements(raw: np.ndarray, dtype: np.dtype, count: int) -> np.ndarray:
    """ld{.v2,.v4}: each lane's `count` elements from its loaded bytes (lanes × width uint8) → (lanes, count)."""
    return np.ascontiguousarray(raw).view(dtype).reshape(-1, count)


def pack_elements(elements, dtype: np.dtype, lanes: int) -> np.ndarray:
    """st{.v2,.v4}: the lanes' `count` elements (one array or scalar each) laid out as each lane's bytes."""
    data = np.empty((lanes, len(elements)), dtype=dtype)
    for index, element in enumerate(elements):
        data[:, index] = element
    return data


def copied_bytes(source_size, width: int) -> np.ndarray:
    """cp.async with a src-size operand: which of each lane's `width` bytes come from the source (the first
    min(src-size, width)); the rest of the destination is written with zeros."""
    valid = np.minimum(np.asarray(source_size, dtype=np.int64), width)
    return np.arange(width)[None, :] < valid.reshape(-1, 1)


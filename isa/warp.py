"""Warp-wide instructions as pure functions over a warp's 32 lanes (arrays shaped (warps, 32) or per lane).

`active` marks the lanes taking part (the executing, unguarded lanes); inactive lanes' inputs are ignored.
The .sync forms also take `masks`, each lane's membermask (warps, 32): a lane's result then covers only the
active lanes its own mask names, so lanes with different masks (the halves of a warp split into 16-lane
tiles, the groups of a labeled partition) get their own groups' results, as on the H100.
The machine gathers each warp's lanes into these shapes and spreads the results back."""
from __future__ import annotations

from typing import Tuple

import numpy as np

WARP_SIZE = 32
LANE_BITS = np.uint32(1) << np.arange(WARP_SIZE, dtype=np.uint32)


def lane_mask(flags: np.ndarray) -> np.ndarray:
    """Per warp, the 32-bit mask of the lanes whose flag is set: flags (warps, 32) → (warps,) uint32."""
    return (np.asarray(flags).reshape(-1, WARP_SIZE).astype(np.uint32) * LANE_BITS).sum(axis=1, dtype=np.uint32)


def shfl_source(mode: str, lane: np.ndarray, b: np.ndarray, c: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """shfl.sync.{up,down,bfly,idx}: the lane each lane reads and whether that lane is in range (the p
    result); out-of-range lanes read their own value. b is the lane or offset operand, c packs the
    segment mask (bits 8-12) and the clamp value (bits 0-4), all per lane. A source lane that is in range
    but outside the reader's membermask (or not executing) gives 0 on the H100 (shfl_value)."""
    lane = np.asarray(lane).astype(np.int64)
    b = np.asarray(b).astype(np.int64) & 31
    c = np.asarray(c).astype(np.int64)
    segment = (c >> 8) & 31
    clamp = c & 31
    max_lane = (lane & segment) | (clamp & ~segment)
    min_lane = lane & segment
    if mode == "up":
        source = lane - b
        valid = source >= max_lane
    elif mode == "down":
        source = lane + b
        valid = source <= max_lane
    elif mode == "bfly":
        source = lane ^ b
        valid = source <= max_lane
    elif mode == "idx":
        source = min_lane | (b & ~segment)
        valid = source <= max_lane
    else:
        raise ValueError(f"shfl mode {mode!r}")
    return np.where(valid, source, lane), valid


def members(active: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(warps, 32, 32): whether lane k takes part in lane l's result: k is active and in l's membermask."""
    named = (np.asarray(masks).astype(np.uint32)[:, :, None] >> np.arange(WARP_SIZE, dtype=np.uint32)) & 1
    return named.astype(bool) & np.asarray(active, dtype=bool)[:, None, :]


def _bits(flags: np.ndarray) -> np.ndarray:
    """(warps, 32, 32) flags → (warps, 32) uint32 masks over the last axis."""
    return (flags.astype(np.uint32) * LANE_BITS).sum(axis=-1, dtype=np.uint32)


def shfl_participates(source_active: np.ndarray, source_lane: np.ndarray, member_mask=None) -> np.ndarray:
    """shfl.sync: whether each lane's source lane takes part: it is active and, given the member mask, named in it."""
    if member_mask is None:
        return source_active
    named = (np.asarray(member_mask).astype(np.uint32) >> source_lane.astype(np.uint32)) & 1
    return source_active & (named != 0)


def shfl_value(values: np.ndarray, own: np.ndarray, valid: np.ndarray, participates: np.ndarray) -> np.ndarray:
    """What shfl.sync writes: the source lane's value when it is in range and takes part (executes the shfl
    and is in the reader's membermask), 0 when it is in range but does not take part (read off the H100:
    tests/ptx_features/warp_masks.cu), and the reader's own value when out of range."""
    values = np.asarray(values)
    return np.where(valid, np.where(participates, values, values.dtype.type(0)), own)


def vote(mode: str, predicate: np.ndarray, active: np.ndarray, masks=None) -> np.ndarray:
    """vote.sync.{all,any,uni,ballot} from (warps, 32) predicate and active flags: ballot gives the mask of
    active lanes whose predicate holds, the others a bool; per warp, or per lane with `masks`."""
    if masks is not None:
        group = members(active, masks)
        true_bits = _bits(group & np.asarray(predicate, dtype=bool)[:, None, :])
        if mode == "ballot":
            return true_bits
        group_bits = _bits(group)
        return {"all": true_bits == group_bits, "any": true_bits != 0,
                "uni": (true_bits == 0) | (true_bits == group_bits)}[mode]
    true_bits = lane_mask(np.asarray(predicate, dtype=bool) & active)
    if mode == "ballot":
        return true_bits
    active_bits = lane_mask(active)
    if mode == "all":
        return true_bits == active_bits
    if mode == "any":
        return true_bits != 0
    if mode == "uni":
        return (true_bits == 0) | (true_bits == active_bits)
    raise ValueError(f"vote mode {mode!r}")


def match(mode: str, values: np.ndarray, active: np.ndarray, masks=None) -> Tuple[np.ndarray, np.ndarray]:
    """match.sync.{any,all} from (warps, 32) values and active flags: per lane, the mask of active lanes holding
    its value (any) or, when every active lane holds the same value, the active mask and else 0 (all); and
    per lane whether all active lanes agree. With `masks`, only the lanes of each lane's membermask count."""
    group = members(active, masks) if masks is not None else active[:, None, :] & np.ones_like(active)[:, :, None]
    same = (values[:, :, None] == values[:, None, :]) & group & active[:, :, None]
    masks = (same.astype(np.uint32) * LANE_BITS[None, None, :]).sum(axis=2, dtype=np.uint32)
    active_bits = _bits(group)
    agree = masks == active_bits
    if mode == "any":
        return masks, agree
    if mode == "all":
        return np.where(agree, active_bits, np.uint32(0)).astype(np.uint32), agree
    raise ValueError(f"match mode {mode!r}")


_REDUCTIONS = {"add": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
               "min": np.minimum, "max": np.maximum}


def redux(op: str, values: np.ndarray, active: np.ndarray, masks=None) -> np.ndarray:
    """redux.sync.{add,min,max,and,or,xor} over the active lanes (integers wrap on add): per warp, or per lane
    over the active lanes of its membermask when `masks` is given ((warps, 32) results then)."""
    values = np.asarray(values)
    dtype = values.dtype
    info = np.iinfo(dtype)
    identity = {"add": 0, "or": 0, "xor": 0, "and": info.max if dtype.kind == "u" else -1,
                "min": info.max, "max": info.min}[op]
    if masks is not None:
        group = members(active, masks)
        return _REDUCTIONS[op].reduce(np.where(group, values[:, None, :], dtype.type(identity)), axis=2).astype(dtype)
    return _REDUCTIONS[op].reduce(np.where(active, values, dtype.type(identity)), axis=1).astype(dtype)


def elect(active: np.ndarray) -> np.ndarray:
    """elect.sync: per warp, the lowest active lane (the one whose predicate becomes true)."""
    return np.argmax(active, axis=1).astype(np.uint32)


def activemask(active: np.ndarray) -> np.ndarray:
    """activemask: per warp, the mask of its executing lanes."""
    return lane_mask(active)

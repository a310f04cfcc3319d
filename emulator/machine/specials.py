"""Special registers (%tid, %ctaid, %laneid, %clock64, %dynamic_smem_size, ...) as a batch sees them."""
from __future__ import annotations

import numpy as np

from emulator import ir

#: the reserved shared region on sm_90: ptxas compiles begin, cap and offset_0 to these constants; end and
#: offset_1 come from the driver's constant bank (c[0x0][0x68], c[0x0][0x6c]) and are not yet read on an H100
#: (tools/probes_names): these are the RTX 3060's layout moved to the region's sm_90 start
RESERVED_SHARED_REGISTERS = {"reserved_smem_offset_begin": 0, "reserved_smem_offset_cap": ir.SHARED_RESERVED_BYTES,
                             "reserved_smem_offset_0": 0, "reserved_smem_offset_1": 0,
                             "reserved_smem_offset_end": 288}
#: %envreg words the H100's driver (580.159.04) set to the same value in every thread of the probe launch
#: (tools/probes_names/h100.json): %envreg6 = 1 and %envreg10 = %reserved_smem_offset_end; %envreg0 differs by
#: driver and is left 0 with the rest. A launch's own environment (a cooperative launch's workspace) overrides them.
DRIVER_ENVIRONMENT = {6: 1, 10: RESERVED_SHARED_REGISTERS["reserved_smem_offset_end"]}


def special_value(batch, name: str):
    """A special register's value for every thread of a batch: an array, a scalar, or a function of the lane
    selection for the clocks (which read the batch's step count)."""
    config = batch.config
    base, _, component = name.partition(".")
    if component == "w":
        return np.uint32(0)
    axis = "xyz".index(component) if component else 0
    gx, gy, gz = config.grid
    if name in batch.layout.specials:
        return batch.layout.specials[name]
    if base in ("ctaid", "clusterid") and (axis, gy, gz) == (0, 1, 1):
        return batch.layout.cta_of_u32 + np.uint32(batch.cta_start)
    cta = batch.cta_of + batch.cta_start
    if base == "ntid":
        return np.uint32(config.block[axis])
    if base in ("ctaid", "clusterid"):
        return ((cta % gx, (cta // gx) % gy, cta // (gx * gy))[axis]).astype(np.uint32)
    if base in ("nctaid", "nclusterid"):
        return np.uint32(config.grid[axis])
    if base == "laneid":
        return batch.lane_ids
    if base == "nwarpid":
        return np.uint32(64)
    if base == "smid":
        return (cta % 132).astype(np.uint32)
    if base == "nsmid":
        return np.uint32(132)
    if base.startswith("lanemask_"):
        lane = batch.lane_ids.astype(np.uint64)
        below = (np.uint64(1) << lane) - np.uint64(1)
        bit = np.uint64(1) << lane
        full = np.uint64(0xFFFFFFFF)
        value = {"lanemask_eq": bit, "lanemask_lt": below, "lanemask_le": below | bit,
                 "lanemask_gt": full & ~(below | bit), "lanemask_ge": full & ~below}[base]
        return value.astype(np.uint32)
    if base in ("clock", "clock_hi", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi"):
        def counter(sel, base=base):
            value = batch.steps * (1000 if base.startswith("globaltimer") else 1)
            if base.endswith("_hi"):
                value >>= 32
            return np.uint64(value) if base in ("clock64", "globaltimer") else np.uint32(value & 0xFFFFFFFF)
        return counter
    if base == "dynamic_smem_size":
        return np.uint32(config.dynamic_shared)
    if base == "total_smem_size":
        return np.uint32((config.shared_bytes - ir.SHARED_RESERVED_BYTES + 127) // 128 * 128)
    if base == "aggr_smem_size":
        # the reserved KB and the block's bytes as laid out, not rounded (the H100: 1140 for 1 static byte + 100
        # dynamic bytes at offset 16, where %total_smem_size is 128)
        return np.uint32(config.shared_bytes)
    if base in RESERVED_SHARED_REGISTERS:
        return np.uint32(RESERVED_SHARED_REGISTERS[base])
    if base in ("cluster_nctaid",):
        return np.uint32(1)
    if base in ("cluster_nctarank",):
        return np.uint32(1)
    if base == "gridid":
        return np.uint64(config.grid_id)
    if base.startswith("envreg"):
        index = int(base[len("envreg"):])
        return np.uint32(config.environment.get(index, DRIVER_ENVIRONMENT.get(index, 0)))
    return np.uint32(0)

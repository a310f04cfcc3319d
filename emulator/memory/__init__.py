"""Device memory: global allocations, per-CTA shared and per-thread local windows, generic addressing,
vectorised loads/stores/atomics through a bounds-checked C core (numpy fallback), per-warp counts."""
from emulator.memory.core import (Memory, c_core_available, distinct_addresses, get_core, global_sectors,
    local_sectors, max_same_address, request_totals, shared_wavefronts)
from emulator.memory.fallback import interleaved_local, phase_lanes, wavefront_lanes
from emulator.memory.spaces import (GLOBAL_BASE, LOCAL_WINDOW, NULL_LIMIT, SHARED_WINDOW, WINDOW_SIZE, Allocation,
    DeviceFault, RequestTotals)

__all__ = [
    "GLOBAL_BASE", "SHARED_WINDOW", "LOCAL_WINDOW", "WINDOW_SIZE", "NULL_LIMIT",
    "DeviceFault", "Allocation", "Memory",
    "shared_wavefronts", "global_sectors", "local_sectors", "distinct_addresses", "max_same_address",
    "request_totals", "RequestTotals", "interleaved_local", "phase_lanes", "wavefront_lanes",
    "c_core_available", "get_core",
]

"""Host memory bounds: what a launch or a module's variables will take, checked before any of it is allocated.

The limit is --max-memory (Device(max_memory=...)); by default it is DEFAULT_SHARE of the memory the system can
still give this process: /proc/meminfo's MemAvailable, inside a control group with a memory limit that limit less
the group's usage, and under an address-space limit (ulimit -v) that limit less the process's virtual size,
whichever is lowest. A request over the limit is a LaunchError
(CUDA_ERROR_OUT_OF_MEMORY) naming the figures, raised before the allocation, so a run is refused with a message
instead of being killed by the system.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional, Union

from emulator.base.errors import LaunchError, UsageError

#: the share of the available memory a run may take when no --max-memory is given
DEFAULT_SHARE = 0.75
#: parts smaller than this are left out of the message (the largest part is always named)
NOTABLE = 1 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000 ** 2, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1 << 40, "tb": 1000 ** 4, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int:
    """'4G', '512M', '1.5GiB', '1000000' → bytes (K, M, G, T are powers of 1024; kB, MB, GB, TB of 1000)."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise UsageError(f"'{text}' is not a size such as 4G, 512M or 1000000 (bytes)")
    value = int(float(match.group(1)) * _UNITS[unit])
    if value < 1:
        raise UsageError(f"'{text}' is not a positive size")
    return value


def format_size(nbytes: int) -> str:
    """1536 → '1.5 KiB'; 3_000_000_000 → '2.8 GiB'; anything from 2^64 bytes on → 'more than 2^64 bytes'."""
    if nbytes >= 1 << 64:
        return "more than 2^64 bytes"
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{nbytes} bytes"


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available() -> Optional[int]:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_headroom(cgroup_file: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> Optional[int]:
    """The least (limit - usage) over this process's memory control groups and their ancestors: v2's memory.max
    and memory.current under root, v1's memory.limit_in_bytes and memory.usage_in_bytes under root/memory."""
    try:
        with open(cgroup_file) as handle:
            entries = [line.strip().split(":", 2) for line in handle if line.count(":") >= 2]
    except OSError:
        return None
    candidates = []
    for _, controllers, path in entries:
        if controllers == "":
            base, limit_name, usage_name = root, "memory.max", "memory.current"
        elif "memory" in controllers.split(","):
            base, limit_name, usage_name = os.path.join(root, "memory"), "memory.limit_in_bytes", \
                "memory.usage_in_bytes"
        else:
            continue
        parts = [part for part in path.split("/") if part]
        for depth in range(len(parts), -1, -1):
            directory = os.path.join(base, *parts[:depth])
            limit, usage = _read_int(os.path.join(directory, limit_name)), _read_int(os.path.join(directory,
                                                                                                   usage_name))
            if limit is not None and usage is not None and limit < 1 << 60:
                candidates.append(max(limit - usage, 0))
    return min(candidates) if candidates else None


def address_space_headroom() -> Optional[int]:
    """What an address-space limit (RLIMIT_AS, ulimit -v) leaves above the process's virtual size; None without
    one."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status") as handle:
            size = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
    except (ImportError, OSError, ValueError, StopIteration):
        return None
    return max(soft - size, 0)


def available_memory() -> Optional[int]:
    """Bytes the system can still give this process (None when it cannot tell)."""
    figures = [figure for figure in (_meminfo_available(), cgroup_headroom(), address_space_headroom())
               if figure is not None]
    return min(figures) if figures else None


class Limit:
    """A limit in bytes on what gpuemu holds for the device, and how to say where it comes from."""

    def __init__(self, nbytes: Optional[int], origin: str):
        self.nbytes, self.origin = nbytes, origin

    @classmethod
    def resolve(cls, max_memory: Union[int, str, None], in_use: int) -> "Limit":
        """max_memory as given (bytes or a size text), else DEFAULT_SHARE of what is available now on top of what
        the device holds already (in_use)."""
        if max_memory is not None:
            nbytes = parse_size(max_memory) if isinstance(max_memory, str) else int(max_memory)
            return cls(nbytes, "--max-memory")
        available = available_memory()
        if available is None:
            return cls(None, "no limit: the available memory is unknown")
        share = int(available * DEFAULT_SHARE)
        return cls(in_use + share, f"the default: {DEFAULT_SHARE:.0%} of the {format_size(available)} available"
                                   + (f" on top of the {format_size(in_use)} the device holds"
                                      if in_use >= NOTABLE else "")
                                   + "; set it with --max-memory or Device(max_memory=...)")


def check(parts: Dict[str, int], max_memory: Union[int, str, None], in_use: int, what: str) -> int:
    """Raise a LaunchError when in_use plus the parts (name → bytes, zeros left out) exceed the limit; returns the
    total."""
    needed = in_use + sum(parts.values())
    limit = Limit.resolve(max_memory, in_use)
    if limit.nbytes is not None and needed > limit.nbytes:
        largest = max(parts, key=parts.get)
        shown = [f"{name} {format_size(nbytes)}" for name, nbytes in parts.items()
                 if nbytes >= NOTABLE or name == largest]
        if in_use >= NOTABLE:
            shown.append(f"device memory already allocated {format_size(in_use)}")
        raise LaunchError("CUDA_ERROR_OUT_OF_MEMORY",
                          f"{what} needs about {format_size(needed)} of host memory ({', '.join(shown)}), more than "
                          f"the limit of {format_size(limit.nbytes)} ({limit.origin})")
    return needed

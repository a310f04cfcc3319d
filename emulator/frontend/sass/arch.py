"""What each GPU generation's SASS expects of the driver: constant-bank layout, stack, shared window, address width."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class Arch:
    """The launch environment one generation of SASS reads from its constant banks."""
    name: str
    instruction_bytes: int            # 8 (sm_2x .. sm_6x listings) or 16 (sm_70 on)
    param_offset: int                 # kernel parameters in c[0x0][param_offset] onward
    ntid_offset: int                  # blockDim.x/y/z as three words
    nctaid_offset: int                # gridDim.x/y/z as three words
    stack: Tuple[int, int]            # (bank, offset) of the initial stack pointer
    shared_base: int = 0              # shared addresses of user data start here (sm_90 reserves 1 KB)
    pointer_bytes: int = 8            # 4 for 32-bit host code (sm_2x default)
    global_descriptor: Optional[int] = None   # c[0x0][...] memory descriptor of LDG/STG desc[UR]


def _family(sm: int, compile_size: Optional[int]) -> Arch:
    name = f"sm_{sm}"
    if sm < 20:
        return Arch(name, 8, 0x20, 0x8, 0x14, (1, 0x100), pointer_bytes=4)
    if sm < 30:
        return Arch(name, 8, 0x20, 0x8, 0x14, (1, 0x100), pointer_bytes=8 if compile_size == 64 else 4)
    if sm < 50:
        return Arch(name, 8, 0x140, 0x28, 0x34, (0, 0x44))
    if sm < 70:
        return Arch(name, 8, 0x140, 0x0, 0xC, (0, 0x20))
    if sm < 90:
        return Arch(name, 16, 0x160, 0x0, 0xC, (0, 0x28))
    return Arch(name, 16, 0x210, 0x0, 0xC, (0, 0x28), shared_base=0x400, global_descriptor=0x208)


def arch_for(name: Optional[str], compile_size: Optional[int] = None) -> Arch:
    """The environment of `sm_XY` (sm_90 when the listing names none); compile_size 32/64 when printed."""
    match = re.match(r"sm_(\d+)", name or "sm_90")
    return _family(int(match.group(1)) if match else 90, compile_size)

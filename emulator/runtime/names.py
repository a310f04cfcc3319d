"""Names people type for kernels and architectures: mangled names made plain, `sm_90` made a number."""
from __future__ import annotations

import re
from typing import Union

from emulator.base.errors import UsageError


def plain_name(mangled: str) -> str:
    """`_Z6vecaddPKfS0_Pfi` → `vecadd`; names that are not Itanium-mangled come back unchanged."""
    match = re.match(r"_Z(?:N(?:\d+\w+?)*)?(\d+)", mangled)
    if not match:
        return mangled
    length = int(match.group(1))
    start = match.end()
    return mangled[start:start + length]


def arch_number(arch: Union[str, int]) -> int:
    """`sm_60` → 60, `sm_90a` → 90, 90 → 90; anything outside 10..999 is refused."""
    if isinstance(arch, int) or (hasattr(arch, "dtype") and getattr(arch, "dtype").kind in "iu"):
        number = int(arch)
    else:
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", str(arch).strip())
        number = int(match.group(1)) if match else 0
    if not 10 <= number < 1000:
        raise UsageError(f"architecture '{arch}' is not sm_NN (for example sm_60 or sm_90)")
    return number

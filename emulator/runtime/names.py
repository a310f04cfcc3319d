"""Names people type for kernels and architectures: mangled names made plain, `sm_90` made a number."""
from __future__ import annotations

import re
from typing import Union

from emulator.base.errors import UsageError


def plain_name(mangled: str) -> str:
    """The unqualified name of an Itanium-mangled function: `_Z6vecaddPKfS0_Pfi` → `vecadd`,
    `_ZN7kernels4vaddB2v1B3abcE5ArrayIfLi1EEi` (kernels::vadd[abi:v1][abi:abc]) → `vadd`; template arguments and
    ABI tags are not part of it. Names that are not Itanium-mangled come back unchanged."""
    if not mangled.startswith("_Z"):
        return mangled
    position = 2
    nested = mangled.startswith("N", position)
    if nested:
        position += 1
        while position < len(mangled) and mangled[position] in "rVKRO":
            position += 1
    elif mangled.startswith("L", position):
        position += 1
    name = None
    while position < len(mangled):
        character = mangled[position]
        if character.isdigit():
            start, position = _source_name(mangled, position)
            name = mangled[start:position]
        elif character == "B" and name is not None:
            position = _source_name(mangled, position + 1)[1]
        elif character == "I" and name is not None:
            position = _template_arguments_end(mangled, position)
        elif nested and character == "S":  # a substitution: St, Sa, ... (two letters) or S_, S<seq-id>_
            if mangled[position + 1:position + 2] in tuple("tabsiod"):
                position += 2
            else:
                position = mangled.find("_", position) + 1 or len(mangled)
        elif nested and character in "CD" and position + 1 < len(mangled) and mangled[position + 1].isdigit():
            position += 2
        else:
            break
        if not nested and name is not None and position < len(mangled) and mangled[position] not in "BI":
            break
    return name if name else mangled


def _source_name(text: str, position: int):
    """(start, end) of the <length><characters> name at position."""
    digits = position
    while digits < len(text) and text[digits].isdigit():
        digits += 1
    if digits == position:
        return position, position
    return digits, min(digits + int(text[position:digits]), len(text))


def _template_arguments_end(text: str, position: int) -> int:
    """The index after the `I ... E` template argument list starting at position (literals L...E and expressions
    X...E nest; names inside are skipped by their length)."""
    depth = 0
    while position < len(text):
        character = text[position]
        if character.isdigit():
            position = _source_name(text, position)[1]
            continue
        if character == "L" and not text.startswith("L_Z", position):  # a literal: L <type> <value> E
            end = text.find("E", position)
            position = end + 1 if end >= 0 else len(text)
            if depth == 0:
                return position
            continue
        if character in "ILXJ":
            depth += 1
        elif character == "E":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    return position


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

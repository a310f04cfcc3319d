"""Kernel parameter types from Itanium-mangled names (`_Z6vecaddPKfS0_Pfi`: three pointers and an int)."""
from __future__ import annotations

from typing import List, Optional, Tuple

#: builtin type codes → (PTX-style type name, bytes)
BUILTINS = {
    "b": ("u8", 1), "c": ("s8", 1), "a": ("s8", 1), "h": ("u8", 1), "s": ("s16", 2), "t": ("u16", 2),
    "i": ("s32", 4), "j": ("u32", 4), "l": ("s64", 8), "m": ("u64", 8), "x": ("s64", 8), "y": ("u64", 8),
    "f": ("f32", 4), "d": ("f64", 8), "w": ("s32", 4),
}
#: two-letter builtins (D prefix)
D_BUILTINS = {"Dh": ("f16", 2), "Ds": ("u16", 2), "Di": ("u32", 4), "Dn": ("u64", 8)}


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.at = 0
        self.substitutions: List[Tuple[str, int]] = []

    def peek(self, count: int = 1) -> str:
        return self.text[self.at:self.at + count]

    def take(self, count: int = 1) -> str:
        part = self.text[self.at:self.at + count]
        self.at += count
        return part

    def number(self) -> int:
        start = self.at
        while self.peek().isdigit():
            self.at += 1
        return int(self.text[start:self.at])

    def type(self) -> Tuple[str, int]:
        """One <type>: ('ptr', 0) for pointers and references, ('class', 0) for a by-name type, else a builtin."""
        code = self.peek()
        if not code:  # "" is in every string: without this a trailing P would recurse for ever
            raise ValueError(f"{self.text} ends inside a type")
        if code in "PR":
            self.take()
            self.type()
            result = ("ptr", 0)
            self.substitutions.append(result)
            return result
        if code in "KVr":
            self.take()
            inner = self.type()
            self.substitutions.append(inner)
            return inner
        if code == "S":
            self.take()
            index = 0 if self.peek() == "_" else int(self._seq_id(), 36) + 1
            self.take()
            return self.substitutions[index]
        if code.isdigit():
            length = self.number()
            self.at += length
            result = ("class", 0)
            self.substitutions.append(result)
            return result
        if code == "v":
            self.take()
            return ("void", 0)
        if code == "D" and self.peek(2) in D_BUILTINS:
            return D_BUILTINS[self.take(2)]
        if code in BUILTINS:
            return BUILTINS[self.take()]
        raise ValueError(f"unsupported type code '{code}' in {self.text}")

    def _seq_id(self) -> str:
        start = self.at
        while self.peek() not in ("_", ""):
            self.at += 1
        return self.text[start:self.at].lower()


def parameter_types(mangled: str) -> Optional[List[Tuple[str, int]]]:
    """[(type, bytes)] of a plain `_Z<len><name><params>` kernel; ("ptr", 0) for pointers; None if unknown."""
    if not mangled.startswith("_Z") or len(mangled) < 3 or not mangled[2].isdigit():
        return None
    reader = _Reader(mangled)
    reader.at = 2
    length = reader.number()
    reader.at += length
    if reader.peek() == "I":
        return None
    types = []
    try:
        while reader.at < len(mangled):
            types.append(reader.type())
    except (ValueError, IndexError):
        return None
    if types == [("void", 0)]:
        return []
    if any(kind[0] in ("void", "class") for kind in types):
        return None
    return types

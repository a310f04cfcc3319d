"""Device printf: C format strings applied to the argument buffer vprintf receives, as CUDA's runtime does."""
from __future__ import annotations

import re

import numpy as np

_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXcsfFeEgGaAp%])")
MAX_STRING = 4096


def read_c_string(memory, address: int, thread: int) -> bytes:
    """Bytes of the NUL-terminated string at a generic address, as the thread sees memory."""
    out = bytearray()
    threads = np.array([thread], dtype=np.int64)
    while len(out) < MAX_STRING:
        byte = memory.load("generic", np.array([address + len(out)], dtype=np.uint64), threads, 1)[0, 0]
        if byte == 0:
            break
        out.append(int(byte))
    return bytes(out)


class _Arguments:
    """Walks the packed argument buffer: each argument aligned to its own size."""

    def __init__(self, memory, address: int, thread: int):
        self.memory = memory
        self.address = address
        self.offset = 0
        self.threads = np.array([thread], dtype=np.int64)

    def take(self, size: int, dtype) -> object:
        self.offset = (self.offset + size - 1) // size * size
        raw = self.memory.load("generic", np.array([self.address + self.offset], dtype=np.uint64), self.threads, size)
        self.offset += size
        return raw.view(dtype)[0, 0]


def _format_float(flags: str, width: str, precision: str, conversion: str, value: float) -> str:
    spec = "%" + flags + (width or "") + (("." + precision) if precision is not None else "") + conversion
    if conversion in "aA":
        text = float(value).hex()
        return text.upper() if conversion == "A" else text
    return spec % value


def format_printf(memory, format_address: int, args_address: int, thread: int) -> str:
    """The text one thread's printf produces."""
    fmt = read_c_string(memory, format_address, thread).decode("utf-8", "replace")
    args = _Arguments(memory, args_address, thread)
    pieces = []
    position = 0
    for match in _SPEC.finditer(fmt):
        pieces.append(fmt[position:match.start()])
        position = match.end()
        flags, width, precision, length, conversion = match.groups()
        if conversion == "%":
            pieces.append("%")
            continue
        if width == "*":
            width = str(int(args.take(4, np.int32)))
        if precision == "*":
            precision = str(int(args.take(4, np.int32)))
        if conversion in "di":
            value = int(args.take(8, np.int64) if length in ("l", "ll", "j", "z", "t") else args.take(4, np.int32))
            spec = "%" + flags + (width or "") + (("." + precision) if precision is not None else "") + "d"
            pieces.append(spec % value)
        elif conversion in "ouxX":
            value = int(args.take(8, np.uint64) if length in ("l", "ll", "j", "z", "t") else args.take(4, np.uint32))
            if length == "h":
                value &= 0xFFFF
            elif length == "hh":
                value &= 0xFF
            spec = "%" + flags + (width or "") + (("." + precision) if precision is not None else "") + \
                ("d" if conversion == "u" else conversion)
            pieces.append(spec % value)
        elif conversion == "c":
            value = int(args.take(4, np.int32))
            pieces.append(("%" + flags + (width or "") + "c") % chr(value & 0xFF))
        elif conversion in "fFeEgGaA":
            value = float(args.take(8, np.float64))
            pieces.append(_format_float(flags, width, precision, conversion, value))
        elif conversion == "s":
            pointer = int(args.take(8, np.uint64))
            text = read_c_string(memory, pointer, thread).decode("utf-8", "replace") if pointer else "(null)"
            spec = "%" + flags + (width or "") + (("." + precision) if precision is not None else "") + "s"
            pieces.append(spec % text)
        elif conversion == "p":
            pointer = int(args.take(8, np.uint64))
            pieces.append(("%" + flags + (width or "") + "s") % f"0x{pointer:x}")
    pieces.append(fmt[position:])
    return "".join(pieces)

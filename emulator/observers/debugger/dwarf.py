"""The DWARF that `nvcc -G` writes into PTX as `.section .debug_*` byte directives, read with pyelftools.

Label operands are resolved as the linker would: a code label becomes the pc of the instruction it names
(so DWARF's pc ranges are pcs), a section name its section's start (0), and a data symbol (a variable or a
kernel parameter) one of a few reserved addresses that `symbol_of` turns back into the name."""
from __future__ import annotations

import io
import re
from typing import Dict, List, Optional, Tuple

from emulator.frontend.ptx.parse import integer_literal

#: reserved addresses standing for data symbols in DW_OP_addr and DW_AT_location (far above any pc)
SYMBOL_BASE = 1 << 60
_SYMBOL_STRIDE = 1 << 32
_DIRECTIVE = re.compile(r"\s*\.b(8|16|32|64)\s+(.*)")
_SECTION = re.compile(r"\s*\.section\s+(\.debug_\w+)")
_LABEL = re.compile(r"\s*([\w$]+):\s*$")
#: a PTX integer literal, as integer_literal reads it
_INTEGER = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?")


class DwarfSections:
    """The bytes of each .debug_* section of a PTX text, with its data-symbol table."""

    def __init__(self, lines, code_labels: Dict[str, int]):
        self.code_labels = code_labels
        self.symbols: List[str] = []
        self._symbol_index: Dict[str, int] = {}
        self.sections: Dict[str, bytes] = {}
        self.labels: Dict[str, Tuple[str, int]] = {}
        self._read(lines)

    def _read(self, lines) -> None:
        name, data, pending = None, None, []
        for text in lines:
            if name is None:
                match = _SECTION.match(text)
                if match:
                    name, data = match.group(1), bytearray()
                continue
            stripped = text.strip()
            if stripped == "}":
                self.sections[name] = bytes(data)
                name = None
                continue
            label = _LABEL.match(text)
            if label:
                self.labels[label.group(1)] = (name, len(data))
                continue
            match = _DIRECTIVE.match(text)
            if not match:
                continue
            width = int(match.group(1)) // 8
            for item in match.group(2).split(","):
                item = item.strip()
                if item:
                    pending.append((name, len(data), width, item))
                    data.extend(self._value(item, width, resolve=False))
        for section, offset, width, item in pending:
            if not _INTEGER.fullmatch(item):
                buffer = bytearray(self.sections[section])
                buffer[offset:offset + width] = self._value(item, width, resolve=True)
                self.sections[section] = bytes(buffer)

    def _value(self, item: str, width: int, resolve: bool) -> bytes:
        if _INTEGER.fullmatch(item):
            value = integer_literal(item)
        elif not resolve:
            value = 0
        else:
            base, _, offset = item.partition("+")
            value = self._address(base.strip()) + (integer_literal(offset.strip()) if offset.strip() else 0)
        return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")

    def _address(self, name: str) -> int:
        if name.startswith(".debug_"):
            return 0
        if name in self.labels:
            return self.labels[name][1]
        if name in self.code_labels:
            return self.code_labels[name]
        index = self._symbol_index.get(name)
        if index is None:
            index = self._symbol_index[name] = len(self.symbols)
            self.symbols.append(name)
        return SYMBOL_BASE + index * _SYMBOL_STRIDE

    def symbol_of(self, address: int) -> Optional[Tuple[str, int]]:
        """(data symbol, offset) that a reserved address stands for; None for any other address."""
        if address < SYMBOL_BASE:
            return None
        index, offset = divmod(address - SYMBOL_BASE, _SYMBOL_STRIDE)
        return (self.symbols[index], offset) if index < len(self.symbols) else None

    def dwarf_info(self):
        """pyelftools' DWARFInfo over these sections (None without .debug_info and .debug_abbrev)."""
        if ".debug_info" not in self.sections or ".debug_abbrev" not in self.sections:
            return None
        from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DWARFInfo, DwarfConfig

        def section(name: str):
            data = self.sections.get(name)
            if data is None:
                return None
            return DebugSectionDescriptor(io.BytesIO(data), name, None, len(data), 0)

        names = ("info", "aranges", "abbrev", "frame", None, "str", "loc", "ranges", "line", "pubtypes",
                 "pubnames", "addr", "str_offsets", "line_str", "loclists", "rnglists", "sup", None, "types")
        return DWARFInfo(DwarfConfig(little_endian=True, machine_arch="NVPTX", default_address_size=8),
                         *(section(f".debug_{name}") if name else None for name in names))

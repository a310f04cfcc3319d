"""Cubins (the ELF images of SASS in a fat binary): their symbols, constant and global data, relocations, and
their SASS listing from the CUDA toolkit's cuobjdump, which gpuemu runs as any listing."""
from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from emulator.base.errors import UsageError
from emulator.base.toolkit import nvidia_tool

ELF_MAGIC = b"\x7fELF"
ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
SYMBOL = struct.Struct("<IBBHQQ")
RELOCATION = struct.Struct("<QQq")
RELOCATION_NO_ADDEND = struct.Struct("<QQ")
SECTION_SYMTAB, SECTION_RELA, SECTION_NOBITS, SECTION_REL = 2, 4, 8, 9
SYMBOL_OBJECT, SYMBOL_FUNC = 1, 2
#: the one relocation nvcc writes into constant bank 4: a symbol's 64-bit address
R_CUDA_64 = 2
#: sections that hold __device__ variables (zeroed, initialised) and __constant__ ones (bank 3)
GLOBAL_SECTIONS = (".nv.global", ".nv.global.init")
CONSTANT_SECTION = ".nv.constant3"
ADDRESS_BANK_SECTION = ".nv.constant4"
DISASSEMBLE_SECONDS = 120
#: .nv.info records: a format byte, an attribute byte, then a 16-bit value, or (format EIFMT_SVAL) a 16-bit length
#: and that many bytes
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_KPARAM_INFO = 0x17
EM_CUDA = 190
#: the largest cubin gpuemu reads from memory whose length it is not told
IMAGE_LIMIT = 1 << 30


class CubinError(UsageError):
    """A cubin gpuemu cannot read, or cannot turn into a SASS listing."""


class LinkedCodeError(CubinError):
    """A cubin of relocatable device code, which the driver links as it loads it and gpuemu does not."""


@dataclass(frozen=True)
class Section:
    name: str
    kind: int
    offset: int
    size: int
    link: int
    info: int


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: int
    section: str
    value: int
    size: int


@dataclass(frozen=True)
class Relocation:
    section: str
    offset: int
    symbol: Symbol
    kind: int
    addend: int


class Cubin:
    """One cubin's sections, symbols and relocations, read from its bytes."""

    def __init__(self, data: bytes, name: str):
        self.name = name
        self.data = bytes(data)
        check_header(self.data, name)
        try:
            self.sections = self._read_sections()
            self.symbols = self._read_symbols()
            self.relocations = self._read_relocations()
        except (struct.error, IndexError, ValueError, UnicodeDecodeError):
            raise CubinError(f"{name}: the cubin's ELF tables are truncated or malformed") from None
        for section in self.sections:
            beyond = section.kind != SECTION_NOBITS and section.offset + section.size > len(self.data)
            if beyond or section.size > IMAGE_LIMIT:
                raise CubinError(f"{name}: section '{section.name}' of {section.size:,} bytes does not fit the cubin")

    def _string(self, table: Section, offset: int) -> str:
        start = table.offset + offset
        return self.data[start:self.data.index(b"\0", start)].decode("ascii")

    def _read_sections(self) -> List[Section]:
        header = ELF_HEADER.unpack_from(self.data, 0)
        table_offset, count, names_index = header[6], header[12], header[13]
        raw = [SECTION_HEADER.unpack_from(self.data, table_offset + SECTION_HEADER.size * index)
               for index in range(count)]
        names = raw[names_index]
        names_section = Section("", names[1], names[4], names[5], 0, 0)
        return [Section(self._string(names_section, entry[0]), entry[1], entry[4], entry[5], entry[6], entry[7])
                for entry in raw]

    def _read_symbols(self) -> List[Symbol]:
        tables = [section for section in self.sections if section.kind == SECTION_SYMTAB]
        if not tables:
            return []
        table = tables[0]
        strings = self.sections[table.link]
        symbols = []
        for index in range(table.size // SYMBOL.size):
            name, info, _other, section, value, size = SYMBOL.unpack_from(self.data, table.offset + SYMBOL.size * index)
            section_name = self.sections[section].name if 0 < section < len(self.sections) else ""
            symbols.append(Symbol(self._string(strings, name), info & 0xF, section_name, value, size))
        return symbols

    def _read_relocations(self) -> List[Relocation]:
        relocations = []
        for section in self.sections:
            if section.kind not in (SECTION_RELA, SECTION_REL):
                continue
            target = self.sections[section.info].name
            layout = RELOCATION if section.kind == SECTION_RELA else RELOCATION_NO_ADDEND
            for index in range(section.size // layout.size):
                offset, info, *addend = layout.unpack_from(self.data, section.offset + layout.size * index)
                relocations.append(Relocation(target, offset, self.symbols[info >> 32], info & 0xFFFFFFFF,
                                              addend[0] if addend else 0))
        return relocations

    def code_relocations(self) -> List[Relocation]:
        """Relocations into the code itself (.text.*): what the driver patches into instructions when it loads
        relocatable device code (nvcc -rdc=true), such as a __device__ variable's address or a called function's."""
        return [relocation for relocation in self.relocations if relocation.section.startswith(".text.")]

    @property
    def arch(self) -> int:
        """The SM the code is for (90 for sm_90), from the ELF header's flags."""
        flags = ELF_HEADER.unpack_from(self.data, 0)[7]
        return (flags >> 8) & 0xFF or flags & 0xFF

    def section_bytes(self, name: str) -> Optional[bytes]:
        """A section's contents (zeros for a NOBITS section); None when the cubin has no such section."""
        for section in self.sections:
            if section.name == name:
                if section.kind == SECTION_NOBITS:
                    return bytes(section.size)
                return self.data[section.offset:section.offset + section.size]
        return None

    def section_size(self, name: str) -> int:
        return next((section.size for section in self.sections if section.name == name), 0)

    def kernel_parameters(self, kernel: str) -> Optional[List[tuple]]:
        """A kernel's parameters as (offset, size) in order, from its .nv.info section's KPARAM_INFO records; None
        when the cubin has no such section."""
        info = self.section_bytes(f".nv.info.{kernel}")
        if info is None:
            return None
        try:
            return self._parameters(info, kernel)
        except struct.error:
            raise CubinError(f"{self.name}: .nv.info.{kernel} is truncated") from None

    def _parameters(self, info: bytes, kernel: str) -> List[tuple]:
        by_ordinal = {}
        position = 0
        while position + 2 <= len(info):
            form, attribute = info[position], info[position + 1]
            position += 2
            if form == EIFMT_SVAL:
                (length,) = struct.unpack_from("<H", info, position)
                value = info[position + 2:position + 2 + length]
                position += 2 + length
                if attribute == EIATTR_KPARAM_INFO and length >= 12:
                    _index, ordinal, offset, flags = struct.unpack_from("<IHHI", value, 0)
                    by_ordinal[ordinal] = (offset, (flags >> 18) & 0x3FFF)
            elif form in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
                position += 2
            else:
                raise CubinError(f"{self.name}: .nv.info.{kernel} holds a record of unknown format {form}")
        if sorted(by_ordinal) != list(range(len(by_ordinal))):
            raise CubinError(f"{self.name}: .nv.info.{kernel} numbers its parameters with gaps")
        return [by_ordinal[ordinal] for ordinal in range(len(by_ordinal))]

    def variables(self) -> Dict[str, Symbol]:
        """__device__ and __constant__ variables (and the strings and tables nvcc keeps beside them), by name."""
        return {symbol.name: symbol for symbol in self.symbols
                if symbol.kind == SYMBOL_OBJECT and symbol.section in GLOBAL_SECTIONS + (CONSTANT_SECTION,)}


def check_header(data: bytes, name: str) -> None:
    """A CubinError unless data starts with the header of a 64-bit little-endian CUDA ELF image whose section table
    is of the usual shape."""
    if len(data) < ELF_HEADER.size or data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        raise CubinError(f"{name}: not a 64-bit little-endian ELF image")
    header = ELF_HEADER.unpack_from(data, 0)
    if header[2] != EM_CUDA:
        raise CubinError(f"{name}: an ELF image for machine {header[2]}, not CUDA ({EM_CUDA})")
    if header[11] != SECTION_HEADER.size or header[6] > IMAGE_LIMIT or header[13] >= max(header[12], 1) or \
            header[5] > IMAGE_LIMIT or header[10] > 0xFFFF:
        raise CubinError(f"{name}: the ELF header's tables are malformed")


def image_size(read: Callable[[int, int], bytes], name: str) -> int:
    """The length of a cubin in memory, read(offset, count) giving its bytes: up to the end of its last table or
    section."""
    head = read(0, ELF_HEADER.size)
    check_header(head, name)
    header = ELF_HEADER.unpack(head)
    program_offset, section_offset, program_size, program_count, section_size, section_count = (
        header[5], header[6], header[9], header[10], header[11], header[12])
    end = max(section_offset + section_size * section_count, program_offset + program_size * program_count)
    table = read(section_offset, SECTION_HEADER.size * section_count)
    for index in range(section_count):
        entry = SECTION_HEADER.unpack_from(table, SECTION_HEADER.size * index)
        if entry[1] != SECTION_NOBITS:
            end = max(end, entry[4] + entry[5])
    if end > IMAGE_LIMIT:
        raise CubinError(f"{name}: the ELF image claims {end:,} bytes")
    return end


def find_disassembler() -> Optional[str]:
    """cuobjdump: $GPUEMU_CUOBJDUMP (set and empty: none), else from PATH, the CUDA toolkit or the
    nvidia-cuda-cuobjdump wheel; None when none is installed."""
    chosen = os.environ.get("GPUEMU_CUOBJDUMP")
    if chosen is not None:
        return chosen or None
    return nvidia_tool("cuobjdump")


def disassemble(cubin: Cubin, tool: str) -> str:
    """The cubin's `cuobjdump -sass` listing."""
    with tempfile.TemporaryDirectory(prefix="gpuemu-cubin-") as directory:
        path = os.path.join(directory, "image.cubin")
        with open(path, "wb") as handle:
            handle.write(cubin.data)
        # cuobjdump runs nvdisasm, which the wheels and the toolkit put beside it
        search = os.pathsep.join(filter(None, [os.path.dirname(tool), os.path.dirname(nvidia_tool("nvdisasm") or ""),
                                               os.environ.get("PATH", "")]))
        try:
            result = subprocess.run([tool, "-sass", path], capture_output=True, timeout=DISASSEMBLE_SECONDS,
                                    env=dict(os.environ, PATH=search))
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CubinError(f"{cubin.name}: {tool} -sass did not run: {error}") from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CubinError(f"{cubin.name}: {tool} -sass failed (status {result.returncode})"
                         + (f": {message[-1]}" if message else ""))
    return result.stdout.decode("utf-8", "replace")

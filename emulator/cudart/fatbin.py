"""CUDA fat binaries as nvcc embeds them: the wrapper, the container, its PTX and cubin entries, decompressed."""
from __future__ import annotations

import ctypes
import ctypes.util
import re
import struct
from dataclasses import dataclass
from typing import List

from ..errors import UsageError

WRAPPER_MAGIC = 0x466243B1
CONTAINER_MAGIC = 0xBA55ED50
CONTAINER_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQIIIIQQQQ")
KIND_PTX = 1
KIND_CUBIN = 2
FLAG_COMPRESSED_LZ4 = 0x2000
FLAG_COMPRESSED_ZSTD = 0x8000
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ELF_MAGIC = b"\x7fELF"
#: nvcc's wrapper version 2 (relocatable device code) points at a list of fat binaries
WRAPPER_VERSION_RDC = 2


class FatbinError(UsageError):
    """A fat binary gpuemu cannot read or run."""


@dataclass
class Entry:
    kind: int
    arch: int
    payload: bytes
    flags: int
    uncompressed_size: int

    @property
    def kind_name(self) -> str:
        return {KIND_PTX: "PTX", KIND_CUBIN: "cubin"}.get(self.kind, f"kind {self.kind}")

    def data(self) -> bytes:
        """The entry's bytes, decompressed."""
        if self.flags & FLAG_COMPRESSED_ZSTD or self.payload.startswith(ZSTD_MAGIC):
            return zstd_decompress(self.payload, self.uncompressed_size)
        if self.flags & FLAG_COMPRESSED_LZ4:
            return lz4_block_decompress(self.payload, self.uncompressed_size)
        return self.payload

    def text(self) -> str:
        return self.data().split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_container(data: bytes) -> List[Entry]:
    """The entries of one fat binary container (magic 0xBA55ED50)."""
    if len(data) < CONTAINER_HEADER.size:
        raise FatbinError("fat binary is shorter than its header")
    magic, _version, header_size, body_size = CONTAINER_HEADER.unpack_from(data, 0)
    if magic != CONTAINER_MAGIC:
        raise FatbinError(f"not a fat binary (magic 0x{magic:08x}, expected 0x{CONTAINER_MAGIC:08x})")
    end = min(len(data), header_size + body_size)
    entries = []
    offset = header_size
    while offset + ENTRY_HEADER.size <= end:
        (kind, _version, entry_header, padded_size, compressed_size, _w5, _w6, arch,
         _reloc, flags, _options, uncompressed) = ENTRY_HEADER.unpack_from(data, offset)
        if entry_header < ENTRY_HEADER.size or offset + entry_header + padded_size > end:
            raise FatbinError(f"fat binary entry at offset {offset} runs past the end")
        start = offset + entry_header
        compressed = flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD)
        size = compressed_size if compressed and compressed_size else padded_size
        entries.append(Entry(kind, arch, bytes(data[start:start + size]), flags, uncompressed))
        offset = start + padded_size
    return entries


def container_size(address: int) -> int:
    magic, _version, header_size, body_size = CONTAINER_HEADER.unpack(ctypes.string_at(address, CONTAINER_HEADER.size))
    if magic != CONTAINER_MAGIC:
        raise FatbinError(f"no fat binary at 0x{address:x} (magic 0x{magic:08x})")
    return header_size + body_size


def read_wrapper(address: int) -> List[bytes]:
    """The containers behind the __fatBinC_Wrapper_t that __cudaRegisterFatBinary receives."""
    magic, version, data = struct.unpack("<IIQ", ctypes.string_at(address, 16))
    if magic == CONTAINER_MAGIC & 0xFFFFFFFF and version & 0xFFFF == 1:
        return [ctypes.string_at(address, container_size(address))]
    if magic != WRAPPER_MAGIC:
        raise FatbinError(f"__cudaRegisterFatBinary got no fat binary wrapper (magic 0x{magic:08x})")
    return [ctypes.string_at(data, container_size(data))]


def choose_ptx(entries: List[Entry], device_arch: int, what: str) -> Entry:
    """The PTX entry to run: the newest virtual arch not above the device's, else the oldest; a clear error when the
    fat binary holds only cubins."""
    entry = choose_image(entries, device_arch, what)
    if entry.kind != KIND_PTX:
        raise FatbinError(f"{what}: the fat binary holds only SASS (sm_{entry.arch}) and no PTX, and PTX is needed "
                          f"here; {rebuild_hint(entry.arch)}")
    return entry


def choose_image(entries: List[Entry], device_arch: int, what: str) -> Entry:
    """What to run: the PTX entry of the newest virtual arch not above the device's (else the oldest PTX); without
    PTX, the cubin of the newest arch not above the device's, which runs from its SASS listing."""
    ptx = [entry for entry in entries if entry.kind == KIND_PTX]
    if ptx:
        fitting = [entry for entry in ptx if entry.arch <= device_arch]
        return max(fitting, key=lambda e: e.arch) if fitting else min(ptx, key=lambda e: e.arch)
    cubins = [entry for entry in entries if entry.kind == KIND_CUBIN]
    if not cubins:
        raise FatbinError(f"{what}: the fat binary holds no PTX and no cubin")
    fitting = [entry for entry in cubins if entry.arch <= device_arch]
    if not fitting:
        archs = ", ".join(sorted({f"sm_{entry.arch}" for entry in cubins}))
        raise FatbinError(f"{what}: the fat binary holds only SASS for {archs}, newer than the emulated device "
                          f"(sm_{device_arch}); {rebuild_hint(max(entry.arch for entry in cubins))}")
    return max(fitting, key=lambda e: e.arch)


def rebuild_hint(arch: int) -> str:
    """How to build a program whose fat binary gpuemu can run without cuobjdump."""
    return (f"rebuild with -gencode arch=compute_{arch},code=[sm_{arch},compute_{arch}] to embed PTX "
            f"(-arch=sm_{arch} alone embeds the PTX too; code=sm_{arch} alone does not), and without -rdc=true "
            f"(a program of relocatable device code keeps only SASS whatever -gencode says)")


def ptx_kernels(text: str) -> List[str]:
    return re.findall(r"\.entry\s+([\w$]+)", text)


# ---- decompression ----

def _lz4_length(data: bytes, position: int, nibble: int) -> tuple:
    """An LZ4 length whose token nibble is given: 15 continues in bytes of 255 until a smaller one; (length,
    position after it)."""
    length = nibble
    if nibble == 15:
        while True:
            extra = data[position]
            position += 1
            length += extra
            if extra != 255:
                break
    return length, position


def lz4_block_decompress(data: bytes, size: int) -> bytes:
    """An LZ4 block (nvcc's 'speed' compression and the default of CUDA 11 and 12)."""
    out = bytearray()
    position = 0
    length = len(data)
    while position < length:
        token = data[position]
        position += 1
        literals, position = _lz4_length(data, position, token >> 4)
        out += data[position:position + literals]
        position += literals
        if position >= length or (size and len(out) >= size):
            break
        offset = data[position] | data[position + 1] << 8
        position += 2
        if offset == 0 or offset > len(out):
            raise FatbinError("corrupt LZ4 data in the fat binary")
        match, position = _lz4_length(data, position, token & 15)
        match += 4
        start = len(out) - offset
        if offset >= match:
            out += out[start:start + match]
        else:
            for index in range(match):
                out.append(out[start + index])
    return bytes(out[:size] if size else out)


_ZSTD = None


def _zstd_library():
    global _ZSTD
    if _ZSTD is None:
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        try:
            library = ctypes.CDLL(name)
        except OSError:
            library = False
        if library:
            library.ZSTD_decompress.restype = ctypes.c_size_t
            library.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
            library.ZSTD_isError.restype = ctypes.c_uint
            library.ZSTD_isError.argtypes = [ctypes.c_size_t]
        _ZSTD = library
    return _ZSTD


def zstd_decompress(data: bytes, size: int) -> bytes:
    """A zstd frame (nvcc 13's default compression), through the system's libzstd or a Python zstd module."""
    library = _zstd_library()
    if library:
        out = ctypes.create_string_buffer(max(size, 1))
        written = library.ZSTD_decompress(out, size, data, len(data))
        if library.ZSTD_isError(written):
            raise FatbinError("corrupt zstd data in the fat binary")
        return out.raw[:written]
    for module_name in ("zstandard", "pyzstd", "compression.zstd"):
        try:
            module = __import__(module_name, fromlist=["decompress"])
        except ImportError:
            continue
        if module_name == "zstandard":
            return module.ZstdDecompressor().decompress(data, max_output_size=size)
        return module.decompress(data)
    raise FatbinError("the fat binary's code is zstd-compressed and neither libzstd.so.1 nor a Python zstd module is "
                      "installed: install libzstd1 (or pip install zstandard), or rebuild with nvcc -no-compress")
